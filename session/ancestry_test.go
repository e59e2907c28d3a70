package session_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// chainOf persists a root of n turns and depth forks, each forked at the
// end of its parent and adding turnsEach turns; it returns the sessions,
// root first.
func chainOf(tb testing.TB, st *session.Store, n, depth, turnsEach int) []*session.Session {
	tb.Helper()
	s := persisted(tb, st, "chain", n)
	out := []*session.Session{s}
	for i := 0; i < depth; i++ {
		f := mustFork(tb, s, len(s.Turns))
		appendN(f, turnsEach, "level "+itoa(i+1))
		mustPersist(tb, st, f)
		out = append(out, f)
		s = f
	}
	return out
}

// writeRaw writes a session straight into the store, bypassing the
// library: how corrupt data (cycles, over-deep chains) gets there.
func writeRaw(tb testing.TB, c *kg.Client, id, parent string, at int) {
	tb.Helper()
	g := kg.MustIRI(ontology.SessionIRI(id))
	var d kg.Data
	d.Add(g, g, kg.MustIRI(ontology.RDFType), kg.MustIRI(ontology.Session))
	d.Add(g, g, kg.MustIRI(ontology.DCTIdentifier), kg.String(id))
	d.Add(g, g, kg.MustIRI(ontology.Branch), kg.String("fork-"+id[len(id)-8:]))
	d.Add(g, g, kg.MustIRI(ontology.ParentSession), kg.MustIRI(ontology.SessionIRI(parent)))
	d.Add(g, g, kg.MustIRI(ontology.ForkedAtIndex), kg.Int(at))
	d.Add(g, g, kg.MustIRI(ontology.OwnTurns), kg.Int(0))
	u, err := d.InsertData()
	if err != nil {
		tb.Fatal(err)
	}
	if err := clustertest.Update(context.Background(), tb, c, u); err != nil {
		tb.Fatal(err)
	}
}

func newID() string { return storetest.NewID() }

func TestDepthLimit(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	chain := chainOf(t, st, 2, session.MaxForkDepth, 1)
	leaf := chain[len(chain)-1]

	t.Run("a chain of exactly 32 loads", func(t *testing.T) {
		got := mustLoad(t, st, leaf.ID)
		sameSession(t, got, leaf)
		if got.Depth() != session.MaxForkDepth {
			t.Fatalf("got depth %d, want %d", got.Depth(), session.MaxForkDepth)
		}
	})
	t.Run("fork 33 fails in memory", func(t *testing.T) {
		if _, err := leaf.Fork(1); !errors.Is(err, session.ErrForkDepth) {
			t.Fatalf("got %v, want ErrForkDepth", err)
		}
		loaded := mustLoad(t, st, leaf.ID)
		if _, err := loaded.Fork(1); !errors.Is(err, session.ErrForkDepth) {
			t.Fatalf("after load: got %v, want ErrForkDepth", err)
		}
	})
	t.Run("fork 33 fails at persist", func(t *testing.T) {
		// A hand-made session value that does not know its depth.
		f := &session.Session{ID: newID(), Principal: "p", ParentID: leaf.ID, ForkedAt: 1,
			Branch: "fork-0badc0de", Turns: append([]session.Turn(nil), leaf.Turns[:1]...)}
		if err := st.Persist(ctx, f); !errors.Is(err, session.ErrForkDepth) {
			t.Fatalf("got %v, want ErrForkDepth", err)
		}
	})
	t.Run("33 written directly fails at load", func(t *testing.T) {
		id := newID()
		writeRaw(t, c, id, leaf.ID, 1)
		if _, err := st.Load(ctx, id); !errors.Is(err, session.ErrForkDepth) {
			t.Fatalf("got %v, want ErrForkDepth", err)
		}
	})
	t.Run("a lower store limit", func(t *testing.T) {
		low := session.NewStore(querier(t, c), session.WithMaxDepth(4))
		if _, err := low.Load(ctx, chain[5].ID); !errors.Is(err, session.ErrForkDepth) {
			t.Fatalf("got %v, want ErrForkDepth at depth 5 with limit 4", err)
		}
		if _, err := low.Load(ctx, chain[4].ID); err != nil {
			t.Fatalf("depth 4 with limit 4: %v", err)
		}
	})
}

func TestCycle(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, c := newStore(t)
	ctx := context.Background()
	for _, n := range []int{1, 2, 3, 40} {
		t.Run("cycle of "+itoa(n), func(t *testing.T) {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = newID()
			}
			for i, id := range ids {
				writeRaw(t, c, id, ids[(i+1)%n], 0)
			}
			before := ct.requests.Load()
			_, err := st.Load(ctx, ids[0])
			if !errors.Is(err, session.ErrForkCycle) {
				t.Fatalf("got %v, want ErrForkCycle", err)
			}
			if got := ct.requests.Load() - before; got != 1 {
				t.Fatalf("got %d requests, want 1: the cycle is found in the chain query", got)
			}
		})
	}
	t.Run("a fork below a cycle", func(t *testing.T) {
		a, b, leaf := newID(), newID(), newID()
		writeRaw(t, c, a, b, 0)
		writeRaw(t, c, b, a, 0)
		writeRaw(t, c, leaf, a, 0)
		if _, err := st.Load(ctx, leaf); !errors.Is(err, session.ErrForkCycle) {
			t.Fatalf("got %v, want ErrForkCycle", err)
		}
	})
}

func TestMissingAncestor(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	chain := chainOf(t, st, 3, 3, 2)
	// Remove the middle ancestor behind the library's back.
	gone := chain[1].ID
	if err := clustertest.DeleteGraph(ctx, t, c, kg.MustIRI(ontology.SessionIRI(gone))); err != nil {
		t.Fatal(err)
	}
	for _, s := range chain[2:] {
		_, err := st.Load(ctx, s.ID)
		var ae *session.AncestorError
		if !errors.Is(err, session.ErrParentMissing) || !errors.As(err, &ae) || ae.Missing != gone {
			t.Fatalf("load %s: got %v, want ErrParentMissing naming %s", s.ID, err, gone)
		}
	}
	if _, err := st.Load(ctx, chain[0].ID); err != nil {
		t.Fatalf("the root still loads: %v", err)
	}
}

func TestLoadRoundTrips(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, _ := newStore(t)
	for _, depth := range []int{0, 1, 8, 32} {
		t.Run("depth "+itoa(depth), func(t *testing.T) {
			chain := chainOf(t, st, 10, depth, 3)
			leaf := chain[len(chain)-1]
			before := ct.requests.Load()
			got := mustLoad(t, st, leaf.ID)
			n := ct.requests.Load() - before
			sameSession(t, got, leaf)
			if n > 3 {
				t.Fatalf("got %d round trips, want at most 3", n)
			}
			t.Logf("depth %d: %d turns in %d round trips", depth, len(got.Turns), n)
		})
	}
}

// TestShareDontCopy counts the triples a fork adds to the store: the same
// for a parent of 5 turns and one of 5,000.
func TestShareDontCopy(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	count := func() int {
		res, err := c.Select(ctx, "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }")
		if err != nil {
			t.Fatal(err)
		}
		n, err := res.Solutions[0].Int("n")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	written := map[int]int{}
	for _, n := range []int{5, 5000} {
		parent := persisted(t, st, "share", n)
		f := mustFork(t, parent, n/2)
		f.Principal = "forker-" + itoa(n) // a principal new to the store, so its agent triples count every time
		before := count()
		mustPersist(t, st, f)
		written[n] = count() - before
		t.Logf("fork of a %d-turn parent wrote %d triples", n, written[n])
	}
	if written[5] != written[5000] {
		t.Fatalf("got %d triples for a fork of 5 turns and %d for 5,000, want the same", written[5], written[5000])
	}
	if written[5] > 25 {
		t.Fatalf("got %d triples for a fork, want at most 25", written[5])
	}
}

// TestChainAgentElsewhere checks Load, Ancestry and a principal-scoped
// Store on a chain whose fork's own graph does not describe its agent and
// app (written by hand: the chain query reads their identifiers in each
// session's graph, and looks up the others in a second request), and that
// an agent described with two identifiers is ErrCorrupt.
func TestChainAgentElsewhere(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := session.New("near-" + newID())
	root.App = "app-" + newID()
	appendN(root, 3, "root")
	mustPersist(t, st, root)
	elsewhere := newID()
	writeRaw(t, c, elsewhere, root.ID, 2)
	g := kg.MustIRI(ontology.SessionIRI(elsewhere))
	agent, app := kg.MustIRI("urn:trails-test:agent:"+elsewhere), kg.MustIRI("urn:trails-test:app:"+elsewhere)
	far, farApp := "far-"+elsewhere, "farapp-"+elsewhere
	var d kg.Data
	d.Add(g, g, kg.MustIRI(ontology.Principal), agent)
	d.Add(g, g, kg.MustIRI(ontology.App), app)
	d.Add(kg.MustIRI("urn:trails-test:agents"), agent, kg.MustIRI(ontology.DCTIdentifier), kg.String(far))
	d.Add(kg.MustIRI("urn:trails-test:agents"), app, kg.MustIRI(ontology.DCTIdentifier), kg.String(farApp))
	u, err := d.InsertData()
	if err != nil {
		t.Fatal(err)
	}
	if err := clustertest.Update(ctx, t, c, u); err != nil {
		t.Fatal(err)
	}

	got := mustLoad(t, st, elsewhere)
	if got.Principal != far || got.App != farApp || len(got.Turns) != 2 {
		t.Errorf("load: got principal %q, app %q, %d turns; want %q, %q, 2", got.Principal, got.App, len(got.Turns), far, farApp)
	}
	if r := mustLoad(t, st, root.ID); r.Principal != root.Principal || r.App != root.App {
		t.Errorf("load of the root: got principal %q, app %q; want %q, %q", r.Principal, r.App, root.Principal, root.App)
	}
	infos, err := st.Ancestry(ctx, elsewhere)
	if err != nil || len(infos) != 2 || infos[0].Principal != root.Principal || infos[1].Principal != far {
		t.Errorf("ancestry: got %+v, %v; want the root's principal %q, then %q", infos, err, root.Principal, far)
	}
	if _, err := session.NewStore(querier(t, c), session.ForPrincipal(far)).Load(ctx, elsewhere); err != nil {
		t.Errorf("load by a Store of principal %s: got %v, want the session", far, err)
	}
	if _, err := session.NewStore(querier(t, c), session.ForPrincipal(root.Principal)).Load(ctx, elsewhere); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("load by a Store of principal %s: got %v, want ErrNotFound", root.Principal, err)
	}

	var two kg.Data
	two.Add(kg.MustIRI("urn:trails-test:agents"), agent, kg.MustIRI(ontology.DCTIdentifier), kg.String("other-"+elsewhere))
	if u, err = two.InsertData(); err != nil {
		t.Fatal(err)
	}
	if err := clustertest.Update(ctx, t, c, u); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, elsewhere); !errors.Is(err, session.ErrCorrupt) {
		t.Errorf("load with an agent of two identifiers: got %v, want ErrCorrupt", err)
	}
}

// TestAncestry: root to session, with tags, in one request.
func TestAncestry(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, _ := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 3)
	mid := mustFork(t, root, 2)
	appendN(mid, 2, "mid")
	mustPersist(t, st, mid)
	leaf := mustFork(t, mid, 3)
	mustPersist(t, st, leaf)
	tag := "lineage-" + newID()[24:]
	if err := st.Tag(ctx, mid.ID, tag); err != nil {
		t.Fatal(err)
	}
	before := ct.requests.Load()
	got, err := st.Ancestry(ctx, leaf.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := ct.requests.Load() - before; n != 1 {
		t.Fatalf("got %d requests, want 1", n)
	}
	var ids []string
	for _, in := range got {
		ids = append(ids, in.ID)
	}
	if want := []string{root.ID, mid.ID, leaf.ID}; !slices.Equal(ids, want) {
		t.Fatalf("got %v, want %v (root first)", ids, want)
	}
	if in := got[1]; in.ParentID != root.ID || in.ForkedAt != 2 || in.OwnTurns != 2 || in.Turns != 4 || !slices.Equal(in.Tags, []string{tag}) {
		t.Fatalf("got %+v for mid", in)
	}
	if in := got[2]; in.Turns != 3 || in.OwnTurns != 0 || len(in.Tags) != 0 {
		t.Fatalf("got %+v for leaf", in)
	}
	if got, err := st.Ancestry(ctx, root.ID); err != nil || len(got) != 1 || got[0].ParentID != "" {
		t.Fatalf("ancestry of a root: got %+v, %v; want itself", got, err)
	}
	if _, err := st.Ancestry(ctx, newID()); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
}

// TestLoadRoundTripsWithAnchors: anchors and tags along the chain cost
// Load no request more than before: two, at any depth.
func TestLoadRoundTripsWithAnchors(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, _ := newStore(t)
	ctx := context.Background()
	s := persisted(t, st, "alice", 2)
	for depth := range 6 {
		mustAnchor(t, st, s.ID, "a"+itoa(depth), map[string]string{"depth": itoa(depth)})
		if err := st.Tag(ctx, s.ID, "t"+itoa(depth)); err != nil {
			t.Fatal(err)
		}
		s = mustFork(t, mustLoad(t, st, s.ID), len(s.Turns))
		appendN(s, 2, "f")
		mustPersist(t, st, s)
	}
	before := ct.requests.Load()
	got := mustLoad(t, st, s.ID)
	if n := ct.requests.Load() - before; n > 3 || n != 2 {
		t.Fatalf("Load: got %d requests, want 2 (at most 3)", n)
	}
	if len(got.Anchors) != 6 {
		t.Fatalf("got %d anchors, want 6 (one per ancestor)", len(got.Anchors))
	}
	for depth := range 6 {
		if a := got.Anchors["a"+itoa(depth)]; a.Index != 2+2*depth || a.State["depth"] != itoa(depth) {
			t.Fatalf("anchor a%d: got %+v, want index %d", depth, a, 2+2*depth)
		}
	}
}
