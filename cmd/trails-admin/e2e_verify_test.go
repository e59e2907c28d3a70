package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// TestVerify runs the auditor's three commands of the README: keygen for
// the keys, a signing writer (the library), then verify: clean data exits
// 0 and keeps the checkpoint; an edited turn exits 1 and is named in the
// JSON report; a witness behind the kept checkpoint fails; bad flags exit
// 2.
func TestVerify(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	c := fusekitest.Empty(t)
	dir := t.TempDir()
	r := storeRunner(t)

	// The keys: keygen writes PREFIX.key and PREFIX.pub, and never
	// replaces them.
	r.mustRun(t, 0, "keygen", "--out", filepath.Join(dir, "writer"), "writer.example")
	r.mustRun(t, 0, "keygen", "--out", filepath.Join(dir, "witness"), "witness.example")
	if res := r.mustRun(t, 1, "keygen", "--out", filepath.Join(dir, "writer"), "writer.example"); !strings.Contains(res.stderr, "exists") {
		t.Errorf("keygen over an existing key: got %q, want it refused", res.stderr)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if info, err := os.Stat(filepath.Join(dir, "writer.key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("writer.key: got %v, %v; want mode 0600", info, err)
	}
	signer, err := note.NewSigner(read("writer.key"))
	if err != nil {
		t.Fatal(err)
	}
	wsigner, err := note.NewSigner(read("witness.key"))
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(keys, []byte("witness "+read("witness.pub")+"\nwriter "+read("writer.pub")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The writer signs into a witness directory.
	wdir := filepath.Join(dir, "witness")
	w, err := witness.OpenDir(ctx, wdir, wsigner)
	if err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(c, session.WithSigning(signer, w))
	s := session.New("auditee")
	s.Append("user", "hello")
	storetest.MustPersist(t, st, s)
	s.Append("assistant", "hi")
	storetest.MustPersist(t, st, s)
	if _, err := w.Checkpoint(ctx); err != nil { // the witness signs its checkpoint
		t.Fatal(err)
	}

	cp := filepath.Join(dir, "last.checkpoint")
	res := r.mustRun(t, 0, "verify", "--key", keys, "--witness", wdir, "--checkpoint", cp)
	if !strings.Contains(res.stderr, "1 session verified of 1 session") {
		t.Errorf("clean: got stderr %q", res.stderr)
	}
	kept, err := os.ReadFile(cp)
	if err != nil || !strings.HasPrefix(string(kept), "witness.example\n") {
		t.Fatalf("the kept checkpoint: got %q, %v", kept, err)
	}

	// An edit by someone with the store's credentials.
	storetest.Tamper(t, c, storetest.TurnRef(s.ID, 1).String(), ontology.Content, kg.String("bye"))
	res = r.mustRun(t, 1, "verify", "--key", keys, "--witness", wdir, "--checkpoint", cp, "--json", s.ID)
	var out struct {
		Findings []struct {
			Kind    string `json:"kind"`
			Session string `json:"session"`
			Turn    *int   `json:"turn"`
		} `json:"findings"`
		Count, Sessions, Verified int
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("JSON: %v\n%s", err, res.stdout)
	}
	if out.Count != 1 || out.Findings[0].Kind != "edited" || out.Findings[0].Session != s.ID || out.Findings[0].Turn == nil || *out.Findings[0].Turn != 1 {
		t.Errorf("edited: got %+v", out)
	}

	// The fork tree under the session: the session, and a fork of it
	// that verifies.
	f := storetest.MustFork(t, s, 1)
	storetest.MustPersist(t, st, f)
	// The fork's statement is in the log, past the last checkpoint: verify
	// sees it once the witness's operator signs a new one.
	res = r.mustRun(t, 0, "checkpoint", "--witness", wdir, "--key", filepath.Join(dir, "witness.key"))
	if !strings.HasPrefix(res.stdout, "witness.example\n3\n") {
		t.Errorf("checkpoint: got %q, want a checkpoint of 3 entries (two heads of the session, one of its fork)", res.stdout)
	}
	r.mustRun(t, 2, "checkpoint", "--witness", wdir, "--key", filepath.Join(dir, "witness.pub"))
	res = r.mustRun(t, 1, "verify", "--key", keys, "--witness", wdir, "--json", "--tree", s.ID)
	out.Findings = nil
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("JSON: %v\n%s", err, res.stdout)
	}
	if out.Sessions != 2 || out.Verified != 1 || out.Count != 1 || out.Findings[0].Kind != "edited" {
		t.Errorf("--tree: got %+v, want 2 sessions, the fork verified, the edit found", out)
	}

	// A witness behind the checkpoint kept: restored from an older copy.
	other := session.New("auditee")
	other.Append("user", "signed later")
	storetest.MustPersist(t, st, other)
	if _, err := w.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	r.mustRun(t, 1, "verify", "--key", keys, "--witness", wdir, "--checkpoint", cp) // the edit is still there: 1
	older := filepath.Join(dir, "older.checkpoint")
	if err := os.WriteFile(older, kept, 0o644); err != nil {
		t.Fatal(err)
	}
	newer, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wdir, witness.CheckpointFile), kept, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, newer, 0o644); err != nil {
		t.Fatal(err)
	}
	res = r.mustRun(t, 1, "verify", "--key", keys, "--witness", wdir, "--checkpoint", cp)
	if !strings.Contains(res.stderr, "smaller than a checkpoint seen before") {
		t.Errorf("a witness behind the kept checkpoint: got %q", res.stderr)
	}

	// Usage.
	r.mustRun(t, 2, "verify", "--witness", wdir)
	r.mustRun(t, 2, "verify", "--key", keys, "--witness", filepath.Join(dir, "nowhere"))
	r.mustRun(t, 2, "verify", "--key", filepath.Join(dir, "writer.pub"), "--witness", wdir) // no witness key
	r.mustRun(t, 2, "verify", "--key", keys, "--witness", wdir, "not-a-session-id")
}
