package main_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// signedSetup is a witness served by "trails-admin witness serve" that
// trusts one writer key, and the files an operator holds.
type signedSetup struct {
	dir, keys, writerKey string
	ws                   *server
	client               *witness.Client
	wv                   note.Verifier
}

// newSignedSetup makes the keys (witness, writer, attacker) and starts
// the witness, which checkpoints every 50ms.
func newSignedSetup(tb testing.TB) *signedSetup {
	tb.Helper()
	dir := tb.TempDir()
	r := runner{endpoint: noStore}
	for _, k := range []string{"witness", "writer", "attacker"} {
		r.mustRun(tb, 0, "keygen", "--out", filepath.Join(dir, k), k+".example")
	}
	s := &signedSetup{dir: dir, keys: filepath.Join(dir, "keys.txt"), writerKey: filepath.Join(dir, "writer.key")}
	keys := "witness " + readKey(tb, filepath.Join(dir, "witness.pub")) + "\nwriter " + readKey(tb, filepath.Join(dir, "writer.pub")) + "\n"
	if err := os.WriteFile(s.keys, []byte(keys), 0o644); err != nil {
		tb.Fatal(err)
	}
	s.ws = startServer(tb, "serve", "--dir", filepath.Join(dir, "log"), "--key", filepath.Join(dir, "witness.key"),
		"--keys", s.keys, "--listen", "127.0.0.1:0", "--checkpoint-every", "50ms")
	var err error
	if s.client, err = witness.NewClient(s.ws.url, nil); err != nil {
		tb.Fatal(err)
	}
	if s.wv, err = note.NewVerifier(readKey(tb, filepath.Join(dir, "witness.pub"))); err != nil {
		tb.Fatal(err)
	}
	return s
}

// settle waits until the witness's last checkpoint covers its whole log:
// verify sees the entries a checkpoint covers.
func (s *signedSetup) settle(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		signed, err := s.client.Checkpoint(ctx)
		if err == nil {
			cp, err := witness.OpenCheckpoint(signed, s.wv)
			if err != nil {
				tb.Fatal(err)
			}
			if _, err := s.client.Entry(ctx, cp.Size); errors.Is(err, witness.ErrOutOfRange) {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no checkpoint covering the whole log after 10s; witness:\n%s", s.ws.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// verify runs "trails-admin verify" over the whole dataset once the
// witness settled, and returns what it did.
func (s *signedSetup) verify(tb testing.TB, r runner, code int) result {
	tb.Helper()
	s.settle(tb)
	return r.mustRun(tb, code, "verify", "--key", s.keys, "--witness", filepath.Join(s.dir, "log"))
}

// sign returns the flags that make a write command sign.
func (s *signedSetup) sign() []string {
	return []string{"--sign-key", s.writerKey, "--witness", s.ws.url}
}

// TestSignedCommands: a history written by trails-admin's write commands
// given --sign-key and --witness (or $TRAILS_SIGN_KEY and
// $TRAILS_WITNESS) verifies with no finding: import, rechain, demo,
// fork, merge, rewind, detach and delete. An import without them leaves
// its sessions unwitnessed.
func TestSignedCommands(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	c := fusekitest.Empty(t)
	s := newSignedSetup(t)
	r := storeRunner(t)
	signed := runner{endpoint: r.endpoint, env: []string{"TRAILS_SIGN_KEY=" + s.writerKey, "TRAILS_WITNESS=" + s.ws.url}}
	wipe := func() {
		t.Helper()
		if err := c.Update(ctx, "DROP ALL", kg.Idempotent()); err != nil {
			t.Fatal(err)
		}
	}

	// History written before signing, exported.
	r.mustRun(t, 0, "demo")
	export := filepath.Join(s.dir, "export.nq")
	r.mustRun(t, 0, "export", "-o", export)

	// Imported without signing: unwitnessed, as before.
	wipe()
	r.mustRun(t, 0, "import", export)
	if res := s.verify(t, r, 1); !strings.Contains(res.stdout, "unwitnessed") || strings.Contains(res.stdout, "rechained") {
		t.Errorf("import without --sign-key: got\n%s\nwant each session unwitnessed", res.stdout)
	}

	// Imported with signing: verified.
	wipe()
	res := r.mustRun(t, 0, append([]string{"import", export}, s.sign()...)...)
	if !strings.Contains(res.stderr, "signed the heads of 3 sessions written") {
		t.Errorf("import: got stderr %q", res.stderr)
	}
	s.verify(t, r, 0)

	// Rechained with signing (the digests dropped, as data from before
	// the hash chain): verified.
	if err := c.Update(ctx, `PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH ?g { ?t trails:digest ?d } } WHERE { GRAPH ?g { ?t a trails:Turn ; trails:digest ?d } }`); err != nil {
		t.Fatal(err)
	}
	s.verify(t, r, 1)
	signed.mustRun(t, 0, "rechain")
	s.verify(t, r, 0)

	// The demo, then each write command, signed; the imported tree
	// deleted first (a wipe would be an unsigned deletion).
	rootOf := func() string {
		t.Helper()
		infos, err := session.NewStore(c).List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if in.ParentID == "" {
				return in.ID
			}
		}
		t.Fatal("no root stored")
		return ""
	}
	signed.mustRun(t, 0, "delete", rootOf(), "--cascade")
	signed.mustRun(t, 0, "demo")
	root := rootOf()
	fork := strings.TrimSpace(r.mustRun(t, 0, append([]string{"fork", root, "--at", "2"}, s.sign()...)...).stdout)
	worker := strings.TrimSpace(signed.mustRun(t, 0, "fork", root, "--at", "3", "--worker").stdout)
	// The worker's own turns, by an agent with the same writer key.
	key, err := note.NewSigner(readKey(t, s.writerKey))
	if err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(c, session.WithSigning(key, s.client))
	w := storetest.MustLoad(t, st, worker)
	storetest.AppendN(w, 2, "work")
	storetest.MustPersist(t, st, w)
	signed.mustRun(t, 0, "merge", worker, "--status", "completed", "--summary", "done")
	signed.mustRun(t, 0, "rewind", root, "--to", "4")
	signed.mustRun(t, 0, "detach", fork)
	signed.mustRun(t, 0, "delete", worker)
	res = s.verify(t, r, 0)
	if !strings.Contains(res.stderr, "no findings") {
		t.Errorf("verify: got stderr %q", res.stderr)
	}

	// Unsigned, the same commands leave what verify names.
	unsigned := strings.TrimSpace(r.mustRun(t, 0, "fork", root, "--at", "1").stdout)
	if res := s.verify(t, r, 1); !strings.Contains(res.stdout, "unwitnessed") || !strings.Contains(res.stdout, unsigned) {
		t.Errorf("an unsigned fork: got\n%s\nwant it unwitnessed", res.stdout)
	}
}

// TestSignUsage: --sign-key and --witness go together, the key file must
// be a secret key, the witness a URL that answers (else nothing is
// written); a key the witness does not trust leaves the write stored and
// says what to do.
func TestSignUsage(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	c := fusekitest.Empty(t)
	s := newSignedSetup(t)
	r := storeRunner(t)
	root := storetest.Persisted(t, session.NewStore(c), "signer", 3)
	pub := filepath.Join(s.dir, "writer.pub")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"key without witness", []string{"--sign-key", s.writerKey}, 2, "go together"},
		{"witness without key", []string{"--witness", s.ws.url}, 2, "go together"},
		{"public key", []string{"--sign-key", pub, "--witness", s.ws.url}, 2, "not a secret note key"},
		{"no key file", []string{"--sign-key", filepath.Join(s.dir, "nowhere.key"), "--witness", s.ws.url}, 2, "--sign-key"},
		{"witness directory", []string{"--sign-key", s.writerKey, "--witness", filepath.Join(s.dir, "log")}, 2, "URL of a witness server"},
		{"witness down", []string{"--sign-key", s.writerKey, "--witness", "http://127.0.0.1:9"}, 1, "nothing was written"},
		{"untrusted key", []string{"--sign-key", filepath.Join(s.dir, "attacker.key"), "--witness", s.ws.url}, 1, "does not trust the key attacker.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := session.NewStore(c).List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			res := r.mustRun(t, tc.code, append([]string{"fork", root.ID, "--at", "1"}, tc.args...)...)
			if !strings.Contains(res.stderr, tc.want) {
				t.Errorf("got stderr %q, want it to say %q", res.stderr, tc.want)
			}
			after, err := session.NewStore(c).List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if wrote := len(after) > len(before); wrote != (tc.name == "untrusted key") {
				t.Errorf("got %d sessions after, %d before: a refused command must write nothing, one the witness refused stays written", len(after), len(before))
			}
		})
	}
}
