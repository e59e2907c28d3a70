package session_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The tests of this file hold one write's update request (the gate's late
// fault): the client hears nothing, as after its Timeout, while the store
// gets the request only once the call has returned (deliver), as when it
// sat in Fuseki's queue behind the single TDB2 writer or in the network.
// Whatever the call answered must then agree with the store: nil ⇒ the
// write is stored, exactly once; an error (a refusal or a store error) ⇒
// nothing of it is stored, even after the held request arrived.

// lateStore returns a Store over the test's dataset whose requests pass
// g, and which gives up on a request after one attempt (kg does not
// retry: the call sees the lost answer), and a Store that reads the same
// dataset directly.
func lateStore(tb testing.TB, g *gate, opts ...session.StoreOption) (*session.Store, *session.Store) {
	tb.Helper()
	st, _ := gatedStore(tb, g, kg.Config{MaxAttempts: 1, NoUpdateLock: true}, opts...) // a hook writing through the other Store must not wait for the lock an update held by g holds (Oxigraph)
	return st, ownStore(tb, fusekitest.Endpoint(tb))
}

// agrees fails tb unless the call's answer err agrees with stored, how
// many times its write is in the store once the held requests arrived.
func agrees(tb testing.TB, what string, err error, stored int) {
	tb.Helper()
	switch {
	case err == nil && stored != 1:
		tb.Errorf("%s: got nil and the write stored %d times, want once", what, stored)
	case err != nil && stored != 0:
		tb.Errorf("%s: got %v and the write stored %d times, want 0", what, err, stored)
	}
}

// delivered lets the held requests reach the store and fails tb unless
// there was one.
func delivered(tb testing.TB, g *gate) {
	tb.Helper()
	codes := g.deliver()
	if len(codes) == 0 {
		tb.Fatal("no request was held: the write went another way")
	}
	tb.Logf("held requests answered %v", codes)
}

// countTurns returns how many turns of session id hold content.
func countTurns(tb testing.TB, st *session.Store, id, content string) int {
	tb.Helper()
	n := 0
	for _, t := range mustLoad(tb, st, id).Turns {
		if t.Content == content {
			n++
		}
	}
	return n
}

// TestLateAppend: the one-request append of a value persisted before (the
// fast path) is held, and the full path's update after it never reaches
// the store. Before fences, Persist asked whether the append applied while
// the store did not have it yet, took the full path, failed there, and
// reported a store error; then the held append landed.
func TestLateAppend(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, direct := lateStore(t, g, session.WithGroupCommit(false))
	s := persisted(t, st, "fence", 2)
	s.Append("user", "late append")
	g.on("late append", late, neverSent)
	err := st.Persist(context.Background(), s)
	delivered(t, g)
	agrees(t, "persist", err, countTurns(t, direct, s.ID, "late append"))
}

// TestLateBatchMember: a batch of three appends (group commit) is held;
// the requests after it that carry the first member never reach the
// store. Each member's answer agrees with the store once the batch
// arrived. Before fences, the first member asked whether it applied
// before the store had the batch, wrote again, and failed with a store
// error; then the held batch stored its turn.
func TestLateBatchMember(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, direct := lateStore(t, g)
	blocker := persisted(t, st, "fence", 1)
	blocker.Append("user", "held")
	members := make([]*session.Session, 3)
	for i := range members {
		members[i] = persisted(t, st, "fence", 2)
		members[i].Append("user", "batch member "+itoa(i))
	}
	g.on("batch member 0", late, neverSent, neverSent, neverSent, neverSent, neverSent, neverSent)
	firstErr, errs := inOneBatch(t, st, g, persistFn(st, blocker),
		persistFn(st, members[0]), persistFn(st, members[1]), persistFn(st, members[2]))
	if firstErr != nil {
		t.Fatalf("the held write: %v", firstErr)
	}
	delivered(t, g)
	for i, s := range members {
		agrees(t, "member "+itoa(i), errs[i], countTurns(t, direct, s.ID, "batch member "+itoa(i)))
	}
}

// forked returns a stored fork, at 2, of a stored root of 3 turns.
func forked(tb testing.TB, st *session.Store) *session.Session {
	tb.Helper()
	p := persisted(tb, st, "fence", 3)
	f := mustFork(tb, p, 2)
	f.Append("user", "own")
	mustPersist(tb, st, f)
	return f
}

// detachRecord is the text every Detach update holds: its activity's IRI.
const detachRecord = ontology.ActivityBase + "detach/"

// TestLateDetach: the Detach update is held. Before fences, Detach
// returned the store error and the held update then detached the fork.
func TestLateDetach(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, direct := lateStore(t, g)
	f := forked(t, st)
	g.on(detachRecord, late)
	err := st.Detach(context.Background(), f.ID, session.DetachOptions{})
	delivered(t, g)
	root := 0
	if mustInfo(t, direct, f.ID).ParentID == "" {
		root = 1
	}
	agrees(t, "detach", err, root)
}

// TestDetachThenAppend: another writer appends to the fork right after
// the Detach update applied, before Detach asks whether it did. Before,
// Detach compared the fork's whole state with what it wrote, and reported
// ErrConflict for a detach that applied.
func TestDetachThenAppend(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, direct := lateStore(t, g)
	f := forked(t, st)
	r := g.on(detachRecord)
	r.after = func() {
		v := mustLoad(t, direct, f.ID)
		v.Append("user", "after the detach")
		mustPersist(t, direct, v)
	}
	err := st.Detach(context.Background(), f.ID, session.DetachOptions{})
	if g.matched(r) == 0 {
		t.Fatal("no detach update was sent")
	}
	root := 0
	if mustInfo(t, direct, f.ID).ParentID == "" {
		root = 1
	}
	agrees(t, "detach", err, root)
}

// expiry is the time the SetExpiry tests set, and the text its update holds.
var expiry = time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)

const expiryText = "2031-02-03T04:05:06"

// hasExpiry returns 1 when session id expires at expiry, else 0.
func hasExpiry(tb testing.TB, st *session.Store, id string) int {
	tb.Helper()
	if mustInfo(tb, st, id).ExpiresAt.Equal(expiry) {
		return 1
	}
	return 0
}

// TestLateSetExpiry: the SetExpiry update is held. Before fences,
// SetExpiry returned the store error and the held update then set the
// expiry.
func TestLateSetExpiry(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, direct := lateStore(t, g)
	s := persisted(t, st, "fence", 1)
	g.on(expiryText, late)
	err := st.SetExpiry(context.Background(), s.ID, expiry)
	delivered(t, g)
	agrees(t, "set expiry", err, hasExpiry(t, direct, s.ID))
}

// TestSetExpiryThenEnd: the session ends (another writer completes it)
// right after the SetExpiry update applied. Before, SetExpiry read the
// session's state afterwards and reported ErrState for an expiry it set.
func TestSetExpiryThenEnd(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, direct := lateStore(t, g)
	s := persisted(t, st, "fence", 1)
	r := g.on(expiryText)
	r.after = func() { mustSetState(t, direct, s.ID, session.StateCompleted) }
	err := st.SetExpiry(context.Background(), s.ID, expiry)
	if g.matched(r) == 0 {
		t.Fatal("no set-expiry update was sent")
	}
	agrees(t, "set expiry", err, hasExpiry(t, direct, s.ID))
}

// TestLateSetState: the SetState update is held. Before fences, SetState
// returned the store error and the held update then changed the state.
func TestLateSetState(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, direct := lateStore(t, g)
	s := persisted(t, st, "fence", 1)
	g.on(`"suspended"`, late)
	_, err := st.SetState(context.Background(), s.ID, session.StateSuspended, session.StateOptions{})
	delivered(t, g)
	changes := 0
	if mustInfo(t, direct, s.ID).State == session.StateSuspended {
		changes = stateChanges(t, s.ID)
	}
	agrees(t, "set state", err, changes)
}

// stateChanges returns how many StateChange records session id has.
func stateChanges(tb testing.TB, id string) int {
	tb.Helper()
	c := fusekitest.Client(tb, kg.Config{Endpoint: fusekitest.Endpoint(tb)})
	return queryInt(tb, c, `PREFIX trails: <`+ontology.NS+`>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT (COUNT(?a) AS ?n) WHERE { GRAPH ?g { ?a a trails:StateChange ; prov:used $s } }`,
		kg.Params{"s": kg.MustIRI(ontology.SessionIRI(id))})
}

// TestLateFork: the update of Store.Fork is held, and reaches the store
// while Fork reads why its fork was not created. Before fences, Fork
// asked whether the fork was stored before the store had it, then found
// it stored and refused with ErrConflict: a fork nobody was given.
func TestLateFork(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, direct := lateStore(t, g, session.WithMaxChildren(0))
	p := persisted(t, st, "fence", 2)
	g.on(ontology.ActivityBase+"fork/", late)
	var codes []int
	g.onQuery("# state:", func() { codes = g.deliver() })
	f, err := st.Fork(context.Background(), p.ID, 1)
	if codes = append(codes, g.deliver()...); len(codes) == 0 {
		t.Fatal("no request was held: the write went another way")
	}
	t.Logf("held requests answered %v", codes)
	tree, terr := direct.Tree(context.Background(), p.ID)
	if terr != nil {
		t.Fatal(terr)
	}
	agrees(t, "fork", err, len(tree.Children))
	if err == nil && len(tree.Children) == 1 && tree.Children[0].ID != f.ID {
		t.Errorf("got fork %s, stored %s", f.ID, tree.Children[0].ID)
	}
}

// TestLateAppendDeleted: the append of a value persisted before lands,
// its answer is lost, and a Delete of the session comes before Persist
// asks whether it applied: the question, about the session's graph, then
// says no. Persist must not answer a refusal (nothing written) for a
// write that landed (its shared values stay): it answers a store error,
// the outcome unknown. Before, it took the full path and answered
// ErrConflict "was deleted" (issue 22, seed 973475663517).
func TestLateAppendDeleted(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []session.StoreOption
	}{
		{"alone", []session.StoreOption{session.WithGroupCommit(false)}},
		{"group commit", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate()
			st, direct := lateStore(t, g, tc.opts...)
			s := persisted(t, st, "fence", 2)
			s.Append("user", "landed, then deleted")
			g.on("landed, then deleted", answerLost)
			g.on("INSERT DATA", pass).before = func() { // the fence
				if err := direct.Delete(ctx, s.ID, session.DeleteOptions{}); err != nil {
					t.Error(err)
				}
			}
			err := st.Persist(ctx, s)
			var ke *kg.Error
			if !errors.As(err, &ke) || errors.Is(err, session.ErrConflict) || errors.Is(err, session.ErrState) {
				t.Errorf("persist whose append landed before a delete: got %v, want a store error (outcome unknown)", err)
			}
		})
	}
}

// TestLateAppendRewound: an append whose answer is lost lands, and a
// Rewind of its session moves the turn into the archive before the
// question after the fence. The append applied: Persist must not answer
// a refusal (lincheck seed 533897560346: ErrConflict, "the session was
// rewound", for a turn the archive held).
func TestLateAppendRewound(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []session.StoreOption
	}{
		{"alone", []session.StoreOption{session.WithGroupCommit(false)}},
		{"group commit", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate()
			st, direct := lateStore(t, g, tc.opts...)
			s := persisted(t, st, "fence", 2)
			s.Append("user", "landed, then rewound")
			var archive string
			g.on("landed, then rewound", answerLost)
			g.on("INSERT DATA", pass).before = func() { // the fence
				_, r, err := direct.Rewind(ctx, s.ID, 1, session.RewindOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				archive = r.Archive
			}
			err := st.Persist(ctx, s)
			if archive == "" {
				t.Fatal("the rewind did not run")
			}
			stored := countTurns(t, direct, archive, "landed, then rewound")
			if stored != 1 || err != nil {
				t.Errorf("persist whose append landed before a rewind: got %v, the archive holds the turn %d times; want nil and once", err, stored)
			}
		})
	}
}

// TestAppendAnsweredThenDeleted: the full path's append is answered, and
// the session is deleted before Persist asks whether it applied. It did
// (its user: value stays): Persist must not answer a refusal (lincheck
// seed 533897560508: ErrConflict, "the session was deleted", for an
// append whose turn and value had landed).
func TestAppendAnsweredThenDeleted(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	g := newGate()
	st, direct := lateStore(t, g, session.WithGroupCommit(false))
	s := persisted(t, st, "fence", 2)
	s.Append("user", "answered, then deleted")
	// The fast path's request never reaches the store; the full path's
	// does, and the session is deleted as soon as it is answered.
	g.on("answered, then deleted", neverSent, pass).after = func() {
		if err := direct.Delete(ctx, s.ID, session.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}
	err := st.Persist(ctx, s)
	if errors.Is(err, session.ErrConflict) || errors.Is(err, session.ErrState) || errors.Is(err, session.ErrNotFound) {
		t.Errorf("persist whose append was answered, then its session deleted: got %v, want nil (or a store error: outcome unknown)", err)
	}
	if got := g.updates.Load(); got < 3 {
		t.Errorf("%d update requests, want the fast path's, the fence and the full path's", got)
	}
}

// TestTailAppendAnsweredThenDeleted: the append of a tail (LoadTail's
// value), answered, then its session deleted before Persist asked whether
// it applied, is not reported refused (issue 22's long run, seeds
// 498168231296 and 498168231303: ErrConflict "the session was deleted"
// for a tail append that had landed; the tail's fast path carried no
// acknowledgement and asked after the answer).
func TestTailAppendAnsweredThenDeleted(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	g := newGate()
	st, direct := lateStore(t, g, session.WithGroupCommit(false))
	s := persisted(t, st, "fence", 3)
	tail, err := st.LoadTail(ctx, s.ID, session.Tail{Last: 1})
	if err != nil {
		t.Fatal(err)
	}
	tail.Append("user", "persisted by this value first")
	if err := st.Persist(ctx, tail); err != nil {
		t.Fatal(err)
	}
	tail.Append("user", "a tail's append answered, then deleted")
	g.on("a tail's append answered, then deleted", pass).after = func() {
		if err := direct.Delete(ctx, s.ID, session.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}
	err = st.Persist(ctx, tail)
	if errors.Is(err, session.ErrConflict) || errors.Is(err, session.ErrState) || errors.Is(err, session.ErrNotFound) {
		t.Errorf("persist whose tail append was answered, then its session deleted: got %v, want nil (or a store error: outcome unknown)", err)
	}
}
