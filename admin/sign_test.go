package admin_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
)

// downWitness is a witness that cannot be reached.
type downWitness struct{}

func (downWitness) Add(context.Context, []byte) (uint64, error) { return 0, witness.ErrUnavailable }

// statements returns the statements in w's witness of session id.
func (w *signedWorld) statements(tb testing.TB, id string) []witness.Statement {
	tb.Helper()
	ctx := context.Background()
	cp, err := w.dir.Checkpoint(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := witness.OpenCheckpoint(cp, w.keys.Witness)
	if err != nil {
		tb.Fatal(err)
	}
	var out []witness.Statement
	for h, err := range witness.Heads(ctx, w.dir, c, w.keys.Verifiers()) {
		if err != nil {
			tb.Fatal(err)
		}
		if h.Session == id {
			out = append(out, h.Statement)
		}
	}
	return out
}

// TestSignImport: sessions written before signing (a root, a fork with
// turns of its own, a fork without) are exported and imported again. An
// import without signing leaves each unwitnessed, as before; with
// admin.WithSigning each verifies with no finding, its statement naming
// no head replaced and its fork link; a witness that is down leaves the
// import stored and says so with session.ErrNotWitnessed.
func TestSignImport(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	w := newSignedWorld(t)
	plain := session.NewStore(w.q) // written before signing was on
	root := sessionWith(t, plain, 3)
	fork := storetest.MustFork(t, root, 2)
	storetest.AppendN(fork, 2, "fork")
	storetest.MustPersist(t, plain, fork)
	empty := storetest.MustFork(t, root, 1)
	storetest.MustPersist(t, plain, empty)
	var export bytes.Buffer
	if _, err := w.ds.Export(ctx, &export, admin.NQuads); err != nil {
		t.Fatal(err)
	}
	ids := []string{root.ID, fork.ID, empty.ID}
	slices.Sort(ids)

	w.wipe(t)
	if _, err := admin.New(w.q).Import(ctx, bytes.NewReader(export.Bytes()), admin.NQuads, nil); err != nil {
		t.Fatalf("import without signing: %v", err)
	}
	var want []string
	for _, id := range ids {
		want = append(want, admin.VerifyUnwitnessed+" "+id+" -1")
	}
	wantFindings(t, w.verify(t), want...)

	w.wipe(t)
	stats, err := admin.New(w.q, admin.WithSigning(w.signer, w.dir)).Import(ctx, bytes.NewReader(export.Bytes()), admin.NQuads, nil)
	if err != nil {
		t.Fatalf("import with signing: %v", err)
	}
	if stats.Signed != 3 || stats.Sessions != 3 {
		t.Errorf("stats: got %+v, want 3 sessions written and 3 signed", stats)
	}
	rep := w.verify(t)
	if len(rep.Findings) != 0 || rep.Verified != 3 {
		t.Errorf("signed import: got %d verified of %d, findings:\n%s; want 3 verified, none", rep.Verified, rep.Sessions, messages(rep))
	}
	for _, s := range []*session.Session{root, fork, empty} {
		sts := w.statements(t, s.ID)
		if len(sts) != 1 {
			t.Fatalf("statements of %s: got %d, want 1", s.ID, len(sts))
		}
		got := sts[0]
		if got.Version != 2 || got.Replaces || got.Parent != s.ParentID || got.ForkedAt != uint64(s.ForkedAt) || got.Turns != uint64(len(s.Turns)-s.ForkedAt) {
			t.Errorf("statement of %s: got %+v, want version 2, no head replaced, parent %q at %d, %d turns", s.ID, got, s.ParentID, s.ForkedAt, len(s.Turns)-s.ForkedAt)
		}
	}

	// The witness down: the import is stored, the error says it is not
	// witnessed and holds each signed statement to add again.
	w.wipe(t)
	stats, err = admin.New(w.q, admin.WithSigning(w.signer, downWitness{})).Import(ctx, bytes.NewReader(export.Bytes()), admin.NQuads, nil)
	var we *session.WitnessError
	if !errors.Is(err, session.ErrNotWitnessed) || !errors.As(err, &we) || we.Entry == nil || !errors.Is(err, witness.ErrUnavailable) {
		t.Fatalf("witness down: got %v, want ErrNotWitnessed with the signed entry", err)
	}
	if stats.Sessions != 3 || stats.Signed != 0 {
		t.Errorf("witness down: got %+v, want 3 sessions written, none signed", stats)
	}
	storetest.MustLoad(t, session.NewStore(w.q), fork.ID)
}

// TestSignRechain: sessions stored before the hash chain (a root and a
// fork, their digests dropped) are chained by Rechain. Without signing
// they stay unwitnessed, as before; with admin.WithSigning each verifies
// with no finding, its statement replacing the head it had (its turn
// count, no chain digest).
func TestSignRechain(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	w := newSignedWorld(t)
	plain := session.NewStore(w.q)
	root := sessionWith(t, plain, 3)
	fork := storetest.MustFork(t, root, 2)
	storetest.AppendN(fork, 2, "fork")
	storetest.MustPersist(t, plain, fork)
	unchain := func() {
		t.Helper()
		rawUpdate(t, w.c, `PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH ?g { ?t trails:digest ?d } } WHERE { GRAPH ?g { ?t a trails:Turn ; trails:digest ?d } }`, nil)
	}
	ids := []string{root.ID, fork.ID}
	slices.Sort(ids)

	unchain()
	if stats, err := admin.New(w.q).Rechain(ctx, nil); err != nil || stats.Sessions != 2 || stats.Signed != 0 {
		t.Fatalf("rechain without signing: got %+v, %v; want 2 sessions, none signed", stats, err)
	}
	wantFindings(t, w.verify(t), admin.VerifyUnwitnessed+" "+ids[0]+" -1", admin.VerifyUnwitnessed+" "+ids[1]+" -1")

	unchain()
	stats, err := admin.New(w.q, admin.WithSigning(w.signer, w.dir)).Rechain(ctx, nil)
	if err != nil || stats.Sessions != 2 || stats.Signed != 2 {
		t.Fatalf("rechain with signing: got %+v, %v; want 2 sessions chained and signed", stats, err)
	}
	rep := w.verify(t)
	if len(rep.Findings) != 0 || rep.Verified != 2 {
		t.Errorf("signed rechain: got %d verified of %d, findings:\n%s; want 2 verified, none", rep.Verified, rep.Sessions, messages(rep))
	}
	sts := w.statements(t, root.ID)
	if len(sts) != 1 || !sts[0].Replaces || sts[0].Prev != (witness.HeadRef{Turns: 3}) || sts[0].Chain == "" {
		t.Errorf("statements of the root: got %+v, want one replacing its head of 3 turns without a chain digest", sts)
	}
}
