package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The fault tests of issue 23 (item 6) run the deployment's shape with
// real processes: two replicas, each a Fuseki dataset applied by a
// trails-replica process that the test builds, on the 3-node Kafka
// cluster TestCluster starts. Replica 0, the one the writers prefer (it is
// first in their Config), has a Fuseki of its own (faultEnv.fuseki), so
// that killing or freezing it touches no other replica; replica 1 is a
// dataset of TestCluster's Fuseki. Each test hurts replica 0 or the
// writer while writers append, and then checks the same things
// (faultRig.check): once both replicas have applied the whole log,
// every acknowledged append is on each of them (loaded from each
// replica's Fuseki directly), no append is there in part, the replicas
// hold the same quads (their offsets too), and admin's Check finds
// nothing on either. Each logs the longest time between two acknowledged
// appends; it fails past maxGap, a liveness guard, not a timing target
// (trails-bench measures failover).
//
// The random choices (appends' sizes, writers' pauses, the moment a
// writer is killed) come from a seed that each test logs; run one again
// with -faults.seed=N.
var faultSeed = flag.Uint64("faults.seed", 0, "seed of the fault tests' random choices (0: a new one, logged)")

// maxGap bounds the time between two acknowledged appends in a fault
// test: a liveness guard, generous for a loaded machine of two cores.
const maxGap = 60 * time.Second

// envWriterChild, set to a JSON childConfig, makes the test binary the
// writer that the writer-killed test kills (writerChild).
const envWriterChild = "TRAILS_TEST_CLUSTER_WRITER"

// seeded returns a random source for t from -faults.seed or a new seed,
// and logs the seed.
func seeded(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *faultSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (run again with -faults.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed))
}

// faultEnv is what the fault tests share: TestCluster's Kafka cluster and
// Fuseki, a Fuseki for replica 0 and the trails-replica binary, the last
// two made on first use and kept until TestCluster ends.
type faultEnv struct {
	parent *testing.T // TestCluster, which owns what faultEnv starts
	k      *kafkatest.Cluster
	srv    *fusekitest.Server

	f   *fusekitest.Server // replica 0's Fuseki
	bin string             // the trails-replica binary
}

// fuseki returns replica 0's Fuseki, started on first use.
func (fx *faultEnv) fuseki(t *testing.T) *fusekitest.Server {
	t.Helper()
	if fx.f == nil {
		f, err := fusekitest.StartServer(fusekitest.Options{})
		if err != nil {
			t.Fatalf("a Fuseki for replica 0: %v\nTo get one: install Java 17+ and Maven and run scripts/fuseki fetch", err)
		}
		fx.parent.Cleanup(func() { f.Close() })
		fx.f = f
		t.Logf("replica 0's Fuseki started in %v", f.Started.Round(time.Millisecond))
	}
	return fx.f
}

// replicaBin returns the trails-replica binary, built on first use into a
// scratch directory (under trails-, which .ci/run cleans up after).
func (fx *faultEnv) replicaBin(t *testing.T) string {
	t.Helper()
	if fx.bin == "" {
		root, err := fusekitest.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir, err := os.MkdirTemp(fusekitest.ScratchDir(), "trails-replica-")
		if err != nil {
			t.Fatal(err)
		}
		fx.parent.Cleanup(func() { os.RemoveAll(dir) })
		bin := filepath.Join(dir, "trails-replica")
		t0 := time.Now()
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/trails-replica")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/trails-replica: %v\n%s", err, out)
		}
		t.Logf("built trails-replica in %v", time.Since(t0).Round(time.Millisecond))
		fx.bin = bin
	}
	return fx.bin
}

// faultRig is a topic of its own with two replicas: replica 0 on
// faultEnv's Fuseki, replica 1 on a dataset of TestCluster's, each applied
// by a trails-replica process.
type faultRig struct {
	fx       *faultEnv
	brokers  []string
	topic    string
	stores   []*kg.Client
	appliers []*replicaProc
	logs     string // the directory of the appliers' logs
}

// newFaultRig makes the topic, empties both datasets and starts the two
// appliers.
func newFaultRig(t *testing.T, fx *faultEnv) *faultRig {
	t.Helper()
	return newTopicRig(t, fx, "t"+strings.ReplaceAll(t.Name(), "/", "-"), fx.fuseki(t).Endpoint, fx.srv.Datasets[0])
}

// newTopicRig creates topic, empties the datasets and starts an applier
// of topic on each: replica i on datasets[i].
func newTopicRig(t *testing.T, fx *faultEnv, topic string, datasets ...string) *faultRig {
	t.Helper()
	fx.k.CreateTopic(t, topic, 1)
	var stores []*kg.Client
	for _, ds := range datasets {
		c := fusekitest.Client(t, kg.Config{Endpoint: ds, Store: kg.Fuseki})
		if err := c.Update(context.Background(), "DROP ALL", kg.Idempotent()); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, c)
	}
	return replicasOf(t, fx, topic, stores...)
}

// replicasOf starts an applier of topic (which exists) on each of stores,
// as they are; the appliers are killed when t ends.
func replicasOf(t *testing.T, fx *faultEnv, topic string, stores ...*kg.Client) *faultRig {
	t.Helper()
	r := &faultRig{fx: fx, brokers: fx.k.Brokers(), topic: topic, logs: t.TempDir()}
	t.Cleanup(func() {
		for i, p := range r.appliers {
			p.resume()
			p.kill()
			if t.Failed() {
				t.Logf("--- %s: replica %d's applier log (tail) ---\n%s", r.topic, i, proc.Tail(p.log, 30))
			}
		}
	})
	for _, c := range stores {
		r.add(t, c)
	}
	return r
}

// add makes the dataset of store a replica of the rig: it starts a
// trails-replica process that applies the rig's topic to it.
func (r *faultRig) add(t *testing.T, store *kg.Client) {
	t.Helper()
	p := &replicaProc{bin: r.fx.replicaBin(t), log: filepath.Join(r.logs, fmt.Sprintf("replica%d.log", len(r.stores)))}
	for try := 1; ; try++ { // a free port may be taken before the process listens on it
		p.addr = "127.0.0.1:" + strconv.Itoa(freePort(t))
		p.args = []string{"-brokers", strings.Join(r.brokers, ","), "-topic", r.topic, "-dataset", store.Endpoint(), "-listen", p.addr}
		err := p.launch()
		if err == nil {
			break
		}
		if try == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
	r.stores = append(r.stores, store)
	r.appliers = append(r.appliers, p)
}

func (r *faultRig) replicas() []cluster.Replica {
	var rs []cluster.Replica
	for i, s := range r.stores {
		rs = append(rs, cluster.Replica{Dataset: s.Endpoint(), Applier: r.appliers[i].url()})
	}
	return rs
}

// config is a writer's Config: the rig's topic and replicas, replica 0
// first (preferred).
func (r *faultRig) config() cluster.Config {
	return cluster.Config{Brokers: r.brokers, Topic: r.topic, Replicas: r.replicas(), Timeout: 20 * time.Second}
}

// client returns a writer's Client of the rig, closed when t ends.
func (r *faultRig) client(t *testing.T) *cluster.Client {
	t.Helper()
	c, err := cluster.Open(r.config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// replicaProc is a trails-replica process, started by the test.
type replicaProc struct {
	bin, addr, log string
	args           []string
	cmd            *exec.Cmd
	exited         chan struct{}
	paused         bool
}

func (p *replicaProc) url() string { return "http://" + p.addr }

// start starts the process again after kill, on the same address, and
// waits until it serves its position.
func (p *replicaProc) start(t *testing.T) {
	t.Helper()
	if err := p.launch(); err != nil {
		t.Fatal(err)
	}
}

// launch starts the process and waits until it says it serves its
// position on its address (so that no other process answers there). It
// dies with the test binary.
func (p *replicaProc) launch() error {
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== started at %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := fusekitest.Spawn(cmd); err != nil {
		return fmt.Errorf("start trails-replica: %w", err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(cmd, p.exited)
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case <-p.exited:
			p.cmd = nil
			return fmt.Errorf("trails-replica exited: %s\n%s", cmd.ProcessState, proc.Tail(p.log, 20))
		default:
		}
		if b, _ := os.ReadFile(p.log); bytes.Contains(b[bytes.LastIndex(b, []byte("=== started at")):], []byte("serving positions on")) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("trails-replica does not serve on %s\n%s", p.addr, proc.Tail(p.log, 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill kills the process with SIGKILL, as a crash would, and waits until
// it is gone.
func (p *replicaProc) kill() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	<-p.exited
	p.cmd = nil
}

// pause freezes the process (SIGSTOP) until resume (SIGCONT).
func (p *replicaProc) pause(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	p.paused = true
}

func (p *replicaProc) resume() {
	if p.paused && p.cmd != nil {
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
	p.paused = false
}

// startedFrom returns the offset the process's last start applied from,
// as its log says ("applying TOPIC/0 from offset N"), waiting for the
// line for up to 30 s.
func (p *replicaProc) startedFrom(t *testing.T) int64 {
	t.Helper()
	re := regexp.MustCompile(`applying \S+/0 from offset (-?\d+)`)
	for deadline := time.Now().Add(30 * time.Second); ; {
		b, _ := os.ReadFile(p.log)
		last := b[bytes.LastIndex(b, []byte("=== started at")):]
		if m := re.FindSubmatch(last); m != nil {
			n, _ := strconv.ParseInt(string(m[1]), 10, 64)
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("trails-replica did not say where it resumed:\n%s", proc.Tail(p.log, 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// position asks applier p for its position, waiting up to wait for it to
// reach at least atLeast.
func position(ctx context.Context, p *replicaProc, atLeast int64, wait time.Duration) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/position?atLeast=%d&wait=%s", p.url(), atLeast, wait), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var v struct{ Position int64 }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return 0, err
	}
	return v.Position, nil
}

// storedOffset reads the offset that replica i's dataset holds (-1 for
// none), from its Fuseki directly.
func (r *faultRig) storedOffset(t *testing.T, i int) int64 {
	t.Helper()
	q, err := kg.Bind(`SELECT ?o WHERE { GRAPH $g { $log $off ?o } }`, kg.Params{
		"g": kg.MustIRI(ontology.ReplicaGraph), "log": kg.MustIRI(ontology.LogIRI(r.topic, 0)), "off": kg.MustIRI(ontology.AppliedOffset),
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.stores[i].Select(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	switch len(res.Solutions) {
	case 0:
		return -1
	case 1:
		n, err := res.Solutions[0].Int("o")
		if err != nil {
			t.Fatal(err)
		}
		return int64(n)
	}
	t.Fatalf("replica %d: %d offsets stored", i, len(res.Solutions))
	return 0
}

// logEnd returns the offset of the last record of the topic's partition
// (its high watermark less one: -1 for none).
func (r *faultRig) logEnd(t *testing.T) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, r.topic)
	if err != nil {
		t.Fatalf("end of the log: %v", err)
	}
	o, ok := offs.Lookup(r.topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end of the log: %v (found: %v)", o.Err, ok)
	}
	return o.Offset - 1
}

// settle waits until both replicas have applied the whole log (nothing
// writes any more) and returns the offset of its last record. It logs
// how long each replica took to get there.
func (r *faultRig) settle(t *testing.T) int64 {
	t.Helper()
	end := r.logEnd(t)
	t0 := time.Now()
	for i := range r.appliers {
		if pos := r.await(t, i, end); pos > end {
			t.Fatalf("replica %d has applied up to %d, past the log's end %d", i, pos, end)
		}
		t.Logf("replica %d at the log's end (offset %d) %v after the writers stopped", i, end, time.Since(t0).Round(time.Millisecond))
	}
	return end
}

// await waits until replica i has applied offset off, for up to two
// minutes, and returns its position.
func (r *faultRig) await(t *testing.T, i int, off int64) int64 {
	t.Helper()
	t0 := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 35*time.Second)
		pos, err := position(ctx, r.appliers[i], off, 30*time.Second)
		cancel()
		if err == nil && pos >= off {
			return pos
		}
		if time.Since(t0) > 2*time.Minute {
			t.Fatalf("replica %d: position %d (%v), not at offset %d after %v", i, pos, err, off, time.Since(t0).Round(time.Millisecond))
		}
	}
}

// wantSession is what a session may hold after a fault test.
type wantSession struct {
	lens  []int    // the numbers of turns it may hold (acknowledged; or with the append in flight when the writer stopped)
	turns []string // the contents of its turns, at least max(lens) of them
}

// check settles the rig, then checks each replica's Fuseki directly:
// every session of want loads with one of its lengths and its contents,
// no turn is stored in part, Check finds nothing, and both replicas hold
// the same quads, the applied offset too. It loads each session through a
// new writer's Client too.
func (r *faultRig) check(t *testing.T, want map[string]wantSession) {
	t.Helper()
	ctx := context.Background()
	end := r.settle(t)
	dumps := make([]string, len(r.stores))
	for i, store := range r.stores {
		dumps[i] = dump(t, store)
		st := session.NewStore(store)
		for id, w := range want {
			got, err := st.Load(ctx, id)
			if err != nil {
				t.Errorf("replica %d: session %s: load: %v", i, id, err)
				continue
			}
			checkTurns(t, fmt.Sprintf("replica %d: session %s", i, id), got, w)
			for _, pt := range partialTurns(t, store, id) {
				t.Errorf("replica %d: session %s: a turn is stored in part: %s", i, id, pt)
			}
		}
		fs, err := storetest.Check(ctx, admin.New(store))
		if err != nil {
			t.Errorf("replica %d: check: %v", i, err)
		}
		for _, f := range fs {
			t.Errorf("replica %d: check: %s %s: %s", i, f.Rule, f.Resource, f.Message)
		}
	}
	for i := 1; i < len(dumps); i++ {
		if dumps[i] != dumps[0] {
			t.Errorf("at offset %d, replica %d holds other quads than replica 0:\n%s", end, i, diffLines(dumps[0], dumps[i]))
		}
	}
	st := session.NewStore(r.client(t))
	for id, w := range want {
		got, err := st.Load(ctx, id)
		if err != nil {
			t.Errorf("session %s: load through the cluster: %v", id, err)
			continue
		}
		checkTurns(t, "session "+id+" through the cluster", got, w)
	}
	if !t.Failed() {
		t.Logf("%d records; the %d replicas at offset %d hold the same %d quads; %d sessions checked on each; Check clean", end+1, len(dumps), end, strings.Count(dumps[0], "\n")+1, len(want))
	}
}

// checkTurns fails t unless got holds one of w's lengths of turns, with
// w's contents.
func checkTurns(t *testing.T, what string, got *session.Session, w wantSession) {
	t.Helper()
	if !slices.Contains(w.lens, len(got.Turns)) {
		t.Errorf("%s: got %d turns, want %v (an acknowledged append lost, or one stored in part)", what, len(got.Turns), w.lens)
		return
	}
	for i, tn := range got.Turns {
		if tn.Index != i || tn.Content != w.turns[i] {
			t.Errorf("%s: turn %d: got index %d %q, want %q", what, i, tn.Index, tn.Content, w.turns[i])
			return
		}
	}
}

// partialTurns returns the turns of session id that store holds in part:
// a whole turn has 8 properties in 9 triples.
func partialTurns(t *testing.T, store *kg.Client, id string) []string {
	t.Helper()
	q, err := kg.Bind(`SELECT ?t (COUNT(DISTINCT ?p) AS ?props) (COUNT(*) AS ?triples) WHERE {
  GRAPH $g { ?t ?p ?o . FILTER(STRSTARTS(STR(?t), STR($g))) FILTER(?t != $g) }
} GROUP BY ?t HAVING (COUNT(DISTINCT ?p) != 8 || COUNT(*) != 9)`, kg.Params{"g": kg.MustIRI(ontology.SessionIRI(id))})
	if err != nil {
		t.Fatal(err)
	}
	res, err := store.Select(context.Background(), q)
	if err != nil {
		t.Fatalf("partial turns: %v", err)
	}
	var out []string
	for _, row := range res.Solutions {
		out = append(out, fmt.Sprintf("%s: %s properties in %s triples", row.String("t"), row.String("props"), row.String("triples")))
	}
	return out
}

// writers are goroutines appending to a session each through a rig: two
// Clients of the rig, each with a session.Store that four writers share
// (their appends share requests: group commit), as agents of two
// processes. Each append is 1 to 3 turns, after a pause of up to 20 ms;
// after one in four, the writer loads its session through its Store,
// which must hold every turn acknowledged (it reads its own writes).
type writers struct {
	start time.Time
	stop  atomic.Bool
	wg    sync.WaitGroup

	mu            sync.Mutex
	acks          []time.Time // when each append was acknowledged
	ackedBy       []int       // the writer of each of acks (until finish sorts acks)
	ws            []*writer
	reads         int           // loads of their own sessions
	longestRead   time.Duration // the longest of them
	longestReadAt time.Duration // when it started, since the writers started
}

// writer is one writer's state.
type writer struct {
	s     *session.Session // every turn it appended, the last append's too
	acked int              // turns acknowledged
	n     int              // appends acknowledged
	err   error            // the error that stopped it
	at    time.Duration    // when, since the writers started
}

// write starts n writers (a multiple of 4) on r.
func (r *faultRig) write(t *testing.T, n int, rng *rand.Rand) *writers {
	t.Helper()
	return startWriters(t, n, rng, func() *session.Store { return session.NewStore(r.client(t)) },
		func(w int) *session.Session { return session.New(fmt.Sprintf("writer-%d", w)) })
}

// startWriters starts n writers (a multiple of 4), each on the session
// newSession(w) makes for it, four sharing each Store newStore makes.
func startWriters(t *testing.T, n int, rng *rand.Rand, newStore func() *session.Store, newSession func(w int) *session.Session) *writers {
	t.Helper()
	l := &writers{start: time.Now()}
	var st *session.Store
	for w := range n {
		if w%4 == 0 {
			st = newStore()
		}
		wr := &writer{s: newSession(w)}
		l.ws = append(l.ws, wr)
		wrng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		l.wg.Add(1)
		go func(st *session.Store) {
			defer l.wg.Done()
			for !l.stop.Load() {
				time.Sleep(time.Duration(wrng.IntN(20)) * time.Millisecond)
				k := 1 + wrng.IntN(3)
				for j := range k {
					wr.s.Append("user", fmt.Sprintf("writer %d, turn %d (%d of %d)", w, len(wr.s.Turns), j+1, k))
				}
				err := st.Persist(context.Background(), wr.s)
				l.mu.Lock()
				if err != nil {
					wr.err, wr.at = err, time.Since(l.start)
					l.mu.Unlock()
					return // its session no longer says what is stored
				}
				wr.acked, wr.n = len(wr.s.Turns), wr.n+1
				l.acks = append(l.acks, time.Now())
				l.ackedBy = append(l.ackedBy, w)
				l.mu.Unlock()
				if wrng.IntN(4) > 0 {
					continue
				}
				// One append in four, a read of its own writes.
				t0 := time.Now()
				got, err := st.Load(context.Background(), wr.s.ID)
				d := time.Since(t0)
				if err == nil && len(got.Turns) != wr.acked {
					err = fmt.Errorf("read %d turns of its own session after %d were acknowledged", len(got.Turns), wr.acked)
				}
				l.mu.Lock()
				l.reads++
				if d > l.longestRead {
					l.longestRead, l.longestReadAt = d, t0.Sub(l.start)
				}
				if err != nil {
					wr.err, wr.at = fmt.Errorf("load: %w", err), time.Since(l.start)
					l.mu.Unlock()
					return
				}
				l.mu.Unlock()
			}
		}(st)
	}
	t.Cleanup(l.halt)
	return l
}

// halt stops the writers after their appends in flight and waits for them.
func (l *writers) halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// since returns the time since the writers started, for the log.
func (l *writers) since() time.Duration { return time.Since(l.start).Round(time.Millisecond) }

// waitAcks waits until every writer has had k more appends acknowledged,
// for up to maxGap; it fails t when a writer stopped on an error.
func (l *writers) waitAcks(t *testing.T, k int) {
	t.Helper()
	l.waitAcksOf(t, k, func(int) bool { return true })
}

// waitAcksOf is waitAcks for the writers w for which of(w) holds.
func (l *writers) waitAcksOf(t *testing.T, k int, of func(w int) bool) {
	t.Helper()
	l.mu.Lock()
	from := make([]int, len(l.ws))
	for i, w := range l.ws {
		from[i] = w.n
	}
	l.mu.Unlock()
	deadline := time.Now().Add(maxGap)
	for {
		l.mu.Lock()
		done := true
		for i, w := range l.ws {
			if w.err != nil {
				err, at := w.err, w.at
				l.mu.Unlock()
				t.Fatalf("writer %d stopped at %v: %v", i, at, err)
			}
			done = done && (!of(i) || w.n >= from[i]+k)
		}
		l.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writers did not have %d appends each acknowledged within %v", k, maxGap)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finish stops the writers, fails t for any that stopped on an error (one
// replica and the log were up throughout, so no append may fail), logs
// the longest time between two acknowledged appends (failing t past
// maxGap) and returns what each session must hold.
func (l *writers) finish(t *testing.T) map[string]wantSession {
	t.Helper()
	l.halt()
	want := map[string]wantSession{}
	appends := 0
	for i, w := range l.ws {
		lens := []int{w.acked}
		if w.err != nil {
			t.Errorf("writer %d: append failed at %v: %v", i, w.at, w.err)
			lens = append(lens, len(w.s.Turns))
		}
		want[w.s.ID] = wantSession{lens: lens, turns: turnContents(w.s.Turns)}
		appends += w.n
	}
	slices.SortFunc(l.acks, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	var at time.Time
	for i := 1; i < len(l.acks); i++ {
		if d := l.acks[i].Sub(l.acks[i-1]); d > gap {
			gap, at = d, l.acks[i-1]
		}
	}
	t.Logf("%d writers: %d appends acknowledged in %v; the longest time between two acknowledged appends: %v (from %v)",
		len(l.ws), appends, l.since(), gap.Round(time.Millisecond), at.Sub(l.start).Round(time.Millisecond))
	if gap > maxGap {
		t.Errorf("writes stopped for %v, more than %v", gap.Round(time.Millisecond), maxGap)
	}
	t.Logf("%d loads of their own sessions, the longest %v (from %v)", l.reads, l.longestRead.Round(time.Millisecond), l.longestReadAt.Round(time.Millisecond))
	if l.longestRead > maxGap {
		t.Errorf("a load took %v, more than %v", l.longestRead.Round(time.Millisecond), maxGap)
	}
	return want
}

// testFusekiKilled: eight writers append while the Fuseki of replica 0,
// the replica they prefer, is killed with SIGKILL; it is started again on
// the same TDB2 directory once every writer has had appends acknowledged
// without it. Its applier retries until
// it answers and catches up; the writers go on through replica 1
// meanwhile.
func testFusekiKilled(t *testing.T, fx *faultEnv) {
	rng := seeded(t)
	r := newFaultRig(t, fx)
	l := r.write(t, 8, rng)
	l.waitAcks(t, 3)
	f := fx.fuseki(t)
	if err := f.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: killed replica 0's Fuseki (kill -9)", l.since())
	l.waitAcks(t, 3)
	if err := f.Start(); err != nil {
		t.Fatalf("restart replica 0's Fuseki on its TDB2 directory: %v", err)
	}
	t.Logf("%v: replica 0's Fuseki answers again (its restart took %v)", l.since(), f.Started.Round(time.Millisecond))
	l.waitAcks(t, 3)
	r.check(t, l.finish(t))
}

// testReplicaCopied: eight writers append while replica 0 stops (its
// applier killed, its Fuseki stopped), its TDB2 database is copied file
// by file and it starts again; a new Fuseki started on the copy, with an
// applier of its own, joins as a third replica and applies the log from
// the offset the copy holds. Afterwards all three hold the same quads
// (docs/scale-out.md, "From a file copy").
func testReplicaCopied(t *testing.T, fx *faultEnv) {
	rng := seeded(t)
	r := newFaultRig(t, fx)
	l := r.write(t, 8, rng)
	l.waitAcks(t, 3)
	f := fx.fuseki(t)
	r.appliers[0].kill()
	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "copy")
	if err := f.CopyData(copied); err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatalf("restart replica 0's Fuseki: %v", err)
	}
	r.appliers[0].start(t)
	t.Logf("%v: replica 0 stopped, copied and started again", l.since())
	l.waitAcks(t, 3)
	g, err := fusekitest.StartServer(fusekitest.Options{DataDir: copied})
	if err != nil {
		t.Fatalf("a Fuseki on the copy: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	r.add(t, fusekitest.Client(t, kg.Config{Endpoint: g.Endpoint, Store: kg.Fuseki}))
	from := r.appliers[2].startedFrom(t)
	if from <= 0 {
		t.Errorf("the copy's applier started from offset %d: the copy held no applied offset", from)
	}
	t.Logf("%v: replica 2 started on the copy, applying from offset %d", l.since(), from)
	l.waitAcks(t, 3)
	r.check(t, l.finish(t))
}

// testApplierKilled: eight writers append while replica 0's applier, a
// trails-replica process, is killed with SIGKILL; it is started again a
// few seconds later and resumes from the offset its dataset holds, after
// which every record is applied once (the replicas' quads are the same).
func testApplierKilled(t *testing.T, fx *faultEnv) {
	rng := seeded(t)
	r := newFaultRig(t, fx)
	l := r.write(t, 8, rng)
	l.waitAcks(t, 3)
	time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
	r.appliers[0].kill()
	t.Logf("%v: killed replica 0's applier (kill -9); its dataset holds offset %d", l.since(), r.storedOffset(t, 0))
	l.waitAcks(t, 3)
	time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
	// The request the applier had in flight at the kill may commit after
	// it: read the offset it left once that is done (Fuseki has had the
	// writers' 3 appends and a pause to finish it).
	stored := r.storedOffset(t, 0)
	r.appliers[0].start(t)
	if from := r.appliers[0].startedFrom(t); from != stored+1 {
		t.Errorf("the restarted applier applies from offset %d, want %d (the one after its dataset's)", from, stored+1)
	}
	t.Logf("%v: replica 0's applier restarted, applying from offset %d", l.since(), stored+1)
	l.waitAcks(t, 3)
	r.check(t, l.finish(t))
}

// cutOff is how long the cut-off test keeps replica 0 away.
const cutOff = 30 * time.Second

// testCutOff: eight writers append while replica 0, the one they prefer,
// is cut off for 30 s: its applier and its Fuseki are frozen with
// SIGSTOP, then thawed with SIGCONT. From outside, that is what a network
// partition looks like: connections to it stay open and requests get no
// answer (no refusal, no reset), so a writer learns of it only by its own
// timeouts; and the replica applies nothing meanwhile. Writes go on
// through replica 1; thawed, replica 0 catches up. A reader whose Client
// last wrote through replica 0 loads a session at the cut: it must get
// its answer within maxGap.
func testCutOff(t *testing.T, fx *faultEnv) {
	rng := seeded(t)
	r := newFaultRig(t, fx)
	l := r.write(t, 8, rng)
	// A reader whose Client had its last write answered by replica 0:
	// it reads from replica 0's Fuseki, without asking first.
	rst := session.NewStore(r.client(t))
	probe := session.New("reader")
	probe.Append("user", "read me during the cut")
	if err := rst.Persist(context.Background(), probe); err != nil {
		t.Fatal(err)
	}
	l.waitAcks(t, 3)
	f := fx.fuseki(t)
	fpid := javaPid(t, f)
	r.appliers[0].pause(t)
	if err := syscall.Kill(fpid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thaw := sync.OnceFunc(func() { syscall.Kill(fpid, syscall.SIGCONT); r.appliers[0].resume() })
	t.Cleanup(thaw)
	t.Logf("%v: replica 0 cut off (its applier and its Fuseki frozen)", l.since())
	read := make(chan error, 1)
	var readTook time.Duration
	go func(t0 time.Time) {
		_, err := rst.Load(context.Background(), probe.ID)
		readTook = time.Since(t0)
		read <- err
	}(time.Now())
	time.Sleep(cutOff)
	thaw()
	select {
	case err := <-read:
		if err != nil {
			t.Errorf("the reader's load, sent at the cut: %v", err)
		}
		t.Logf("the reader's load, sent at the cut to replica 0 (where its Client last wrote), took %v", readTook.Round(time.Millisecond))
	case <-time.After(maxGap - cutOff):
		t.Errorf("the reader's load, sent at the cut to replica 0, still waits %v after it", maxGap)
	}
	behind := r.logEnd(t)
	t.Logf("%v: replica 0 back after %v; the log ends at offset %d", l.since(), cutOff, behind)
	t0 := time.Now()
	r.await(t, 0, behind)
	t.Logf("replica 0 applied the log up to offset %d %v after it came back", behind, time.Since(t0).Round(time.Millisecond))
	l.waitAcks(t, 3)
	want := l.finish(t)
	want[probe.ID] = wantSession{lens: []int{1}, turns: turnContents(probe.Turns)}
	r.check(t, want)
}

// javaPid returns the pid of the java process of srv (found by its
// configuration file, which is in the directory of its log).
func javaPid(t *testing.T, srv *fusekitest.Server) int {
	t.Helper()
	conf := []byte("--config=" + filepath.Join(filepath.Dir(srv.Log), "config.ttl"))
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && slices.ContainsFunc(bytes.Split(b, []byte{0}), func(a []byte) bool { return bytes.Equal(a, conf) }) {
			return pid
		}
	}
	t.Fatalf("no process of the Fuseki logging to %s", srv.Log)
	return 0
}

// childConfig is what the writer child needs: the rig's Config, or with
// Sharded set, the Sharded's.
type childConfig struct {
	Config  cluster.Config
	Sharded *cluster.ShardedConfig
}

// childTurns is the number of turns of each of the child's appends.
const childTurns = 3

// childText is the content of turn i of a session the writer child
// appends to (and of those the new writer appends after it).
func childText(i int) string {
	return fmt.Sprintf("turn %d (%d of %d in its append)", i, i%childTurns+1, childTurns)
}

// writerChild is the process testWriterKilled kills: eight goroutines,
// each appending 3 turns at a time to a session of its own, through one
// Client and Store of the cluster, printing "ack ID N" once the N-th
// append of session ID is acknowledged. It runs until killed, or a
// minute has passed. It returns the process's exit code.
func writerChild(env string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(env), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "writer child:", err)
		return 2
	}
	var st *session.Store
	if cfg.Sharded != nil {
		c, err := cluster.OpenSharded(*cfg.Sharded)
		if err != nil {
			fmt.Fprintln(os.Stderr, "writer child:", err)
			return 2
		}
		defer c.Close()
		st = session.NewStore(c, session.WithGroupCommit(false))
	} else {
		c, err := cluster.Open(cfg.Config)
		if err != nil {
			fmt.Fprintln(os.Stderr, "writer child:", err)
			return 2
		}
		defer c.Close()
		st = session.NewStore(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s := session.New("killed-writer")
			for n := 1; ctx.Err() == nil; n++ {
				for range childTurns {
					s.Append("user", childText(len(s.Turns)))
				}
				if err := st.Persist(ctx, s); err != nil {
					fmt.Fprintf(os.Stderr, "writer child: %s: %v\n", s.ID, err)
					return
				}
				mu.Lock()
				fmt.Printf("ack %s %d\n", s.ID, n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return 0
}

// testWriterKilled: a writer process (this test binary again, as
// writerChild) appends through the cluster; it is killed with SIGKILL at
// a random moment, whatever it has in flight (records produced and not
// yet applied, outcomes not yet known). Then a new writer loads each of
// its sessions and goes on appending. Each session holds every
// acknowledged append and the one in flight whole or not at all.
func testWriterKilled(t *testing.T, fx *faultEnv) {
	rng := seeded(t)
	r := newFaultRig(t, fx)
	want := killWriter(t, rng, childConfig{Config: r.config()}, session.NewStore(r.client(t)))
	r.check(t, want)
}

// killWriter runs the writer child with cfg, kills it with SIGKILL after
// 30 to 90 acknowledged appends, then has st load each of its sessions
// and append to it, and returns what each session must hold.
func killWriter(t *testing.T, rng *rand.Rand, child childConfig, st *session.Store) map[string]wantSession {
	t.Helper()
	cfg, err := json.Marshal(child)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wantAcks := 30 + rng.IntN(60)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envWriterChild+"="+string(cfg))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := fusekitest.Spawn(cmd); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	acked := map[string]int{} // session id → appends acknowledged
	var order []string
	acks, killed := 0, time.Time{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var id string
		var n int
		if _, err := fmt.Sscanf(sc.Text(), "ack %s %d", &id, &n); err != nil {
			continue
		}
		if _, ok := acked[id]; !ok {
			order = append(order, id)
		}
		acked[id] = n
		if acks++; acks == wantAcks {
			time.Sleep(time.Duration(rng.Int64N(int64(30 * time.Millisecond))))
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = time.Now()
		}
	}
	cmd.Wait()
	if killed.IsZero() {
		t.Fatalf("the writer ended after %d acknowledged appends, before the kill at %d", acks, wantAcks)
	}
	t.Logf("killed the writer (kill -9) %v after its start, after %d acknowledged appends on %d sessions", killed.Sub(t0).Round(time.Millisecond), acks, len(order))

	// The new writer: loads each session and appends to it. A record of
	// the killed writer may still be applying (it is in the log, before
	// the new writer's): the append is then refused (ErrConflict), and
	// the new writer loads the session again, as the protocol says.
	ctx := context.Background()
	want := map[string]wantSession{}
	landed, firstAck := 0, time.Duration(0)
	for _, id := range order {
		var s *session.Session
		for attempt := 0; ; attempt++ {
			if s, err = st.Load(ctx, id); err != nil {
				t.Fatalf("session %s (%d appends acknowledged): load: %v", id, acked[id], err)
			}
			stored := len(s.Turns)
			if stored%childTurns != 0 || stored/childTurns < acked[id] || stored/childTurns > acked[id]+1 {
				t.Fatalf("session %s: %d turns loaded, want %d appends of %d turns (the acknowledged) or one more (in flight at the kill)", id, stored, acked[id], childTurns)
			}
			for range childTurns {
				s.Append("assistant", childText(len(s.Turns)))
			}
			err = st.Persist(ctx, s)
			if err == nil {
				if stored/childTurns > acked[id] {
					landed++
				}
				break
			}
			if !errors.Is(err, session.ErrConflict) || attempt == 5 {
				t.Fatalf("session %s: the new writer's append: %v", id, err)
			}
		}
		if firstAck == 0 {
			firstAck = time.Since(killed)
		}
		turns := make([]string, len(s.Turns))
		for i := range turns {
			turns[i] = childText(i)
		}
		want[id] = wantSession{lens: []int{len(s.Turns)}, turns: turns}
	}
	t.Logf("the new writer's first append was acknowledged %v after the kill; %d appends in flight at the kill landed whole", firstAck.Round(time.Millisecond), landed)
	return want
}

// freePort returns a port free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
