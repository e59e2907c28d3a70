package main_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
)

// TestRechain: rechain gives the turns of a session stored before the
// hash chain their digests, check then finds nothing about them, and a
// second run has nothing to do.
func TestRechain(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	root, err := fusekitest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	nq, err := os.ReadFile(filepath.Join(root, "testdata", "session", "legacy", "session.nq"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LoadQuads(context.Background(), nq); err != nil {
		t.Fatal(err)
	}
	r := storeRunner(t)
	before := r.mustRun(t, 1, "check")
	first := r.mustRun(t, 0, "rechain")
	second := r.mustRun(t, 0, "rechain", "--json")
	after := r.mustRun(t, 0, "check")
	golden(t, "rechain", []string{c.Endpoint()}, "a session stored before the hash chain (testdata/session/legacy)", before, first, second, after)
}
