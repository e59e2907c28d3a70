// Package clustertest runs a package's store tests on a replicated store
// when TRAILS_TEST_STORE=kafka (fusekitest.OnCluster): a test's Store
// then writes through a cluster.Client to a Kafka log of its own, which
// two replicas apply, and the test's own checks read its first replica.
// On the other profiles it changes nothing: Querier returns the client it
// is given.
//
// It is a package of its own, not a profile inside fusekitest, because it
// needs Kafka (internal/kafkatest, which starts its nodes with fusekitest's
// helpers) and package cluster: fusekitest stays a harness of one store
// that every test binary links, and only the binaries that ask for a
// Querier link Kafka's client.
//
// The binary shares one three-node Kafka cluster (kafkatest.Launch) and a
// second Fuseki with datasets for the second replicas, both started by the
// first test that needs them and stopped by fusekitest.Main. Each dataset
// a test's Store is made on (its fusekitest.Endpoint) gets a replicated
// store of its own while a test uses it: a new topic, that dataset as
// replica 0, a wiped dataset of the second Fuseki as replica 1 (given
// replica 0's quads first when it holds any, so that both start equal),
// and an Applier for each, run in this process and served over HTTP. When
// the last test using it ends, both replicas must have applied the whole
// log and hold the same quads, or the test fails; a test that wipes its
// dataset (Empty) takes it down then, and the next Querier makes a new
// one.
package clustertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// secondDatasets is how many datasets the second Fuseki holds: as many as
// fusekitest gives the tests for each group, so that no test waits for a
// second replica longer than for its first.
func secondDatasets() int { return 8 * Groups() }

// Bounds on the steps of a replicated store. A write through the log waits
// for the replica's Fuseki as a direct one does, and more (the log, the
// applier, two replicas on a machine of two cores): the bounds are wider
// than kg's default of 30 s, which an update of a few MB exceeded there
// under load (TestLongSession gives its own client 5 minutes).
const (
	waitDataset  = 5 * time.Minute // for a dataset of the second Fuseki
	waitApplied  = 2 * time.Minute // for both replicas to apply the whole log when a test ends
	writeTimeout = 3 * time.Minute // a Client's Timeout
	applyTimeout = 2 * time.Minute // an applier's request to its replica
)

var (
	once   sync.Once
	env    *binaryEnv
	envErr error

	mu   sync.Mutex
	rigs = map[string]*rig{} // replica 0's dataset URL → its replicated store
	seq  int                 // numbers the topics
)

// binaryEnv is what the binary's replicated stores share.
type binaryEnv struct {
	kafka  *kafkatest.Cluster
	admin  *kadm.Client // of kafka, for the end of a topic
	spare  chan string  // datasets of the second Fuseki not taken
	topics sync.Mutex   // kafkatest.Cluster's methods are not safe for concurrent use
}

// start starts the binary's Kafka cluster and second Fuseki, at once.
func start() (*binaryEnv, error) {
	e := &binaryEnv{spare: make(chan string, secondDatasets())}
	var (
		wg       sync.WaitGroup
		srv      *fusekitest.Server
		kErr     error
		fErr     error
		kafkaRun *kafkatest.Cluster
	)
	wg.Go(func() { kafkaRun, kErr = kafkatest.Launch() })
	wg.Go(func() { srv, fErr = fusekitest.StartServer(fusekitest.Options{Datasets: secondDatasets()}) })
	wg.Wait()
	if kafkaRun != nil {
		fusekitest.OnStop(kafkaRun.Close)
	}
	if srv != nil {
		fusekitest.OnStop(func() { srv.Close() })
	}
	if err := errors.Join(kErr, fErr); err != nil {
		return nil, fmt.Errorf("clustertest: %w", err)
	}
	e.kafka = kafkaRun
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaRun.Brokers()...))
	if err != nil {
		return nil, fmt.Errorf("clustertest: %w", err)
	}
	fusekitest.OnStop(cl.Close)
	e.admin = kadm.NewClient(cl)
	for _, ds := range srv.Datasets[1:] {
		e.spare <- ds
	}
	return e, nil
}

// rig is the replicated store of one dataset while tests use it.
type rig struct {
	ep       string          // replica 0's dataset URL: its key in rigs
	topic    string          // the log's topic (the first group's when sharded)
	client   session.Querier // a *cluster.Client, or an *auditWaiter around a *cluster.Sharded
	closeC   func()          // closes client
	stores   []*kg.Client    // replica 0 (the test's dataset; the audit replica when sharded), then datasets of the second Fuseki
	appliers []*applierRun
	sharded  bool              // stores[0] is an audit replica, each other store a group's replica
	groups   []*cluster.Client // when sharded, a Client of each group's log, in group order: a test's own writes that go to every group (raw.go)
	users    map[testing.TB]bool
	down     bool // taken down (release, Empty): its tests' Cleanups have nothing left to do
	log      *logBuffer
}

// applierRun is one running Applier and its HTTP server.
type applierRun struct {
	a      *cluster.Applier
	topic  string     // the log it applies
	store  *kg.Client // to this replica
	srv    *httptest.Server
	cancel context.CancelFunc
	done   chan error
}

// startApplier runs an Applier of topic on st, logging as replica i.
func (r *rig) startApplier(topic string, st *kg.Client, i int) (*applierRun, error) {
	a, err := cluster.NewApplier(cluster.ApplierConfig{Brokers: env.kafka.Brokers(), Topic: topic, Store: st, Logf: r.log.logf(i)})
	if err != nil {
		return nil, err
	}
	run := &applierRun{a: a, topic: topic, store: st, srv: httptest.NewServer(a), done: make(chan error, 1)}
	actx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	go func() { run.done <- a.Run(actx) }()
	r.appliers = append(r.appliers, run)
	return run, nil
}

// Querier returns the session.Querier of a test's Store, c being a client
// of the test's dataset (fusekitest.Endpoint). On every profile but kafka
// it is c. On kafka it is the cluster.Client of the replicated store of
// c's dataset (see the package documentation), made on the first call and
// shared by the tests that use that dataset until the last of them ends,
// so that the Stores a test makes read each other's writes as on one
// Fuseki. Reading c then reads replica 0: each write through the
// Client returns once replica 0 applied it (firstWaiter). Writing with c goes around the log, and the
// replicas then differ when the test ends: a test's own writes go through
// Update, LoadQuads and DeleteGraph (see also fusekitest.RequireDirect).
//
// It fails tb when the cluster cannot be had, saying how to get it.
func Querier(tb testing.TB, c *kg.Client) session.Querier {
	tb.Helper()
	if !fusekitest.OnCluster() {
		return c
	}
	once.Do(func() { env, envErr = start() })
	if envErr != nil {
		tb.Fatalf("%v", envErr)
	}
	ep := c.Endpoint()
	mu.Lock()
	r, ok := rigs[ep]
	if ok {
		if !r.users[tb] {
			r.users[tb] = true
			tb.Cleanup(func() { release(tb, r) })
		}
		mu.Unlock()
		return r.client
	}
	seq++
	topic := topicName(tb.Name(), seq)
	mu.Unlock()

	newRig := newRig
	if Groups() > 1 {
		newRig = newShardedRig
	}
	r, err := newRig(tb, ep, topic)
	if err != nil {
		tb.Fatalf("clustertest: a replicated store on %s: %v", ep, err)
	}
	mu.Lock()
	if other, ok := rigs[ep]; ok { // a parallel test of the same dataset made one meanwhile
		other.users[tb] = true
		mu.Unlock()
		r.close()
		tb.Cleanup(func() { release(tb, other) })
		return other.client
	}
	r.ep = ep
	r.users = map[testing.TB]bool{tb: true}
	rigs[ep] = r
	mu.Unlock()
	tb.Cleanup(func() { release(tb, r) })
	return r.client
}

// Empty wipes tb's dataset and returns a client of it, as fusekitest.Empty
// does. On the kafka profile it first takes down the replicated store made
// on that dataset, if any, checking it as when its last test ends: the
// next Querier makes a new one on the wiped dataset, with logs of its own.
// A test on one Fuseki wipes its store where an operator of a cluster
// starts a new one (a wipe through the log would keep the replicas'
// offsets, and groups' records of their sessions, from before). The
// Queriers of the old store are closed: a test makes its Stores again
// after Empty. Between Empty and the next Querier a test may write to its
// dataset directly (a fixture only Fuseki's own parser reads): the new
// replicated store starts from what the dataset holds.
func Empty(tb testing.TB) *kg.Client {
	tb.Helper()
	if fusekitest.OnCluster() {
		ep := fusekitest.New(tb).Endpoint()
		mu.Lock()
		r, ok := rigs[ep]
		if ok {
			r.down = true
			delete(rigs, ep)
		}
		mu.Unlock()
		if ok {
			r.takeDown(tb)
		}
	}
	return fusekitest.Empty(tb)
}

// invalidTopic matches what a Kafka topic name may not hold.
var invalidTopic = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// topicName returns a topic name for test name, numbered n: Kafka takes
// letters, digits, '.', '_' and '-', up to 249 of them.
func topicName(name string, n int) string {
	s := invalidTopic.ReplaceAllString(name, "_")
	if len(s) > 200 {
		s = s[:200]
	}
	return "t" + strconv.Itoa(n) + "-" + s
}

// newRig makes the replicated store of dataset ep on a new topic.
func newRig(tb testing.TB, ep, topic string) (*rig, error) {
	tb.Helper()
	r := &rig{topic: topic, log: &logBuffer{}}
	env.topics.Lock()
	env.kafka.CreateTopic(tb, topic, 1)
	env.topics.Unlock()

	var second string
	select {
	case second = <-env.spare:
	case <-time.After(waitDataset):
		return nil, fmt.Errorf("all %d datasets of the second Fuseki stayed taken for %v", secondDatasets(), waitDataset)
	}
	ctx := context.Background()
	for _, u := range []string{ep, second} {
		st, err := kg.New(kg.Config{Endpoint: u, Store: kg.Fuseki, Timeout: applyTimeout})
		if err != nil {
			env.spare <- second
			return nil, err
		}
		r.stores = append(r.stores, st)
	}
	// Replica 1 starts as a copy of replica 0: empty, or holding what the
	// test wrote before it made its Store.
	if err := copyInto(ctx, r.stores[0], r.stores[1]); err != nil {
		env.spare <- second
		return nil, fmt.Errorf("replica 1 (%s): %w", second, err)
	}
	var replicas []cluster.Replica
	for i, st := range r.stores {
		run, err := r.startApplier(topic, st, i)
		if err != nil {
			r.close()
			return nil, err
		}
		replicas = append(replicas, cluster.Replica{Dataset: st.Endpoint(), Applier: run.srv.URL})
	}
	c, err := cluster.Open(cluster.Config{Brokers: env.kafka.Brokers(), Topic: topic, Replicas: replicas, Timeout: writeTimeout, Store: kg.Config{Timeout: applyTimeout}})
	if err != nil {
		r.close()
		return nil, err
	}
	r.client, r.closeC = &firstWaiter{Client: c, r: r}, c.Close
	return r, nil
}

// firstWaiter is a Client whose writes return once replica 0 (the test's
// dataset, which its own checks read directly) applied them too. The
// Client returns when the first replica to answer applied a write: on a
// loaded machine, replica 1 when replica 0 took over a second (a 5 MiB
// turn), and a test reading its dataset then saw the state before the
// write.
type firstWaiter struct {
	*cluster.Client
	r *rig
}

// Update sends u through the Client, then waits for replica 0.
func (w *firstWaiter) Update(ctx context.Context, u string, opts ...kg.UpdateOption) error {
	err := w.Client.Update(ctx, u, opts...)
	w.r.waitFirst(ctx, []int64{w.Position()})
	return err
}

// PutGraph sends the graph through the Client, then waits for replica 0.
func (w *firstWaiter) PutGraph(ctx context.Context, g rdf.IRI, mediaType string, data []byte) error {
	err := w.Client.PutGraph(ctx, g, mediaType, data)
	w.r.waitFirst(ctx, []int64{w.Position()})
	return err
}

// LoadQuads adds nq through the Client, then waits for replica 0.
func (w *firstWaiter) LoadQuads(ctx context.Context, nq []byte) error {
	err := w.Client.LoadQuads(ctx, nq)
	w.r.waitFirst(ctx, []int64{w.Position()})
	return err
}

// waitFirst returns once replica 0's applier of each group g applied the
// log up to pos[g], or after waitApplied (the replicas' comparison at the
// test's end then tells).
func (r *rig) waitFirst(ctx context.Context, pos []int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitApplied)
	defer cancel()
	for _, a := range r.appliers {
		if a.store != r.stores[0] {
			continue
		}
		g := 0
		if r.sharded {
			g = groupOf(a.topic)
		}
		for a.a.Position() < pos[g] && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// copyInto makes to a copy of from: dropped, then given from's quads.
func copyInto(ctx context.Context, from, to *kg.Client) error {
	var b bytes.Buffer
	err := to.Update(ctx, "DROP ALL", kg.Idempotent())
	if err == nil {
		err = from.Dump(ctx, &b)
	}
	if err == nil && len(bytes.TrimSpace(b.Bytes())) > 0 {
		err = to.LoadQuads(ctx, b.Bytes())
	}
	return err
}

// release records that tb ended, and when it was the last test using
// replicated store r, checks the replicas and takes the store down. A
// store Empty took down is left as it is.
func release(tb testing.TB, r *rig) {
	mu.Lock()
	delete(r.users, tb)
	last := len(r.users) == 0 && !r.down
	if last {
		r.down = true
		delete(rigs, r.ep)
	}
	mu.Unlock()
	if last {
		r.takeDown(tb)
	}
}

// takeDown checks that r's replicas converged, failing tb if not, and
// closes r.
func (r *rig) takeDown(tb testing.TB) {
	if err := r.converged(); err != nil {
		tb.Errorf("clustertest: topic %s: %v", r.topic, err)
	}
	if errs := r.close(); len(errs) > 0 {
		tb.Errorf("clustertest: topic %s: %v", r.topic, errors.Join(errs...))
	}
	if tb.Failed() {
		tb.Logf("clustertest: the appliers of topic %s said:\n%s", r.topic, r.log)
	}
}

// blankLabel matches the label of a blank node in N-Quads.
var blankLabel = regexp.MustCompile(`_:[A-Za-z0-9]+`)

// converged waits until both replicas have applied the whole log, then
// returns an error unless they hold the same quads. Blank nodes are
// compared without their labels, which each store makes its own: the
// ontology graph (admin.Dataset.Init) holds lists of them, and a replica
// 1 copied from replica 0 holds them under other labels.
func (r *rig) converged() error {
	ctx, cancel := context.WithTimeout(context.Background(), waitApplied)
	defer cancel()
	last := map[string]int64{} // topic: its last offset
	for _, a := range r.appliers {
		if _, ok := last[a.topic]; ok {
			continue
		}
		ends, err := env.admin.ListEndOffsets(ctx, a.topic)
		if err != nil {
			return fmt.Errorf("the end of log %s: %w", a.topic, err)
		}
		o, ok := ends.Lookup(a.topic, 0)
		if !ok || o.Err != nil {
			return fmt.Errorf("the end of log %s: %v", a.topic, o.Err)
		}
		last[a.topic] = o.Offset - 1
	}
	for i, a := range r.appliers {
		for a.a.Position() < last[a.topic] {
			if ctx.Err() != nil {
				return fmt.Errorf("applier %d (of %s) has applied up to offset %d of %d within %v", i, a.topic, a.a.Position(), last[a.topic], waitApplied)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	dumps := make([]string, len(r.stores))
	for i, st := range r.stores {
		var b bytes.Buffer
		if err := st.Dump(ctx, &b); err != nil {
			return fmt.Errorf("dump replica %d: %w", i, err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		for k, l := range lines {
			lines[k] = blankLabel.ReplaceAllString(l, "_:")
		}
		if r.sharded {
			// Each replica's offsets name its own logs; the groups'
			// union, a set, is the audit replica.
			lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasSuffix(l, replicaGraphEnd) })
		}
		slices.Sort(lines)
		dumps[i] = strings.Join(lines, "\n")
	}
	if !r.sharded {
		if dumps[0] != dumps[1] {
			return fmt.Errorf("the replicas hold other quads at offset %d (did the test write around the log?):\n%s", last[r.topic], diffLines(dumps[0], dumps[1]))
		}
		return nil
	}
	var union []string
	for _, d := range dumps[1:] {
		if d != "" {
			union = append(union, strings.Split(d, "\n")...)
		}
	}
	slices.Sort(union)
	union = slices.Compact(union)
	audit := slices.Compact(strings.Split(dumps[0], "\n"))
	if a, u := strings.Join(audit, "\n"), strings.Join(union, "\n"); a != u {
		return fmt.Errorf("the audit replica holds other quads than its groups' replicas together (did the test write around the log?):\n%s", diffLines(u, a))
	}
	return nil
}

// close stops the appliers and the client, and gives replica 1's dataset
// back. It returns what the appliers failed with.
func (r *rig) close() []error {
	var errs []error
	if r.closeC != nil {
		r.closeC()
	}
	for _, c := range r.groups {
		c.Close()
	}
	for i, a := range r.appliers {
		if a == nil {
			continue
		}
		a.cancel()
		if err := <-a.done; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("applier of replica %d: %w", i, err))
		}
		a.srv.Close()
	}
	for _, st := range r.stores[1:] {
		env.spare <- st.Endpoint()
	}
	return errs
}

// diffLines returns the lines of a not in b ("- ") and of b not in a
// ("+ "), at most 20.
func diffLines(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range la {
		if _, found := slices.BinarySearch(lb, l); !found {
			out = append(out, "- "+l)
		}
	}
	for _, l := range lb {
		if _, found := slices.BinarySearch(la, l); !found {
			out = append(out, "+ "+l)
		}
	}
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

// logBuffer keeps the last lines the appliers logged, for a test that
// fails.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

const keepLines = 40

func (l *logBuffer) logf(replica int) func(string, ...any) {
	return func(format string, args ...any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, fmt.Sprintf("replica %d: %s", replica, fmt.Sprintf(format, args...)))
		if len(l.lines) > keepLines {
			l.lines = l.lines[len(l.lines)-keepLines:]
		}
	}
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
