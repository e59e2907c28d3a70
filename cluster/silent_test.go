package cluster_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/session"
)

// holdProxy stands in front of a Fuseki dataset: silent, it holds every
// request without an answer (as a Fuseki frozen with SIGSTOP, or cut
// off); slow, it delays every query but the ping (ASK {}) by slow, as a
// long read on a live Fuseki.
type holdProxy struct {
	srv    *httptest.Server
	silent atomic.Bool
	slow   atomic.Int64 // a time.Duration
	held   chan struct{}
	// queries counts the requests served but pings.
	queries atomic.Int64
}

func newHoldProxy(t *testing.T, dataset string) *holdProxy {
	t.Helper()
	u, err := url.Parse(dataset)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{held: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.silent.Load() {
			select {
			case <-p.held:
			case <-r.Context().Done():
				return
			}
		}
		if q := r.URL.Query().Get("query"); q != "ASK {}" {
			p.queries.Add(1)
			time.Sleep(time.Duration(p.slow.Load()))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		p.release()
		p.srv.Close()
	})
	return p
}

// release answers the held requests and stops holding.
func (p *holdProxy) release() {
	if p.silent.CompareAndSwap(true, false) {
		close(p.held)
	}
}

// testSilentReplica: a read sent to a replica whose Fuseki went silent
// (holds every request, answers none) goes to the other replica within a
// few seconds, not after the replica client's 30 s Timeout (issue 38,
// item 6: it took 30.0 s in replica_cut_off); a read that takes long on a
// live replica (it answers pings) is not abandoned.
func testSilentReplica(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	r := newRig(t, k, srv, 1)
	ctx := context.Background()
	proxy := newHoldProxy(t, r.stores[0].Endpoint())
	reps := r.replicas()
	u, err := url.Parse(r.stores[0].Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	reps[0].Dataset = proxy.srv.URL + u.Path
	c, err := cluster.Open(cluster.Config{Brokers: r.brokers, Topic: r.topic, Replicas: reps, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	st := session.NewStore(c)
	s := session.New("silent")
	s.Append("user", "one")
	s.Append("assistant", "two")
	if err := st.Persist(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitPosition(t, r.appliers[1].srv.URL, c.Position())

	load := func(when string, within time.Duration) {
		t.Helper()
		t0 := time.Now()
		got, err := st.Load(ctx, s.ID)
		d := time.Since(t0)
		if err != nil {
			t.Fatalf("%s: %v (after %v)", when, err, d)
		}
		if len(got.Turns) != 2 {
			t.Fatalf("%s: %d turns, want 2", when, len(got.Turns))
		}
		if d > within {
			t.Errorf("%s: the load took %v, want at most %v", when, d, within)
		}
		t.Logf("%s: %v", when, d)
	}

	proxy.slow.Store(int64(4 * time.Second))
	cluster.Prefer(c, 0)
	before := proxy.queries.Load()
	load("replica 0 slow but live", 60*time.Second)
	if served := proxy.queries.Load() - before; served == 0 {
		t.Errorf("the slow load went elsewhere: replica 0 served no query, want it to wait for a replica that answers pings")
	}
	proxy.slow.Store(0)

	proxy.silent.Store(true)
	cluster.Prefer(c, 0)
	load("replica 0 silent", 8*time.Second)
}
