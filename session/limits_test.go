package session_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// The tree limits and session kinds of seed 002. The depth limit (32
// ancestors fine, 33 refused in memory, at Persist and at Load) is tested
// by TestDepthLimit in chain_test.go.

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
			st := session.NewStore(c, tc.opts...)
			parent := persisted(t, st, "limits", 3)
			for i := range tc.ok {
				f := mustFork(t, parent, i%4)
				appendN(f, 1, "kid")
				mustPersist(t, st, f)
			}
			next := mustFork(t, parent, 2)
			appendN(next, 2, "one too many")
			before := countQuads(t, c, "")
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
			if got := countQuads(t, c, ""); got != before {
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
	st := session.NewStore(c, session.WithMaxChildren(2))
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

	if err := st.Detach(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	c1 := mustFork2() // in a's place
	refused("after the detach and a new fork")

	if err := st.Delete(ctx, c1.ID); err != nil {
		t.Fatal(err)
	}
	d := mustFork2() // in c1's place
	refused("after the delete and a new fork")

	// An archive made by a rewind keeps its parent link but is no fork
	// any more (written raw: Rewind is another feature's).
	var ins kg.Data
	g := sessionRef(d.ID)
	ins.Add(g, g, kg.MustIRI(ontology.NS+"rewoundFrom"), sessionRef(parent.ID))
	rawChange(t, c, nil, &ins)
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
			stores[k] = session.NewStore(c, session.WithMaxChildren(limit))
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

func TestWorker(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "boss", 4)
	w, err := root.Fork(2, session.AsWorker(), session.WithCreatedBy(session.CreatedBySystem))
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind != session.KindWorker {
		t.Fatalf("got kind %q, want worker", w.Kind)
	}
	appendN(w, 2, "worker")
	mustPersist(t, st, w)

	t.Run("in memory", func(t *testing.T) {
		if _, err := w.Fork(1); !errors.Is(err, session.ErrNotForkable) {
			t.Fatalf("got %v, want ErrNotForkable", err)
		}
		if _, err := w.Fork(1, session.AsWorker()); !errors.Is(err, session.ErrNotForkable) {
			t.Fatalf("a worker of a worker: got %v, want ErrNotForkable", err)
		}
		loaded := mustLoad(t, st, w.ID)
		if loaded.Kind != session.KindWorker {
			t.Fatalf("loaded: got kind %q, want worker", loaded.Kind)
		}
		if _, err := loaded.Fork(3); !errors.Is(err, session.ErrNotForkable) {
			t.Fatalf("loaded: got %v, want ErrNotForkable", err)
		}
		if _, err := st.Fork(ctx, w.ID, 3); !errors.Is(err, session.ErrNotForkable) {
			t.Fatalf("Store.Fork: got %v, want ErrNotForkable", err)
		}
	})
	t.Run("at persist, when the value does not know", func(t *testing.T) {
		unaware := mustLoad(t, st, w.ID)
		unaware.Kind = "" // as a Session built by hand
		f, err := unaware.Fork(3)
		if err != nil {
			t.Fatalf("in memory, a session of no kind forks: %v", err)
		}
		byHand := &session.Session{ID: newID(), Principal: "hand", ParentID: w.ID, ForkedAt: 1,
			Branch: "fork-0123abcd", Turns: append([]session.Turn(nil), w.Turns[:1]...)}
		for _, f := range []*session.Session{f, byHand} {
			appendN(f, 1, "of a worker")
			before := countQuads(t, c, "")
			if err := st.Persist(ctx, f); !errors.Is(err, session.ErrNotForkable) {
				t.Fatalf("got %v, want ErrNotForkable", err)
			}
			if got := countQuads(t, c, ""); got != before {
				t.Fatalf("the refused fork wrote %d quads, want none", got-before)
			}
			mustNotBeStored(t, st, c, f.ID)
		}
	})
	t.Run("a worker is a session like others", func(t *testing.T) {
		appendN(w, 1, "more work")
		mustPersist(t, st, w)
		sameSession(t, mustLoad(t, st, w.ID), w)
		// Its parent can still be forked.
		mustPersist(t, st, mustFork(t, root, 1))
	})
}

func TestKindsRoundTrip(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	principal := "kinds-" + newID()
	root := persisted(t, st, principal, 3)
	branch := mustFork(t, root, 2)
	appendN(branch, 1, "branch")
	mustPersist(t, st, branch)
	worker, err := branch.Fork(3, session.AsWorker())
	if err != nil {
		t.Fatal(err)
	}
	mustPersist(t, st, worker)
	want := map[string]session.Kind{root.ID: session.KindMain, branch.ID: session.KindBranch, worker.ID: session.KindWorker}
	for _, s := range []*session.Session{root, branch, worker} {
		if s.Kind != want[s.ID] {
			t.Fatalf("in memory: got kind %q, want %q", s.Kind, want[s.ID])
		}
		if got := mustLoad(t, st, s.ID).Kind; got != want[s.ID] {
			t.Fatalf("load %s: got kind %q, want %q", s.ID, got, want[s.ID])
		}
		in, err := st.Info(ctx, s.ID)
		if err != nil || in.Kind != want[s.ID] {
			t.Fatalf("info %s: got kind %q (%v), want %q", s.ID, in.Kind, err, want[s.ID])
		}
	}
	infos, err := st.List(ctx, session.ByPrincipal(principal))
	if err != nil || len(infos) != 3 {
		t.Fatalf("list: got %d sessions (%v), want 3", len(infos), err)
	}
	for _, in := range infos {
		if in.Kind != want[in.ID] {
			t.Fatalf("list %s: got kind %q, want %q", in.ID, in.Kind, want[in.ID])
		}
	}
	kids, err := st.Branches(ctx, branch.ID)
	if err != nil || len(kids) != 1 || kids[0].Kind != session.KindWorker {
		t.Fatalf("branches: got %+v (%v), want the worker", kids, err)
	}
	// A kind is fixed when the session is created.
	changed := mustLoad(t, st, branch.ID)
	changed.Kind = session.KindWorker
	appendN(changed, 1, "as a worker?")
	if err := st.Persist(ctx, changed); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("a changed kind: got %v, want ErrConflict", err)
	}
	// A detached fork keeps its kind.
	if err := st.Detach(ctx, worker.ID); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, st, worker.ID); got.ParentID != "" || got.Kind != session.KindWorker {
		t.Fatalf("detached: got parent %q and kind %q, want a root worker", got.ParentID, got.Kind)
	}
}

// TestLegacyKinds: sessions stored before kinds existed (no trails:kind)
// are main if a root and branch if a fork.
func TestLegacyKinds(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	nq, err := os.ReadFile(filepath.Join("..", "testdata", "session", "legacy", "session.nq"))
	if err != nil {
		t.Fatal(err)
	}
	// A copy of the fixture under a new id, so that other tests' forks of
	// the fixture do not count here.
	id := newID()
	nq = []byte(strings.ReplaceAll(string(nq), legacyFixtureID, id))
	if err := c.LoadQuads(ctx, nq); err != nil {
		t.Fatal(err)
	}
	fork := newID()
	writeRaw(t, c, fork, id, 2) // a fork as the library wrote them before kinds
	for _, tc := range []struct {
		id   string
		want session.Kind
	}{{id, session.KindMain}, {fork, session.KindBranch}} {
		if got := mustLoad(t, st, tc.id).Kind; got != tc.want {
			t.Fatalf("load %s: got kind %q, want %q", tc.id, got, tc.want)
		}
		if in, err := st.Info(ctx, tc.id); err != nil || in.Kind != tc.want {
			t.Fatalf("info %s: got kind %q (%v), want %q", tc.id, in.Kind, err, tc.want)
		}
	}
	// The legacy root takes turns and forks as before; its forks count.
	s := mustLoad(t, st, id)
	s.Append("user", "a new turn on the old session")
	mustPersist(t, st, s)
	low := session.NewStore(c, session.WithMaxChildren(2))
	mustPersist(t, low, mustFork(t, s, 3))
	if err := low.Persist(ctx, mustFork(t, s, 3)); !errors.Is(err, session.ErrTooManyChildren) {
		t.Fatalf("a third fork with the raw one: got %v, want ErrTooManyChildren", err)
	}
}

func TestKindInvalid(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "bad-kinds", 2)
	boss := session.New("p")
	boss.Kind = "boss"
	f := mustFork(t, root, 1)
	f.Kind = session.KindMain
	for name, s := range map[string]*session.Session{"an unknown kind": boss, "a fork of kind main": f} {
		if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
			t.Fatalf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	// A stored kind that is none of the three is corrupt data.
	var ins kg.Data
	g := sessionRef(root.ID)
	ins.Add(g, g, kg.MustIRI(ontology.Kind), kg.String("boss"))
	var del kg.Data
	del.Add(g, g, kg.MustIRI(ontology.Kind), kg.String("main"))
	rawChange(t, c, &del, &ins)
	if _, err := st.Load(ctx, root.ID); !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("load: got %v, want ErrCorrupt", err)
	}
}

// TestKindsCheck: trails-admin check (Store.Check) reports a fork of a
// worker and an unknown kind written behind the library's back.
func TestKindsCheck(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	st := session.NewStore(c)
	ctx := context.Background()
	root := persisted(t, st, "checked", 3)
	w, err := root.Fork(2, session.AsWorker())
	if err != nil {
		t.Fatal(err)
	}
	mustPersist(t, st, w)
	if got, err := check(ctx, st); err != nil || len(got) != 0 {
		t.Fatalf("before: got %v (%v), want no findings", got, err)
	}
	fusekitest.RequireFuseki(t, "the SHACL endpoint (the shapes alone check kinds)")
	var d kg.Data
	ofWorker := newID()
	addRawFork(&d, ofWorker, w.ID, 1)
	rawChange(t, c, nil, &d)
	var ins, del kg.Data
	g := sessionRef(root.ID)
	del.Add(g, g, kg.MustIRI(ontology.Kind), kg.String("main"))
	ins.Add(g, g, kg.MustIRI(ontology.Kind), kg.String("boss"))
	rawChange(t, c, &del, &ins)
	got, err := check(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{ofWorker: false, root.ID: false}
	for _, f := range got {
		t.Logf("%s %s: %s", f.Rule, f.Resource, f.Message)
		if _, ok := want[f.Resource]; ok && f.Rule == session.RuleSHACL {
			want[f.Resource] = true
		}
	}
	for id, found := range want {
		if !found {
			t.Errorf("no shacl finding for %s", id)
		}
	}
}

// TestTreeLimitsQuery runs the auditors' query tree-limits: sessions with
// at least $max forks, and workers with any.
func TestTreeLimitsQuery(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	st := session.NewStore(c, session.WithMaxChildren(0))
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
	addRawFork(&d, newID(), w.ID, 1) // a fork of a worker, behind the library's back
	rawChange(t, c, nil, &d)

	q, ok := prov.Lookup("tree-limits")
	if !ok {
		t.Fatal("no query tree-limits")
	}
	text, err := q.Bind(map[string]string{"max": "3"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Query(ctx, text)
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
