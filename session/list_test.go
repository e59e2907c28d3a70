package session_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

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

// TestBranchesTreeWhole: Branches and Tree read the sessions that have
// every column in one query (branches-whole.rq, descendants-whole.rq);
// when one lacks a column (a fork written by hand, without principal,
// creation time or kind), they read them all again with the query of
// OPTIONAL columns, and every session is there either way.
func TestBranchesTreeWhole(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "whole-"+newID(), 3)
	f1 := mustFork(t, root, 1)
	appendN(f1, 1, "f1")
	mustPersist(t, st, f1)
	f2 := mustFork(t, root, 2)
	mustPersist(t, st, f2)
	g := mustFork(t, f1, 2)
	mustPersist(t, st, g)

	requests := func(f func()) int64 {
		n := ct.requests.Load()
		f()
		return ct.requests.Load() - n
	}
	var kids []session.Info
	var tree *session.Node
	var err error
	nb := requests(func() { kids, err = st.Branches(ctx, root.ID) })
	if err != nil {
		t.Fatal(err)
	}
	nt := requests(func() { tree, err = st.Tree(ctx, root.ID) })
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 2 || kids[0].ID != f1.ID || kids[1].ID != f2.ID || kids[0].OwnTurns != 1 || kids[0].Principal != root.Principal {
		t.Fatalf("branches: got %+v, want %s (1 own turn, of %s) and %s", kids, f1.ID, root.Principal, f2.ID)
	}
	if n := nodeCount(tree); n != 4 {
		t.Fatalf("tree: got %d nodes, want 4", n)
	}
	if !fusekitest.OnCluster() && (nb != 2 || nt != 1) { // the log's client asks its appliers too
		t.Errorf("requests: Branches %d (want 2: Info and the forks), Tree %d (want 1)", nb, nt)
	}

	raw := newID()
	writeRaw(t, c, raw, root.ID, 2)
	nb = requests(func() { kids, err = st.Branches(ctx, root.ID) })
	if err != nil {
		t.Fatal(err)
	}
	nt = requests(func() { tree, err = st.Tree(ctx, root.ID) })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]session.Info{}
	for _, k := range kids {
		got[k.ID] = k
	}
	if len(kids) != 3 || got[f1.ID].OwnTurns != 1 || got[f2.ID].ForkedAt != 2 {
		t.Fatalf("branches with a hand-written fork: got %+v, want %s, %s and %s", kids, f1.ID, f2.ID, raw)
	}
	if r := got[raw]; r.ForkedAt != 2 || r.OwnTurns != 0 || r.Kind != session.KindBranch || r.ParentID != root.ID {
		t.Errorf("the hand-written fork: got %+v, want a branch of %s at 2 with no turns", r, root.ID)
	}
	if n := nodeCount(tree); n != 5 {
		t.Fatalf("tree with a hand-written fork: got %d nodes, want 5", n)
	}
	if !fusekitest.OnCluster() && (nb != 3 || nt != 2) {
		t.Errorf("requests with a hand-written fork: Branches %d (want 3: Info, the forks, all again), Tree %d (want 2)", nb, nt)
	}
}

// nodeCount counts n and the nodes below it.
func nodeCount(n *session.Node) int {
	k := 0
	n.Walk(func(*session.Node) { k++ })
	return k
}
