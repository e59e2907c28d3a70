package main_test

import (
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
)

// TestTreeLimits: fork --worker, a worker refused as a parent, the
// --max-children flag before and after the command, the kind in show,
// sessions and tree, and the auditors' tree-limits query.
func TestTreeLimits(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t) // root has two forks, a and fc
	r := storeRunner(t)
	worker := r.mustRun(t, 0, "fork", f.root, "--at", "3", "--worker", "--json")
	wid := decode[map[string]any](t, worker)["id"].(string)
	workerText := r.mustRun(t, 0, "fork", f.a, "--at", "2", "--worker")
	showWorker := r.mustRun(t, 0, "show", wid)
	ofWorker := r.mustRun(t, 1, "fork", wid, "--at", "1")
	tooMany := r.mustRun(t, 1, "--max-children", "3", "fork", f.root, "--at", "1")
	noLimit := r.mustRun(t, 0, "fork", f.root, "--at", "1", "--max-children", "0")
	badLimit := r.mustRun(t, 2, "--max-children", "many", "sessions")
	sessions := r.mustRun(t, 0, "sessions", "--principal", "agent-7")
	tree := r.mustRun(t, 0, "tree", f.root)
	audit := r.mustRun(t, 0, "audit", "tree-limits", "--param", "max=3")
	golden(t, "tree-limits", []string{f.c.Endpoint()}, "the family: root has two forks, a and fc",
		worker, workerText, showWorker, ofWorker, tooMany, noLimit, badLimit, sessions, tree, audit)

	v := decode[map[string]any](t, worker)
	hasFields(t, "fork --json", v, forkFields...)
	if v["kind"] != "worker" {
		t.Errorf("fork --worker --json: got kind %v, want worker", v["kind"])
	}
	if !strings.Contains(showWorker.stdout, "kind      worker\n") {
		t.Errorf("show of a worker: no kind line in\n%s", showWorker.stdout)
	}
	for _, res := range []result{ofWorker, tooMany} {
		if res.stdout != "" {
			t.Errorf("trails-admin %s: a refused fork printed %q on stdout", strings.Join(res.args, " "), res.stdout)
		}
	}
	js := decode[map[string]any](t, r.mustRun(t, 0, "show", wid, "--json"))
	if s := object(t, "session", js["session"]); s["kind"] != "worker" {
		t.Errorf("show --json: got kind %v, want worker", s["kind"])
	}
}
