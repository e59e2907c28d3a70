package session_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

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
