package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/exit"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// Scenario 10, -only cluster: Trails through the replicated log of issue
// 23 against the Fuseki trails-bench starts itself. The Kafka nodes are
// those of scripts/cluster (TRAILS_KAFKA_BROKERS); everything else is
// the benchmark's own, so that it can kill it: the replicas are Fusekis
// started like the direct one (same jar, configuration and JVM options),
// their appliers are this binary run as a child (applierChildFlag, the
// code of cmd/trails-replica), and the log is a topic of the run's own,
// removed at the end. A broker is killed and started again with
// scripts/cluster kill-node and start-node.

// The cluster targets' column headings.
const (
	tClusterP50     = "cluster: append p50 ≤ 2× direct"
	tClusterWriters = "cluster: 64 writers ≥ one Fuseki"
	tClusterCatchUp = "cluster: catch-up ≥ 2,000 turns/s"
	tClusterReplica = "cluster: replica failover ≤ 5 s"
	tClusterBroker  = "cluster: broker failover ≤ 5 s"
	tClusterDecided = "cluster: 64 writers, decided path ≥ 1.8× update path"
	tClusterReplay  = "cluster: replay, decided path ≥ 2× update path"
	decidedWriters  = 1.8
	// decidedFloorShare is the share of the replicas' patch floor the
	// decided path's writers must reach when decidedWriters× the update
	// path lies above that floor.
	decidedFloorShare = 0.8
	decidedReplay     = 2.0
	clusterP50Ratio   = 2.0
	clusterCatchUp    = 2000.0
	clusterFailover   = 5 * time.Second
	failoverGiveUp    = 90 * time.Second // a trial with no acknowledgement by then stops
	applierChildFlag  = "-applier-child"
)

// clusterColumns lists the cluster targets, in report order.
var clusterColumns = []string{tClusterP50, tClusterWriters, tClusterDecided, tClusterCatchUp, tClusterReplay, tClusterReplica, tClusterBroker}

// clusterEnv is where the Kafka nodes are: the settings scripts/cluster
// start prints.
type clusterEnv struct {
	brokers []string
	base    int    // scripts/cluster's --port: node N's broker listens on base+N-1
	script  string // scripts/cluster
}

// clusterEnvFromOS reads TRAILS_KAFKA_BROKERS (and TRAILS_KAFKA_PORT, else
// the lowest broker port).
func clusterEnvFromOS() (clusterEnv, error) {
	v := os.Getenv("TRAILS_KAFKA_BROKERS")
	if v == "" {
		return clusterEnv{}, exit.Usagef("-only cluster needs the Kafka nodes of scripts/cluster in TRAILS_KAFKA_BROKERS: run\n  set -a; eval \"$(scripts/cluster start --kafka-only)\"; set +a\nfirst")
	}
	env := clusterEnv{brokers: strings.Split(v, ",")}
	for _, b := range env.brokers {
		_, p, err := net.SplitHostPort(b)
		n, err2 := strconv.Atoi(p)
		if err != nil || err2 != nil {
			return clusterEnv{}, exit.Usagef("TRAILS_KAFKA_BROKERS: %q is not host:port", b)
		}
		if env.base == 0 || n < env.base {
			env.base = n
		}
	}
	if p := os.Getenv("TRAILS_KAFKA_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return clusterEnv{}, exit.Usagef("TRAILS_KAFKA_PORT: %q is not a port", p)
		}
		env.base = n
	}
	root, err := fusekitest.RepoRoot()
	if err != nil {
		return clusterEnv{}, err
	}
	env.script = filepath.Join(root, "scripts", "cluster")
	return env, nil
}

// clusterResult is scenario 10.
type clusterResult struct {
	Brokers   []string `json:"brokers"`
	Topic     string   `json:"topic"`
	Replicas  int      `json:"replicas"`
	Appends   int      `json:"appends"` // by each way, over all measured runs
	LogP50    time.Duration
	LogP99    time.Duration
	DirectP50 time.Duration
	DirectP99 time.Duration
	// Phases of the appends through the log: median and 99th percentile.
	Phases []phaseStat `json:"phases"`
	Traced int         `json:"traced"` // appends whose phases could all be timed

	Writers                     int `json:"writers"`
	Window                      time.Duration
	ClusterAPS                  float64 `json:"cluster_appends_per_s"`
	SingleAPS                   float64 `json:"single_appends_per_s"`
	ClusterP50                  time.Duration
	SingleP50                   time.Duration
	ClusterFailed, SingleFailed int     // appends that failed in the measured runs
	BatchMean                   float64 `json:"records_per_apply_under_load"` // records per apply request of the replica the writers used
	WriterRuns                  int     `json:"writer_runs"`
	// UpdatesAPS and UpdatesP50 are the writers through the log with
	// every applier on the update path (trails-replica -updates-only);
	// ClusterAPS is on the decided path, the default.
	UpdatesAPS float64 `json:"updates_only_appends_per_s"`
	UpdatesP50 time.Duration
	// FloorAPS is the replicas' floor for the writers' appends: their
	// data as raw RDF Patch, FloorPer appends (FloorQuads quads each, on
	// average) a request, to every replica at once (clusterfloor.go).
	FloorAPS   float64 `json:"replicas_patch_floor_appends_per_s"`
	FloorPer   int     `json:"replicas_patch_floor_appends_per_request"`
	FloorQuads float64 `json:"replicas_patch_floor_quads_per_append"`
	CatchUp    catchUp `json:"catch_up"`
	// CatchUpUpdates is CatchUp with the new replica's applier on the
	// update path.
	CatchUpUpdates catchUp `json:"catch_up_updates_only"`
	// Seeded is a new replica that starts from a copy of replica 0's
	// dataset (cluster.Seed, trails-replica -from) and applies the log
	// after the copy's offset.
	Seeded catchUp `json:"catch_up_seeded"`
	// Copied is a new replica started on a file copy of a stopped
	// replica's TDB2 database, applying the log after the copy's offset.
	Copied      catchUp `json:"catch_up_files"`
	Failovers   []failover
	FailoverErr []string `json:"failover_errors,omitempty"`
}

// phaseStat is one phase of an append through the log.
type phaseStat struct {
	Name  string        `json:"name"`
	Short string        `json:"short"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
}

// catchUp is a new replica applying the whole log from an empty dataset,
// or the log after a copy of another replica's dataset.
type catchUp struct {
	Records int64         `json:"records"` // the log records it applied
	Turns   int           `json:"turns"`   // the turns it then held
	D       time.Duration `json:"ns"`
	// First is when the applier had applied its first batch, of
	// FirstRecords records: before it, the applier starts and the new
	// Fuseki's JVM answers its first requests.
	First        time.Duration `json:"first_batch_ns"`
	FirstRecords int64         `json:"first_batch_records"`
	// From a file copy: Copy is from the donor's stop to the copy's end
	// (the donor is down for it), Start the new Fuseki's start on the
	// copy (in D too; the other ways start theirs before D begins).
	Copy  time.Duration `json:"copy_ns,omitempty"`
	Start time.Duration `json:"start_ns,omitempty"`
}

// steadyPerSec is the records per second after the first batch.
func (c catchUp) steadyPerSec() float64 {
	return ratio(float64(c.Records-c.FirstRecords), (c.D - c.First).Seconds())
}

func (c catchUp) recordsPerSec() float64 { return ratio(float64(c.Records), c.D.Seconds()) }

// meets reports whether the catch-up meets its target, over at least
// 2,000 turns.
func (c catchUp) meets() bool          { return c.Turns >= 2000 && c.turnsPerSec() >= clusterCatchUp }
func (c catchUp) turnsPerSec() float64 { return ratio(float64(c.Turns), c.D.Seconds()) }

// failover is one fault: what was killed, and how long writes stopped.
type failover struct {
	Kind    string        `json:"kind"` // "applier", "fuseki" or "broker"
	What    string        `json:"what"`
	NextAck time.Duration `json:"next_ack_ns"` // kill → first acknowledgement of an append begun after it
	Longest time.Duration `json:"longest_append_ns"`
	Errors  int           `json:"errors"` // appends that failed meanwhile
}

// clusterRig is the benchmark's side of the cluster: the replicas'
// Fusekis and their appliers.
type clusterRig struct {
	b        *bench
	env      clusterEnv
	topic    string
	dirs     []string // the replicas' databases
	kc       *kgo.Client
	adm      *kadm.Client
	fusekis  []*fusekitest.Server
	appliers []*applierProc
	tracer   *outcomeTracer
}

// applierProc is an applier run as a child process.
type applierProc struct {
	args []string
	addr string // host:port of its HTTP service, kept across restarts
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// cluster runs scenario 10.
func (b *bench) cluster(ctx context.Context, env clusterEnv) (_ *clusterResult, err error) {
	rig := &clusterRig{b: b, env: env, topic: fmt.Sprintf("trails-bench-%d", time.Now().UnixNano())}
	defer rig.close()
	scratch, err := os.MkdirTemp(fusekitest.ScratchDir(), "trails-bench-appliers-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err == nil {
			os.RemoveAll(scratch) // the appliers' logs, kept when the scenario fails
		}
	}()
	if err := rig.start(ctx, scratch); err != nil {
		return nil, err
	}
	r := &clusterResult{Brokers: env.brokers, Topic: rig.topic, Replicas: len(rig.fusekis)}
	if err := rig.latency(ctx, r); err != nil {
		return nil, fmt.Errorf("cluster: latency: %w", err)
	}
	if err := rig.writers(ctx, r); err != nil {
		return nil, fmt.Errorf("cluster: writers: %w", err)
	}
	if err := rig.catchUp(ctx, &r.CatchUpUpdates, fromLogUpdates); err != nil {
		return nil, fmt.Errorf("cluster: catch-up on the update path: %w", err)
	}
	if err := rig.catchUp(ctx, &r.CatchUp, fromLog); err != nil {
		return nil, fmt.Errorf("cluster: catch-up: %w", err)
	}
	if err := rig.catchUp(ctx, &r.Seeded, fromSeed); err != nil {
		return nil, fmt.Errorf("cluster: catch-up from a copy: %w", err)
	}
	if err := rig.catchUp(ctx, &r.Copied, fromFiles); err != nil {
		return nil, fmt.Errorf("cluster: catch-up from a file copy: %w", err)
	}
	if err := rig.failovers(ctx, r); err != nil {
		return nil, fmt.Errorf("cluster: failover: %w", err)
	}
	if err := rig.patchFloor(ctx, r, rig.b.contents(256)); err != nil {
		return nil, fmt.Errorf("cluster: the replicas' floor: %w", err)
	}
	return r, nil
}

// start makes the topic and starts the replicas and their appliers.
func (rig *clusterRig) start(ctx context.Context, scratch string) error {
	b := rig.b
	kc, err := kgo.NewClient(kgo.SeedBrokers(rig.env.brokers...))
	if err != nil {
		return err
	}
	rig.kc, rig.adm = kc, kadm.NewClient(kc)
	mmb := strconv.Itoa(cluster.MaxBatchBytes)
	minISR := "2"
	resp, err := rig.adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR, "max.message.bytes": &mmb}, rig.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("cluster: create topic %s on %s: %w (is scripts/cluster running?)", rig.topic, strings.Join(rig.env.brokers, ","), err)
	}
	b.logf("cluster: topic %s (1 partition, replication factor 3) on %s", rig.topic, strings.Join(rig.env.brokers, ","))
	rig.tracer = &outcomeTracer{next: http.DefaultTransport}
	// cluster.Client asks the appliers through http.DefaultTransport:
	// tracing it is how the benchmark sees which applier answered and
	// when, without a hook in package cluster. Restored by close.
	http.DefaultTransport = rig.tracer
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	srvs := make([]*fusekitest.Server, 2)
	errs := make([]error, len(srvs))
	var wg sync.WaitGroup
	for i := range srvs {
		data, err := rig.dataDir()
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			srvs[i], errs[i] = fusekitest.StartServer(fusekitest.Options{DataDir: data})
		}()
	}
	wg.Wait()
	for _, srv := range srvs {
		if srv != nil {
			rig.fusekis = append(rig.fusekis, srv) // for close, whatever else failed
		}
	}
	for i := range srvs {
		if errs[i] != nil {
			return fmt.Errorf("cluster: replica %d: %w", i, errs[i])
		}
	}
	for i, srv := range srvs {
		a := &applierProc{
			args: []string{applierChildFlag, "-brokers", strings.Join(rig.env.brokers, ","), "-topic", rig.topic, "-dataset", srv.Endpoint},
			addr: "127.0.0.1:0",
			log:  filepath.Join(scratch, fmt.Sprintf("applier-%d.log", i)),
		}
		if err := a.start(exe); err != nil {
			return fmt.Errorf("cluster: applier %d: %w", i, err)
		}
		rig.appliers = append(rig.appliers, a)
		b.logf("cluster: replica %d: Fuseki %s, applier http://%s (log %s)", i, srv.Endpoint, a.addr, a.log)
	}
	return nil
}

// dataDir returns a new directory for a replica's TDB2 database where
// the direct Fuseki's is by default ($TMPDIR, on disk): left to
// fusekitest, it would be in its scratch directory, which may be
// /dev/shm, where a commit does not wait for a disk. Removed by close.
func (rig *clusterRig) dataDir() (string, error) {
	d, err := os.MkdirTemp("", "trails-bench-replica-")
	if err == nil {
		rig.dirs = append(rig.dirs, d)
	}
	return d, err
}

// close stops what start started and removes the topic.
func (rig *clusterRig) close() {
	for _, a := range rig.appliers {
		a.kill()
	}
	for _, f := range rig.fusekis {
		f.Close()
	}
	for _, d := range rig.dirs {
		os.RemoveAll(d)
	}
	if rig.tracer != nil {
		http.DefaultTransport = rig.tracer.next
	}
	if rig.adm != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rig.adm.DeleteTopics(ctx, rig.topic)
		rig.adm.Close()
	}
}

// start runs the applier child and waits until it serves.
func (a *applierProc) start(exe string) error {
	lf, err := os.OpenFile(a.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := exec.Command(exe, append(slices.Clone(a.args), "-listen", a.addr)...)
	cmd.Stderr = lf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	a.cmd, a.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(a.done) }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		a.kill()
		return fmt.Errorf("the applier exited before serving (its log: %s)", a.log)
	}
	a.addr = strings.TrimSpace(line)
	return nil
}

// restartAppliers stops every applier and starts it again, on the
// update path when updatesOnly (trails-replica -updates-only), else on
// the decided path.
func (rig *clusterRig) restartAppliers(updatesOnly bool) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for i, a := range rig.appliers {
		a.kill()
		a.args = slices.DeleteFunc(a.args, func(s string) bool { return s == "-updates-only" })
		if updatesOnly {
			a.args = append(a.args, "-updates-only")
		}
		if err := a.start(exe); err != nil {
			return fmt.Errorf("applier %d: %w", i, err)
		}
	}
	return nil
}

// kill kills the applier at once (SIGKILL), as a crash would.
func (a *applierProc) kill() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	a.cmd.Process.Kill()
	<-a.done
	a.cmd = nil
}

func (a *applierProc) url() string { return "http://" + a.addr }

// replicas returns the cluster.Replica list, the first preferred.
func (rig *clusterRig) replicas() []cluster.Replica {
	var rs []cluster.Replica
	for i, f := range rig.fusekis {
		rs = append(rs, cluster.Replica{Dataset: f.Endpoint, Applier: rig.appliers[i].url()})
	}
	return rs
}

// client opens a cluster.Client on the rig.
func (rig *clusterRig) client() (*cluster.Client, error) {
	return cluster.Open(cluster.Config{Brokers: rig.env.brokers, Topic: rig.topic, Replicas: rig.replicas(),
		Store: kg.Config{Timeout: 5 * time.Minute}, Transport: rig.tracer})
}

// tracedQuerier is a cluster.Client whose updates are timed.
type tracedQuerier struct {
	*cluster.Client
	mu      sync.Mutex
	updates []span
}

type span struct{ start, end time.Time }

func (q *tracedQuerier) Update(ctx context.Context, u string, opts ...kg.UpdateOption) error {
	t0 := time.Now()
	err := q.Client.Update(ctx, u, opts...)
	q.mu.Lock()
	q.updates = append(q.updates, span{t0, time.Now()})
	q.mu.Unlock()
	return err
}

func (q *tracedQuerier) take() []span {
	q.mu.Lock()
	defer q.mu.Unlock()
	u := q.updates
	q.updates = nil
	return u
}

// outcomeTracer is an http.RoundTripper that notes the requests a
// cluster.Client makes to the appliers for outcomes: which applier, which
// offset, when. It is safe for concurrent use.
type outcomeTracer struct {
	next     http.RoundTripper
	keep     atomic.Bool // note every request (else only the last answer)
	mu       sync.Mutex
	calls    []outcomeCall
	lastHost string // the applier whose answer came last
}

type outcomeCall struct {
	host       string
	offset     int64
	start, end time.Time
	ok         bool
}

func (t *outcomeTracer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path != "/outcome" {
		return t.next.RoundTrip(r)
	}
	c := outcomeCall{host: r.URL.Host, start: time.Now()}
	c.offset, _ = strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		var body []byte
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		c.ok = err == nil && resp.StatusCode == http.StatusOK && !bytes.Contains(body, []byte(`"pending"`))
	}
	c.end = time.Now()
	t.mu.Lock()
	if c.ok {
		t.lastHost = c.host
	}
	if t.keep.Load() {
		t.calls = append(t.calls, c)
	}
	t.mu.Unlock()
	return resp, err
}

func (t *outcomeTracer) take() []outcomeCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.calls
	t.calls = nil
	return c
}

func (t *outcomeTracer) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastHost
}

// applyRec is one apply request of an applier child: the records after
// offset Prev up to Last, sent at Start and answered at End.
type applyRec struct {
	Prev  int64     `json:"prev"`
	Last  int64     `json:"last"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	OK    bool      `json:"ok"`
}

// applies asks applier i for the apply requests it made since since.
func (rig *clusterRig) applies(ctx context.Context, i int, since time.Time) ([]applyRec, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rig.appliers[i].url()+"/bench/applies?since="+url.QueryEscape(since.Format(time.RFC3339Nano)), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var recs []applyRec
	return recs, json.NewDecoder(resp.Body).Decode(&recs)
}

// latency runs appends through the log and to the direct Fuseki,
// alternating call by call, and breaks the log's down into phases.
func (rig *clusterRig) latency(ctx context.Context, r *clusterResult) error {
	b := rig.b
	c, err := rig.client()
	if err != nil {
		return err
	}
	defer c.Close()
	tq := &tracedQuerier{Client: c}
	cst := session.NewStore(tq)
	cs, ds := b.newRoot(2), b.newRoot(2)
	if err := cst.Persist(ctx, cs); err != nil {
		return err
	}
	if err := b.st.Persist(ctx, ds); err != nil {
		return err
	}
	type tracedAppend struct {
		total   time.Duration
		updates []span
	}
	var logLat, dirLat []float64
	var traced []tracedAppend
	t0 := time.Now()
	for run := 0; run <= b.plan.runs; run++ {
		measured := run > 0
		rig.tracer.keep.Store(measured)
		tq.take()
		for i := range b.plan.appendsPerRun {
			content := b.gen.turn()
			viaLog := func() error {
				cs.Append(role(len(cs.Turns)), content)
				t := time.Now()
				err := cst.Persist(ctx, cs)
				if measured {
					d := time.Since(t)
					logLat = append(logLat, float64(d))
					traced = append(traced, tracedAppend{total: d, updates: tq.take()})
				}
				return err
			}
			direct := func() error {
				ds.Append(role(len(ds.Turns)), content)
				t := time.Now()
				err := b.st.Persist(ctx, ds)
				if measured {
					dirLat = append(dirLat, float64(time.Since(t)))
				}
				return err
			}
			ways := []func() error{viaLog, direct}
			if i%2 == 1 {
				ways[0], ways[1] = ways[1], ways[0]
			}
			for _, w := range ways {
				if err := w(); err != nil {
					return err
				}
			}
		}
	}
	rig.tracer.keep.Store(false)
	calls := rig.tracer.take()
	r.Appends = len(logLat)
	r.LogP50, r.LogP99 = time.Duration(percentile(logLat, 50)), time.Duration(percentile(logLat, 99))
	r.DirectP50, r.DirectP99 = time.Duration(percentile(dirLat, 50)), time.Duration(percentile(dirLat, 99))

	// The breakdown: each update's outcome calls (the first one's start is
	// when the record was in the log), the apply request of the applier
	// that answered, the outcome's answer.
	hostIdx := map[string]int{}
	recs := make([][]applyRec, len(rig.appliers))
	for i, a := range rig.appliers {
		hostIdx[a.addr] = i
		if recs[i], err = rig.applies(ctx, i, t0); err != nil {
			return fmt.Errorf("apply trace of applier %d: %w", i, err)
		}
	}
	var produce, toApply, apply, answer, rest, batch []float64
	for _, ta := range traced {
		var upd time.Duration
		for _, u := range ta.updates {
			upd += u.end.Sub(u.start)
			var mine []outcomeCall
			for _, oc := range calls {
				if !oc.start.Before(u.start) && !oc.end.After(u.end) {
					mine = append(mine, oc)
				}
			}
			if len(mine) == 0 || !mine[len(mine)-1].ok {
				continue
			}
			first, lastc := mine[0], mine[len(mine)-1]
			i, ok := hostIdx[lastc.host]
			if !ok {
				continue
			}
			var ar *applyRec
			for k := range recs[i] {
				if x := &recs[i][k]; x.OK && x.Prev < lastc.offset && lastc.offset <= x.Last {
					ar = x
				}
			}
			if ar == nil {
				continue
			}
			produce = append(produce, float64(first.start.Sub(u.start)))
			toApply = append(toApply, float64(ar.Start.Sub(first.start)))
			apply = append(apply, float64(ar.End.Sub(ar.Start)))
			answer = append(answer, float64(lastc.end.Sub(ar.End)))
			batch = append(batch, float64(ar.Last-ar.Prev))
		}
		rest = append(rest, float64(ta.total-upd))
	}
	ph := func(short, name string, xs []float64) phaseStat {
		return phaseStat{Name: name, Short: short, P50: time.Duration(percentile(xs, 50)), P99: time.Duration(percentile(xs, 99))}
	}
	r.Phases = []phaseStat{
		ph("produce", "produce (acks=all) until the record is in the log", produce),
		ph("fetch", "in the log until its applier's apply request starts", toApply),
		ph("apply", "the apply request (one Fuseki transaction)", apply),
		ph("outcome", "applied until the outcome's answer reaches the writer", answer),
		ph("other", "Persist's own work besides its updates", rest),
	}
	r.Traced = len(produce)
	if r.Traced == 0 {
		return fmt.Errorf("cluster: none of %d appends through the log could be traced to its apply request (has the applier's guard changed shape? see applyOffsets)", len(traced))
	}
	b.logf("cluster: %d appends each way: through the log p50 %v p99 %v, direct p50 %v p99 %v (%.2f×); traced %d: %s; records per apply request %.1f",
		r.Appends, ms(r.LogP50), ms(r.LogP99), ms(r.DirectP50), ms(r.DirectP99), ratio(float64(r.LogP50), float64(r.DirectP50)), r.Traced,
		phaseLine(r.Phases), median(batch))
	return nil
}

func phaseLine(ps []phaseStat) string {
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprintf("%s %v", p.Short, ms(p.P50)))
	}
	return strings.Join(s, ", ")
}

// writerPool is n writers, each with a Store and a client of its own (n
// agents), appending to a session of its own.
type writerPool struct {
	stores   []*session.Store
	sessions []*session.Session
	closers  []func()
}

func (p *writerPool) close() {
	for _, c := range p.closers {
		c()
	}
}

// newPool makes n writers on clients from open and stores their
// sessions, all at once.
func (rig *clusterRig) newPool(ctx context.Context, n int, open func() (session.Querier, func(), error)) (*writerPool, error) {
	p := &writerPool{}
	for range n {
		q, closeQ, err := open()
		if err != nil {
			p.close()
			return nil, err
		}
		p.closers = append(p.closers, closeQ)
		p.stores, p.sessions = append(p.stores, session.NewStore(q)), append(p.sessions, rig.b.newRoot(1))
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.stores[i].Persist(ctx, p.sessions[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// window has every writer of p append for warm, then for d, and returns
// the appends acknowledged within d, their latencies and how many failed.
// Counting only after warm leaves out the start, when no writer has had
// time to finish an append: an append that takes longer than warm would
// make the rate too low. A writer whose append fails loads its session
// again and goes on.
func (p *writerPool) window(ctx context.Context, warm, d time.Duration, contents []string) (int, []float64, int, error) {
	from := time.Now().Add(warm)
	deadline := from.Add(d)
	var mu sync.Mutex
	var lat []float64
	var failed int
	var firstErr error
	var wg sync.WaitGroup
	for w := range p.stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := p.stores[w]
			for k := w; time.Now().Before(deadline); k++ {
				s := p.sessions[w]
				s.Append(role(len(s.Turns)), contents[k%len(contents)])
				t0 := time.Now()
				err := st.Persist(ctx, s)
				t1 := time.Now()
				if err != nil && ctx.Err() == nil {
					var lerr error
					if p.sessions[w], lerr = st.Load(ctx, s.ID); lerr != nil {
						p.sessions[w] = s
						mu.Lock()
						firstErr = cmp.Or(firstErr, fmt.Errorf("writer %d: %w, then load: %w", w, err, lerr))
						mu.Unlock()
						return
					}
				}
				mu.Lock()
				switch {
				case t1.Before(from) || t1.After(deadline):
				case err != nil:
					failed++
				default:
					lat = append(lat, float64(t1.Sub(t0)))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return len(lat), lat, failed, firstErr
}

// writers measures plan.clusterWriters writers' appends per second through
// the log and to the direct Fuseki, window by window, alternating.
func (rig *clusterRig) writers(ctx context.Context, r *clusterResult) error {
	b := rig.b
	n := b.plan.clusterWriters
	r.Writers, r.Window, r.WriterRuns = n, b.plan.clusterWindow, b.plan.runs
	viaLog, err := rig.newPool(ctx, n, func() (session.Querier, func(), error) {
		c, err := rig.client()
		if err != nil {
			return nil, nil, err
		}
		return c, c.Close, nil
	})
	if err != nil {
		return err
	}
	defer viaLog.close()
	direct, err := rig.newPool(ctx, n, func() (session.Querier, func(), error) {
		// Connections idle while the other way runs: drop them before
		// Fuseki (Jetty) closes them, or a request on one gets EOF.
		ct := newCounter()
		ct.next.(*http.Transport).IdleConnTimeout = 5 * time.Second
		c, err := newClient(b.srv.Endpoint, ct)
		return c, func() {}, err
	})
	if err != nil {
		return err
	}
	defer direct.close()
	contents := b.contents(256)
	var logRates, dirRates, logLat, dirLat, batches []float64
	for run := 0; run <= b.plan.runs; run++ {
		t0 := time.Now()
		cnt, lat, lfail, err := viaLog.window(ctx, b.plan.clusterWindow, b.plan.clusterWindow, contents)
		if err != nil {
			return fmt.Errorf("through the log: %w", err)
		}
		d := b.plan.clusterWindow
		host := rig.tracer.last()
		for i, a := range rig.appliers {
			if a.addr == host && run > 0 {
				recs, err := rig.applies(ctx, i, t0)
				if err != nil {
					return err
				}
				for _, x := range recs {
					if x.OK {
						batches = append(batches, float64(x.Last-x.Prev))
					}
				}
			}
		}
		dcnt, dlat, dfail, err := direct.window(ctx, b.plan.clusterWindow, b.plan.clusterWindow, contents)
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		dd := b.plan.clusterWindow
		if run == 0 {
			continue
		}
		r.ClusterFailed, r.SingleFailed = r.ClusterFailed+lfail, r.SingleFailed+dfail
		logRates, dirRates = append(logRates, float64(cnt)/d.Seconds()), append(dirRates, float64(dcnt)/dd.Seconds())
		logLat, dirLat = append(logLat, lat...), append(dirLat, dlat...)
		b.logf("cluster: %d writers, run %d: through the log %.1f appends/s (%d failed), direct %.1f appends/s (%d failed)", n, run,
			logRates[len(logRates)-1], lfail, dirRates[len(dirRates)-1], dfail)
	}
	r.ClusterAPS, r.SingleAPS = median(logRates), median(dirRates)
	r.ClusterP50, r.SingleP50 = time.Duration(percentile(logLat, 50)), time.Duration(percentile(dirLat, 50))
	// The same through the log, every applier on the update path.
	if err := rig.restartAppliers(true); err != nil {
		return err
	}
	var updRates, updLat []float64
	for run := 0; run <= b.plan.runs; run++ {
		cnt, lat, fail, err := viaLog.window(ctx, b.plan.clusterWindow, b.plan.clusterWindow, contents)
		if err != nil {
			return fmt.Errorf("through the log, update path: %w", err)
		}
		if run == 0 {
			continue
		}
		r.ClusterFailed += fail
		updRates, updLat = append(updRates, float64(cnt)/b.plan.clusterWindow.Seconds()), append(updLat, lat...)
		b.logf("cluster: %d writers, run %d: through the log on the update path %.1f appends/s (%d failed)", n, run, updRates[len(updRates)-1], fail)
	}
	r.UpdatesAPS, r.UpdatesP50 = median(updRates), time.Duration(percentile(updLat, 50))
	if err := rig.restartAppliers(false); err != nil {
		return err
	}
	if len(batches) > 0 {
		var sum float64
		for _, x := range batches {
			sum += x
		}
		r.BatchMean = sum / float64(len(batches))
	}
	// The catch-up replays at least plan.catchUpTurns turns: top the log up.
	turns, err := rig.turns(ctx, 0)
	if err != nil {
		return err
	}
	for turns < b.plan.catchUpTurns {
		if _, _, _, err := viaLog.window(ctx, 0, time.Second, contents); err != nil {
			return err
		}
		if turns, err = rig.turns(ctx, 0); err != nil {
			return err
		}
	}
	return nil
}

// turns counts the turns replica i holds once it has applied what this
// process wrote.
func (rig *clusterRig) turns(ctx context.Context, i int) (int, error) {
	q, err := kg.New(kg.Config{Endpoint: rig.fusekis[i].Endpoint, Timeout: time.Minute})
	if err != nil {
		return 0, err
	}
	end, err := rig.endOffset(ctx)
	if err != nil {
		return 0, err
	}
	if err := rig.waitApplied(ctx, i, end-1, time.Minute); err != nil {
		return 0, err
	}
	res, err := q.Select(ctx, qCountTurns)
	if err != nil {
		return 0, err
	}
	return res.Solutions[0].Int("n")
}

// endOffset returns the offset the next record of the topic will get.
func (rig *clusterRig) endOffset(ctx context.Context) (int64, error) {
	ends, err := rig.adm.ListEndOffsets(ctx, rig.topic)
	if err != nil {
		return 0, err
	}
	o, ok := ends.Lookup(rig.topic, 0)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("end offset of %s/0: %v", rig.topic, o.Err)
	}
	return o.Offset, nil
}

// waitApplied waits until applier i has applied offset off.
func (rig *clusterRig) waitApplied(ctx context.Context, i int, off int64, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var p struct{ Position int64 }
		u := fmt.Sprintf("%s/position?atLeast=%d&wait=2s", rig.appliers[i].url(), off)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&p)
			resp.Body.Close()
			if err == nil && p.Position >= off {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("applier %d has not applied offset %d after %v", i, off, within)
		}
		if err := proc.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// How a new replica starts (catchUp).
const (
	fromLog        = iota // empty, applying the whole log
	fromSeed              // cluster.Seed: a Graph Store copy of replica 0's dataset, then the log after it
	fromFiles             // a file copy of a stopped replica's TDB2 database, then the log after it
	fromLogUpdates        // fromLog, the applier on the update path (ApplierConfig.UpdatesOnly)
)

// catchUp starts a new replica (a Fuseki of its own, empty) and an applier
// in this process, and times how long it takes to apply the whole log.
// fromSeed, the replica first copies replica 0's dataset (cluster.Seed)
// and applies only the log after the copy's offset, and the time counts
// the copy. fromFiles, the last replica is stopped (applier and Fuseki),
// its database directory copied and the replica started again; the new
// Fuseki starts on the copy and applies the log after the offset it
// holds, and the time counts the stop, the copy and the new Fuseki's
// start.
func (rig *clusterRig) catchUp(ctx context.Context, cu *catchUp, mode int) error {
	b := rig.b
	end, err := rig.endOffset(ctx)
	if err != nil {
		return err
	}
	data, err := rig.dataDir()
	if err != nil {
		return err
	}
	var t0 time.Time
	var restarted chan error
	if mode == fromFiles {
		if t0, restarted, err = rig.copyReplica(data, cu); err != nil {
			return err
		}
		defer func() {
			if restarted != nil {
				<-restarted
			}
		}()
	}
	srv, err := fusekitest.StartServer(fusekitest.Options{DataDir: data})
	if err != nil {
		return err
	}
	defer srv.Close()
	store, err := kg.New(kg.Config{Endpoint: srv.Endpoint, Timeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	if mode == fromFiles {
		cu.Start = srv.Started
	} else {
		t0 = time.Now()
	}
	base := int64(-1) // the offset the new replica starts after
	if mode == fromFiles {
		if base, err = cluster.StoredOffset(ctx, store, rig.topic); err != nil {
			return err
		}
	}
	if mode == fromSeed {
		from, err := kg.New(kg.Config{Endpoint: rig.fusekis[0].Endpoint, Timeout: 5 * time.Minute})
		if err != nil {
			return err
		}
		if base, err = cluster.Seed(ctx, from, store, rig.topic); err != nil {
			return err
		}
	}
	a, err := cluster.NewApplier(cluster.ApplierConfig{Brokers: rig.env.brokers, Topic: rig.topic, Store: store, UpdatesOnly: mode == fromLogUpdates})
	if err != nil {
		return err
	}
	actx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- a.Run(actx) }()
	var first int64 = -1
	for a.Position() < end-1 {
		if p := a.Position(); first < 0 && p >= 0 {
			first, cu.First = p, time.Since(t0)
		}
		select {
		case err := <-errc:
			stop()
			return fmt.Errorf("the new replica's applier stopped: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cu.D = time.Since(t0)
	if first < 0 { // the whole log came in the first batch
		first, cu.First = end-1, cu.D
	}
	stop()
	<-errc
	res, err := store.Select(ctx, qCountTurns)
	if err != nil {
		return err
	}
	cu.Records, cu.FirstRecords = end-1-base, first-base
	if cu.Turns, err = res.Solutions[0].Int("n"); err != nil {
		return err
	}
	how := [...]string{"catch-up", "catch-up from a copy", "catch-up from a file copy", "catch-up on the update path"}[mode]
	if mode == fromFiles {
		err, restarted = <-restarted, nil
		if err != nil {
			return fmt.Errorf("restart the replica copied: %w", err)
		}
		d := len(rig.fusekis) - 1
		if err := rig.waitApplied(ctx, d, end-1, 5*time.Minute); err != nil {
			return err
		}
		b.logf("cluster: %s: replica %d stopped and its database copied in %.2f s; the new Fuseki started on the copy in %.2f s",
			how, d, cu.Copy.Seconds(), cu.Start.Seconds())
	}
	b.logf("cluster: %s: %s records (%s turns) in %.2f s: %.0f records/s, %.0f turns/s; the first batch (%d records) after %.2f s, %.0f records/s after it",
		how, thousands(int(cu.Records)), thousands(cu.Turns), cu.D.Seconds(), cu.recordsPerSec(), cu.turnsPerSec(),
		cu.FirstRecords, cu.First.Seconds(), cu.steadyPerSec())
	return nil
}

// copyReplica stops the rig's last replica (its applier, then its
// Fuseki, so that TDB2 closes its database), copies its database
// directory into data, and starts the replica again in the background
// (restarted says how that went). It returns when the stop began.
func (rig *clusterRig) copyReplica(data string, cu *catchUp) (time.Time, chan error, error) {
	exe, err := os.Executable()
	if err != nil {
		return time.Time{}, nil, err
	}
	d := len(rig.fusekis) - 1
	t0 := time.Now()
	rig.appliers[d].kill()
	if err := rig.fusekis[d].Stop(); err != nil {
		return t0, nil, fmt.Errorf("stop replica %d: %w", d, err)
	}
	if err := rig.fusekis[d].CopyData(data); err != nil {
		return t0, nil, fmt.Errorf("copy replica %d: %w", d, err)
	}
	cu.Copy = time.Since(t0)
	restarted := make(chan error, 1)
	go func() {
		if err := rig.fusekis[d].Start(); err != nil {
			restarted <- err
			return
		}
		restarted <- rig.appliers[d].start(exe)
	}()
	return t0, restarted, nil
}

// failovers kills, plan.failoverRuns times each, the applier of the
// replica the writers used last, that replica's Fuseki, and the leader of
// the log's partition, while plan.failoverWriters writers append, and
// times how long until an append begun after the kill is acknowledged.
func (rig *clusterRig) failovers(ctx context.Context, r *clusterResult) error {
	b := rig.b
	pool, err := rig.newPool(ctx, b.plan.failoverWriters, func() (session.Querier, func(), error) {
		c, err := rig.client()
		if err != nil {
			return nil, nil, err
		}
		return c, c.Close, nil
	})
	if err != nil {
		return err
	}
	defer pool.close()
	contents := make([]string, 256)
	for i := range contents {
		contents[i] = b.gen.turn()
	}
	w := startWriting(ctx, pool, contents)
	defer w.stop()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	kinds := []string{"applier", "fuseki", "broker"}
	for run := range b.plan.failoverRuns {
		for _, kind := range kinds {
			if err := w.steady(ctx, 30*time.Second); err != nil {
				return fmt.Errorf("before %s kill %d: %w", kind, run+1, err)
			}
			f := failover{Kind: kind}
			var restore func() error
			i := rig.lastUsed()
			var kill func() error
			switch kind {
			case "applier":
				f.What = fmt.Sprintf("applier of replica %d (kill -9)", i)
				kill = func() error { rig.appliers[i].kill(); return nil }
				restore = func() error { return rig.appliers[i].start(exe) }
			case "fuseki":
				f.What = fmt.Sprintf("Fuseki of replica %d (kill -9)", i)
				kill = rig.fusekis[i].Kill
				restore = rig.fusekis[i].Start
			case "broker":
				leader, controller, err := rig.leader(ctx)
				if err != nil {
					return err
				}
				f.What = fmt.Sprintf("node %d, the partition's leader (kill -9)", leader)
				if leader == controller {
					f.What = fmt.Sprintf("node %d, the partition's leader and the active controller (kill -9)", leader)
				}
				kill = func() error { return rig.script(ctx, "kill-node", leader) }
				restore = func() error {
					if err := rig.script(ctx, "start-node", leader); err != nil {
						return err
					}
					return rig.settle(ctx)
				}
			}
			t, err := w.trial(ctx, kill)
			if err != nil {
				return fmt.Errorf("%s: %w", f.What, err)
			}
			f.NextAck, f.Longest, f.Errors = t.nextAck, t.longest, t.errors
			b.logf("cluster: killed the %s: next acknowledged append after %v, longest append %v, %d failed", f.What, ms(f.NextAck), ms(f.Longest), f.Errors)
			r.Failovers = append(r.Failovers, f)
			if err := restore(); err != nil {
				return fmt.Errorf("restart after killing the %s: %w", f.What, err)
			}
			if kind != "broker" {
				end, err := rig.endOffset(ctx)
				if err != nil {
					return err
				}
				if err := rig.waitApplied(ctx, i, end-1, 5*time.Minute); err != nil {
					return err
				}
			}
		}
	}
	if err := w.stop(); err != nil {
		r.FailoverErr = append(r.FailoverErr, err.Error())
	}
	return nil
}

// lastUsed returns the replica whose applier answered the writers last.
func (rig *clusterRig) lastUsed() int {
	h := rig.tracer.last()
	for i, a := range rig.appliers {
		if a.addr == h {
			return i
		}
	}
	return 0
}

// leader returns the node that leads the log's partition and the active
// controller (the leader of the KRaft quorum; -1 when not known: a
// Metadata response's controller is any broker under KRaft).
func (rig *clusterRig) leader(ctx context.Context) (int, int, error) {
	md, err := rig.adm.Metadata(ctx, rig.topic)
	if err != nil {
		return 0, 0, err
	}
	p, ok := md.Topics[rig.topic].Partitions[0]
	if !ok || p.Leader < 1 {
		return 0, 0, fmt.Errorf("%s/0 has no leader", rig.topic)
	}
	controller := -1
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	if resp, err := req.RequestWith(ctx, rig.kc); err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
		controller = int(resp.Topics[0].Partitions[0].LeaderID)
	}
	return int(p.Leader), controller, nil
}

// settle waits until the log's partition has all three replicas in sync
// again and has its preferred leader back, so that the next trial does
// not meet the move of leadership that Kafka would otherwise make later
// (auto.leader.rebalance.enable), which stalls writers too.
func (rig *clusterRig) settle(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		md, err := rig.adm.Metadata(ctx, rig.topic)
		if err == nil {
			if p, ok := md.Topics[rig.topic].Partitions[0]; ok && len(p.ISR) == 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/0 has not had 3 replicas in sync for 5 minutes", rig.topic)
		}
		if err := proc.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	_, err := rig.adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{rig.topic: {0: {}}})
	if err != nil {
		return fmt.Errorf("elect the preferred leader of %s/0: %w", rig.topic, err)
	}
	return nil
}

// script runs scripts/cluster CMD N on the Kafka nodes' ports.
func (rig *clusterRig) script(ctx context.Context, cmd string, node int) error {
	c := exec.CommandContext(ctx, rig.env.script, cmd, strconv.Itoa(node), "--port", strconv.Itoa(rig.env.base))
	out, err := c.CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/cluster %s %d: %v: %s", cmd, node, err, strings.TrimSpace(string(out)))
	}
	rig.b.logf("cluster: scripts/cluster %s %d: %s", cmd, node, lastLine(string(out)))
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// writing is a writerPool appending without pause, each acknowledgement
// noted. A writer whose append fails loads its session again and goes on.
type writing struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	n      int // writers
	mu     sync.Mutex
	acks   []wspan // begun, acknowledged
	fails  []wspan
	err    error
}

// wspan is one append of writer w.
type wspan struct {
	span
	w int
}

func startWriting(ctx context.Context, p *writerPool, contents []string) *writing {
	ctx, cancel := context.WithCancel(ctx)
	w := &writing{cancel: cancel, n: len(p.stores)}
	for k := range p.stores {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			st, s := p.stores[k], p.sessions[k]
			for i := 0; ctx.Err() == nil; i++ {
				s.Append(role(len(s.Turns)), contents[(k+i)%len(contents)])
				t0 := time.Now()
				err := st.Persist(ctx, s)
				sp := wspan{span{t0, time.Now()}, k}
				if ctx.Err() != nil {
					return
				}
				w.mu.Lock()
				if err == nil {
					w.acks = append(w.acks, sp)
				} else {
					w.fails = append(w.fails, sp)
				}
				w.mu.Unlock()
				if err != nil {
					// Its value no longer says what is stored: load it
					// again, and go on.
					for ctx.Err() == nil {
						got, lerr := st.Load(ctx, s.ID)
						if lerr == nil {
							s = got
							break
						}
						proc.Sleep(ctx, 200*time.Millisecond)
					}
				}
			}
		}()
	}
	return w
}

func (w *writing) stop() error {
	w.cancel()
	w.wg.Wait()
	return w.err
}

// steady waits until some appends have been acknowledged in the last
// second.
func (w *writing) steady(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if err := proc.Sleep(ctx, time.Second); err != nil {
			return err
		}
		w.mu.Lock()
		n := 0
		for _, a := range w.acks {
			if time.Since(a.end) < time.Second {
				n++
			}
		}
		w.mu.Unlock()
		if n >= 3 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the writers have not had 3 appends acknowledged in a second for %v", within)
		}
	}
}

type trialResult struct {
	nextAck, longest time.Duration
	errors           int
}

// trial kills (with kill, which returns once the process is gone) and
// waits for the first acknowledgement of an append begun after that. The
// kill is timed from kill's return: an append begun while kill runs (a
// script that finds the process first) may be acknowledged before the
// process dies. So the time from the SIGKILL itself is longer by what
// kill takes to see the process gone (milliseconds; up to 100 ms for
// scripts/cluster kill-node, which polls).
func (w *writing) trial(ctx context.Context, kill func() error) (trialResult, error) {
	if err := kill(); err != nil {
		return trialResult{}, err
	}
	t0 := time.Now()
	var r trialResult
	for {
		w.mu.Lock()
		for _, a := range w.acks {
			if !a.start.Before(t0) && (r.nextAck == 0 || a.end.Sub(t0) < r.nextAck) {
				r.nextAck = a.end.Sub(t0)
			}
		}
		w.mu.Unlock()
		if r.nextAck > 0 {
			break
		}
		if time.Since(t0) > failoverGiveUp {
			return r, fmt.Errorf("no append acknowledged within %v of the kill", failoverGiveUp)
		}
		if err := proc.Sleep(ctx, 10*time.Millisecond); err != nil {
			return r, err
		}
	}
	// The appends in flight at the kill: wait until every writer has
	// ended one begun after it, then take the longest.
	for {
		w.mu.Lock()
		done := map[int]bool{}
		for _, a := range append(slices.Clone(w.acks), w.fails...) {
			if !a.start.Before(t0) {
				done[a.w] = true
			}
		}
		w.mu.Unlock()
		if len(done) == w.n {
			break
		}
		if time.Since(t0) > failoverGiveUp {
			return r, fmt.Errorf("%d of %d writers have not ended an append begun within %v of the kill", w.n-len(done), w.n, failoverGiveUp)
		}
		if err := proc.Sleep(ctx, 10*time.Millisecond); err != nil {
			return r, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range append(slices.Clone(w.acks), w.fails...) {
		if a.end.After(t0) {
			r.longest = max(r.longest, a.end.Sub(a.start))
		}
	}
	for _, f := range w.fails {
		if f.end.After(t0) {
			r.errors++
		}
	}
	return r, nil
}

// judge returns the cluster targets.
func (c *clusterResult) judge() []target {
	rp := ratio(float64(c.LogP50), float64(c.DirectP50))
	worst := func(kinds ...string) (time.Duration, string) {
		var d time.Duration
		var parts []string
		for _, f := range c.Failovers {
			if slices.Contains(kinds, f.Kind) {
				d = max(d, f.NextAck)
				parts = append(parts, fmt.Sprintf("%s %.2f s", f.Kind, f.NextAck.Seconds()))
			}
		}
		return d, strings.Join(parts, ", ")
	}
	rd, rs := worst("applier", "fuseki")
	bd, bs := worst("broker")
	return []target{
		{tClusterP50, fmt.Sprintf("through the log p50 %s ms (p99 %s), direct p50 %s ms (p99 %s): %s",
			msf(c.LogP50), msf(c.LogP99), msf(c.DirectP50), msf(c.DirectP99), x(rp)), c.DirectP50 > 0 && rp <= clusterP50Ratio},
		{tClusterWriters, fmt.Sprintf("%d writers: through the log %.1f appends/s, one Fuseki %.1f appends/s: %s",
			c.Writers, c.ClusterAPS, c.SingleAPS, x(ratio(c.ClusterAPS, c.SingleAPS))), c.SingleAPS > 0 && c.ClusterAPS >= c.SingleAPS},
		{tClusterDecided, fmt.Sprintf("%d writers through the log: decided path %.1f appends/s (p50 %s ms), update path %.1f appends/s (p50 %s ms): %s%s",
			c.Writers, c.ClusterAPS, msf(c.ClusterP50), c.UpdatesAPS, msf(c.UpdatesP50), x(ratio(c.ClusterAPS, c.UpdatesAPS)), c.floorText()),
			c.decidedMeets()},
		{tClusterReplay, fmt.Sprintf("replaying %s records from empty: decided path %.2f s, %.0f records/s; update path %.2f s, %.0f records/s: %s",
			thousands(int(c.CatchUp.Records)), c.CatchUp.D.Seconds(), c.CatchUp.recordsPerSec(), c.CatchUpUpdates.D.Seconds(), c.CatchUpUpdates.recordsPerSec(),
			x(ratio(c.CatchUp.recordsPerSec(), c.CatchUpUpdates.recordsPerSec()))),
			c.CatchUpUpdates.Records > 0 && c.CatchUp.recordsPerSec() >= decidedReplay*c.CatchUpUpdates.recordsPerSec()},
		{tClusterCatchUp, fmt.Sprintf("replaying the log from empty: %s records, %s turns in %.2f s, %.0f turns/s; from a copy of a replica (cluster.Seed) and the log after it: %s turns in %.2f s, %.0f turns/s; from a file copy of a stopped replica's database: %s turns in %.2f s, %.0f turns/s",
			thousands(int(c.CatchUp.Records)), thousands(c.CatchUp.Turns), c.CatchUp.D.Seconds(), c.CatchUp.turnsPerSec(),
			thousands(c.Seeded.Turns), c.Seeded.D.Seconds(), c.Seeded.turnsPerSec(),
			thousands(c.Copied.Turns), c.Copied.D.Seconds(), c.Copied.turnsPerSec()),
			c.CatchUp.meets() || c.Seeded.meets() || c.Copied.meets()},
		{tClusterReplica, "kill → next acknowledged append, each trial (the longest judged): " + rs, rs != "" && rd <= clusterFailover},
		{tClusterBroker, "kill → next acknowledged append, each trial (the longest judged): " + bs, bs != "" && bd <= clusterFailover},
	}
}

// markdown writes section 10.
func (c *clusterResult) markdown(w io.Writer) {
	fmt.Fprintf(w, "## 10. Cluster (issue 23)\n\n")
	fmt.Fprintf(w, "Trails through the replicated log: Kafka nodes of `scripts/cluster` (%s), a topic of the run's own "+
		"(1 partition, replication factor 3, min.insync.replicas 2, acks=all), %d replicas, each a Fuseki started like the direct one "+
		"(its TDB2 database in $TMPDIR too) "+
		"with its applier (`cluster.Applier`, as `cmd/trails-replica` runs it, in a child process). "+
		"**Direct** is the Fuseki trails-bench starts itself, the same jar and configuration.\n\n", strings.Join(c.Brokers, ", "), c.Replicas)
	fmt.Fprintf(w, "**Single-turn appends.** `Persist` of one new turn, through a `cluster.Client` and to the direct Fuseki, "+
		"alternating call by call; percentiles over every measured call.\n\n")
	rp := ratio(float64(c.LogP50), float64(c.DirectP50))
	table(w, []string{"appends", "log p50 ms", "log p99 ms", "direct p50 ms", "direct p99 ms", "log / direct p50", tClusterP50},
		[][]string{{thousands(c.Appends), msf(c.LogP50), msf(c.LogP99), msf(c.DirectP50), msf(c.DirectP99), x(rp),
			verdict(c.DirectP50 > 0 && rp <= clusterP50Ratio)}})
	fmt.Fprintf(w, "Where an append through the log spends its time, over the %d appends whose phases could all be timed "+
		"(timestamps of the writer's update, of its requests to the appliers for the outcome, and of the applier's request "+
		"to its Fuseki, all on this machine's clock; a phase's p50s do not add up to the total's):\n\n", c.Traced)
	var rows [][]string
	for _, p := range c.Phases {
		rows = append(rows, []string{p.Name, msf(p.P50), msf(p.P99)})
	}
	table(w, []string{"phase", "p50 ms", "p99 ms"}, rows)
	fmt.Fprintf(w, "**%d writers.** %d agents, each with a Store and a client of its own and a session of its own, appending "+
		"one turn per `Persist` without pause for %v per run (counting the appends acknowledged after a first %v), "+
		"through the log and to the direct Fuseki, alternating run by run; "+
		"the median of %d runs after a warm-up run (appends that failed: %d through the log, %d direct; a writer whose append fails "+
		"loads its session again and goes on). Through the log, the replica's apply requests held %.1f records on average.\n\n",
		c.Writers, c.Writers, 2*c.Window, c.Window, c.WriterRuns, c.ClusterFailed, c.SingleFailed, c.BatchMean)
	table(w, []string{"writers", "log appends/s", "log p50 ms", "one Fuseki appends/s", "one Fuseki p50 ms", "log / one", tClusterWriters},
		[][]string{{fmt.Sprint(c.Writers), fmt.Sprintf("%.1f", c.ClusterAPS), msf(c.ClusterP50), fmt.Sprintf("%.1f", c.SingleAPS), msf(c.SingleP50),
			x(ratio(c.ClusterAPS, c.SingleAPS)), verdict(c.SingleAPS > 0 && c.ClusterAPS >= c.SingleAPS)}})
	fmt.Fprintf(w, "**The decided path against the update path.** The appliers above send each run of appends as one conditional patch to their "+
		"Fuseki (each append's condition an ASK evaluated in the write transaction, its data applied as RDF Patch: the default, docs/scale-out.md); then every applier is restarted with `-updates-only` (each record applied as its "+
		"SPARQL Update, as before issue 39) and the %d writers run again through the log, %d runs after a warm-up, the median judged.\n\n",
		c.Writers, c.WriterRuns)
	fmt.Fprintf(w, "**The replicas' floor** for those appends, measured after the rest of the scenario (so that no new replica copies its data): "+
		"their data as raw RDF Patch (each append's patch as the decided path applies it, captured from a Store's appends to the direct Fuseki, "+
		"%.1f quads added an append, each copy under a session id of its own), %d appends a request (as many as the replica's apply requests held under the writers), "+
		"to the fenced-patch endpoint of both replicas at once, each a request after the other as its applier sends them: "+
		"no conditions, no log, no outcomes, what the replicas' store alone costs; the slower replica's rate, the median of %d runs. "+
		"When %.1f× the update path lies above it, the target is beyond what the replicas can ingest and is judged as ≥ %.0f%% of the floor (as direct mode's writers are against theirs).\n\n",
		c.FloorQuads, c.FloorPer, c.WriterRuns, decidedWriters, 100*decidedFloorShare)
	table(w, []string{"writers", "decided path appends/s", "p50 ms", "update path appends/s", "p50 ms", "decided / update", "replicas' patch floor appends/s", "decided / floor", tClusterDecided},
		[][]string{{fmt.Sprint(c.Writers), fmt.Sprintf("%.1f", c.ClusterAPS), msf(c.ClusterP50), fmt.Sprintf("%.1f", c.UpdatesAPS), msf(c.UpdatesP50),
			x(ratio(c.ClusterAPS, c.UpdatesAPS)), fmt.Sprintf("%.1f", c.FloorAPS), share(ratio(c.ClusterAPS, c.FloorAPS)), verdict(c.decidedMeets())}})
	fmt.Fprintf(w, "**A new replica.** A new Fuseki (empty, its JVM cold) and an applier apply the whole log written above "+
		"(mostly single-turn appends, one record each), from the applier's start until it has applied the last record, "+
		"first with the applier on the update path, then on the decided path (%s: %s); "+
		"the first batch shows what starting costs (the applier reads its offset, joins the log, and the new JVM answers its first requests). "+
		"**From a copy**: the same, but the new replica first copies replica 0's dataset (`cluster.Seed`, as `trails-replica -from` does: "+
		"one Graph Store GET, one POST) and applies the log after the copy's offset (its records are those); its time counts the copy, "+
		"and its turns/s are the turns it holds once caught up over that time. "+
		"**From a file copy**: the last replica is stopped (its applier killed, its Fuseki stopped with SIGTERM so that TDB2 closes the database), "+
		"its database directory is copied file by file (`fusekitest.Server.CopyData`; an operator's `cp -a`) and the replica is started again; "+
		"a new Fuseki starts on the copy and its applier applies the log after the offset the copy holds. Its time counts the stop and the copy "+
		"(%.2f s, the donor is down for it), the new Fuseki's start on the copy (%.2f s; the two other ways start theirs before their time begins) "+
		"and the log after the copy; the donor's restart runs beside it on this machine's two cores.\n\n",
		tClusterReplay, x(ratio(c.CatchUp.recordsPerSec(), c.CatchUpUpdates.recordsPerSec())), c.Copied.Copy.Seconds(), c.Copied.Start.Seconds())
	rows = nil
	for _, k := range []struct {
		how string
		cu  catchUp
	}{{"replaying the log from empty, update path", c.CatchUpUpdates}, {"replaying the log from empty", c.CatchUp}, {"from a copy of a replica", c.Seeded}, {"from a file copy of a stopped replica", c.Copied}} {
		cu := k.cu
		rows = append(rows, []string{k.how, thousands(int(cu.Records)), thousands(cu.Turns), fmt.Sprintf("%.2f", cu.D.Seconds()), fmt.Sprintf("%.0f", cu.recordsPerSec()),
			fmt.Sprintf("%.0f", cu.turnsPerSec()), fmt.Sprintf("%.2f", cu.First.Seconds()), fmt.Sprintf("%.0f", cu.steadyPerSec()),
			verdict(cu.meets())})
	}
	table(w, []string{"new replica", "records", "turns", "seconds", "records/s", "turns/s", "first batch s", "records/s after it", tClusterCatchUp}, rows)
	fmt.Fprintf(w, "**Failover.** Writers append without pause, each through a `cluster.Client` of its own; one process is killed "+
		"(SIGKILL): the applier of the replica whose applier answered the writers last, then that replica's Fuseki, then the "+
		"leader of the log's partition (`scripts/cluster kill-node`); each is started again after its trial "+
		"(a broker: then the run waits for the full ISR and elects the preferred leader). "+
		"**Next ack** is from the kill (when the killing call returned, the process gone) to the acknowledgement of the first append "+
		"begun after it; **longest** is the longest append that ended after the kill.\n\n")
	rows = nil
	for _, f := range c.Failovers {
		col := []string{"—", "—"}
		if f.Kind == "broker" {
			col[1] = verdict(f.NextAck <= clusterFailover)
		} else {
			col[0] = verdict(f.NextAck <= clusterFailover)
		}
		rows = append(rows, append([]string{f.What, fmt.Sprintf("%.2f", f.NextAck.Seconds()), fmt.Sprintf("%.2f", f.Longest.Seconds()), fmt.Sprint(f.Errors)}, col...))
	}
	table(w, []string{"killed", "next ack s", "longest s", "failed appends", tClusterReplica, tClusterBroker}, rows)
}

// applierChild is the applier as a child process (applierChildFlag): what
// cmd/trails-replica runs, plus the times of its apply requests served at
// /bench/applies. It prints its HTTP address on stdout once it listens.
func applierChild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(applierChildFlag, flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "", "")
	topic := fs.String("topic", cluster.DefaultTopic, "")
	dataset := fs.String("dataset", "", "")
	listen := fs.String("listen", "127.0.0.1:0", "")
	updatesOnly := fs.Bool("updates-only", false, "")
	if err := fs.Parse(args); err != nil {
		return exit.Usagef("%s: %v", applierChildFlag, err)
	}
	if *brokers == "" || *dataset == "" {
		return exit.Usagef("%s -brokers HOST:PORT,... -dataset URL [-topic NAME] [-listen ADDR]", applierChildFlag)
	}
	tr := &applyTracer{next: http.DefaultTransport}
	store, err := kg.New(kg.Config{Endpoint: *dataset, Timeout: 5 * time.Minute, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		return err
	}
	logger := log.New(stderr, "", log.LstdFlags|log.LUTC|log.Lmicroseconds)
	a, err := cluster.NewApplier(cluster.ApplierConfig{Brokers: strings.Split(*brokers, ","), Topic: *topic, Store: store, Logf: logger.Printf, UpdatesOnly: *updatesOnly})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/bench/applies", tr)
	mux.Handle("/", a)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintln(stdout, ln.Addr())
	err = a.Run(ctx)
	srv.Close()
	return err
}

// applyTracer is the applier child's http.RoundTripper to its Fuseki: it
// notes each update's offsets (from the position guard and the offset it
// moves to) and times. It is safe for concurrent use.
type applyTracer struct {
	next http.RoundTripper
	mu   sync.Mutex
	recs []applyRec
}

// offsetLit finds the applied offsets an apply request names: the one it
// expects (absent for none) and the one it moves to.
var offsetLit = regexp.MustCompile(`appliedOffset> "(-?\d+)"`)

// applyOffsets reads the offsets an apply request's first operation (the
// applier's guard) names: DELETE {prev} INSERT {last} WHERE {prev}, or
// INSERT {last} alone for the first request on an empty dataset. Either is
// -1 when the request does not name it.
func applyOffsets(body []byte) (prev, last int64) {
	prev, last = -1, -1
	switch ms := offsetLit.FindAllSubmatch(body, 3); len(ms) {
	case 1:
		last, _ = strconv.ParseInt(string(ms[0][1]), 10, 64)
	case 3:
		prev, _ = strconv.ParseInt(string(ms[0][1]), 10, 64)
		last, _ = strconv.ParseInt(string(ms[1][1]), 10, 64)
	}
	return prev, last
}

// conditionalOffsets reads the offsets a conditional patch (the decided
// path's request) covered: from its query's offset, as many records as
// its answer's Trails-Applied header counts (none when it is not a
// count).
func conditionalOffsets(query url.Values, applied string) (prev, last int64) {
	prev, err := strconv.ParseInt(query.Get("offset"), 10, 64)
	if err != nil {
		return -1, -1
	}
	n, err := strconv.ParseInt(applied, 10, 64)
	if err != nil {
		return prev, prev
	}
	return prev, prev + n
}

func (t *applyTracer) RoundTrip(r *http.Request) (*http.Response, error) {
	ct := r.Header.Get("Content-Type")
	conditional := strings.Contains(ct, "conditional-patch")
	if r.Method != http.MethodPost || r.Body == nil || !strings.Contains(ct, "sparql-update") && !conditional {
		return t.next.RoundTrip(r)
	}
	rec := applyRec{Prev: -1, Last: -1, Start: time.Now()}
	if !conditional {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec.Prev, rec.Last = applyOffsets(body)
	}
	resp, err := t.next.RoundTrip(r)
	rec.End = time.Now()
	rec.OK = err == nil && resp.StatusCode/100 == 2
	if conditional && rec.OK {
		rec.Prev, rec.Last = conditionalOffsets(r.URL.Query(), resp.Header.Get("Trails-Applied"))
	}
	t.mu.Lock()
	if len(t.recs) >= 1<<20 {
		t.recs = t.recs[len(t.recs)/2:]
	}
	t.recs = append(t.recs, rec)
	t.mu.Unlock()
	return resp, err
}

func (t *applyTracer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	since, _ := time.Parse(time.RFC3339Nano, r.URL.Query().Get("since"))
	t.mu.Lock()
	var out []applyRec
	for _, x := range t.recs {
		if !x.Start.Before(since) {
			out = append(out, x)
		}
	}
	t.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil && !errors.Is(err, http.ErrHandlerTimeout) {
		return
	}
}
