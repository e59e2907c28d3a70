package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// The tests of this file force batches of group commit (batch.go): a
// gate holds one update request in flight, the writes started meanwhile
// queue (session.Queued says when), and the gate lets the request go, so
// that the queued writes leave together, in one request.

// TestGroupCommitRefusedMember: a batch of five appends, the third of
// which is stale (its session moved on since it was loaded): the four
// others are stored and acknowledged, the stale one gets ErrConflict and
// stores nothing, and the five went in one update request.
func TestGroupCommitRefusedMember(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, _ := gatedStore(t, g, kg.Config{})
	ctx := context.Background()

	blocker := persisted(t, st, "group-commit", 1)
	good := make([]*session.Session, 4)
	for i := range good {
		good[i] = persisted(t, st, "group-commit", 2)
		good[i].Append("user", fmt.Sprintf("batched %d", i))
	}
	stale := persisted(t, st, "group-commit", 2) // its compare and swap will be stale: another value moves it on
	x := mustLoad(t, st, stale.ID)
	x.Append("user", "moved on")
	mustPersist(t, st, x)
	stale.Append("user", "stale")
	blocker.Append("user", "held")

	base := g.updates.Load()
	firstErr, errs := inOneBatch(t, st, g, persistFn(st, blocker),
		persistFn(st, good[0]), persistFn(st, good[1]), persistFn(st, stale), persistFn(st, good[2]), persistFn(st, good[3]))
	if firstErr != nil {
		t.Fatalf("the held write: %v", firstErr)
	}
	for i, err := range errs {
		want := error(nil)
		if i == 2 {
			want = session.ErrConflict
		}
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("write %d: got %v, want %v", i, err, want)
		}
	}
	if got := g.updates.Load() - base; got != 2 {
		t.Errorf("got %d update requests, want 2 (the held write, then the five in one batch)", got)
	}
	if b := g.body(base + 2); writesIn(b) < 5 {
		t.Errorf("the batch request holds %d writes, want at least 5:\n%s", writesIn(b), b)
	}
	for _, s := range append(good, blocker) {
		sameSession(t, mustLoad(t, st, s.ID), s)
	}
	sameSession(t, mustLoad(t, st, x.ID), x) // and not stale's turn
	if _, err := st.Load(ctx, x.ID); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitSameSession: two writers append to one session in one
// batch: the first, in order of arrival, is stored; the second gets
// ErrConflict, exactly as with two requests.
func TestGroupCommitSameSession(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, _ := gatedStore(t, g, kg.Config{})
	blocker := persisted(t, st, "group-commit", 1)
	x := persisted(t, st, "group-commit", 3)
	a, b := mustLoad(t, st, x.ID), mustLoad(t, st, x.ID)
	a.Append("user", "from a")
	b.Append("user", "from b")
	blocker.Append("user", "held")

	base := g.updates.Load()
	firstErr, errs := inOneBatch(t, st, g, persistFn(st, blocker), persistFn(st, a), persistFn(st, b))
	if firstErr != nil || errs[0] != nil {
		t.Fatalf("the held write: %v; the first writer: %v; want both nil", firstErr, errs[0])
	}
	if !errors.Is(errs[1], session.ErrConflict) {
		t.Fatalf("the second writer: got %v, want ErrConflict", errs[1])
	}
	if got := g.updates.Load() - base; got != 2 {
		t.Errorf("got %d update requests, want 2", got)
	}
	sameSession(t, mustLoad(t, st, x.ID), a)
}

// TestGroupCommitLostAnswer: the answer to a batch is lost (the store
// applied it, the client never heard), or its request never reached the
// store; each member learns its true outcome from the one query after
// the request: the members that were stored are acknowledged, the stale
// one gets ErrConflict, and those never stored (the request lost) learn
// it and write again. On Fuseki with Trails' module the batch is a
// conditional patch (batchpatch.go), the create an update record in it;
// elsewhere a SPARQL Update.
func TestGroupCommitLostAnswer(t *testing.T) {
	fusekitest.Parallel(t)
	for _, tc := range []struct {
		name     string
		f        fault
		attempts int
		create   bool
	}{
		{"answer lost, retried", answerLost, 4, true},
		{"answer lost, not retried", answerLost, 1, true},
		{"never sent", neverSent, 1, true},
		{"appends only, answer lost", answerLost, 4, false},
		{"appends only, never sent", neverSent, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate()
			st, _ := gatedStore(t, g, kg.Config{MaxAttempts: tc.attempts, Backoff: 10 * time.Millisecond})
			blocker := persisted(t, st, "group-commit", 1)
			good := make([]*session.Session, 3)
			for i := range good {
				good[i] = persisted(t, st, "group-commit", 2)
				good[i].Append("user", fmt.Sprintf("batched %d", i))
			}
			created := session.New("group-commit") // a create in the batch too
			created.Append("user", "new")
			stale := persisted(t, st, "group-commit", 2)
			x := mustLoad(t, st, stale.ID)
			x.Append("user", "moved on")
			mustPersist(t, st, x)
			stale.Append("user", "stale")
			blocker.Append("user", "held")

			base := g.updates.Load()
			g.fault(base+2, tc.f) // the batch's request
			writes := []func() error{persistFn(st, good[0]), persistFn(st, stale), persistFn(st, good[1]), persistFn(st, good[2])}
			members := []*session.Session{good[0], nil, good[1], good[2]}
			if tc.create {
				writes = slices.Insert(writes, 3, func() error { return st.Create(context.Background(), created) })
				members = slices.Insert(members, 3, created)
			}
			firstErr, errs := inOneBatch(t, st, g, persistFn(st, blocker), writes...)
			if firstErr != nil {
				t.Fatalf("the held write: %v", firstErr)
			}
			b := g.body(base + 2)
			if patch, want := strings.HasPrefix(b, "trails-conditional-patch/1\n"), fusekitest.TestStore() == kg.Fuseki; patch != want || patch && writesIn(b) != len(writes) {
				t.Errorf("the batch's request: a conditional patch %v (of %d writes), want %v (of %d)", patch, writesIn(b), want, len(writes))
			}
			for i, err := range errs {
				switch {
				case i == 1:
					if !errors.Is(err, session.ErrConflict) {
						t.Errorf("the stale write: got %v, want ErrConflict", err)
					}
				case err != nil:
					t.Errorf("write %d: got %v, want nil", i, err)
				}
			}
			sameSession(t, mustLoad(t, st, x.ID), x)
			for _, s := range members {
				if s != nil {
					sameSession(t, mustLoad(t, st, s.ID), s)
				}
			}
		})
	}
}

// TestOneUpdateOneTransaction checks on the test store (Fuseki, or
// Oxigraph with TRAILS_TEST_STORE=oxigraph) what group commit builds on:
// the operations of one update request joined by ';' run in order, each
// seeing the ones before, a conditional one whose condition fails stores
// nothing while its neighbours store theirs, and a request one of whose
// operations fails stores nothing at all (one transaction). Oxigraph
// refuses a PREFIX after ';' (SPARQL allows it), so a batch declares
// its prefixes once, at its start.
func TestOneUpdateOneTransaction(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.New(t)
	ctx := context.Background()
	base := fmt.Sprintf("https://example.org/tx/%d/", time.Now().UnixNano())
	count := func(graph string) int {
		t.Helper()
		res, err := c.Select(ctx, "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <"+base+graph+"> { ?s ?p ?o } }")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := res.Solutions[0].Int("n")
		return n
	}
	r := strings.NewReplacer("$G", "<"+base+"g>", "$H", "<"+base+"h>", "$M", "<"+base+"missing>", "$A", "<"+base+"a>", "$B", "<"+base+"b>")

	err := clustertest.Update(ctx, t, c, r.Replace(`PREFIX x: <https://example.org/x#>
INSERT DATA { GRAPH $G { $A x:p 1 } } ;
INSERT { GRAPH $G { $A x:q 2 } } WHERE { GRAPH $G { $A x:p 1 } } ;
INSERT { GRAPH $G { $A x:r 3 } } WHERE { GRAPH $G { $A x:p 99 } } ;
INSERT { GRAPH $G { $B x:p 4 } } WHERE { }`))
	if err != nil {
		t.Fatal(err)
	}
	if n := count("g"); n != 3 {
		t.Errorf("joined operations: got %d triples, want 3 (the second sees the first; the third's condition fails and stores nothing; the fourth stores its own)", n)
	}

	err = clustertest.Update(ctx, t, c, r.Replace(`INSERT DATA { GRAPH $H { $A <https://example.org/x#p> 1 } } ;
ADD $M TO $M ;
DROP GRAPH $M`))
	if !errors.Is(err, kg.ErrUnavailable) && !errors.Is(err, kg.ErrBadRequest) {
		t.Fatalf("a request with a failing operation: got %v, want a refusal", err)
	}
	if n := count("h"); n != 0 {
		t.Errorf("a request with a failing operation: got %d triples stored by its first operation, want 0 (one transaction)", n)
	}

	err = clustertest.Update(ctx, t, c, r.Replace(`INSERT DATA { GRAPH $H { $A <https://example.org/x#p> 1 } } ;
PREFIX x: <https://example.org/x#>
INSERT DATA { GRAPH $H { $B x:p 2 } }`))
	switch c.Store() {
	case kg.Oxigraph:
		if !errors.Is(err, kg.ErrBadRequest) {
			t.Errorf("a PREFIX after ';' on Oxigraph: got %v, want ErrBadRequest (if it is taken now, batch.go's prologue may go)", err)
		}
	default:
		if err != nil {
			t.Errorf("a PREFIX after ';': got %v, want nil", err)
		}
	}
}

// TestGroupCommitMixed: a batch of an append, a create, a state change and
// an append to the session whose state changes, in that order: each is
// stored, and the last is refused with ErrState, as after the state
// change in a request of its own.
func TestGroupCommitMixed(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, _ := gatedStore(t, g, kg.Config{})
	ctx := context.Background()
	blocker := persisted(t, st, "group-commit", 1)
	a := persisted(t, st, "group-commit", 2)
	done := persisted(t, st, "group-commit", 2)
	fresh := session.New("group-commit")
	fresh.Append("user", "created in a batch")
	blocker.Append("user", "held")
	a.Append("user", "batched")
	done.Append("user", "after completion")

	var tr session.Transition
	base := g.updates.Load()
	firstErr, errs := inOneBatch(t, st, g, persistFn(st, blocker),
		persistFn(st, a),
		func() error { return st.Create(ctx, fresh) },
		func() error {
			var err error
			tr, err = st.SetState(ctx, done.ID, session.StateCompleted, session.StateOptions{Reason: "batched"})
			return err
		},
		persistFn(st, done))
	if firstErr != nil {
		t.Fatalf("the held write: %v", firstErr)
	}
	for i, err := range errs[:3] {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if !errors.Is(errs[3], session.ErrState) {
		t.Errorf("the append after the state change: got %v, want ErrState", errs[3])
	}
	if !tr.Changed || tr.To != session.StateCompleted {
		t.Errorf("got transition %+v, want a change to completed", tr)
	}
	if got := g.updates.Load() - base; got != 2 {
		t.Errorf("got %d update requests, want 2", got)
	}
	sameSession(t, mustLoad(t, st, a.ID), a)
	sameSession(t, mustLoad(t, st, fresh.ID), fresh)
	in, err := st.Info(ctx, done.ID)
	if err != nil {
		t.Fatal(err)
	}
	if in.State != session.StateCompleted || in.Turns != 2 {
		t.Errorf("got %s with %d turns, want completed with 2", in.State, in.Turns)
	}
}

// TestGroupCommitSameID: two Creates of one id by one principal, stamped
// in the same millisecond (a fixed clock), in one batch: exactly one
// succeeds and the other gets ErrExists, as with two requests, and the
// store holds the one that succeeded; also when the batch's answer is
// lost. Each member's outcome comes from what only its own write stores
// (its receipt), not from the state both would leave. The batch's
// receipt graph goes with the Store's next write.
func TestGroupCommitSameID(t *testing.T) {
	fusekitest.Parallel(t)
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	root := func(testing.TB, *session.Store) *session.Session { return session.New("same-id") }
	for _, tc := range []struct {
		name     string
		make     func(tb testing.TB, st *session.Store) *session.Session
		f        fault
		attempts int
	}{
		{"root without turns", root, pass, 0},
		{"root with a turn", func(testing.TB, *session.Store) *session.Session {
			s := session.New("same-id")
			s.Append("user", "the same turn")
			s.Turns[0].Created = at
			return s
		}, pass, 0},
		{"fork", func(tb testing.TB, st *session.Store) *session.Session {
			return mustFork(tb, persisted(tb, st, "same-id", 2), 1)
		}, pass, 0},
		{"answer lost, retried", root, answerLost, 4},
		{"answer lost, fenced", root, answerLost, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate()
			st, c := gatedStore(t, g, kg.Config{MaxAttempts: tc.attempts, Backoff: 10 * time.Millisecond},
				session.WithClock(func() time.Time { return at }))
			ctx := context.Background()
			blocker := persisted(t, st, "same-id", 1)
			blocker.Append("user", "held")
			a := tc.make(t, st)
			b := *a // the same id, principal and turns; other start values
			b.Turns = slices.Clone(a.Turns)
			a.Initial = map[string]json.RawMessage{"k": json.RawMessage(`"a"`)}
			b.Initial = map[string]json.RawMessage{"k": json.RawMessage(`"b"`)}

			base := g.updates.Load()
			g.fault(base+2, tc.f) // the batch's request
			firstErr, errs := inOneBatch(t, st, g, persistFn(st, blocker),
				func() error { return st.Create(ctx, a) },
				func() error { return st.Create(ctx, &b) })
			if firstErr != nil {
				t.Fatalf("the held write: %v", firstErr)
			}
			if errs[0] != nil || !errors.Is(errs[1], session.ErrExists) {
				t.Fatalf("the two creates: got %v and %v, want nil and ErrExists", errs[0], errs[1])
			}
			if tc.f == pass {
				if got := g.updates.Load() - base; got != 2 {
					t.Errorf("got %d update requests, want 2 (the held write, then the two creates in one batch)", got)
				}
			}
			got := mustLoad(t, st, a.ID)
			if v := string(got.Values["k"]); v != `"a"` {
				t.Errorf("stored start value: got %s, want %q (the first create's)", v, `"a"`)
			}
			sameHistory(t, got.Turns, a.Turns)

			rg := g.receiptGraph(base + 2)
			if rg == "" {
				t.Fatalf("the batch request writes no receipt graph:\n%s", g.body(base+2))
			}
			receipt := "ASK { GRAPH " + rg + " { ?r ?p ?o } }"
			if ok, err := c.Ask(ctx, receipt); err != nil || !ok {
				t.Errorf("the receipt graph after the batch: got %v, %v, want it stored until the next write", ok, err)
			}
			blocker.Append("user", "next")
			mustPersist(t, st, blocker)
			if ok, err := c.Ask(ctx, receipt); err != nil || ok {
				t.Errorf("the receipt graph after the next write: got %v, %v, want it dropped", ok, err)
			}
		})
	}
}

// TestGroupCommitSameTurns: two values of one session append the same
// turn (same role, content and time) in one batch. The first is stored;
// the second's compare and swap fails, and its outcome is what the same
// two appends in two requests give: the store holds exactly its turns,
// so Persist has nothing left to write and succeeds (Persist is
// idempotent), and the turn is stored once.
func TestGroupCommitSameTurns(t *testing.T) {
	fusekitest.Parallel(t)
	g := newGate()
	st, _ := gatedStore(t, g, kg.Config{})
	blocker := persisted(t, st, "same-turns", 1)
	x := persisted(t, st, "same-turns", 2)
	a, b := mustLoad(t, st, x.ID), mustLoad(t, st, x.ID)
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	for _, s := range []*session.Session{a, b} {
		s.Append("user", "the same turn")
		s.Turns[len(s.Turns)-1].Created = at
	}
	blocker.Append("user", "held")

	base := g.updates.Load()
	firstErr, errs := inOneBatch(t, st, g, persistFn(st, blocker), persistFn(st, a), persistFn(st, b))
	if firstErr != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("the held write: %v; the appends: %v, %v; want all nil", firstErr, errs[0], errs[1])
	}
	if got := g.updates.Load() - base; got != 2 {
		t.Errorf("got %d update requests, want 2", got)
	}
	got := mustLoad(t, st, x.ID)
	sameSession(t, got, a)
	if len(got.Turns) != 3 {
		t.Errorf("got %d turns, want 3", len(got.Turns))
	}
	// Both values go on appending from what they stored.
	a.Append("user", "after, from a")
	mustPersist(t, st, a)
	b.Append("user", "after, from b")
	if err := st.Persist(context.Background(), b); !errors.Is(err, session.ErrConflict) {
		t.Errorf("b's next append after a's: got %v, want ErrConflict", err)
	}
}
