package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// provValues returns the values of predicate p on the Fork activity that
// generated session child, as the PROV graph holds them.
func provValues(tb testing.TB, c *kg.Client, child, p string) []string {
	tb.Helper()
	q, err := kg.Bind(`SELECT ?v WHERE { GRAPH $prov {
		$child <http://www.w3.org/ns/prov#wasGeneratedBy> ?act . ?act $p ?v } }`, kg.Params{
		"prov": kg.MustIRI(ontology.ProvGraph), "child": kg.MustIRI(ontology.SessionIRI(child)), "p": kg.MustIRI(p),
	})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Select(context.Background(), q)
	if err != nil {
		tb.Fatal(err)
	}
	var vs []string
	for _, row := range res.Solutions {
		vs = append(vs, row.String("v"))
	}
	return vs
}

// TestForkMetadata: a fork's type, initiator, reason and intention are
// written on its PROV activity, and read back by prov.Reader.ForkRecord;
// a fork made without them records none and reads as an explicit fork by
// a user.
func TestForkMetadata(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 4)
	mustAnchor(t, st, root.ID, "task_start", map[string]string{"context": "Working on feature X"})

	f, err := st.Fork(ctx, root.ID, -1,
		session.ForkAtAnchor("task_start"),
		session.WithIntention("Implement feature X", "Parent needs feature X implemented\nwith \"quotes\""),
		session.WithForkType(session.ForkAutoRegenerate),
		session.WithCreatedBy(session.CreatedBySystem),
		session.WithReason("try another model"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, st, f.ID); got.ForkedAt != 4 || len(got.Turns) != 4 || got.ParentID != root.ID {
		t.Fatalf("got fork of %s at %d with %d turns, want of %s at 4 with 4", got.ParentID, got.ForkedAt, len(got.Turns), root.ID)
	}
	for _, tc := range []struct {
		pred string
		want string
	}{
		{ontology.NextSteps, "Implement feature X"},
		{ontology.ContextSummary, "Parent needs feature X implemented\nwith \"quotes\""},
		{ontology.ForkType, "auto-regenerate"},
		{ontology.CreatedBy, "system"},
		{ontology.Reason, "try another model"},
		{ontology.FromAnchor, ontology.AnchorIRI(ontology.SessionIRI(root.ID), "task_start")},
		{ontology.ForkPoint, "4"},
	} {
		if got := provValues(t, c, f.ID, tc.pred); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("<%s>: got %q, want [%q]", tc.pred, got, tc.want)
		}
	}
	r := prov.NewReader(c)
	rec, err := r.ForkRecord(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Parent != root.ID || rec.At != 4 || rec.Type != "auto-regenerate" || rec.CreatedBy != "system" ||
		rec.Reason != "try another model" || rec.NextSteps != "Implement feature X" ||
		rec.ContextSummary != "Parent needs feature X implemented\nwith \"quotes\"" || rec.Branch != f.Branch ||
		rec.Anchor != ontology.AnchorIRI(ontology.SessionIRI(root.ID), "task_start") || rec.Turn != "" {
		t.Fatalf("got record %+v", rec)
	}

	// No options: nothing recorded, read as the defaults.
	plain := mustFork(t, root, 2)
	mustPersist(t, st, plain)
	for _, p := range []string{ontology.ForkType, ontology.CreatedBy, ontology.Reason, ontology.NextSteps,
		ontology.ContextSummary, ontology.FromAnchor, ontology.BeforeTurn} {
		if got := provValues(t, c, plain.ID, p); len(got) != 0 {
			t.Errorf("<%s>: got %q, want nothing for a fork without metadata", p, got)
		}
	}
	rec, err = r.ForkRecord(ctx, plain.ID)
	if err != nil || rec.Type != prov.DefaultForkType || rec.CreatedBy != prov.DefaultCreatedBy || rec.At != 2 {
		t.Fatalf("got %+v, %v; want an explicit fork by a user at 2", rec, err)
	}
	if _, err := r.ForkRecord(ctx, root.ID); !errors.Is(err, prov.ErrNotFound) {
		t.Fatalf("fork record of a root: got %v, want prov.ErrNotFound", err)
	}

	// Values that cannot be used are refused before anything is sent.
	for _, tc := range []struct {
		name string
		opt  session.ForkOption
	}{
		{"fork type", session.WithForkType("sideways")},
		{"creator", session.WithCreatedBy("robot")},
		{"reason", session.WithReason("\xff")},
		{"intention", session.WithIntention("ok", "\xfe")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := root.Fork(1, tc.opt); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			before := ct.requests.Load()
			// Store.Fork refuses before it sends anything.
			if _, err := st.Fork(ctx, root.ID, 1, tc.opt); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("Store.Fork: got %v, want ErrInvalid", err)
			}
			if sent := ct.requests.Load() - before; sent != 0 {
				t.Fatalf("Store.Fork: got %d requests, want none", sent)
			}
		})
	}
	if _, err := st.Fork(ctx, newID(), 0); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Store.Fork of an unknown session: got %v, want ErrNotFound", err)
	}
	if _, err := st.Fork(ctx, root.ID, -1, session.ForkAtAnchor("nope")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Store.Fork at an unknown anchor: got %v, want ErrNotFound", err)
	}
}

// The tree limits of design note 002 are tested here: how many forks a
// session may have. The depth limit (32 ancestors fine, 33 refused in
// memory, at Persist and at Load) is TestDepthLimit's.

// mustNotBeStored fails tb unless session id is absent from the store and
// from PROV.
func mustNotBeStored(tb testing.TB, st *session.Store, c *kg.Client, id string) {
	tb.Helper()
	ctx := context.Background()
	if _, err := st.Info(ctx, id); !errors.Is(err, session.ErrNotFound) {
		tb.Fatalf("info of the refused fork: got %v, want ErrNotFound", err)
	}
	if _, err := prov.NewReader(c).ForkRecord(ctx, id); !errors.Is(err, prov.ErrNotFound) {
		tb.Fatalf("PROV of the refused fork: got %v, want prov.ErrNotFound", err)
	}
}

func TestMaxChildren(t *testing.T) {
	fusekitest.Parallel(t)
	_, _, c := newStore(t)
	ctx := context.Background()
	tests := []struct {
		name string
		opts []session.StoreOption
		ok   int   // forks of one parent that land
		want error // what the next one gets
	}{
		{"limit 2: the third is refused", []session.StoreOption{session.WithMaxChildren(2)}, 2, session.ErrTooManyChildren},
		{"default 8: the ninth is refused", nil, session.DefaultMaxChildren, session.ErrTooManyChildren},
		{"limit 0: no limit", []session.StoreOption{session.WithMaxChildren(0)}, 20, nil},
		{"a negative limit: no limit", []session.StoreOption{session.WithMaxChildren(-1)}, 9, nil},
		{"limit 1", []session.StoreOption{session.WithMaxChildren(1)}, 1, session.ErrTooManyChildren},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := session.NewStore(querier(t, c), tc.opts...)
			parent := persisted(t, st, "limits", 3)
			for i := range tc.ok {
				f := mustFork(t, parent, i%4)
				appendN(f, 1, "kid")
				mustPersist(t, st, f)
			}
			next := mustFork(t, parent, 2)
			appendN(next, 2, "one too many")
			before := storetest.CountQuads(t, c, "")
			err := st.Persist(ctx, next)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("fork %d: got %v, want %v", tc.ok+1, err, tc.want)
			}
			kids, berr := st.Branches(ctx, parent.ID)
			if berr != nil {
				t.Fatal(berr)
			}
			if tc.want == nil {
				if len(kids) != tc.ok+1 {
					t.Fatalf("got %d forks, want %d", len(kids), tc.ok+1)
				}
				return
			}
			t.Logf("refused: %v", err)
			if got := storetest.CountQuads(t, c, ""); got != before {
				t.Fatalf("the refused fork wrote %d quads, want none", got-before)
			}
			mustNotBeStored(t, st, c, next.ID)
			if len(kids) != tc.ok {
				t.Fatalf("got %d forks, want %d", len(kids), tc.ok)
			}
			// Store.Fork says the same.
			if _, err := st.Fork(ctx, parent.ID, 1); !errors.Is(err, tc.want) {
				t.Fatalf("Store.Fork: got %v, want %v", err, tc.want)
			}
			// A fork already stored is not a new fork: persisting it again
			// (a retry, more turns) works at the limit.
			kid := mustLoad(t, st, kids[0].ID)
			appendN(kid, 1, "later")
			mustPersist(t, st, kid)
		})
	}
}

// TestMaxChildrenCountsLiveForks: forks detached, deleted or archived by a
// rewind (trails:rewoundFrom) free their place.
func TestMaxChildrenCountsLiveForks(t *testing.T) {
	fusekitest.Parallel(t)
	_, _, c := newStore(t)
	st := session.NewStore(querier(t, c), session.WithMaxChildren(2))
	ctx := context.Background()
	parent := persisted(t, st, "live", 4)
	fork := func() (*session.Session, error) {
		f := mustFork(t, parent, 2)
		appendN(f, 1, "kid")
		return f, st.Persist(ctx, f)
	}
	mustFork2 := func() *session.Session {
		t.Helper()
		f, err := fork()
		if err != nil {
			t.Fatalf("fork: %v", err)
		}
		return f
	}
	refused := func(why string) {
		t.Helper()
		if _, err := fork(); !errors.Is(err, session.ErrTooManyChildren) {
			t.Fatalf("%s: got %v, want ErrTooManyChildren", why, err)
		}
	}
	a, b := mustFork2(), mustFork2()
	refused("two forks")

	if err := st.Detach(ctx, a.ID, session.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	c1 := mustFork2() // in a's place
	refused("after the detach and a new fork")

	if err := st.Delete(ctx, c1.ID, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d := mustFork2() // in c1's place
	refused("after the delete and a new fork")

	// An archive made by a rewind keeps its parent link but is no fork
	// any more (written raw: Rewind is another feature's).
	var ins kg.Data
	g := storetest.SessionRef(d.ID)
	ins.Add(g, g, kg.MustIRI(ontology.NS+"rewoundFrom"), storetest.SessionRef(parent.ID))
	storetest.RawChange(t, c, nil, &ins)
	mustFork2()
	refused("after the rewind and a new fork")
	_ = b
}

// TestForkRaceForLastPlace: forks racing for the last free place of a
// parent; the store decides inside the update, so exactly one lands.
func TestForkRaceForLastPlace(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	ep := fusekitest.Endpoint(t)

	t.Run("between the state read and the update", func(t *testing.T) {
		// Deterministic: another fork takes the last place right after
		// this Persist read the state (7 forks), before its update.
		other := ownStore(t, ep)
		parent := persisted(t, other, "race", 3)
		for range session.DefaultMaxChildren - 1 {
			mustPersist(t, other, mustFork(t, parent, 1))
		}
		var taker *session.Session
		st := hookedStore(t, ep, func(*http.Request) bool { return true }, func() {
			taker = mustFork(t, parent, 2)
			mustPersist(t, other, taker) // the 8th: the default limit
		})
		late := mustFork(t, parent, 3)
		appendN(late, 1, "late")
		if err := st.Persist(ctx, late); !errors.Is(err, session.ErrTooManyChildren) {
			t.Fatalf("got %v, want ErrTooManyChildren", err)
		}
		if taker == nil {
			t.Fatal("the hook did not run")
		}
		mustNotBeStored(t, st, fusekitest.New(t), late.ID)
		kids, err := st.Branches(ctx, parent.ID)
		if err != nil || len(kids) != session.DefaultMaxChildren {
			t.Fatalf("got %d forks (%v), want %d", len(kids), err, session.DefaultMaxChildren)
		}
	})

	t.Run("many forkers at once", func(t *testing.T) {
		const forkers, rounds, limit = 6, 4, 3
		stores := make([]*session.Store, forkers)
		for k := range stores {
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			c := fusekitest.Client(t, kg.Config{Endpoint: ep, HTTPClient: &http.Client{Transport: tr}})
			stores[k] = session.NewStore(querier(t, c), session.WithMaxChildren(limit))
		}
		for r := range rounds {
			parent := persisted(t, stores[0], "racers", 4)
			for range limit - 1 {
				mustPersist(t, stores[0], mustFork(t, parent, 2))
			}
			errs := make([]error, forkers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for k := range forkers {
				f := mustFork(t, parent, k%5)
				appendN(f, 1, "racer")
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[k] = stores[k].Persist(ctx, f)
				}()
			}
			close(start)
			wg.Wait()
			won := 0
			for k, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, session.ErrTooManyChildren):
					t.Errorf("round %d: forker %d: got %v, want nil or ErrTooManyChildren", r, k, err)
				}
			}
			if won != 1 {
				t.Errorf("round %d: %d forks landed, want exactly 1", r, won)
			}
			if kids, err := stores[0].Branches(ctx, parent.ID); err != nil || len(kids) != limit {
				t.Errorf("round %d: got %d forks (%v), want %d", r, len(kids), err, limit)
			}
		}
	})
}

// TestTreeLimitsQuery runs the auditors' query tree-limits: sessions with
// at least $max forks, and workers with any.
func TestTreeLimitsQuery(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	st := session.NewStore(querier(t, c), session.WithMaxChildren(0))
	ctx := context.Background()
	busy := persisted(t, st, "audited", 3)
	for range 3 {
		mustPersist(t, st, mustFork(t, busy, 1))
	}
	calm := persisted(t, st, "audited", 3)
	mustPersist(t, st, mustFork(t, calm, 1))
	w, err := calm.Fork(2, session.AsWorker())
	if err != nil {
		t.Fatal(err)
	}
	mustPersist(t, st, w)
	var d kg.Data
	storetest.AddRawFork(&d, newID(), w.ID, 1) // a fork of a worker, behind the library's back
	storetest.RawChange(t, c, nil, &d)

	q, ok := prov.Lookup("tree-limits")
	if !ok {
		t.Fatal("no query tree-limits")
	}
	text, err := q.Bind(map[string]string{"max": "3"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Select(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		kind  string
		forks int
	}
	got := map[string]row{}
	for _, s := range res.Solutions {
		n, err := s.Int("forks")
		if err != nil {
			t.Fatal(err)
		}
		got[s.String("session")] = row{s.String("kind"), n}
	}
	want := map[string]row{
		ontology.SessionIRI(busy.ID): {"main", 3},
		ontology.SessionIRI(w.ID):    {"worker", 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for s, r := range want {
		if got[s] != r {
			t.Fatalf("%s: got %+v, want %+v", s, got[s], r)
		}
	}
}

func TestForkPoints(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	root := persisted(t, st, "alice", 6)
	for _, tc := range []struct {
		name string
		at   int
	}{
		{"at 0", 0},
		{"in the middle", 3},
		{"at the end", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustFork(t, root, tc.at)
			appendN(f, 2, "fork")
			mustPersist(t, st, f)
			got := mustLoad(t, st, f.ID)
			sameSession(t, got, f)
			if got.Depth() != 1 {
				t.Fatalf("got depth %d, want 1", got.Depth())
			}
			for i, turn := range got.Turns {
				want := root.Branch
				if i >= tc.at {
					want = f.Branch
				}
				if turn.Branch != want {
					t.Fatalf("turn %d: got branch %q, want %q", i, turn.Branch, want)
				}
			}
		})
	}
	// The parent is untouched by its forks.
	sameSession(t, mustLoad(t, st, root.ID), root)
}

func TestForkOfFork(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	root := persisted(t, st, "alice", 10)
	mid := mustFork(t, root, 6)
	appendN(mid, 4, "mid")
	mustPersist(t, st, mid)
	for _, tc := range []struct {
		name string
		at   int
	}{
		// root [0,6) mid [6,8) leaf [8,…)
		{"after the first fork point", 8},
		// root [0,4) leaf [4,…): the middle session contributes nothing.
		{"before the first fork point", 4},
		{"at the first fork point", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaf := mustFork(t, mid, tc.at)
			appendN(leaf, 3, "leaf")
			mustPersist(t, st, leaf)
			got := mustLoad(t, st, leaf.ID)
			sameSession(t, got, leaf)
			if got.Depth() != 2 {
				t.Fatalf("got depth %d, want 2", got.Depth())
			}
			for i := 0; i < min(tc.at, 6); i++ {
				if got.Turns[i].Branch != session.MainBranch {
					t.Fatalf("turn %d: got branch %q, want main", i, got.Turns[i].Branch)
				}
			}
		})
	}
}

func TestForkRange(t *testing.T) {
	fusekitest.Parallel(t)
	s := session.New("alice")
	appendN(s, 3, "r")
	for _, at := range []int{-1, 4} {
		if _, err := s.Fork(at); !errors.Is(err, session.ErrInvalid) {
			t.Fatalf("fork at %d: got %v, want ErrInvalid", at, err)
		}
	}
}

func TestParentNotStored(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	p := session.New("alice")
	appendN(p, 2, "p")
	f := mustFork(t, p, 1)
	err := st.Persist(context.Background(), f)
	var ae *session.AncestorError
	if !errors.Is(err, session.ErrParentMissing) || !errors.As(err, &ae) || ae.Missing != p.ID {
		t.Fatalf("got %v, want ErrParentMissing naming %s", err, p.ID)
	}
}

func TestBranchLabelCollision(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	root := persisted(t, st, "alice", 3)
	a := mustFork(t, root, 1)
	appendN(a, 1, "a")
	mustPersist(t, st, a)
	b := mustFork(t, root, 2)
	appendN(b, 2, "b")
	// Force b onto a's label, as a 1-in-4-billion draw would.
	b.Branch = a.Branch
	for i := b.ForkedAt; i < len(b.Turns); i++ {
		b.Turns[i].Branch = a.Branch
	}
	mustPersist(t, st, b)
	if b.Branch == a.Branch {
		t.Fatalf("got branch %q for both forks, want a fresh label for the second", b.Branch)
	}
	got := mustLoad(t, st, b.ID)
	sameSession(t, got, b)
	if mustLoad(t, st, a.ID).Branch != a.Branch {
		t.Fatal("the first fork's label changed")
	}
}

// longParent stores a root of alice with n turns, every
// tenth turn i changing state key "step" to i and every hundredth key
// "hundred": a history whose state depends on where it is cut.
func longParent(tb testing.TB, st *session.Store, n int) *session.Session {
	tb.Helper()
	s := session.New("alice")
	for i := range n {
		t := session.Turn{Role: "user", Content: "turn " + itoa(i)}
		if i%10 == 0 {
			t.Structure = &session.Structure{Delta: map[string]json.RawMessage{"step": json.RawMessage(itoa(i))}}
		}
		if i%100 == 0 {
			t.Structure.Delta["hundred"] = json.RawMessage(itoa(i))
		}
		s.AppendTurn(t)
		if (i+1)%500 == 0 || i == n-1 {
			mustPersist(tb, st, s) // 500 turns to a request
		}
	}
	return s
}

// TestStoreForkReadsConstant: Store.Fork of a 5,000-turn parent sends at
// most 3 requests and receives at most 20 KB, at 0, inside and at the
// end, and the fork holds the parent's prefix with the state as of its
// fork point. Before, it loaded the whole parent (megabytes).
func TestStoreForkReadsConstant(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	const n = 5000
	root := longParent(t, st, n)
	for _, at := range []int{0, 1, 4321, n} {
		t.Run("at "+itoa(at), func(t *testing.T) {
			reqs, bytes := ct.requests.Load(), ct.bytes.Load()
			f, err := st.Fork(ctx, root.ID, at)
			if err != nil {
				t.Fatal(err)
			}
			sent, recv := ct.requests.Load()-reqs, ct.bytes.Load()-bytes
			t.Logf("%d requests, %d bytes received", sent, recv)
			if sent > 3 {
				t.Errorf("got %d requests, want at most 3", sent)
			}
			if recv > 20_000 {
				t.Errorf("got %d bytes received, want at most 20,000", recv)
			}
			if f.ForkedAt != at || f.From != at || len(f.Turns) != 0 || f.ParentID != root.ID || f.Principal != "alice" {
				t.Fatalf("got fork of %s at %d (from %d, %d turns) of %q, want a tail of %s at %d of alice",
					f.ParentID, f.ForkedAt, f.From, len(f.Turns), f.Principal, root.ID, at)
			}
			var want map[string]json.RawMessage
			if at > 0 {
				want = map[string]json.RawMessage{"step": json.RawMessage(itoa((at - 1) / 10 * 10)), "hundred": json.RawMessage(itoa((at - 1) / 100 * 100))}
			}
			sameValues(t, "fork's values", f.Values, want)
			// The fork appends like a tail, and loads whole.
			f.Append("user", "own")
			mustPersist(t, st, f)
			got := mustLoad(t, st, f.ID)
			if len(got.Turns) != at+1 || got.Turns[at].Content != "own" || (at > 0 && got.Turns[at-1].Content != root.Turns[at-1].Content) {
				t.Fatalf("got %d turns, want the parent's %d and the fork's own", len(got.Turns), at)
			}
			sameValues(t, "loaded fork's values", got.Values, want)
		})
	}
	// A position found nowhere costs as little.
	reqs, bytes := ct.requests.Load(), ct.bytes.Load()
	if _, err := st.Fork(ctx, root.ID, -1, session.ForkAfterEvent("nope")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("fork after an unknown event: got %v, want ErrNotFound", err)
	}
	if sent, recv := ct.requests.Load()-reqs, ct.bytes.Load()-bytes; sent > 2 || recv > 20_000 {
		t.Errorf("fork after an unknown event: got %d requests and %d bytes received, want at most 2 and 20,000", sent, recv)
	}
}

// TestStoreForkOfForks: Store.Fork along a chain of forks, each made at
// a point before, at or after the fork point above it, gives the history
// and state Load gives, in at most 3 requests, to the depth limit.
func TestStoreForkOfForks(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	root := longParent(t, st, 300)
	cur := root.ID
	length := 300
	for k := range session.MaxForkDepth {
		at := length - 1 - k%3*7 // inside the last session's own turns or its parent's
		if k%5 == 0 {
			at = length // at the end
		}
		reqs := ct.requests.Load()
		f, err := st.Fork(ctx, cur, at)
		if err != nil {
			t.Fatalf("fork %d of %s at %d: %v", k, cur, at, err)
		}
		if got := ct.requests.Load() - reqs; got > 3 {
			t.Errorf("fork %d: got %d requests, want at most 3", k, got)
		}
		f.AppendTurn(session.Turn{Role: "user", Content: "own " + itoa(k), Structure: &session.Structure{Delta: map[string]json.RawMessage{"step": json.RawMessage(`"f` + itoa(k) + `"`)}}})
		mustPersist(t, st, f)
		parent := mustLoad(t, st, cur)
		got := mustLoad(t, st, f.ID)
		sameHistory(t, got.Turns[:at], parent.Turns[:at])
		want := mustFork(t, parent, at)
		if f.Values["hundred"] == nil || string(f.Values["hundred"]) != string(want.Values["hundred"]) {
			t.Errorf("fork %d: got hundred %s, want %s", k, f.Values["hundred"], want.Values["hundred"])
		}
		if got.Depth() != k+1 {
			t.Fatalf("fork %d: got depth %d, want %d", k, got.Depth(), k+1)
		}
		cur, length = f.ID, at+1
	}
	if _, err := st.Fork(ctx, cur, 1); !errors.Is(err, session.ErrForkDepth) {
		t.Fatalf("fork beyond the depth limit: got %v, want ErrForkDepth", err)
	}
}

// TestStoreForkPositions: ForkAtTurn, ForkBeforeInvocation and
// ForkAfterEvent find their turn in the parent's history through the
// store's index, also in an ancestor's share, and say ErrNotFound for a
// turn outside it.
func TestStoreForkPositions(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := session.New("alice")
	for i := range 6 {
		root.AppendTurn(session.Turn{Role: "user", Content: "t" + itoa(i),
			Structure: &session.Structure{InvocationID: "inv" + itoa(i/2), EventID: "e" + itoa(i)}})
	}
	mustPersist(t, st, root)
	mid, err := st.Fork(ctx, root.ID, 4)
	if err != nil {
		t.Fatal(err)
	}
	mid.AppendTurn(session.Turn{Role: "user", Content: "m", Structure: &session.Structure{InvocationID: "inv9", EventID: "m"}})
	mustPersist(t, st, mid)
	for _, tc := range []struct {
		name   string
		opt    session.ForkOption
		at     int
		before string // the turn PROV records
	}{
		{"turn", session.ForkAtTurn(root.Turns[3].ID), 3, root.Turns[3].ID},
		{"invocation", session.ForkBeforeInvocation("inv1"), 2, root.Turns[2].ID},
		{"own invocation", session.ForkBeforeInvocation("inv9"), 4, mustLoad(t, st, mid.ID).Turns[4].ID},
		{"event", session.ForkAfterEvent("e1"), 2, root.Turns[2].ID},
		{"last event", session.ForkAfterEvent("m"), 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := st.Fork(ctx, mid.ID, -1, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if f.ForkedAt != tc.at {
				t.Fatalf("got fork point %d, want %d", f.ForkedAt, tc.at)
			}
			var want []string
			if tc.before != "" {
				want = []string{tc.before}
			}
			if got := provValues(t, c, f.ID, ontology.BeforeTurn); !slices.Equal(got, want) {
				t.Errorf("trails:beforeTurn: got %q, want %q", got, want)
			}
			got := mustLoad(t, st, f.ID)
			inMemory, err := mustLoad(t, st, mid.ID).Fork(-1, tc.opt)
			if err != nil || inMemory.ForkedAt != tc.at {
				t.Fatalf("Session.Fork: got %v at %d, want %d", err, inMemory.ForkedAt, tc.at)
			}
			sameHistory(t, got.Turns, inMemory.Turns)
		})
	}
	for _, opt := range []session.ForkOption{
		session.ForkAtTurn(root.Turns[5].ID), // the root's, beyond mid's fork point
		session.ForkBeforeInvocation("nope"),
		session.ForkAfterEvent("e5"),
	} {
		if _, err := st.Fork(ctx, mid.ID, -1, opt); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	}
}

// afterReads runs before, once, when the answer to the reads-th request
// it carries has come: for Store.Fork's two reads, between them and its
// update (not inside the update's request, which on a store whose client
// sends one update at a time would wait for the rewind, and it for it).
type afterReads struct {
	next   http.RoundTripper
	reads  int64
	n      atomic.Int64
	before func()
}

func (r *afterReads) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if r.n.Add(1) == r.reads && err == nil {
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		if rerr != nil {
			return nil, rerr
		}
		r.before()
	}
	return resp, err
}

// TestStoreForkRacingRewind: a rewind of the parent that lands between
// Store.Fork's reads and its update either leaves the prefix the fork
// inherits whole (the fork is stored, with that prefix) or cuts it (the
// fork is refused with ErrConflict and nothing of it is stored), never a
// fork of a prefix that no longer exists.
func TestStoreForkRacingRewind(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	other, _, c := newStore(t)
	for _, tc := range []struct {
		name   string
		to     int // where the rewind goes back to
		refuse bool
	}{
		{"below the fork point", 3, true},
		{"at the fork point", 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fusekitest.RequireDirect(t, "it races a rewind at its store's HTTP transport")
			root := persisted(t, other, "alice", 10)
			rt := &afterReads{next: http.DefaultTransport, reads: 2, before: func() {
				if _, _, err := other.Rewind(ctx, root.ID, tc.to, session.RewindOptions{}); err != nil {
					t.Errorf("rewind: %v", err)
				}
			}}
			st := session.NewStore(fusekitest.Client(t, kg.Config{Endpoint: fusekitest.Endpoint(t), HTTPClient: &http.Client{Transport: rt}}))
			f, err := st.Fork(ctx, root.ID, 6)
			if tc.refuse {
				if !errors.Is(err, session.ErrConflict) {
					t.Fatalf("got %v, want ErrConflict", err)
				}
				n := queryInt(t, c, `SELECT (COUNT(*) AS ?n) WHERE { ?s <`+ontology.ParentSession+`> $p }`, kg.Params{"p": kg.MustIRI(ontology.SessionIRI(root.ID))})
				if n != 1 { // the rewind's archive only
					t.Fatalf("got %d forks of the parent, want the rewind's archive only", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sameHistory(t, mustLoad(t, st, f.ID).Turns, root.Turns[:6])
		})
	}
}
