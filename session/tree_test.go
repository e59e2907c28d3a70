package session_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// family stores root ← a ← aa, root ← b and returns them.
func family(t *testing.T, st *session.Store) (root, a, aa, b *session.Session) {
	t.Helper()
	root = persisted(t, st, "fam-"+newID(), 4)
	a = mustFork(t, root, 2)
	appendN(a, 2, "a")
	mustPersist(t, st, a)
	aa = mustFork(t, a, 3)
	appendN(aa, 1, "aa")
	mustPersist(t, st, aa)
	b = mustFork(t, root, 4)
	appendN(b, 1, "b")
	mustPersist(t, st, b)
	return
}

func ids(n *session.Node) []string {
	var out []string
	n.Walk(func(n *session.Node) { out = append(out, n.ID) })
	return out
}

func TestTree(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t, session.WithClock(tick()))
	ctx := context.Background()
	root, a, aa, b := family(t, st)
	tree, err := st.Tree(ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(tree), []string{root.ID, a.ID, aa.ID, b.ID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if tree.Children[0].Children[0].ForkedAt != 3 || tree.Children[1].Turns != 5 {
		t.Fatalf("got fork point %d and %d turns, want 3 and 5", tree.Children[0].Children[0].ForkedAt, tree.Children[1].Turns)
	}
	sub, err := st.Tree(ctx, a.ID)
	if err != nil || !reflect.DeepEqual(ids(sub), []string{a.ID, aa.ID}) {
		t.Fatalf("subtree: got %v, %v", ids(sub), err)
	}
	if _, err := st.Tree(ctx, newID()); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
	forest, err := admin.New(c).Forest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range forest {
		if n.ID == root.ID {
			found = true
			if !reflect.DeepEqual(ids(n), ids(tree)) {
				t.Fatalf("forest tree: got %v, want %v", ids(n), ids(tree))
			}
		}
		if n.ParentID != "" && !n.ParentMissing {
			t.Fatalf("a fork %s at the top of the forest without ParentMissing", n.ID)
		}
	}
	if !found {
		t.Fatalf("root %s not in the forest", root.ID)
	}
}

func TestDeleteCascade(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t, session.WithClock(tick()))
	ctx := context.Background()
	root, a, aa, b := family(t, st)

	plan, err := st.PlanDelete(ctx, root.ID, session.DeleteOptions{Cascade: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []session.Step{
		{Action: "delete", Session: aa.ID, Turns: 1},
		{Action: "delete", Session: a.ID, Turns: 2},
		{Action: "delete", Session: b.ID, Turns: 1},
		{Action: "delete", Session: root.ID, Turns: 4},
	}
	if !reflect.DeepEqual(plan, want) {
		t.Fatalf("got plan %+v, want %+v", plan, want)
	}
	// The plan changed nothing.
	sameSession(t, mustLoad(t, st, aa.ID), aa)

	// Interrupted after two steps: nothing is half-deleted, and the same
	// call finishes the job.
	ctx2, cancel := context.WithCancel(ctx)
	var seen []session.Step
	err = st.Delete(ctx2, root.ID, session.DeleteOptions{Cascade: true, Progress: func(done, total int, s session.Step) {
		seen = append(seen, s)
		if done == 2 {
			cancel()
		}
	}})
	var se *session.StepsError
	if !errors.As(err, &se) || !errors.Is(err, context.Canceled) || len(se.Done) != 2 {
		t.Fatalf("got %v, want a StepsError after 2 steps wrapping context.Canceled", err)
	}
	if _, err := st.Load(ctx, a.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("a: got %v, want ErrNotFound", err)
	}
	sameSession(t, mustLoad(t, st, b.ID), b)
	if err := st.Delete(ctx, root.ID, session.DeleteOptions{Cascade: true}); err != nil {
		t.Fatalf("re-run: %v", err)
	}
	for _, s := range []*session.Session{root, a, aa, b} {
		if _, err := st.Load(ctx, s.ID); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("%s: got %v, want ErrNotFound", s.ID, err)
		}
	}
}

func TestDeleteDetachChildren(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t, session.WithClock(tick()))
	ctx := context.Background()
	root, a, aa, b := family(t, st)
	if err := st.Delete(ctx, root.ID, session.DeleteOptions{}); !errors.Is(err, session.ErrHasChildren) {
		t.Fatalf("got %v, want ErrHasChildren", err)
	}
	if _, err := st.PlanDelete(ctx, root.ID, session.DeleteOptions{Cascade: true, DetachChildren: true}); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("both options: got %v, want ErrInvalid", err)
	}
	plan, err := st.PlanDelete(ctx, root.ID, session.DeleteOptions{DetachChildren: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []session.Step{
		{Action: "detach", Session: a.ID, Turns: 2},
		{Action: "detach", Session: b.ID, Turns: 4},
		{Action: "delete", Session: root.ID, Turns: 4},
	}
	if !reflect.DeepEqual(plan, want) {
		t.Fatalf("got plan %+v, want %+v", plan, want)
	}
	beforeA, beforeAA, beforeB := mustLoad(t, st, a.ID), mustLoad(t, st, aa.ID), mustLoad(t, st, b.ID)
	if err := st.Delete(ctx, root.ID, session.DeleteOptions{DetachChildren: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, root.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("root: got %v, want ErrNotFound", err)
	}
	for _, want := range []*session.Session{beforeA, beforeAA, beforeB} {
		sameHistory(t, mustLoad(t, st, want.ID).Turns, want.Turns)
	}
	if got := mustLoad(t, st, a.ID); got.ParentID != "" {
		t.Fatalf("a: got parent %q, want a root", got.ParentID)
	}
	if got := mustLoad(t, st, aa.ID); got.ParentID != a.ID {
		t.Fatalf("aa: got parent %q, want still %s", got.ParentID, a.ID)
	}
}

// TestParentCycle stores two sessions as each other's parent, x ← y ← x
// (as an older version, a hand edit or an import could leave them), with a
// fork below x, written with INSERT DATA behind the library's back. Check
// reports the cycle naming the command that removes it; Tree, Forest and
// List show both sessions marked Cycle instead of hiding them; Delete with
// Cascade from x removes the cycle and the fork below it in atomic steps,
// recording each deletion, leaves every other session alone, and Check
// finds nothing afterwards.
func TestParentCycle(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	c := fusekitest.Empty(t)
	if _, err := admin.New(c).Init(ctx); err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(querier(t, c)) // after Init, which writes directly: a replicated store starts as a copy of it
	other := persisted(t, st, "bystander", 2)
	x, y, below := newID(), newID(), newID()
	var d kg.Data
	storetest.AddRawFork(&d, x, y, 0)
	storetest.AddRawFork(&d, y, x, 0)
	storetest.AddRawFork(&d, below, x, 0)
	storetest.RawChange(t, c, nil, &d)

	fs, err := storetest.Check(ctx, admin.New(c))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{x, y} {
		want := "trails-admin delete " + id + " --cascade"
		if !slices.ContainsFunc(fs, func(f admin.Finding) bool {
			return f.Rule == admin.RuleCycle && f.Resource == id && strings.Contains(f.Message, want)
		}) {
			t.Errorf("check: no cycle finding for %s naming %q in:\n%s", id, want, storetest.FindingsText(fs))
		}
	}

	cycle := map[string]bool{x: true, y: true}
	tree, err := st.Tree(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	tree.Walk(func(n *session.Node) {
		got = append(got, n.ID)
		if n.Cycle != cycle[n.ID] {
			t.Errorf("tree: %s: got Cycle %v, want %v", n.ID, n.Cycle, cycle[n.ID])
		}
	})
	slices.Sort(got)
	if want := sortedIDs(x, y, below); !slices.Equal(got, want) {
		t.Errorf("tree of x: got %v, want %v", got, want)
	}
	forest, err := admin.New(c).Forest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, top := range forest {
		top.Walk(func(n *session.Node) {
			if n.ID != other.ID {
				got = append(got, n.ID)
			}
			if n.Cycle != cycle[n.ID] {
				t.Errorf("forest: %s: got Cycle %v, want %v", n.ID, n.Cycle, cycle[n.ID])
			}
		})
	}
	slices.Sort(got)
	if want := sortedIDs(x, y, below); !slices.Equal(got, want) {
		t.Errorf("forest: got %v besides the bystander, want %v", got, want)
	}
	infos, err := st.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 4 {
		t.Errorf("list: got %d sessions, want 4", len(infos))
	}
	for _, in := range infos {
		if in.Cycle != cycle[in.ID] {
			t.Errorf("list: %s: got Cycle %v, want %v", in.ID, in.Cycle, cycle[in.ID])
		}
	}

	if err := st.Delete(ctx, x, session.DeleteOptions{}); !errors.Is(err, session.ErrHasChildren) {
		t.Fatalf("delete x alone: got %v, want ErrHasChildren", err)
	}
	plan, err := st.PlanDelete(ctx, x, session.DeleteOptions{Cascade: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []session.Step{{Action: "delete", Session: below}, {Action: "delete", Session: y}, {Action: "delete", Session: x}}
	if !reflect.DeepEqual(plan, want) {
		t.Fatalf("plan: got %+v, want %+v", plan, want)
	}
	if err := st.Delete(ctx, x, session.DeleteOptions{Cascade: true}); err != nil {
		t.Fatalf("delete x with Cascade: %v", err)
	}
	for _, id := range []string{x, y, below} {
		if _, err := st.Info(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%s: got %v, want ErrNotFound", id, err)
		}
		if n := provCount(t, c, ontology.Deletion, ontology.ProvInvalidated, id); n != 1 {
			t.Errorf("%s: %d Deletion records, want 1", id, n)
		}
	}
	sameSession(t, mustLoad(t, st, other.ID), other)
	mustCheck(t, c)
}

func sortedIDs(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

// TestTreeAndBranchesAsInfo checks that Tree and Branches describe each
// session as Info does, for forks stored through Persist and for forks
// written by hand: one without a kind, principal or creation time, and one
// whose principal's agent is described in another graph than its own
// (read by the fallback query). The queries behind Tree and Branches leave
// out columns that the caller knows (the parent of every branch) or
// rarely needs (the agent where the session's graph names its principal).
func TestTreeAndBranchesAsInfo(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t, session.WithClock(tick()))
	ctx := context.Background()
	root, a, _, _ := family(t, st)
	bare, elsewhere := newID(), newID()
	writeRaw(t, c, bare, root.ID, 1)
	writeRaw(t, c, elsewhere, a.ID, 2)
	g, agent := kg.MustIRI(ontology.SessionIRI(elsewhere)), kg.MustIRI("urn:trails-test:agent:"+elsewhere)
	var d kg.Data
	d.Add(g, g, kg.MustIRI(ontology.Principal), agent)
	d.Add(kg.MustIRI("urn:trails-test:agents"), agent, kg.MustIRI(ontology.DCTIdentifier), kg.String("far-"+elsewhere))
	u, err := d.InsertData()
	if err != nil {
		t.Fatal(err)
	}
	if err := clustertest.Update(ctx, t, c, u); err != nil {
		t.Fatal(err)
	}

	asInfo := func(what string, got session.Info) {
		t.Helper()
		want, err := st.Info(ctx, got.ID)
		if err != nil {
			t.Fatalf("%s: info %s: %v", what, got.ID, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want Info's %+v", what, got, want)
		}
	}
	tree, err := st.Tree(ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	tree.Walk(func(nd *session.Node) { n++; asInfo("tree", nd.Info) })
	if n != 6 {
		t.Errorf("tree: got %d sessions, want 6", n)
	}
	for _, parent := range []string{root.ID, a.ID} {
		kids, err := st.Branches(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			asInfo("branches", k)
		}
	}
	in, err := st.Info(ctx, elsewhere)
	if err != nil || in.Principal != "far-"+elsewhere || in.ParentID != a.ID || in.Kind != session.KindBranch {
		t.Errorf("the fork whose agent is described elsewhere: got %+v, %v; want principal %q, parent %s, kind branch", in, err, "far-"+elsewhere, a.ID)
	}
	if in, err := st.Info(ctx, bare); err != nil || in.ParentID != root.ID || in.Kind != session.KindBranch || in.Principal != "" {
		t.Errorf("the bare fork: got %+v, %v; want parent %s, kind branch, no principal", in, err, root.ID)
	}
}
