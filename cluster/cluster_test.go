package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
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
	"github.com/trails-kg/trails/session"
)

var _ session.Querier = (*cluster.Client)(nil)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(envWriterChild); cfg != "" {
		os.Exit(writerChild(cfg)) // the writer the writer-killed test kills
	}
	fusekitest.Main(m)
}

// rig is a log topic with two replicas, each a Fuseki dataset and an
// Applier run in this process, serving over HTTP.
type rig struct {
	brokers  []string
	topic    string
	stores   []*kg.Client
	appliers []*applierRun
}

// applierRun is one running Applier.
type applierRun struct {
	a      *cluster.Applier
	srv    *httptest.Server
	cancel context.CancelFunc
	done   chan error
}

// current serves the Applier it holds, which a restart replaces.
type current struct {
	a atomic.Pointer[cluster.Applier]
}

func (c *current) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.a.Load().ServeHTTP(w, r) }

// newRig makes a topic of its own on k and two empty replicas on srv's
// datasets first and second, with their appliers running.
func newRig(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server, first int) *rig {
	t.Helper()
	r := &rig{brokers: k.Brokers(), topic: "t" + strings.ReplaceAll(t.Name(), "/", "-")}
	k.CreateTopic(t, r.topic, 1)
	for _, ds := range srv.Datasets[first : first+2] {
		c := fusekitest.Client(t, kg.Config{Endpoint: ds, Store: kg.Fuseki})
		if err := c.Update(context.Background(), "DROP ALL", kg.Idempotent()); err != nil {
			t.Fatal(err)
		}
		r.stores = append(r.stores, c)
		r.appliers = append(r.appliers, r.start(t, c, nil))
	}
	t.Cleanup(func() {
		for _, a := range r.appliers {
			a.stop(t)
			a.srv.Close()
		}
	})
	return r
}

// start runs an Applier of store, serving on srv (a new server when nil).
func (r *rig) start(t *testing.T, store *kg.Client, srv *httptest.Server) *applierRun {
	t.Helper()
	return r.startWith(t, cluster.ApplierConfig{Store: store}, srv)
}

// startWith is start with cfg, whose Brokers, Topic and Logf it sets.
func (r *rig) startWith(t *testing.T, cfg cluster.ApplierConfig, srv *httptest.Server) *applierRun {
	t.Helper()
	cfg.Brokers, cfg.Topic, cfg.Logf = r.brokers, r.topic, t.Logf
	a, err := cluster.NewApplier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := &applierRun{a: a, done: make(chan error, 1)}
	if srv == nil {
		srv = httptest.NewServer(&current{})
	}
	srv.Config.Handler.(*current).a.Store(a)
	run.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	go func() { run.done <- a.Run(ctx) }()
	return run
}

// stop stops the Applier (its HTTP server keeps its address).
func (a *applierRun) stop(t *testing.T) {
	t.Helper()
	if a.cancel == nil {
		return
	}
	a.cancel()
	a.cancel = nil
	if err := <-a.done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("applier: %v", err)
	}
}

func (r *rig) replicas() []cluster.Replica {
	var rs []cluster.Replica
	for i, s := range r.stores {
		rs = append(rs, cluster.Replica{Dataset: s.Endpoint(), Applier: r.appliers[i].srv.URL})
	}
	return rs
}

// client returns a writer's Client of the rig, closed when t ends.
func (r *rig) client(t *testing.T) *cluster.Client {
	t.Helper()
	c, err := cluster.Open(cluster.Config{Brokers: r.brokers, Topic: r.topic, Replicas: r.replicas(), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// converged waits until every replica has applied offset at, then fails t
// unless their datasets hold the same quads, and returns them.
func (r *rig) converged(t *testing.T, at int64) string {
	t.Helper()
	var dumps []string
	for i, a := range r.appliers {
		var p struct{ Position int64 }
		resp, err := http.Get(fmt.Sprintf("%s/position?atLeast=%d&wait=20s", a.srv.URL, at))
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if err != nil || p.Position < at {
			t.Fatalf("replica %d: position %d (%v), want at least %d", i, p.Position, err, at)
		}
		dumps = append(dumps, dump(t, r.stores[i]))
	}
	for i := 1; i < len(dumps); i++ {
		if dumps[i] != dumps[0] {
			t.Fatalf("replica %d holds other quads than replica 0:\n%s", i, diffLines(dumps[0], dumps[i]))
		}
	}
	return dumps[0]
}

// dump returns store's quads as sorted N-Quads lines.
func dump(t *testing.T, store *kg.Client) string {
	t.Helper()
	var b bytes.Buffer
	if err := store.Dump(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// withoutOffsets returns quads (as dump gives them) without the replica
// graph, which holds the offset applied.
func withoutOffsets(quads string) string {
	lines := strings.Split(quads, "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasSuffix(l, "<"+ontology.ReplicaGraph+"> .") })
	return strings.Join(lines, "\n")
}

// diffLines returns the lines of a not in b and of b not in a.
func diffLines(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range la {
		if !slices.Contains(lb, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range lb {
		if !slices.Contains(la, l) {
			out = append(out, "+ "+l)
		}
	}
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

// recorder is a Querier that keeps the updates it sends.
type recorder struct {
	*cluster.Client
	mu      sync.Mutex
	updates []string
}

func (r *recorder) Update(ctx context.Context, u string, opts ...kg.UpdateOption) error {
	r.mu.Lock()
	r.updates = append(r.updates, u)
	r.mu.Unlock()
	return r.Client.Update(ctx, u, opts...)
}

// TestCluster runs Trails' sessions through a replicated log on a 3-node
// Kafka cluster with two replicas; each subtest has a topic and replicas
// of its own.
func TestCluster(t *testing.T) {
	k := kafkatest.Start(t)
	srv, err := fusekitest.StartServer(fusekitest.Options{Datasets: 7})
	if err != nil {
		t.Fatalf("fuseki for the replicas: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()

	t.Run("sessions", func(t *testing.T) {
		r := newRig(t, k, srv, 1)
		c := r.client(t)
		st := session.NewStore(c)
		s := session.New("alice")
		s.Initial = map[string]json.RawMessage{"user:tier": json.RawMessage(`"gold"`)}
		s.Append("user", "plan a trip to Lisbon")
		s.Append("assistant", "three days: Alfama, Belém, Sintra")
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		f, err := st.Fork(ctx, s.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		f.Append("assistant", "two days, then Porto")
		if err := st.Persist(ctx, f); err != nil {
			t.Fatal(err)
		}
		s.Append("user", "and the food?")
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		got, err := st.Load(ctx, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"plan a trip to Lisbon", "two days, then Porto"}
		if contents := turnContents(got.Turns); !slices.Equal(contents, want) {
			t.Errorf("fork loaded: got %q, want %q", contents, want)
		}
		if v := string(got.Values["user:tier"]); v != `"gold"` {
			t.Errorf("shared value: got %s, want \"gold\"", v)
		}
		// A stale copy of s: its append is refused through the log, as by
		// one Fuseki.
		stale, err := st.Load(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		s.Append("assistant", "pastéis de nata")
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		stale.Append("assistant", "a stale answer")
		if err := st.Persist(ctx, stale); !errors.Is(err, session.ErrConflict) {
			t.Errorf("persist of a stale copy: got %v, want ErrConflict", err)
		}
		if err := st.Delete(ctx, f.ID, session.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		r.converged(t, c.Position())
	})

	t.Run("record sent again", func(t *testing.T) {
		// A writer that crashed after sending its record, and sends it
		// again: the second application changes nothing.
		r := newRig(t, k, srv, 3)
		rec := &recorder{Client: r.client(t)}
		st := session.NewStore(rec, session.WithGroupCommit(false))
		s := session.New("bob")
		s.Initial = map[string]json.RawMessage{"user:lang": json.RawMessage(`"pt"`)}
		s.Append("user", "olá")
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		s.Append("assistant", "olá! em que posso ajudar?")
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		before := r.converged(t, rec.Position())
		for _, u := range rec.updates {
			err := rec.Client.Update(ctx, u)
			var ke *kg.Error
			if err != nil && (!errors.As(err, &ke) || ke.Status == 0 || ke.Status == http.StatusServiceUnavailable) {
				t.Errorf("update sent again: got %v, want nil or the store's refusal", err)
			}
		}
		if after := r.converged(t, rec.Position()); withoutOffsets(after) != withoutOffsets(before) {
			t.Errorf("records sent again changed the replicas:\n%s", diffLines(before, after))
		}
	})

	t.Run("applier restarted", func(t *testing.T) {
		// An applier stopped while the others go on, then restarted:
		// it resumes after the offset its dataset holds, exactly once.
		r := newRig(t, k, srv, 5)
		c := r.client(t)
		st := session.NewStore(c)
		s := session.New("carol")
		s.Append("user", "first")
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		r.converged(t, c.Position())
		r.appliers[1].stop(t)
		for i := range 20 {
			s.Append("user", fmt.Sprintf("turn %d while replica 1 is stopped", i))
			if err := st.Persist(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		r.appliers[1] = r.start(t, r.stores[1], r.appliers[1].srv)
		r.converged(t, c.Position())
		got, err := st.Load(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Turns) != 21 {
			t.Errorf("got %d turns, want 21", len(got.Turns))
		}
	})

	t.Run("graph store", func(t *testing.T) { testGraphStore(t, k, srv) })
	t.Run("offset moved", func(t *testing.T) { testOffsetMoved(t, k, srv) })
	t.Run("refused at once", func(t *testing.T) { testRefusedAtOnce(t, k, srv) })
	t.Run("trails-admin", func(t *testing.T) { testAdmin(t, k, srv) })
	t.Run("replica added", func(t *testing.T) { testReplicaAdded(t, k, srv) })
	t.Run("reads move forward", func(t *testing.T) { testReadsMoveForward(t, k, srv) })
	t.Run("silent replica", func(t *testing.T) { testSilentReplica(t, k, srv) })
	t.Run("sharded", func(t *testing.T) { testSharded(t, k, srv) })
	t.Run("sharded fence", func(t *testing.T) { testShardedFence(t, k, srv) })
	t.Run("sharded values", func(t *testing.T) { testShardedValues(t, k, srv) })
	t.Run("sharded writers", func(t *testing.T) { testShardedWriters(t, k, srv) })
	t.Run("sharded import", func(t *testing.T) { testShardedImport(t, k, srv) })
	t.Run("sharded sweep", func(t *testing.T) { testShardedSweep(t, k, srv) })
	t.Run("sharded branches", func(t *testing.T) { testShardedBranches(t, k, srv) })
	t.Run("sharded replica added", func(t *testing.T) { testShardedReplicaAdded(t, k, srv) })
	t.Run("sharded move", func(t *testing.T) { testShardedMove(t, k, srv) })
	t.Run("sharded move deleted", func(t *testing.T) { testShardedMoveDeleted(t, k, srv) })
	t.Run("sharded group added", func(t *testing.T) { testShardedGroupAdded(t, k, srv) })
	t.Run("sharded trails-admin", func(t *testing.T) { testShardedAdmin(t, k, srv) })
	t.Run("sharded verify and audit", func(t *testing.T) { testShardedVerify(t, k, srv) })
	t.Run("refusal in flight at a restart", func(t *testing.T) { testRefusalInFlight(t, k, srv) })
	t.Run("passed into a batch", func(t *testing.T) { testPassedIntoBatch(t, k, srv) })

	// The faults of issue 23, item 6 (faults_test.go).
	fx := &faultEnv{parent: t, k: k, srv: srv}
	t.Run("replica fuseki killed", func(t *testing.T) { testFusekiKilled(t, fx) })
	t.Run("replica applier killed", func(t *testing.T) { testApplierKilled(t, fx) })
	t.Run("refusal in flight at a kill -9", func(t *testing.T) { testRefusalAtKill(t, fx) })
	t.Run("replica copied from files", func(t *testing.T) { testReplicaCopied(t, fx) })
	t.Run("replica cut off", func(t *testing.T) { testCutOff(t, fx) })
	t.Run("writer killed", func(t *testing.T) { testWriterKilled(t, fx) })
	t.Run("metrics", func(t *testing.T) { testMetrics(t, k, fx) })
	// The same through two replica groups (shardfaults_test.go).
	t.Run("sharded group cut off", func(t *testing.T) { testShardedGroupFrozen(t, fx) })
	t.Run("sharded writer killed", func(t *testing.T) { testShardedWriterKilled(t, fx) })
	t.Run("sharded broker killed", func(t *testing.T) { testShardedBrokerKilled(t, fx) })
	t.Run("sharded replica fuseki killed", func(t *testing.T) { testShardedFusekiKilled(t, fx) })
	t.Run("sharded replica applier killed", func(t *testing.T) { testShardedApplierKilled(t, fx) })

	// Last: it leaves a node restarted.
	t.Run("broker killed", func(t *testing.T) { testBrokerKilled(t, k, srv) })
}

// testBrokerKilled: four writers append while the leader of the log's
// partition is killed (kill -9) and restarted: every append acknowledged
// is on both replicas, which hold the same quads; writes stop no longer
// than the failover.
func testBrokerKilled(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	r := newRig(t, k, srv, 1)
	c := r.client(t)
	st := session.NewStore(c)
	const writers, appends = 4, 12
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		acked   = map[string]int{} // session: turns acknowledged
		longest time.Duration      // the longest time an append took
	)
	started := make(chan struct{}, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := session.New(fmt.Sprintf("writer-%d", w))
			for i := range appends {
				if i == 3 {
					started <- struct{}{}
				}
				s.Append("user", fmt.Sprintf("writer %d, turn %d", w, i))
				t0 := time.Now()
				err := st.Persist(ctx, s)
				d := time.Since(t0)
				mu.Lock()
				longest = max(longest, d)
				if err == nil {
					acked[s.ID] = len(s.Turns)
				}
				mu.Unlock()
				if err != nil {
					t.Logf("writer %d, turn %d: %v (after %v)", w, i, err, d)
					return // its value no longer says what is stored: stop
				}
			}
		}()
	}
	for range writers {
		<-started
	}
	leader := k.Leader(t, r.topic, 0)
	k.Kill(leader)
	t.Logf("killed node %d, the partition's leader", leader)
	wg.Wait()
	k.Restart(leader)
	for id, n := range acked {
		got, err := st.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Turns) < n {
			t.Errorf("session %s: %d turns stored, %d acknowledged", id, len(got.Turns), n)
		}
	}
	if len(acked) != writers {
		t.Errorf("%d of %d writers had an append acknowledged", len(acked), writers)
	}
	r.converged(t, c.Position())
	t.Logf("longest append: %v (the failover)", longest)
}

func turnContents(ts []session.Turn) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Content
	}
	return out
}
