package lincheck

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// TestHistoriesApplierKill runs histories on the kafka profile
// (TRAILS_TEST_STORE=kafka): the Store writes through a cluster.Client to
// a Kafka log of the test's own, which one replica applies (the test's
// Fuseki dataset, its Applier run in this process and served over HTTP).
// During each history the applier is killed while one of its apply
// requests (a batch, a record alone, or a move of the offset past a
// refused record) is on its way to Fuseki, and a new applier starts on
// the same dataset and address at once (issue 36, part 2). One replica,
// so that no healthy second one answers the writers in its place.
func TestHistoriesApplierKill(t *testing.T) {
	if !fusekitest.OnCluster() {
		t.Skip("the kafka profile runs it: TRAILS_TEST_STORE=kafka")
	}
	t.Parallel()
	n := histories(t, 20, 12, 0.1)
	k := kafkatest.Start(t)
	topic := "lincheck-" + invalidTopic.ReplaceAllString(t.Name(), "_")
	k.CreateTopic(t, topic, 1)
	direct := fusekitest.Empty(t)
	rp := newReplica(t, k.Brokers(), topic, direct.Endpoint())
	c, err := cluster.Open(cluster.Config{Brokers: k.Brokers(), Topic: topic, Replicas: []cluster.Replica{{Dataset: direct.Endpoint(), Applier: rp.srv.URL}}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	runAll(t, c, config{clients: 4, ops: opsPerClient(), restart: rp}, n, nil)
	rp.mu.Lock()
	defer rp.mu.Unlock()
	t.Logf("applier: %d killed with an apply request in flight (%d of them moves of the offset past a refused record), %d killed idle, %d new appliers stopped by an error of their own and started again",
		rp.killedBusy, rp.killedRefusal, rp.killedIdle, rp.restartedAfterError)
}

// invalidTopic matches what a Kafka topic name may not hold.
var invalidTopic = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// replica is one replica whose applier runs in this process: a history
// kills it (killDuringApply) and a new one takes its place.
type replica struct {
	tb                  testing.TB
	brokers             []string
	topic, endpoint     string
	srv                 *httptest.Server
	cur                 atomic.Pointer[applierRun]
	armed               atomic.Pointer[armedKill] // the kill the next apply request of the current applier triggers
	wg                  sync.WaitGroup
	mu                  sync.Mutex
	killedBusy          int // killed with an apply request in flight
	killedRefusal       int // of which the request moved the offset past a refused record
	killedIdle          int // killed with no apply request within killWithin
	restartedAfterError int
}

// armedKill is a kill waiting for an apply request: the request is held
// for hold, after the new applier started, and then sent on; done is
// closed once the kill happened.
type armedKill struct {
	hold     time.Duration
	refusals bool // only a move of the offset past a refused record takes it
	done     chan struct{}
}

// applierRun is one Applier of the replica.
type applierRun struct {
	a      *cluster.Applier
	dead   context.Context // done when it was killed
	kill   context.CancelFunc
	killed atomic.Bool
}

// newReplica starts the first applier of the replica of endpoint and
// serves it.
func newReplica(t *testing.T, brokers []string, topic, endpoint string) *replica {
	t.Helper()
	r := &replica{tb: t, brokers: brokers, topic: topic, endpoint: endpoint}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.start()
	t.Cleanup(func() {
		if run := r.cur.Load(); run != nil {
			run.killed.Store(true)
			run.kill()
		}
		r.wg.Wait()
		r.srv.Close()
	})
	return r
}

// serve answers for the current applier; the requests a killed applier
// was answering end, pending, as its connections would.
func (r *replica) serve(w http.ResponseWriter, req *http.Request) {
	run := r.cur.Load()
	if run.dead.Err() != nil {
		http.Error(w, "applier killed", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	defer context.AfterFunc(run.dead, cancel)()
	run.a.ServeHTTP(w, req.WithContext(ctx))
}

// start starts a new applier of the replica, the one it serves from now
// on. An applier that stops on an error of its own (not killed) is
// started again, as a supervisor would (none did in the recorded runs).
func (r *replica) start() {
	run := &applierRun{}
	run.dead, run.kill = context.WithCancel(context.Background())
	store, err := kg.New(kg.Config{Endpoint: r.endpoint, Store: kg.Fuseki, Timeout: time.Minute,
		HTTPClient: &http.Client{Transport: &killTransport{r: r, run: run}}})
	if err != nil {
		r.tb.Errorf("replica: %v", err)
		return
	}
	a, err := cluster.NewApplier(cluster.ApplierConfig{Brokers: r.brokers, Topic: r.topic, Store: store})
	if err != nil {
		r.tb.Errorf("replica: %v", err)
		return
	}
	run.a = a
	r.cur.Store(run)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := a.Run(run.dead)
		if run.killed.Load() || errors.Is(err, context.Canceled) {
			return
		}
		r.tb.Logf("replica: the applier stopped: %v (started again)", err)
		r.mu.Lock()
		r.restartedAfterError++
		r.mu.Unlock()
		r.start()
	}()
}

// Bounds on the wait for an apply request to kill the applier during:
// refusalWithin for a move past a refused record (half of the
// histories), then killWithin for any (a history's calls take some
// 300 ms to 2 s); past them, the applier is killed
// idle (the history's calls are over by then, most often).
const (
	refusalWithin = 500 * time.Millisecond
	killWithin    = 2 * time.Second
)

// killDuringApply kills the current applier while its next apply request
// is on its way to Fuseki (or idle, when it sends none in time), starts a
// new one at once, and returns once that is done.
// The request goes on to Fuseki after hold, as one sent before a kill -9
// does (seeded from seed, 0 to 300 ms: a new applier may read the offset
// before it commits, or after).
func (r *replica) killDuringApply(seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 17))
	hold := time.Duration(rng.IntN(300)) * time.Millisecond
	// Half of the histories wait first for a move of the offset past a
	// refused record (issue 36's request), then for any apply request.
	for _, refusals := range []bool{rng.IntN(2) == 0, false} {
		k := &armedKill{hold: hold, refusals: refusals, done: make(chan struct{})}
		r.armed.Store(k)
		within := killWithin
		if refusals {
			within = refusalWithin
		}
		select {
		case <-k.done:
			return
		case <-time.After(within):
		}
		if !r.armed.CompareAndSwap(k, nil) {
			<-k.done // an apply request took it meanwhile
			return
		}
		if !refusals {
			break
		}
	}
	r.mu.Lock()
	r.killedIdle++
	r.mu.Unlock()
	r.killAndStart()
}

// killAndStart kills the current applier (it answers nothing more and
// sends no new request) and starts a new one.
func (r *replica) killAndStart() {
	old := r.cur.Load()
	old.killed.Store(true)
	old.kill()
	r.start()
}

// killTransport is the transport of one applier's store. Its requests
// outlive the applier's context (a request sent is on the wire; a kill -9
// does not take it back); once the applier is killed it sends no new
// one. The first update request after a kill is armed kills the applier.
type killTransport struct {
	r   *replica
	run *applierRun
}

func (kt *killTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if kt.run.killed.Load() {
		return nil, errors.New("lincheck: the applier was killed")
	}
	out := req.Clone(context.WithoutCancel(req.Context()))
	if !strings.HasSuffix(req.URL.Path, "/update") {
		return http.DefaultTransport.RoundTrip(out)
	}
	k := kt.r.armed.Load()
	if k == nil || kt.r.cur.Load() != kt.run {
		return http.DefaultTransport.RoundTrip(out)
	}
	refusal := false
	if req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			u, _ := io.ReadAll(b)
			refusal = isRefusalMove(string(u))
		}
	}
	if k.refusals && !refusal || !kt.r.armed.CompareAndSwap(k, nil) {
		return http.DefaultTransport.RoundTrip(out)
	}
	kt.r.killAndStart()
	kt.r.mu.Lock()
	kt.r.killedBusy++
	if refusal {
		kt.r.killedRefusal++
	}
	kt.r.mu.Unlock()
	close(k.done)
	time.Sleep(k.hold)
	return http.DefaultTransport.RoundTrip(out)
}

// isRefusalMove reports whether update u, an applier's request, moves
// the offset past a refused record: the offset's guard and no record
// (which writes session graphs or stages under the staging base), with
// or without the refusal marker (appliers older than the markers sent
// the guard alone).
func isRefusalMove(u string) bool {
	if strings.Contains(u, ontology.RefusedIn) {
		return true
	}
	return strings.Contains(u, ontology.AppliedOffset) && !strings.Contains(u, ontology.SessionBase) && !strings.Contains(u, ontology.StagingBase) && strings.Count(u, ";") == 2
}
