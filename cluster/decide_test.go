package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// TestDecidedPath runs writers through the log to three replicas: one on
// the decided path sending conditional patches to its Fuseki's
// conditional-patch endpoint (each append's condition evaluated and its
// data applied in the write transaction), one on the decided path by
// reading, sending SPARQL Update (NoPatch), and one on the update path
// (UpdatesOnly): appends of
// sessions of their own, two writers racing on one session (lost
// compare and swaps, refused), a rewind, a completed session that
// refuses appends. The replicas must hold the same quads, the writers
// must see every append they were told applied, and two more replicas
// that replay the whole log from empty on the decided path, one each
// way (several appends of a session in one run), must hold the same
// quads too.
func TestDecidedPath(t *testing.T) {
	k := kafkatest.Start(t)
	srv, err := fusekitest.StartServer(fusekitest.Options{Datasets: 4})
	if err != nil {
		t.Fatalf("fuseki for the replicas: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()

	r := &rig{brokers: k.Brokers(), topic: "t" + t.Name()}
	k.CreateTopic(t, r.topic, 1)
	for i, ds := range srv.Datasets[:3] {
		c := fusekitest.Client(t, kg.Config{Endpoint: ds, Store: kg.Fuseki})
		r.stores = append(r.stores, c)
		r.appliers = append(r.appliers, r.startWith(t, cluster.ApplierConfig{Store: c, UpdatesOnly: i == 1, NoPatch: i == 2}, httptest.NewServer(&current{})))
	}
	t.Cleanup(func() {
		for _, a := range r.appliers {
			a.stop(t)
			a.srv.Close()
		}
	})
	c := r.client(t)

	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := map[string]int{} // session id: turns its writers were told are stored
	for w := range 6 {
		wg.Go(func() {
			st := session.NewStore(c)
			s := session.New(fmt.Sprintf("writer-%d", w))
			for i := range 12 {
				s.Append("user", fmt.Sprintf("turn %d of writer %d", i, w))
				if err := st.Persist(ctx, s); err != nil {
					t.Errorf("writer %d, turn %d: %v", w, i, err)
					return
				}
			}
			mu.Lock()
			stored[s.ID] = len(s.Turns)
			mu.Unlock()
		})
	}

	// Two writers racing on one session: each loads, appends, persists;
	// a lost race (ErrConflict) loads again.
	st := session.NewStore(c)
	shared := session.New("racers")
	shared.Append("user", "start")
	if err := st.Persist(ctx, shared); err != nil {
		t.Fatal(err)
	}
	var conflicts sync.Map
	for w := range 2 {
		wg.Go(func() {
			st := session.NewStore(c)
			for i := range 8 {
				for {
					s, err := st.Load(ctx, shared.ID)
					if err != nil {
						t.Errorf("racer %d: %v", w, err)
						return
					}
					s.Append("user", fmt.Sprintf("racer %d, turn %d", w, i))
					err = st.Persist(ctx, s)
					if errors.Is(err, session.ErrConflict) {
						conflicts.Store(fmt.Sprint(w, i), true)
						continue
					}
					if err != nil {
						t.Errorf("racer %d: %v", w, err)
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// A rewind, then appends on the rewound session; a completed session
	// refuses an append.
	rw := session.New("rewinder")
	for i := range 5 {
		rw.Append("user", fmt.Sprintf("turn %d", i))
		if err := st.Persist(ctx, rw); err != nil {
			t.Fatal(err)
		}
	}
	rw, _, err = st.Rewind(ctx, rw.ID, 2, session.RewindOptions{Reason: "try again"})
	if err != nil {
		t.Fatal(err)
	}
	rw.Append("user", "after the rewind")
	if err := st.Persist(ctx, rw); err != nil {
		t.Fatal(err)
	}
	done := session.New("finisher")
	done.Append("user", "one")
	if err := st.Persist(ctx, done); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetState(ctx, done.ID, session.StateCompleted, session.StateOptions{}); err != nil {
		t.Fatal(err)
	}
	done.Append("user", "after the end")
	if err := st.Persist(ctx, done); err == nil {
		t.Error("append to a completed session: applied, want refused")
	}

	// A fork whose parent is rewound below its fork point moves under the
	// archive: its count and head digest stay, so only the append's own
	// condition (its fork fields) refuses a value read before.
	elder := session.New("elder")
	for i := range 4 {
		elder.Append("user", fmt.Sprintf("elder %d", i))
	}
	if err := st.Persist(ctx, elder); err != nil {
		t.Fatal(err)
	}
	young, err := st.Fork(ctx, elder.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	young.Append("user", "the fork's own")
	if err := st.Persist(ctx, young); err != nil {
		t.Fatal(err)
	}
	if _, res, err := st.Rewind(ctx, elder.ID, 1, session.RewindOptions{Reason: "the fork moves"}); err != nil || len(res.Reparented) != 1 {
		t.Fatalf("rewind of the fork's parent: %+v (%v), want the fork re-parented", res, err)
	}
	young.Append("user", "from a value read before the parent's rewind")
	if err := st.Persist(ctx, young); !errors.Is(err, session.ErrConflict) {
		t.Errorf("append to a fork re-parented since its value was read: %v, want ErrConflict", err)
	}

	// One Store shared by writers: its group commits, each one record
	// with a group hint, of creates, appends (a stale one among them,
	// refused) and state changes: every member applied or refused on
	// its own, the same on every replica.
	grouped := session.NewStore(c)
	var groupedIDs sync.Map
	for w := range 8 {
		wg.Go(func() {
			s := session.New(fmt.Sprintf("grouped-%d", w))
			for i := range 6 {
				s.Append("user", fmt.Sprintf("grouped %d of writer %d", i, w))
				if err := grouped.Persist(ctx, s); err != nil {
					t.Errorf("grouped writer %d, turn %d: %v", w, i, err)
					return
				}
			}
			if w%3 == 0 {
				if _, err := grouped.SetState(ctx, s.ID, session.StateCompleted, session.StateOptions{}); err != nil {
					t.Errorf("grouped writer %d: end: %v", w, err)
				}
			}
			stale, err := grouped.Load(ctx, s.ID)
			if err != nil {
				t.Errorf("grouped writer %d: %v", w, err)
				return
			}
			s.Append("user", "the writer's last")
			stale.Append("user", "from a stale value")
			first, second := grouped.Persist(ctx, s), grouped.Persist(ctx, stale)
			if w%3 == 0 && (first == nil || second == nil) || w%3 != 0 && (first != nil || !errors.Is(second, session.ErrConflict)) {
				t.Errorf("grouped writer %d: the last appends %v and %v, want both refused when ended, else nil and ErrConflict", w, first, second)
			}
			groupedIDs.Store(s.ID, w%3 != 0)
		})
	}
	wg.Wait()

	// A Client given a Transport asks the appliers through it.
	counted := &countingTransport{next: http.DefaultTransport}
	tc, err := cluster.Open(cluster.Config{Brokers: r.brokers, Topic: r.topic, Replicas: r.replicas(), Timeout: 20 * time.Second, Transport: counted})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	one := session.New("transported")
	one.Append("user", "through a transport of the caller's")
	if err := session.NewStore(tc).Persist(ctx, one); err != nil {
		t.Fatal(err)
	}
	if counted.n.Load() == 0 {
		t.Error("a Client with a Transport: no request to the appliers went through it")
	}

	quads := r.converged(t, tc.Position())
	for id, n := range stored {
		s, err := st.Load(ctx, id)
		if err != nil || len(s.Turns) != n {
			t.Errorf("session %s: %v turns (%v), want %d", id, len(s.Turns), err, n)
		}
	}
	if s, err := st.Load(ctx, shared.ID); err != nil || len(s.Turns) != 17 {
		t.Errorf("raced session: %v turns (%v), want 17", len(s.Turns), err)
	}
	for _, i := range []int{0, 2} {
		if got := cluster.Decided(r.appliers[i].a); got < 6*11 {
			t.Errorf("replica %d applied %d records as data, want at least the 66 appends of the writers of their own sessions", i, got)
		}
	}
	if !cluster.Patches(r.appliers[0].a) || cluster.Patches(r.appliers[2].a) {
		t.Errorf("conditional patches sent: replica 0 %v (want true: its Fuseki serves conditional-patch), replica 2 %v (want false: NoPatch)",
			cluster.Patches(r.appliers[0].a), cluster.Patches(r.appliers[2].a))
	}
	if got := cluster.Decided(r.appliers[1].a); got != 0 {
		t.Errorf("replica 1 (UpdatesOnly) applied %d records as data, want 0", got)
	}
	if g0, g2 := cluster.Groups(r.appliers[0].a), cluster.Groups(r.appliers[2].a); g0 == 0 || g2 != 0 {
		t.Errorf("group commits applied as data: replica 0 %d (want some: conditional patches), replica 2 %d (want none: decided by reading)", g0, g2)
	}
	groupedIDs.Range(func(id, open any) bool {
		s, err := st.Load(ctx, id.(string))
		want := 6
		if open.(bool) {
			want = 7
		}
		if err != nil || len(s.Turns) != want || strings.Contains(fmt.Sprint(s.Turns), "stale") {
			t.Errorf("grouped session %s: %d turns (%v), want %d, none from the stale value", id, len(s.Turns), err, want)
		}
		return true
	})
	t.Logf("lost races: %d", countMap(&conflicts))

	// New replicas replay the whole log on the decided path, each way:
	// runs with several appends of one session.
	for i, cfg := range []cluster.ApplierConfig{{}, {NoPatch: true}} {
		cfg.Store = fusekitest.Client(t, kg.Config{Endpoint: srv.Datasets[3+i], Store: kg.Fuseki})
		replay := r.startWith(t, cfg, httptest.NewServer(&current{}))
		r.stores, r.appliers = append(r.stores, cfg.Store), append(r.appliers, replay)
		if again := r.converged(t, tc.Position()); again != quads {
			t.Errorf("the replayed replica (NoPatch %v) differs", cfg.NoPatch)
		}
		if got := cluster.Decided(replay.a); got < 6*11 {
			t.Errorf("the replaying replica (NoPatch %v) applied %d records as data, want at least 66", cfg.NoPatch, got)
		}
		if got := cluster.Groups(replay.a); (got > 0) != !cfg.NoPatch {
			t.Errorf("the replaying replica (NoPatch %v) applied %d group commits' records as data", cfg.NoPatch, got)
		}
	}
	if strings.Contains(quads, "read before the parent") {
		t.Error("the re-parented fork's stale append is stored")
	}
	if !strings.Contains(quads, "after the rewind") {
		t.Error("the rewound session's append is not stored")
	}
}

func countMap(m *sync.Map) int {
	n := 0
	m.Range(func(any, any) bool { n++; return true })
	return n
}

// countingTransport counts the requests it carries.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}
