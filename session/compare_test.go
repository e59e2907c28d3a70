package session_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// compareFamily is the fixture of TestCompare:
//
//	root      5 turns
//	├── s1    fork of root at 3, +2 turns
//	│   └── s1a  fork of s1 at 4, +1 turn
//	├── s2    fork of root at 2, +3 turns
//	├── zero  fork of root at 0, +1 turn
//	├── e1    fork of root at 3, no turns of its own
//	├── e2    fork of root at 3, no turns of its own
//	└── d     fork of root at 3, +2 turns, detached after the "before"
//	    │     comparisons were taken
//	    └── dc  fork of d at 4 (made after d's detach), +1 turn, then
//	            detached too: its copies are copies of copies
//	twin      a root with the same 5 turns' text as root
//	p         a root of 3 turns, deleted after f and g were detached
//	├── f     fork of p at 2, +1 turn
//	└── g     fork of p at 2, +2 turns
type compareFamily struct {
	root, s1, s1a, s2, zero, e1, e2, d, dc, twin, f, g *session.Session
	before                                             map[[2]string]*session.Comparison // d's comparisons before its detach
}

func seedCompare(tb testing.TB, st *session.Store) compareFamily {
	tb.Helper()
	ctx := context.Background()
	var fx compareFamily
	fork := func(s *session.Session, at, n int, tag string) *session.Session {
		tb.Helper()
		f := mustFork(tb, s, at)
		appendN(f, n, tag)
		mustPersist(tb, st, f)
		return f
	}
	fx.root = persisted(tb, st, "compare", 5)
	fx.s1 = fork(fx.root, 3, 2, "s1")
	fx.s1a = fork(fx.s1, 4, 1, "s1a")
	fx.s2 = fork(fx.root, 2, 3, "s2")
	fx.zero = fork(fx.root, 0, 1, "zero")
	fx.e1 = fork(fx.root, 3, 0, "")
	fx.e2 = fork(fx.root, 3, 0, "")
	fx.d = fork(fx.root, 3, 2, "d")
	fx.twin = persisted(tb, st, "compare", 5)

	fx.before = map[[2]string]*session.Comparison{}
	for _, other := range []*session.Session{fx.s2, fx.s1, fx.root} {
		c, err := st.Compare(ctx, fx.d.ID, other.ID)
		if err != nil {
			tb.Fatalf("compare before the detach: %v", err)
		}
		fx.before[[2]string{fx.d.ID, other.ID}] = c
	}
	if err := st.Detach(ctx, fx.d.ID, session.DetachOptions{}); err != nil {
		tb.Fatalf("detach d: %v", err)
	}
	fx.dc = fork(mustLoad(tb, st, fx.d.ID), 4, 1, "dc")
	if err := st.Detach(ctx, fx.dc.ID, session.DetachOptions{}); err != nil {
		tb.Fatalf("detach dc: %v", err)
	}

	p := persisted(tb, st, "compare-p", 3)
	fx.f = fork(p, 2, 1, "f")
	fx.g = fork(p, 2, 2, "g")
	for _, s := range []*session.Session{fx.f, fx.g} {
		if err := st.Detach(ctx, s.ID, session.DetachOptions{}); err != nil {
			tb.Fatalf("detach %s: %v", s.ID, err)
		}
	}
	if err := st.Delete(ctx, p.ID, session.DeleteOptions{}); err != nil {
		tb.Fatalf("delete p: %v", err)
	}
	return fx
}

func TestCompare(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, _ := newStore(t)
	ctx := context.Background()
	fx := seedCompare(t, st)

	tests := []struct {
		name       string
		a, b       *session.Session
		common     *session.Session // nil: none
		divergence int
		copied     int
	}{
		{name: "itself", a: fx.s1a, b: fx.s1a, common: fx.s1a, divergence: 5},
		{name: "a root with itself", a: fx.root, b: fx.root, common: fx.root, divergence: 5},
		{name: "child vs parent", a: fx.s1, b: fx.root, common: fx.root, divergence: 3},
		{name: "parent vs child", a: fx.root, b: fx.s1, common: fx.root, divergence: 3},
		{name: "fork of fork vs its grandparent", a: fx.s1a, b: fx.root, common: fx.root, divergence: 3},
		{name: "fork of fork vs its parent", a: fx.s1a, b: fx.s1, common: fx.s1, divergence: 4},
		{name: "siblings", a: fx.s1, b: fx.s2, common: fx.root, divergence: 2},
		{name: "siblings swapped", a: fx.s2, b: fx.s1, common: fx.root, divergence: 2},
		{name: "cousins: fork of fork vs sibling", a: fx.s1a, b: fx.s2, common: fx.root, divergence: 2},
		{name: "fork at 0 vs parent", a: fx.zero, b: fx.root, common: fx.root, divergence: 0},
		{name: "fork at 0 vs sibling", a: fx.zero, b: fx.s1, common: fx.root, divergence: 0},
		{name: "identical histories of two forks", a: fx.e1, b: fx.e2, common: fx.root, divergence: 3},
		{name: "empty fork vs its parent", a: fx.e1, b: fx.root, common: fx.root, divergence: 3},
		{name: "unrelated roots of identical text", a: fx.root, b: fx.twin, divergence: 0},
		{name: "unrelated fork and root", a: fx.s1a, b: fx.twin, divergence: 0},
		{name: "detached fork vs former sibling", a: fx.d, b: fx.s2, divergence: 2, copied: 2},
		{name: "detached fork vs former sibling at the same point", a: fx.d, b: fx.s1, divergence: 3, copied: 3},
		{name: "detached fork vs former parent", a: fx.d, b: fx.root, divergence: 3, copied: 3},
		{name: "copies of copies vs former parent", a: fx.dc, b: fx.d, divergence: 4, copied: 4},
		{name: "copies of copies vs the original's other fork", a: fx.dc, b: fx.s2, divergence: 2, copied: 2},
		{name: "two detached forks of a deleted parent", a: fx.f, b: fx.g, divergence: 2, copied: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n0 := ct.requests.Load()
			c, err := st.Compare(ctx, tt.a.ID, tt.b.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := ct.requests.Load() - n0; got != 2 {
				t.Errorf("got %d requests, want 2", got)
			}
			want := ""
			if tt.common != nil {
				want = tt.common.ID
			}
			if c.Common != want {
				t.Errorf("got common %q, want %q", c.Common, want)
			}
			if c.Divergence != tt.divergence || c.Copied != tt.copied {
				t.Errorf("got divergence %d, copied %d; want %d, %d", c.Divergence, c.Copied, tt.divergence, tt.copied)
			}
			if len(c.Shared) != c.Divergence {
				t.Errorf("got %d shared turns, want %d", len(c.Shared), c.Divergence)
			}
			for _, tail := range [][]session.Turn{c.A, c.B} {
				if len(tail) > 0 && tail[0].Index != c.Divergence {
					t.Errorf("a tail starts at %d, want %d", tail[0].Index, c.Divergence)
				}
			}
			// Shared + tail is each session's history as Load gives it.
			la, lb := mustLoad(t, st, tt.a.ID).Turns, mustLoad(t, st, tt.b.ID).Turns
			sameHistory(t, slices.Concat(c.Shared, c.A), la)
			sameHistory(t, slices.Concat(c.Shared, c.B), lb)
			sameIDs(t, slices.Concat(c.Shared, c.A), la)
			sameIDs(t, c.B, lb[c.Divergence:])
			if c.ChainA[0] != tt.a.ID || c.ChainB[0] != tt.b.ID {
				t.Errorf("got chains starting at %s and %s, want %s and %s", c.ChainA[0], c.ChainB[0], tt.a.ID, tt.b.ID)
			}
		})
	}

	t.Run("a detach changes Common and Copied only", func(t *testing.T) {
		for k, before := range fx.before {
			after, err := st.Compare(ctx, k[0], k[1])
			if err != nil {
				t.Fatal(err)
			}
			if before.Common != fx.root.ID || before.Copied != 0 {
				t.Errorf("before the detach: got common %q, copied %d; want %q, 0", before.Common, before.Copied, fx.root.ID)
			}
			if after.Divergence != before.Divergence {
				t.Errorf("got divergence %d after the detach, %d before", after.Divergence, before.Divergence)
			}
			sameHistory(t, after.Shared, before.Shared)
			sameHistory(t, after.A, before.A)
			sameHistory(t, after.B, before.B)
		}
	})

	t.Run("chains", func(t *testing.T) {
		c, err := st.Compare(ctx, fx.s1a.ID, fx.s2.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{fx.s1a.ID, fx.s1.ID, fx.root.ID}; !slices.Equal(c.ChainA, want) {
			t.Errorf("got chain a %v, want %v", c.ChainA, want)
		}
		if want := []string{fx.s2.ID, fx.root.ID}; !slices.Equal(c.ChainB, want) {
			t.Errorf("got chain b %v, want %v", c.ChainB, want)
		}
	})

	t.Run("two empty roots", func(t *testing.T) {
		x, y := persisted(t, st, "compare-empty", 0), persisted(t, st, "compare-empty", 0)
		c, err := st.Compare(ctx, x.ID, y.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Common != "" || c.Divergence != 0 || len(c.Shared)+len(c.A)+len(c.B) != 0 {
			t.Errorf("got %+v, want nothing in common and no turns", c)
		}
	})
}

func TestCompareErrors(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "compare-errors", 3)
	mid := mustFork(t, root, 2)
	appendN(mid, 1, "mid")
	mustPersist(t, st, mid)
	leaf := mustFork(t, mid, 3)
	appendN(leaf, 1, "leaf")
	mustPersist(t, st, leaf)
	other := persisted(t, st, "compare-errors", 2)
	// A fork whose parent is gone.
	gone := persisted(t, st, "compare-errors", 2)
	orphan := mustFork(t, gone, 1)
	mustPersist(t, st, orphan)
	if err := clustertest.DeleteGraph(ctx, t, c, kg.MustIRI(ontology.SessionIRI(gone.ID))); err != nil {
		t.Fatal(err)
	}
	// A cycle of two sessions.
	x, y := newID(), newID()
	writeRaw(t, c, x, y, 0)
	writeRaw(t, c, y, x, 0)
	unknown := newID()

	tests := []struct {
		name    string
		a, b    string
		want    error
		missing string // for ErrParentMissing: the ancestor named
	}{
		{name: "bad a", a: "not-an-id", b: root.ID, want: session.ErrInvalid},
		{name: "bad b", a: root.ID, b: "019AA4C5-6F1E-7C3A-9D2B-5E8F0A1B2C3D", want: session.ErrInvalid},
		{name: "unknown a", a: unknown, b: root.ID, want: session.ErrNotFound},
		{name: "unknown b", a: leaf.ID, b: unknown, want: session.ErrNotFound},
		{name: "parent missing", a: orphan.ID, b: other.ID, want: session.ErrParentMissing, missing: gone.ID},
		{name: "parent missing on b's side", a: leaf.ID, b: orphan.ID, want: session.ErrParentMissing, missing: gone.ID},
		{name: "cycle", a: root.ID, b: x, want: session.ErrForkCycle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n0 := ct.requests.Load()
			_, err := st.Compare(ctx, tt.a, tt.b)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if tt.want == session.ErrInvalid {
				if got := ct.requests.Load() - n0; got != 0 {
					t.Errorf("got %d requests for a bad id, want 0", got)
				}
			}
			if tt.missing != "" {
				var ae *session.AncestorError
				if !errors.As(err, &ae) || ae.Missing != tt.missing {
					t.Errorf("got %v, want an *AncestorError naming %s", err, tt.missing)
				}
			}
		})
	}

	t.Run("another principal's session is not found", func(t *testing.T) {
		scoped := session.NewStore(querier(t, c), session.ForPrincipal("someone-else"))
		if _, err := scoped.Compare(ctx, leaf.ID, root.ID); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
	})
	t.Run("depth limit", func(t *testing.T) {
		shallow, _, _ := newStore(t, session.WithMaxDepth(1))
		if _, err := shallow.Compare(ctx, leaf.ID, root.ID); !errors.Is(err, session.ErrForkDepth) {
			t.Fatalf("got %v, want ErrForkDepth", err)
		}
	})
}

// sameIDs fails tb unless got and want hold turns of the same IDs.
func sameIDs(tb testing.TB, got, want []session.Turn) {
	tb.Helper()
	for i := range min(len(got), len(want)) {
		if got[i].ID != want[i].ID {
			tb.Errorf("turn %d: got ID %s, want %s", got[i].Index, got[i].ID, want[i].ID)
		}
	}
}
