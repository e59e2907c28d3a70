package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// recorder is a Witness that keeps the entries it adds to another, for
// a test to read them per write.
type recorder struct {
	next    session.Witness
	mu      sync.Mutex
	entries [][]byte
}

func (r *recorder) Add(ctx context.Context, entry []byte) (uint64, error) {
	i, err := r.next.Add(ctx, entry)
	if err == nil {
		r.mu.Lock()
		r.entries = append(r.entries, entry)
		r.mu.Unlock()
	}
	return i, err
}

// take returns the entries added since the last take.
func (r *recorder) take() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries
	r.entries = nil
	return e
}

// signed is a test's signing Store with what checks it: the store's
// client, the witness (a witness.Dir in a temporary directory, whose
// entries rec also keeps), the writer's key and the witness's.
type signed struct {
	st      *session.Store
	c       *kg.Client
	rec     *recorder
	dir     *witness.Dir
	writer  note.Verifier
	witness note.Verifier
	// last is each session's head as its last statement named it: what
	// the next statement of the session must say it replaces.
	last map[string]witness.HeadRef
}

// track records the heads the statements in entries leave, in order.
func (e *signed) track(tb testing.TB, entries [][]byte) {
	tb.Helper()
	for _, entry := range entries {
		s, _, err := witness.Open(entry, note.VerifierList(e.writer))
		if err != nil {
			tb.Fatal(err)
		}
		if s.Kind != witness.KindMerge {
			e.last[s.Session] = witness.HeadRef{Turns: s.Turns, Chain: s.Chain}
		}
	}
}

// newSigned returns a Store on the test Fuseki that signs its writes with
// a new key and adds them to a new witness.Dir.
func newSigned(tb testing.TB, opts ...session.StoreOption) *signed {
	tb.Helper()
	ws, wv, _ := keytest.New(tb, "witness.test")
	d, err := witness.OpenDir(context.Background(), tb.TempDir(), ws)
	if err != nil {
		tb.Fatalf("OpenDir: %v", err)
	}
	tb.Cleanup(func() { d.Close() })
	ks, kv, _ := keytest.New(tb, "writer.test")
	rec := &recorder{next: d}
	st, _, c := newStore(tb, append(opts, session.WithSigning(ks, rec))...)
	return &signed{st: st, c: c, rec: rec, dir: d, writer: kv, witness: wv, last: map[string]witness.HeadRef{}}
}

// storedHead returns the turn count and head digest the store holds for
// session id (trails:ownTurns, trails:headDigest), and whether it holds
// them.
func storedHead(tb testing.TB, c *kg.Client, id string) (uint64, string, bool) {
	tb.Helper()
	q, err := kg.Bind(`PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?own ?head WHERE { GRAPH $s { $s trails:ownTurns ?own ; trails:headDigest ?head } }`,
		kg.Params{"s": kg.MustIRI(ontology.SessionIRI(id))})
	if err != nil {
		tb.Fatal(err)
	}
	// Through the Store's Querier: on the kafka profile, c reads replica
	// 0, which may not have applied the write yet; the Querier reads a
	// replica at or past it.
	res, err := clustertest.Querier(tb, c).Select(context.Background(), q)
	if err != nil {
		tb.Fatal(err)
	}
	switch len(res.Solutions) {
	case 0:
		return 0, "", false
	case 1:
		n, err := res.Solutions[0].Int("own")
		if err != nil {
			tb.Fatal(err)
		}
		return uint64(n), res.Solutions[0].String("head"), true
	default:
		tb.Fatalf("session %s: %d heads stored", id, len(res.Solutions))
		return 0, "", false
	}
}

// stmt is a statement a write should produce: its kind and session,
// named by id or, for a session the write makes, by late once it ran.
type stmt struct {
	kind witness.Kind
	id   string
	late *string
}

func (w stmt) session() string {
	if w.late != nil {
		return *w.late
	}
	return w.id
}

func head(id string) stmt     { return stmt{kind: witness.KindHead, id: id} }
func headOf(id *string) stmt  { return stmt{kind: witness.KindHead, late: id} }
func deletion(id string) stmt { return stmt{kind: witness.KindDeletion, id: id} }
func merged(id string) stmt   { return stmt{kind: witness.KindMerge, id: id} }

// wrote runs write and checks that it produced exactly the statements
// want, in order, signed by the writer's key: a head statement with the
// head the store holds after the write, which Load agrees with; a
// deletion with the head the store held before it.
func (e *signed) wrote(t *testing.T, write func() error, want ...stmt) {
	t.Helper()
	e.track(t, e.rec.take()) // the statements of the test's set-up
	before := map[string][2]any{}
	for _, w := range want {
		if w.late == nil {
			if n, d, ok := storedHead(t, e.c, w.id); ok {
				before[w.id] = [2]any{n, d}
			}
		}
	}
	if err := write(); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := e.rec.take()
	if len(got) != len(want) {
		for _, g := range got {
			t.Logf("entry:\n%s", g)
		}
		t.Fatalf("got %d statements, want %d", len(got), len(want))
	}
	for i, entry := range got {
		s, sig, err := witness.Open(entry, note.VerifierList(e.writer))
		if err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
		if sig.Name != e.writer.Name() {
			t.Errorf("statement %d: signed by %q, want %q", i, sig.Name, e.writer.Name())
		}
		if s.Kind != want[i].kind || s.Session != want[i].session() {
			t.Fatalf("statement %d: got %s of %s, want %s of %s", i, s.Kind, s.Session, want[i].kind, want[i].session())
		}
		// Version 2: it names the head it replaces, which the session's
		// statement before left (none for a session new with the write).
		if s.Kind == witness.KindMerge {
			// The result beside the merge turn, whose chain digest it
			// names: what Merges reads back.
			recs, err := e.st.Merges(context.Background(), s.Session)
			if err != nil || len(recs) == 0 {
				t.Fatalf("statement %d: Merges of %s: %v, %v", i, s.Session, recs, err)
			}
			if d := session.MergeDigest(recs[len(recs)-1]); s.Digest != d {
				t.Errorf("merge statement %d of %s: got digest %s, Merges gives %s", i, s.Session, s.Digest, d)
			}
			continue
		}
		prev, known := e.last[s.Session]
		if s.Version != 2 || s.Replaces != known || known && s.Prev != prev {
			t.Errorf("statement %d of %s: version %d, replaces %v %+v; want version 2 replacing %v %+v", i, s.Session, s.Version, s.Replaces, s.Prev, known, prev)
		}
		e.last[s.Session] = witness.HeadRef{Turns: s.Turns, Chain: s.Chain}
		// Through the log (the kafka profile) a statement names the
		// offset of the writer's last write; on one store, none.
		if onLog := fusekitest.OnCluster(); onLog != strings.HasPrefix(s.Position, "kafka:") || !onLog && s.Position != "" {
			t.Errorf("statement %d: got position %q, want %s", i, s.Position, map[bool]string{true: "kafka:OFFSET", false: "none"}[onLog])
		}
		switch s.Kind {
		case witness.KindHead:
			n, d, ok := storedHead(t, e.c, s.Session)
			if !ok || s.Turns != n || s.Digest != d {
				t.Errorf("statement %d of %s: got %d turns %s, want the stored %d turns %s", i, s.Session, s.Turns, s.Digest, n, d)
			}
			l, err := e.st.Load(context.Background(), s.Session)
			if err != nil {
				t.Fatalf("Load %s: %v", s.Session, err)
			}
			own := l.Turns[l.ForkedAt:]
			if s.Turns != uint64(len(own)) || s.Digest != session.HeadDigest(own) {
				t.Errorf("statement %d of %s: got %d turns %s, Load has %d turns %s", i, s.Session, s.Turns, s.Digest, len(own), session.HeadDigest(own))
			}
			// The chain digest: the last own turn's, recomputed from what
			// Load read (every field of the history), "" with no own turn.
			chain := ""
			for _, lt := range l.Turns {
				chain = session.TurnDigest(chain, lt)
			}
			if len(own) == 0 {
				chain = ""
			}
			if s.Chain != chain {
				t.Errorf("statement %d of %s: got chain %q, Load's turns give %q", i, s.Session, s.Chain, chain)
			}
			if s.Parent != l.ParentID || s.ForkedAt != uint64(max(l.ForkedAt, 0)) && l.ParentID != "" {
				t.Errorf("statement %d of %s: got parent %q at %d, Load has %q at %d", i, s.Session, s.Parent, s.ForkedAt, l.ParentID, l.ForkedAt)
			}
		case witness.KindDeletion:
			if _, _, ok := storedHead(t, e.c, s.Session); ok {
				t.Errorf("statement %d: %s is stored after its deletion", i, s.Session)
			}
			if b := before[s.Session]; s.Turns != b[0] || s.Digest != b[1] {
				t.Errorf("deletion %d of %s: got %d turns %s, want the head stored before, %v", i, s.Session, s.Turns, s.Digest, b)
			}
		}
	}
}

// TestSigningWrites checks that each kind of write of a signing Store
// produces the statements of the heads it left in the store, and that
// writes that change no head produce none.
func TestSigningWrites(t *testing.T) {
	ctx := context.Background()
	result := session.MergeResult{Status: session.MergeCompleted, Summary: "done", Artifacts: []session.Artifact{{Text: "notes.md"}, {IRI: "https://example.org/report"}}}
	tests := []struct {
		name string
		run  func(t *testing.T, e *signed)
	}{
		{"create and appends", func(t *testing.T, e *signed) {
			s := session.New("signer")
			appendN(s, 2, "a")
			e.wrote(t, func() error { return e.st.Create(ctx, s) }, head(s.ID))
			appendN(s, 3, "b")
			e.wrote(t, func() error { return e.st.Persist(ctx, s) }, head(s.ID)) // the fast path
			e.wrote(t, func() error { return e.st.Persist(ctx, s) })             // nothing to write
			l := mustLoad(t, e.st, s.ID)
			appendN(l, 1, "c")
			e.wrote(t, func() error { return e.st.Persist(ctx, l) }, head(s.ID))
			stale := mustLoad(t, e.st, s.ID)
			stale.Turns = stale.Turns[:2]
			e.wrote(t, func() error { // refused, nothing written: no statement
				if err := e.st.Persist(ctx, stale); !errors.Is(err, session.ErrConflict) {
					return fmt.Errorf("got %v, want ErrConflict", err)
				}
				return nil
			})
		}},
		{"persist of an empty root", func(t *testing.T, e *signed) {
			s := session.New("signer")
			e.wrote(t, func() error { return e.st.Persist(ctx, s) }, head(s.ID))
		}},
		{"forks", func(t *testing.T, e *signed) {
			p := persisted(t, e.st, "signer", 4)
			var f *session.Session
			var fid string
			e.wrote(t, func() (err error) {
				f, err = e.st.Fork(ctx, p.ID, 2)
				if f != nil {
					fid = f.ID
				}
				return err
			}, headOf(&fid))
			appendN(f, 2, "f")
			e.wrote(t, func() error { return e.st.Persist(ctx, f) }, head(f.ID)) // a tail's append
			g := mustFork(t, mustLoad(t, e.st, p.ID), 3)
			appendN(g, 1, "g")
			e.wrote(t, func() error { return e.st.Persist(ctx, g) }, head(g.ID))
		}},
		{"tail", func(t *testing.T, e *signed) {
			p := persisted(t, e.st, "signer", 5)
			tl, err := e.st.LoadTail(ctx, p.ID, session.Tail{Last: 2})
			if err != nil {
				t.Fatal(err)
			}
			appendN(tl, 2, "t")
			e.wrote(t, func() error { return e.st.Persist(ctx, tl) }, head(p.ID))
			appendN(tl, 1, "u")
			e.wrote(t, func() error { return e.st.Persist(ctx, tl) }, head(p.ID))
		}},
		{"rewind", func(t *testing.T, e *signed) {
			p := persisted(t, e.st, "signer", 6)
			var archive string
			e.wrote(t, func() error {
				_, r, err := e.st.Rewind(ctx, p.ID, 2, session.RewindOptions{})
				archive = r.Archive
				return err
			}, head(p.ID), headOf(&archive))
		}},
		{"merge", func(t *testing.T, e *signed) {
			p := persisted(t, e.st, "signer", 3)
			c := forkedChild(t, e.st, p, 3, 2)
			e.wrote(t, func() error { _, err := e.st.Merge(ctx, c.ID, result); return err }, head(p.ID), merged(p.ID))
		}},
		{"detach", func(t *testing.T, e *signed) {
			p := persisted(t, e.st, "signer", 3)
			c := forkedChild(t, e.st, p, 2, 2)
			e.wrote(t, func() error { return e.st.Detach(ctx, c.ID, session.DetachOptions{}) }, head(c.ID))
			e.wrote(t, func() error { return e.st.Detach(ctx, c.ID, session.DetachOptions{}) }) // a root: nothing done
		}},
		{"delete", func(t *testing.T, e *signed) {
			p := persisted(t, e.st, "signer", 3)
			e.wrote(t, func() error { return e.st.Delete(ctx, p.ID, session.DeleteOptions{}) }, deletion(p.ID))
		}},
		{"delete cascade", func(t *testing.T, e *signed) {
			p := persisted(t, e.st, "signer", 3)
			c := forkedChild(t, e.st, p, 2, 2)
			g := forkedChild(t, e.st, c, 3, 1)
			e.wrote(t, func() error { return e.st.Delete(ctx, p.ID, session.DeleteOptions{Cascade: true}) },
				deletion(g.ID), deletion(c.ID), deletion(p.ID))
		}},
		{"delete detaching children", func(t *testing.T, e *signed) {
			p := persisted(t, e.st, "signer", 3)
			c := forkedChild(t, e.st, p, 2, 2)
			e.wrote(t, func() error { return e.st.Delete(ctx, p.ID, session.DeleteOptions{DetachChildren: true}) },
				head(c.ID), deletion(p.ID))
		}},
		{"no head changed", func(t *testing.T, e *signed) {
			p := persisted(t, e.st, "signer", 3)
			e.wrote(t, func() error {
				_, err := e.st.SetState(ctx, p.ID, session.StateSuspended, session.StateOptions{})
				return err
			})
			e.wrote(t, func() error { return e.st.Tag(ctx, p.ID, "x") })
			e.wrote(t, func() error { _, err := e.st.Anchor(ctx, p.ID, "here", nil); return err })
			e.wrote(t, func() error { _, err := e.st.Rechain(ctx, p.ID); return err })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newSigned(t)) })
	}
}

// failing is a Witness that refuses every entry, keeping the last it was
// given.
type failing struct {
	mu   sync.Mutex
	last []byte
}

var errWitnessDown = errors.New("witness down")

func (f *failing) Add(_ context.Context, entry []byte) (uint64, error) {
	f.mu.Lock()
	f.last = entry
	f.mu.Unlock()
	return 0, errWitnessDown
}

// badSigner is a note.Signer whose Sign fails.
type badSigner struct{ note.Signer }

func (badSigner) Sign([]byte) ([]byte, error) { return nil, errors.New("no key") }

// notWitnessed checks that err says the write is stored but not
// witnessed, with the statement of session id's head as stored
// (deletion: of a session gone), signed when signedOK.
func notWitnessed(t *testing.T, c *kg.Client, v note.Verifier, err error, kind witness.Kind, id string, signedOK bool) {
	t.Helper()
	if !errors.Is(err, session.ErrNotWitnessed) {
		t.Fatalf("got %v, want ErrNotWitnessed", err)
	}
	var we *session.WitnessError
	if !errors.As(err, &we) {
		t.Fatalf("got %T, want a *session.WitnessError", err)
	}
	if we.Statement.Kind != kind || we.Statement.Session != id {
		t.Fatalf("got a statement of %s of %s, want %s of %s", we.Statement.Kind, we.Statement.Session, kind, id)
	}
	n, d, ok := storedHead(t, c, id)
	switch {
	case kind == witness.KindDeletion && ok:
		t.Errorf("%s is stored after a Delete that returned %v", id, err)
	case kind == witness.KindHead && (!ok || n != we.Statement.Turns || d != we.Statement.Digest):
		t.Errorf("got a statement of %d turns %s, the store holds %d turns %s", we.Statement.Turns, we.Statement.Digest, n, d)
	}
	if !signedOK {
		if we.Entry != nil {
			t.Errorf("got an entry, want none (signing failed)")
		}
		return
	}
	s, _, err := witness.Open(we.Entry, note.VerifierList(v))
	if err != nil {
		t.Fatalf("the error's entry: %v", err)
	}
	if s != we.Statement {
		t.Errorf("the error's entry says %+v, its statement %+v", s, we.Statement)
	}
}

// TestSigningWitnessFails checks that a write whose statement does not
// reach the witness is stored, and says so: ErrNotWitnessed, with the
// signed statement to add again.
func TestSigningWitnessFails(t *testing.T) {
	ctx := context.Background()
	ks, kv, _ := keytest.New(t, "writer.test")
	st, _, c := newStore(t, session.WithSigning(ks, &failing{}))

	s := session.New("signer")
	appendN(s, 2, "a")
	err := st.Persist(ctx, s)
	notWitnessed(t, c, kv, err, witness.KindHead, s.ID, true)
	if got := mustLoad(t, st, s.ID); len(got.Turns) != 2 {
		t.Fatalf("got %d turns stored, want 2", len(got.Turns))
	}
	appendN(s, 1, "b") // the value knows what it stored: it appends on
	notWitnessed(t, c, kv, st.Persist(ctx, s), witness.KindHead, s.ID, true)
	if got := mustLoad(t, st, s.ID); len(got.Turns) != 3 {
		t.Fatalf("got %d turns stored, want 3", len(got.Turns))
	}

	f, err := st.Fork(ctx, s.ID, 2)
	notWitnessed(t, c, kv, err, witness.KindHead, f.ID, true)
	_, r, err := st.Rewind(ctx, s.ID, 1, session.RewindOptions{})
	notWitnessed(t, c, kv, err, witness.KindHead, s.ID, true)
	if n := len(mustLoad(t, st, s.ID).Turns); n != 1 || r.Moved != 2 {
		t.Fatalf("after the rewind: got %d turns, %d moved, want 1 and 2", n, r.Moved)
	}
	if joined, ok := errors.Unwrap(err).(interface{ Unwrap() []error }); !ok || len(joined.Unwrap()) != 2 {
		t.Errorf("got %v, want the two statements of a rewind not witnessed", err)
	}
	notWitnessed(t, c, kv, st.Delete(ctx, f.ID, session.DeleteOptions{}), witness.KindDeletion, f.ID, true)

	bad, _, _ := newStore(t, session.WithSigning(badSigner{ks}, &failing{}))
	u := session.New("signer")
	notWitnessed(t, c, kv, bad.Create(ctx, u), witness.KindHead, u.ID, false)
}

// TestSigningEntryAddedAgain checks that the entry of a *WitnessError,
// added to the witness once it is back, is the statement the witness
// would have had.
func TestSigningEntryAddedAgain(t *testing.T) {
	ctx := context.Background()
	ks, kv, _ := keytest.New(t, "writer.test")
	ws, wv, _ := keytest.New(t, "witness.test")
	d, err := witness.OpenDir(ctx, t.TempDir(), ws)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, _, c := newStore(t, session.WithSigning(ks, &failing{}))
	s := persistedUnwitnessed(t, st, 3)
	err = st.Persist(ctx, s)
	if err != nil {
		t.Fatalf("Persist with nothing new: %v", err)
	}
	appendN(s, 1, "x")
	var we *session.WitnessError
	if err := st.Persist(ctx, s); !errors.As(err, &we) {
		t.Fatalf("got %v, want a *WitnessError", err)
	}
	if _, err := d.Add(ctx, we.Entry); err != nil {
		t.Fatal(err)
	}
	latest := latestHeads(t, d, wv, kv)
	n, dg, _ := storedHead(t, c, s.ID)
	if h := latest[s.ID]; h.Turns != n || h.Digest != dg {
		t.Errorf("got %d turns %s witnessed, want the stored %d turns %s", h.Turns, h.Digest, n, dg)
	}
}

// persistedUnwitnessed returns a root with n turns stored by st, whose
// witness refused its statement.
func persistedUnwitnessed(tb testing.TB, st *session.Store, n int) *session.Session {
	tb.Helper()
	s := session.New("signer")
	appendN(s, n, "s")
	if err := st.Persist(context.Background(), s); !errors.Is(err, session.ErrNotWitnessed) {
		tb.Fatalf("Persist: got %v, want ErrNotWitnessed", err)
	}
	return s
}

// latestHeads returns the latest statement per session of witness d,
// checked with its key wv, signed by kv.
func latestHeads(tb testing.TB, d *witness.Dir, wv, kv note.Verifier) map[string]witness.Head {
	tb.Helper()
	ctx := context.Background()
	_, cp, err := witness.Audit(ctx, d, wv, nil)
	if err != nil {
		tb.Fatalf("Audit: %v", err)
	}
	latest, err := witness.LatestHeads(ctx, d, cp, note.VerifierList(kv))
	if err != nil {
		tb.Fatalf("LatestHeads: %v", err)
	}
	return latest
}

// TestSigningNoKey checks that a Store given no key signs nothing and
// behaves as one without the option.
func TestSigningNoKey(t *testing.T) {
	ctx := context.Background()
	w := &failing{}
	st, _, _ := newStore(t, session.WithSigning(nil, w))
	s := persisted(t, st, "signer", 2)
	f, err := st.Fork(ctx, s.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Rewind(ctx, s.ID, 1, session.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, f.ID, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if w.last != nil {
		t.Errorf("the witness was given\n%s", w.last)
	}
}

// TestSigningLatestHeads checks that after a mix of writes by several
// writers, forks, rewinds, merges, detaches and deletes, the witness's
// latest statement of every session is the head the store holds (or its
// deletion, for a session gone), with group commit sharing requests.
func TestSigningLatestHeads(t *testing.T) {
	ctx := context.Background()
	e := newSigned(t)
	var mu sync.Mutex
	ids := map[string]bool{}
	keep := func(id string) {
		mu.Lock()
		ids[id] = true
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := session.New(fmt.Sprintf("signer-%d", w))
			for i := range 4 {
				appendN(s, 1+i%2, "w")
				if err := e.st.Persist(ctx, s); err != nil {
					t.Error(err)
					return
				}
			}
			keep(s.ID)
			f, err := e.st.Fork(ctx, s.ID, 2)
			if err != nil {
				t.Error(err)
				return
			}
			keep(f.ID)
			appendN(f, 2, "f")
			if err := e.st.Persist(ctx, f); err != nil {
				t.Error(err)
				return
			}
			switch w % 3 {
			case 0:
				_, r, err := e.st.Rewind(ctx, s.ID, 3, session.RewindOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				keep(r.Archive)
			case 1:
				if _, err := e.st.Merge(ctx, f.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "ok"}); err != nil {
					t.Error(err)
				}
				if err := e.st.Detach(ctx, f.ID, session.DetachOptions{}); err != nil {
					t.Error(err)
				}
			case 2:
				if err := e.st.Delete(ctx, s.ID, session.DeleteOptions{Cascade: true}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	latest := latestHeads(t, e.dir, e.witness, e.writer)
	for id := range ids {
		h, ok := latest[id]
		if !ok {
			t.Errorf("%s: no statement witnessed", id)
			continue
		}
		n, d, stored := storedHead(t, e.c, id)
		switch {
		case h.Kind == witness.KindDeletion && stored:
			t.Errorf("%s: witnessed deleted, stored with %d turns", id, n)
		case h.Kind == witness.KindHead && (!stored || h.Turns != n || h.Digest != d):
			t.Errorf("%s: witnessed %d turns %s, stored %d turns %s (stored: %v)", id, h.Turns, h.Digest, n, d, stored)
		}
	}
	if len(latest) != len(ids) {
		t.Errorf("got statements of %d sessions, want %d", len(latest), len(ids))
	}
}

// positioned is a Querier whose writes go to a log: it tells the
// offset of its last write, as package cluster's Client does.
type positioned struct {
	*kg.Client
	at int64
}

func (p *positioned) Position() int64 { return p.at }

// TestSigningPosition checks that a statement carries the log position
// the Querier tells, and none when it has written nothing.
func TestSigningPosition(t *testing.T) {
	fusekitest.RequireDirect(t, "it writes through a Querier of its own that tells a position of its choosing, around the log")
	ctx := context.Background()
	_, _, c := newStore(t)
	for _, tt := range []struct {
		name string
		at   int64
		want string
	}{
		{"none", -1, ""},
		{"first", 0, "kafka:0"},
		{"later", 12345, "kafka:12345"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ks, kv, _ := keytest.New(t, "writer.test")
			w := &failing{}
			st := session.NewStore(&positioned{Client: c, at: tt.at}, session.WithSigning(ks, w))
			s := session.New("signer")
			if err := st.Persist(ctx, s); !errors.Is(err, session.ErrNotWitnessed) {
				t.Fatalf("got %v, want ErrNotWitnessed", err)
			}
			got, _, err := witness.Open(w.last, note.VerifierList(kv))
			if err != nil {
				t.Fatal(err)
			}
			if got.Position != tt.want {
				t.Errorf("got position %q, want %q", got.Position, tt.want)
			}
		})
	}
}
