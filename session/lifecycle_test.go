package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

func TestReplay(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 6)
	f := mustFork(t, root, 4)
	appendN(f, 3, "f")
	mustPersist(t, st, f)

	triples := func() int {
		res, err := c.Query(ctx, "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := res.Solutions[0].Int("n")
		return n
	}
	before := triples()
	for _, tc := range []struct {
		name string
		opts []session.ReplayOption
		want []session.Turn
	}{
		{"all", nil, f.Turns},
		{"up to 0", []session.ReplayOption{session.UpTo(0)}, nil},
		{"up to 2 (inherited only)", []session.ReplayOption{session.UpTo(2)}, f.Turns[:2]},
		{"up to 5 (across the fork point)", []session.ReplayOption{session.UpTo(5)}, f.Turns[:5]},
		{"beyond the end", []session.ReplayOption{session.UpTo(99)}, f.Turns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs := ct.requests.Load()
			got, err := st.Replay(ctx, f.ID, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			sameHistory(t, got, tc.want)
			if n := ct.requests.Load() - reqs; n > 2 {
				t.Fatalf("got %d requests, want at most 2 (queries only)", n)
			}
		})
	}
	if after := triples(); after != before {
		t.Fatalf("replay changed the store: %d triples before, %d after", before, after)
	}
	if _, err := st.Replay(ctx, f.ID, session.UpTo(-1)); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("UpTo(-1): got %v, want ErrInvalid", err)
	}
	loaded := mustLoad(t, st, f.ID)
	replayed, err := st.Replay(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameHistory(t, replayed, loaded.Turns)
}

func TestBranchesAndList(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t, session.WithClock(tick()))
	ctx := context.Background()
	principal := "lister-" + newID()
	root := persisted(t, st, principal, 4)
	var forks []*session.Session
	for _, at := range []int{1, 3, 2} {
		f := mustFork(t, root, at)
		appendN(f, 2, "f")
		mustPersist(t, st, f)
		forks = append(forks, f)
	}
	grandchild := mustFork(t, forks[0], 2)
	mustPersist(t, st, grandchild)

	kids, err := st.Branches(ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 3 {
		t.Fatalf("got %d branches, want 3", len(kids))
	}
	for i, k := range kids { // oldest first
		f := forks[i]
		want := session.Info{ID: f.ID, Principal: principal, ParentID: root.ID, Branch: f.Branch,
			ForkedAt: f.ForkedAt, OwnTurns: 2, Turns: f.ForkedAt + 2, Tags: []string{}, Kind: session.KindBranch, State: session.StateActive}
		k.Created = time.Time{}
		if !reflect.DeepEqual(k, want) {
			t.Fatalf("branch %d: got %+v, want %+v", i, k, want)
		}
	}
	if _, err := st.Branches(ctx, newID()); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("branches of a missing session: got %v, want ErrNotFound", err)
	}

	all, err := st.List(ctx, session.ByPrincipal(principal))
	if err != nil {
		t.Fatal(err)
	}
	wantOrder := []string{grandchild.ID, forks[2].ID, forks[1].ID, forks[0].ID, root.ID} // newest first
	if len(all) != len(wantOrder) {
		t.Fatalf("got %d sessions, want %d", len(all), len(wantOrder))
	}
	for i, in := range all {
		if in.ID != wantOrder[i] {
			t.Fatalf("session %d: got %s, want %s", i, in.ID, wantOrder[i])
		}
	}
	if all[4].Turns != 4 || all[4].OwnTurns != 4 || all[4].ParentID != "" || all[4].Branch != session.MainBranch {
		t.Fatalf("root info: got %+v", all[4])
	}
	roots, err := st.List(ctx, session.ByPrincipal(principal), session.Roots())
	if err != nil || len(roots) != 1 || roots[0].ID != root.ID {
		t.Fatalf("roots: got %+v, %v; want only %s", roots, err, root.ID)
	}
	if none, err := st.List(ctx, session.ByPrincipal("nobody-"+newID())); err != nil || len(none) != 0 {
		t.Fatalf("unknown principal: got %+v, %v; want none", none, err)
	}
}

// tick returns a clock that advances a second per call, so that creation
// times order sessions deterministically.
func tick() func() time.Time {
	t := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func TestDelete(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 3)
	f := mustFork(t, root, 2)
	appendN(f, 1, "f")
	mustPersist(t, st, f)

	err := st.Delete(ctx, root.ID)
	if !errors.Is(err, session.ErrHasChildren) {
		t.Fatalf("got %v, want ErrHasChildren", err)
	}
	sameSession(t, mustLoad(t, st, root.ID), root)

	if err := st.Delete(ctx, f.ID, session.By("operator")); err != nil {
		t.Fatalf("delete leaf: %v", err)
	}
	if _, err := st.Load(ctx, f.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("load deleted: got %v, want ErrNotFound", err)
	}
	if err := st.Delete(ctx, f.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("delete twice: got %v, want ErrNotFound", err)
	}
	// Its graph is gone; its PROV records stay, with the deletion.
	q, _ := kg.Bind(`PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX dcterms: <http://purl.org/dc/terms/>
SELECT ?fork ?del ?who WHERE {
  $s prov:wasGeneratedBy ?fork . ?fork a trails:Fork .
  ?del a trails:Deletion ; prov:invalidated $s ; prov:wasAssociatedWith/dcterms:identifier ?who .
}`, kg.Params{"s": kg.MustIRI(ontology.SessionIRI(f.ID))})
	res, err := c.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Solutions) != 1 || res.Solutions[0].String("who") != "operator" {
		t.Fatalf("got PROV %+v, want the fork and one deletion by operator", res.Solutions)
	}
	if _, err := c.GetGraph(ctx, kg.MustIRI(ontology.SessionIRI(f.ID))); !errors.Is(err, kg.ErrNotFound) {
		t.Fatalf("the deleted session's graph: got %v, want ErrNotFound", err)
	}
	if err := st.Delete(ctx, root.ID); err != nil {
		t.Fatalf("delete the root once its fork is gone: %v", err)
	}
}

func TestDetach(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 5)
	mid := mustFork(t, root, 3)
	appendN(mid, 3, "mid")
	mustPersist(t, st, mid)
	leaf := mustFork(t, mid, 5)
	appendN(leaf, 2, "leaf")
	mustPersist(t, st, leaf)
	before := mustLoad(t, st, leaf.ID)

	plan, err := st.PlanDetach(ctx, leaf.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameSession(t, mustLoad(t, st, leaf.ID), before) // the plan changed nothing
	r, err := st.DetachReport(ctx, leaf.ID)
	if err != nil {
		t.Fatalf("detach: %v", err)
	}
	if r.Copied != 5 || r.From[root.ID] != 3 || r.From[mid.ID] != 2 || r.Parent != mid.ID {
		t.Fatalf("got %+v, want 5 copied: 3 from the root, 2 from mid", r)
	}
	if !reflect.DeepEqual(plan, r) {
		t.Fatalf("plan %+v, done %+v: want the same", plan, r)
	}
	after := mustLoad(t, st, leaf.ID)
	sameHistory(t, after.Turns, before.Turns)
	if after.ParentID != "" || after.ForkedAt != 0 || after.Depth() != 0 {
		t.Fatalf("got parent %q at %d depth %d, want a root", after.ParentID, after.ForkedAt, after.Depth())
	}
	if after.Branch != leaf.Branch {
		t.Fatalf("got branch %q, want the label it had, %q", after.Branch, leaf.Branch)
	}
	// Its ancestors can go now.
	if err := st.Delete(ctx, mid.ID); err != nil {
		t.Fatalf("delete former parent: %v", err)
	}
	if err := st.Delete(ctx, root.ID); err != nil {
		t.Fatalf("delete former root: %v", err)
	}
	sameHistory(t, mustLoad(t, st, leaf.ID).Turns, before.Turns)
	// It can grow as a root.
	after.Append("user", "after detach")
	mustPersist(t, st, after)
	sameSession(t, mustLoad(t, st, leaf.ID), after)
	// Detaching a root does nothing; the stale pre-detach copy conflicts.
	if err := st.Detach(ctx, leaf.ID); err != nil {
		t.Fatalf("detach a root: %v", err)
	}
	leaf.Append("user", "stale writer")
	if err := st.Persist(ctx, leaf); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("persist the pre-detach copy: got %v, want ErrConflict", err)
	}
	// PROV keeps the derivation and records the detach.
	q, _ := kg.Bind(`PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { $s prov:wasDerivedFrom $p . ?d a trails:Detach ; prov:used $p , $s . }`,
		kg.Params{"s": kg.MustIRI(ontology.SessionIRI(leaf.ID)), "p": kg.MustIRI(ontology.SessionIRI(mid.ID))})
	if ok, err := c.Ask(ctx, q); err != nil || !ok {
		t.Fatalf("PROV of the detach: got %v, %v; want true", ok, err)
	}
}

func TestLegacySessionLoadsAsRoot(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	nq, err := os.ReadFile(filepath.Join("..", "testdata", "session", "legacy", "session.nq"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "0190a000-0000-7000-8000-00000000000a"
	g := kg.MustIRI(ontology.SessionIRI(id))
	c.DeleteGraph(ctx, g) // a rerun against a kept dataset
	if err := c.LoadQuads(ctx, nq); err != nil {
		t.Fatal(err)
	}
	s := mustLoad(t, st, id)
	if s.ParentID != "" || s.ForkedAt != 0 || s.Branch != session.MainBranch || s.Principal != "legacy-agent" {
		t.Fatalf("got %+v, want a root on main of legacy-agent", s)
	}
	wantRoles := []string{"system", "user", "assistant"}
	if len(s.Turns) != 3 {
		t.Fatalf("got %d turns, want 3", len(s.Turns))
	}
	for i, turn := range s.Turns {
		if turn.Role != wantRoles[i] || turn.Branch != session.MainBranch || turn.Created.Second() != i {
			t.Fatalf("turn %d: got %+v", i, turn)
		}
	}
	in, err := st.Info(ctx, id)
	if err != nil || in.OwnTurns != 3 || in.Turns != 3 {
		t.Fatalf("info: got %+v, %v; want 3 turns", in, err)
	}
	// It can be forked and continued like any root.
	f := mustFork(t, s, 2)
	appendN(f, 1, "f")
	mustPersist(t, st, f)
	sameSession(t, mustLoad(t, st, f.ID), f)
	s.Append("user", "a new turn on the old session")
	mustPersist(t, st, s)
	sameSession(t, mustLoad(t, st, id), s)
	// A stale copy of it conflicts like any other.
	stale := mustLoad(t, st, id)
	stale.Turns[0].Content = "changed"
	if err := st.Persist(ctx, stale); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
}

// TestStoreUnavailable checks that a store error comes back wrapped, with
// the kg sentinel.
func TestStoreUnavailable(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Client(t, kg.Config{Endpoint: "http://127.0.0.1:1/trails", MaxAttempts: 1})
	st := session.NewStore(c)
	if _, err := st.Load(context.Background(), newID()); !errors.Is(err, kg.ErrUnavailable) {
		t.Fatalf("got %v, want kg.ErrUnavailable", err)
	}
	s := session.New("x")
	s.Append("user", "hi")
	if err := st.Persist(context.Background(), s); !errors.Is(err, kg.ErrUnavailable) {
		t.Fatalf("got %v, want kg.ErrUnavailable", err)
	}
}

// TestNoResurrection: a write that comes late, from a copy held before the
// delete, does not bring a deleted session back.
func TestNoResurrection(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	s := persisted(t, st, "alice", 2)
	late := *s // another writer's copy, taken before the delete
	late.Turns = append([]session.Turn(nil), s.Turns...)
	if err := st.Delete(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	late.Append("user", "a late turn")
	if err := st.Persist(ctx, &late); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("late persist: got %v, want ErrConflict", err)
	}
	if _, err := st.Load(ctx, s.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("load after the late persist: got %v, want ErrNotFound", err)
	}
}
