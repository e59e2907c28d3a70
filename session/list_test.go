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
