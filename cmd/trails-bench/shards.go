package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/knakk/rdf"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// Scenario 12, -only shards: the capacity of replica groups sharded by
// session tree (issue 38). A machine of two cores cannot host four
// groups, so each group gets a machine of its own in miniature: its
// Fuseki's JVM and its applier run in a cgroup v1 CPU cgroup capped to
// the same quota. The run starts one Kafka broker of its own (shared by
// the groups, uncapped, like the writers), and for N groups a topic, a
// Fuseki replica and an applier per group, plus an audit replica (one
// Fuseki, an applier per group) that the consistency check compares each
// group's replica with. 64 writers on 64 trees append through
// cluster.Sharded.

// The shards targets' column headings.
const (
	tShards2    = "shards: capped, 2 groups ≥ 1.8× 1 group"
	tShards4    = "shards: capped, 4 groups ≥ 3.4× 1 group"
	tShardsLost = "shards: 0 acknowledged appends lost"
	tShardsSame = "shards: replicas identical"
)

// The targets, the cap and where the cgroups go.
const (
	shardsScale2   = 1.8
	shardsScale4   = 3.4
	cgroupPeriodUs = 100000
	// defaultGroupQuotaUs is each group's cap unless -shard-cores says
	// otherwise: 0.25 of a core, so that four groups (1 core) leave the
	// broker, 64 writers and the audit replica a core of this 2-core
	// machine. At 0.35 four groups and the rest filled both cores and the
	// groups' caps stopped binding (throttled in 60-69% of periods).
	defaultGroupQuotaUs = 25000
	// auditQuotaUs holds the audit replica (its Fuseki and appliers)
	// back while the writers are timed, so that it does not eat the
	// cores the groups and Kafka share; it is lifted for the checks,
	// when it catches up.
	auditQuotaUs = 5000
)

// cgroupCPU is where the cgroup v1 cpu controller is mounted (a variable
// for the test of a machine without one).
var cgroupCPU = "/sys/fs/cgroup/cpu"

// shardsColumns lists the shards targets, in report order.
var shardsColumns = []string{tShards2, tShards4, tShardsLost, tShardsSame}

// shardsResult is scenario 12.
type shardsResult struct {
	Broker  string        `json:"broker"`
	Writers int           `json:"writers"`
	Cores   float64       `json:"cores_per_group"` // the cap of each group's cgroup
	Audit   float64       `json:"audit_cores"`     // the audit replica's cap while timed
	Warm    time.Duration `json:"warm_ns"`         // before each configuration's windows
	JIT     int           `json:"jit_appends"`     // appends each group applied uncapped before its cluster was measured
	Window  time.Duration `json:"window_ns"`
	Windows int           `json:"windows"` // per configuration; its rate is their median
	Runs    []shardsRun   `json:"runs"`
	Checks  []shardsCheck `json:"checks"` // one per cluster (N)
}

// shardsRun is one configuration: N groups, capped or not.
type shardsRun struct {
	Groups   int           `json:"groups"`
	Capped   bool          `json:"capped"`
	APS      float64       `json:"appends_per_s"` // the median window's
	Rates    []float64     `json:"window_rates"`
	Appends  int           `json:"appends"` // acknowledged within the windows
	Failed   int           `json:"failed"`
	P50      time.Duration `json:"p50_ns"`
	P99      time.Duration `json:"p99_ns"`
	PerGroup []float64     `json:"per_group_appends_per_s"` // over all the windows
	Trees    []int         `json:"trees_per_group"`
	// Throttled is, per group, the share of the cgroup's CPU periods in
	// which it used up its quota, over the windows: near 0 means the cap
	// did not bind.
	Throttled []float64 `json:"throttled"`
	// CPU is, per group, the cores its cgroup used over the windows.
	CPU []float64 `json:"cpu_cores"`
	// What the rest of the machine used over the windows, in cores: the
	// Kafka broker, this process (the writers) and the audit replica.
	KafkaCPU   float64 `json:"kafka_cores"`
	WritersCPU float64 `json:"writers_cores"`
	AuditCPU   float64 `json:"audit_cores"`
}

// shardsCheck is the consistency check of one cluster after its runs.
type shardsCheck struct {
	Groups    int           `json:"groups"`
	Acked     int           `json:"acked"`
	Lost      int           `json:"lost"`
	Graphs    int           `json:"session_graphs"`
	Quads     int           `json:"quads"` // in the audit replica, offsets left out
	Identical bool          `json:"identical"`
	Diff      string        `json:"diff,omitempty"`
	Quiesce   time.Duration `json:"quiesce_ns"` // from lifting the caps until every replica had applied every log
}

// rate returns the capped rate at n groups, 0 if not measured.
func (s *shardsResult) rate(n int, capped bool) float64 {
	for _, r := range s.Runs {
		if r.Groups == n && r.Capped == capped {
			return r.APS
		}
	}
	return 0
}

// shards runs scenario 12.
func (b *bench) shards(ctx context.Context) (_ *shardsResult, err error) {
	if err := checkCgroups(); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(fusekitest.ScratchDir(), "trails-bench-shards-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err == nil {
			os.RemoveAll(scratch) // logs: kept when the scenario fails
		}
	}()
	br, err := startBroker(ctx, scratch)
	if err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	defer br.stop()
	b.logf("shards: Kafka broker at %s up in %.1f s (log %s)", br.addr, br.started.Seconds(), br.log)
	p := b.plan
	r := &shardsResult{Broker: br.addr, Writers: p.shardWriters, Cores: float64(p.shardQuotaUs) / cgroupPeriodUs,
		Audit: float64(auditQuotaUs) / cgroupPeriodUs, Warm: p.shardWarm, JIT: p.shardJIT, Window: p.shardWindow, Windows: p.shardWindows}
	for _, n := range p.shardGroups {
		if err := b.shardsAt(ctx, r, br, scratch, n, slices.Contains(p.shardUncapped, n)); err != nil {
			return nil, fmt.Errorf("shards: %d groups: %w", n, err)
		}
	}
	return r, nil
}

// shardsAt starts a cluster of n groups, measures it capped (and uncapped
// too when uncapped), and checks it.
func (b *bench) shardsAt(ctx context.Context, r *shardsResult, br *broker, scratch string, n int, uncapped bool) (err error) {
	rig := &shardRig{b: b, broker: br, n: n, tag: fmt.Sprintf("trails-bench-shards-%d-n%d", time.Now().UnixNano(), n)}
	defer func() {
		if cerr := rig.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := rig.start(ctx, scratch); err != nil {
		return err
	}
	ws, err := rig.newWriters(ctx, b.plan.shardWriters)
	if err != nil {
		return err
	}
	defer func() {
		for _, w := range ws {
			w.sh.Close()
		}
	}()
	contents := make([]string, 256)
	for i := range contents {
		contents[i] = b.gen.turn()
	}
	// A cold JVM capped to a third of a core would spend the warm-up
	// compiling: warm every group up uncapped first, until each has
	// applied as many appends as the others (shardJIT), however many
	// groups share the writers. A fixed time gave each of 4 groups a
	// quarter of one group's appends, and their capped rates then rose
	// window by window (104, 121, 136 appends/s) as their JVMs compiled.
	if err := rig.warmUp(ctx, ws, contents, b.plan.shardWarm, b.plan.shardJIT); err != nil {
		return err
	}
	capped, err := rig.run(ctx, ws, contents, true, b.plan.shardWarm, b.plan.shardWindow, b.plan.shardWindows)
	if err != nil {
		return err
	}
	r.Runs = append(r.Runs, capped)
	if uncapped {
		u, err := rig.run(ctx, ws, contents, false, b.plan.shardWarm, b.plan.shardWindow, b.plan.shardWindows)
		if err != nil {
			return err
		}
		r.Runs = append(r.Runs, u)
	}
	c, err := rig.check(ctx, ws)
	if err != nil {
		return err
	}
	r.Checks = append(r.Checks, c)
	return nil
}

// checkCgroups makes and removes a probe cgroup: the scenario needs to
// cap each group's processes and never runs uncapped instead.
func checkCgroups() error {
	g, err := newCPUGroup(fmt.Sprintf("trails-bench-probe-%d", os.Getpid()))
	if err != nil {
		return err
	}
	return g.remove()
}

// cpuGroup is a cgroup v1 CPU cgroup of the run's own.
type cpuGroup struct {
	dir         string
	lastPeriods int64
	lastThrottl int64
	lastUsage   time.Time
	lastUsageNs int64
}

// newCPUGroup makes cgroup name under cgroupCPU, unlimited. It fails,
// saying what it needs, when it cannot: not root, or no cgroup v1 CPU
// controller.
func newCPUGroup(name string) (*cpuGroup, error) {
	need := func(err error) error {
		return fmt.Errorf("shards: each replica group runs in a cgroup v1 CPU cgroup capped to a share of a core, made under %s, which needs root and the cgroup v1 cpu controller mounted there (euid %d): %w; the scenario never runs uncapped instead",
			cgroupCPU, os.Geteuid(), err)
	}
	if _, err := os.Stat(filepath.Join(cgroupCPU, "cpu.cfs_quota_us")); err != nil {
		return nil, need(err)
	}
	dir := filepath.Join(cgroupCPU, name)
	if err := os.Mkdir(dir, 0o755); errors.Is(err, os.ErrExist) {
		// Left by a run that was killed: take it over if it is empty.
		if err := os.Remove(dir); err != nil {
			return nil, fmt.Errorf("shards: cgroup %s exists and holds processes (another trails-bench -only shards running?): %w", dir, err)
		}
		err = os.Mkdir(dir, 0o755)
		if err != nil {
			return nil, need(err)
		}
	} else if err != nil {
		return nil, need(err)
	}
	g := &cpuGroup{dir: dir}
	if err := g.cap(-1); err != nil {
		os.Remove(dir)
		return nil, need(err)
	}
	return g, nil
}

// cap sets the group's quota to quotaUs per period (-1: unlimited).
func (g *cpuGroup) cap(quotaUs int) error {
	if err := os.WriteFile(filepath.Join(g.dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(cgroupPeriodUs)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(g.dir, "cpu.cfs_quota_us"), []byte(strconv.Itoa(quotaUs)), 0o644)
}

// add moves process pid, all its threads, into the group.
func (g *cpuGroup) add(pid int) error {
	if err := os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("shards: move pid %d into %s: %w", pid, g.dir, err)
	}
	return nil
}

// stat reads a cpu.stat field.
func (g *cpuGroup) stat(field string) int64 {
	b, _ := os.ReadFile(filepath.Join(g.dir, "cpu.stat"))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// usageNs is the CPU time the group's processes have used.
func (g *cpuGroup) usageNs() int64 {
	b, _ := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	var sum int64
	for _, pid := range strings.Fields(string(b)) {
		sum += cpuNs(pid)
	}
	return sum
}

// cpuNs is the CPU time process pid ("self" for this one) has used: utime
// and stime of /proc/PID/stat, which count the threads that ended too.
func cpuNs(pid string) int64 {
	st, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th of them.
	f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return (u + s) * int64(time.Second) / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on
// Linux).
const clockTicks = 100

// mark starts a measurement of throttling and CPU use.
func (g *cpuGroup) mark() {
	g.lastPeriods, g.lastThrottl = g.stat("nr_periods"), g.stat("nr_throttled")
	g.lastUsage, g.lastUsageNs = time.Now(), g.usageNs()
}

// since returns the share of periods throttled and the cores used since
// mark.
func (g *cpuGroup) since() (throttled, cores float64) {
	p, t := g.stat("nr_periods")-g.lastPeriods, g.stat("nr_throttled")-g.lastThrottl
	d := time.Since(g.lastUsage)
	return ratio(float64(t), float64(p)), ratio(float64(g.usageNs()-g.lastUsageNs), float64(d))
}

// remove moves what still runs in the group back to the root cgroup and
// removes the group.
func (g *cpuGroup) remove() error {
	var err error
	for try := 0; try < 50; try++ {
		b, _ := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
		for _, pid := range strings.Fields(string(b)) {
			os.WriteFile(filepath.Join(cgroupCPU, "cgroup.procs"), []byte(pid), 0o644)
		}
		if err = os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("shards: remove cgroup %s: %w", g.dir, err)
}

// javaPID finds the pid of a Fuseki that fusekitest started: the java
// process whose arguments name its rendered configuration.
func javaPID(srv *fusekitest.Server) (int, error) {
	want := "--config=" + filepath.Join(filepath.Dir(srv.Log), "config.ttl")
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(b), "\x00"), want) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process runs the Fuseki of %s (%s)", srv.Endpoint, want)
}

// broker is a one-node Kafka (broker and controller, KRaft) of the run's
// own, with the settings of scripts/kafka/server.properties made for one
// node (replication factor 1).
type broker struct {
	dir     string
	addr    string
	log     string
	started time.Duration
	cmd     *exec.Cmd
	done    chan struct{}
}

// oneNode overrides scripts/kafka/server.properties for a single node.
const oneNode = `
# trails-bench -only shards: one node.
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
`

// startBroker formats and starts the broker in scratch and waits until it
// answers.
func startBroker(ctx context.Context, scratch string) (*broker, error) {
	t0 := time.Now()
	root, err := fusekitest.RepoRoot()
	if err != nil {
		return nil, err
	}
	var errb bytes.Buffer
	cpCmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "cluster"), "classpath")
	cpCmd.Stderr = &errb
	out, err := cpCmd.Output()
	if err != nil {
		return nil, fmt.Errorf("Kafka's classpath (scripts/cluster classpath; needs java and mvn): %w: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	cp := strings.TrimSpace(lines[len(lines)-1])
	tmpl, err := os.ReadFile(filepath.Join(root, "scripts", "kafka", "server.properties"))
	if err != nil {
		return nil, err
	}
	ports := make([]int, 2)
	var probes []net.Listener
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		probes = append(probes, l) // held open until both are picked: two distinct ports
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range probes {
		l.Close()
	}
	br := &broker{dir: filepath.Join(scratch, "kafka"), addr: "127.0.0.1:" + strconv.Itoa(ports[0]), log: filepath.Join(scratch, "kafka.log")}
	conf := string(tmpl)
	for k, v := range map[string]string{
		"NODE_ID": "1", "VOTERS": "1@127.0.0.1:" + strconv.Itoa(ports[1]),
		"BROKER_PORT": strconv.Itoa(ports[0]), "CONTROLLER_PORT": strconv.Itoa(ports[1]), "LOG_DIR": filepath.Join(br.dir, "data"),
	} {
		conf = strings.ReplaceAll(conf, "@"+k+"@", v)
	}
	if err := os.MkdirAll(br.dir, 0o755); err != nil {
		return nil, err
	}
	props := filepath.Join(br.dir, "server.properties")
	if err := os.WriteFile(props, []byte(conf+oneNode), 0o644); err != nil {
		return nil, err
	}
	var id [16]byte
	rand.Read(id[:])
	cid := base64.RawURLEncoding.EncodeToString(id[:])
	cid = "A" + cid[1:] // a Kafka Uuid never starts with "-"
	log4j := "-Dlog4j2.configurationFile=" + filepath.Join(root, "scripts", "kafka", "log4j2.properties")
	if out, err := exec.CommandContext(ctx, "java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", log4j, "-Dtrails.kafka.loglevel=WARN",
		"-cp", cp, "kafka.tools.StorageTool", "format", "-t", cid, "-c", props).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("format the broker's storage: %v: %s", err, bytes.TrimSpace(out))
	}
	lf, err := os.OpenFile(br.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	cmd := exec.Command("java", "-Xms64m", "-Xmx512m", log4j, "-Dtrails.kafka.loglevel=INFO", "-cp", cp, "kafka.Kafka", props)
	cmd.Dir, cmd.Stdout, cmd.Stderr = br.dir, lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := fusekitest.Spawn(cmd); err != nil { // Pdeathsig: the broker dies with this process
		return nil, fmt.Errorf("start the broker: %w", err)
	}
	br.cmd, br.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(br.done) }()
	kc, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.DialTimeout(2*time.Second))
	if err != nil {
		br.stop()
		return nil, err
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		select {
		case <-br.done:
			br.stop()
			return nil, fmt.Errorf("the broker exited (its log: %s)", br.log)
		default:
		}
		bs, err := adm.ListBrokers(ctx)
		if err == nil && len(bs) == 1 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			br.stop()
			return nil, fmt.Errorf("the broker did not answer within 3 minutes (its log: %s): %v", br.log, cmp.Or(err, ctx.Err()))
		}
		time.Sleep(250 * time.Millisecond)
	}
	br.started = time.Since(t0)
	return br, nil
}

// stop stops the broker (SIGTERM, SIGKILL after 20 s) and removes its data.
func (br *broker) stop() {
	if br.cmd != nil && br.cmd.Process != nil {
		proc.Stop(br.cmd.Process, br.done, syscall.SIGTERM, 20*time.Second)
		br.cmd = nil
	}
	os.RemoveAll(br.dir)
}

// shardRig is one cluster of n groups on the shared broker.
type shardRig struct {
	b        *bench
	broker   *broker
	n        int
	tag      string
	topics   []string
	adm      *kadm.Client
	kc       *kgo.Client
	dirs     []string
	fusekis  []*fusekitest.Server // the groups', then the audit replica's
	appliers []*applierProc       // the groups', then the audit replica's, one per group
	groups   []*cpuGroup          // the groups', then the audit replica's
}

func (rig *shardRig) audit() *fusekitest.Server { return rig.fusekis[rig.n] }

// start makes the topics, starts the Fusekis and appliers and puts each
// group's into its cgroup, unlimited for now.
func (rig *shardRig) start(ctx context.Context, scratch string) error {
	b := rig.b
	kc, err := kgo.NewClient(kgo.SeedBrokers(rig.broker.addr))
	if err != nil {
		return err
	}
	rig.kc, rig.adm = kc, kadm.NewClient(kc)
	mmb := strconv.Itoa(cluster.MaxBatchBytes)
	for g := range rig.n {
		rig.topics = append(rig.topics, fmt.Sprintf("%s-g%d", rig.tag, g))
	}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := rig.adm.CreateTopics(ctx, 1, 1, map[string]*string{"max.message.bytes": &mmb}, rig.topics...)
		if err == nil {
			err = resp.Error()
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("create topics %s: %w", strings.Join(rig.topics, ","), err)
		}
		rig.adm.DeleteTopics(ctx, rig.topics...)
		if err := proc.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	srvs := make([]*fusekitest.Server, rig.n+1)
	errs := make([]error, len(srvs))
	var wg sync.WaitGroup
	for i := range srvs {
		d, err := os.MkdirTemp("", "trails-bench-replica-") // on disk, as the direct one's
		if err != nil {
			return err
		}
		rig.dirs = append(rig.dirs, d)
		wg.Go(func() { srvs[i], errs[i] = fusekitest.StartServer(fusekitest.Options{DataDir: d}) })
	}
	wg.Wait()
	for _, s := range srvs {
		if s != nil {
			rig.fusekis = append(rig.fusekis, s)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	applier := func(name, topic, dataset string) (*applierProc, error) {
		a := &applierProc{
			args: []string{applierChildFlag, "-brokers", rig.broker.addr, "-topic", topic, "-dataset", dataset},
			addr: "127.0.0.1:0",
			log:  filepath.Join(scratch, fmt.Sprintf("%s-%s.log", rig.tag, name)),
		}
		if err := spawnApplier(a, exe); err != nil {
			return nil, fmt.Errorf("applier %s: %w", name, err)
		}
		rig.appliers = append(rig.appliers, a)
		return a, nil
	}
	for g := range rig.n {
		if _, err := applier(fmt.Sprintf("g%d", g), rig.topics[g], srvs[g].Endpoint); err != nil {
			return err
		}
	}
	for g := range rig.n {
		if _, err := applier(fmt.Sprintf("audit-g%d", g), rig.topics[g], rig.audit().Endpoint); err != nil {
			return err
		}
	}
	for i := range rig.n + 1 {
		name := fmt.Sprintf("trails-bench-g%d", i)
		if i == rig.n {
			name = "trails-bench-audit"
		}
		cg, err := newCPUGroup(name)
		if err != nil {
			return err
		}
		rig.groups = append(rig.groups, cg)
		pid, err := javaPID(srvs[i])
		if err != nil {
			return err
		}
		pids := []int{pid}
		if i < rig.n {
			pids = append(pids, rig.appliers[i].cmd.Process.Pid)
		} else {
			for _, a := range rig.appliers[rig.n:] {
				pids = append(pids, a.cmd.Process.Pid)
			}
		}
		for _, p := range pids {
			if err := cg.add(p); err != nil {
				return err
			}
		}
	}
	for g := range rig.n {
		b.logf("shards: %d groups: group %d: topic %s, Fuseki %s, applier %s (cgroup %s)", rig.n, g, rig.topics[g], srvs[g].Endpoint, rig.appliers[g].url(), rig.groups[g].dir)
	}
	b.logf("shards: %d groups: audit replica %s (cgroup %s)", rig.n, rig.audit().Endpoint, rig.groups[rig.n].dir)
	return nil
}

// spawnApplier starts a as applierProc.start does, but as a child that
// dies with this process (Pdeathsig): an applier left running would keep
// its cgroup from being removed.
func spawnApplier(a *applierProc, exe string) error {
	lf, err := os.OpenFile(a.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := exec.Command(exe, append(slices.Clone(a.args), "-listen", a.addr)...)
	cmd.Stderr = lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := fusekitest.Spawn(cmd); err != nil {
		return err
	}
	a.cmd, a.done = cmd, make(chan struct{})
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() { cmd.Wait(); close(a.done) }() // after the read: Wait closes the pipe
	if err != nil {
		a.kill()
		return fmt.Errorf("the applier exited before serving (its log: %s)", a.log)
	}
	a.addr = strings.TrimSpace(line)
	return nil
}

// close stops the rig's processes, removes its cgroups, databases and
// topics.
func (rig *shardRig) close() error {
	for _, a := range rig.appliers {
		a.kill()
	}
	for _, f := range rig.fusekis {
		f.Close()
	}
	var errs []error
	for _, g := range rig.groups {
		errs = append(errs, g.remove())
	}
	for _, d := range rig.dirs {
		os.RemoveAll(d)
	}
	if rig.adm != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rig.adm.DeleteTopics(ctx, rig.topics...)
		rig.kc.Close()
	}
	return errors.Join(errs...)
}

// config returns the cluster.ShardedConfig of the rig.
func (rig *shardRig) config() cluster.ShardedConfig {
	var sc cluster.ShardedConfig
	audit := &cluster.Audit{Dataset: rig.audit().Endpoint}
	for g := range rig.n {
		sc.Groups = append(sc.Groups, cluster.Config{Brokers: []string{rig.broker.addr}, Topic: rig.topics[g],
			Replicas: []cluster.Replica{{Dataset: rig.fusekis[g].Endpoint, Applier: rig.appliers[g].url()}},
			Store:    kg.Config{Timeout: 5 * time.Minute}})
		audit.Appliers = append(audit.Appliers, rig.appliers[rig.n+g].url())
	}
	sc.Audit = audit
	return sc
}

// shardWriter is one agent: a Sharded and a Store of its own, and its
// session, the root of a tree of its own.
type shardWriter struct {
	sh    *cluster.Sharded
	st    *session.Store
	s     *session.Session
	group int
	acked []string // the contents of its acknowledged appends
	k     int      // appends begun
}

// appendOne appends writer i's next turn (its text from contents) and
// persists it. On a refusal it reloads the session, so that the next
// append starts from what is stored: appended reports the refused append
// (err nil when the reload worked), and err is the reload's failure.
func (w *shardWriter) appendOne(ctx context.Context, i int, contents []string) (appended bool, err error) {
	content := fmt.Sprintf("w%d.%d %s", i, w.k, contents[(i+w.k)%len(contents)])
	w.k++
	w.s.Append(role(len(w.s.Turns)), content)
	if perr := w.st.Persist(ctx, w.s); perr != nil {
		got, lerr := w.st.Load(ctx, w.s.ID)
		if lerr != nil {
			return false, fmt.Errorf("writer %d: %w, then load: %w", i, perr, lerr)
		}
		w.s = got
		return false, nil
	}
	w.acked = append(w.acked, content)
	return true, nil
}

// newWriters makes n writers and stores their roots, spread evenly over
// the groups: writer w's root id is drawn until its home group is w mod
// the groups (an explicit assignment, so that each group has as many
// trees).
func (rig *shardRig) newWriters(ctx context.Context, n int) ([]*shardWriter, error) {
	ws := make([]*shardWriter, n)
	for w := range ws {
		sh, err := cluster.OpenSharded(rig.config())
		if err != nil {
			for _, x := range ws[:w] {
				x.sh.Close()
			}
			return nil, err
		}
		s := rig.b.newRoot(1)
		for sh.HomeGroup(s.ID) != w%rig.n {
			s = rig.b.newRoot(1)
		}
		ws[w] = &shardWriter{sh: sh, st: session.NewStore(sh), s: s, group: w % rig.n}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range ws {
		wg.Go(func() { errs[w] = ws[w].st.Persist(ctx, ws[w].s) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, w := range ws {
			w.sh.Close()
		}
		return nil, fmt.Errorf("store the writers' roots: %w", err)
	}
	for w, x := range ws {
		if g, err := x.sh.Group(ctx, x.s.ID); err != nil || g != x.group {
			return nil, fmt.Errorf("writer %d's tree is in group %d, want %d (%v)", w, g, x.group, err)
		}
	}
	return ws, nil
}

// warmUp has every writer append uncapped for at least warm and until
// each group has had perGroup appends acknowledged, or 5 minutes.
func (rig *shardRig) warmUp(ctx context.Context, ws []*shardWriter, contents []string, warm time.Duration, perGroup int) error {
	for i, g := range rig.groups {
		q := -1
		if i == rig.n {
			q = auditQuotaUs
		}
		if err := g.cap(q); err != nil {
			return err
		}
	}
	t0 := time.Now()
	counts := make([]atomic.Int64, rig.n)
	var stop atomic.Bool
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				ok, err := w.appendOne(ctx, i, contents)
				if err != nil {
					errs[i] = err
					stop.Store(true)
					return
				}
				if ok {
					counts[w.group].Add(1)
				}
			}
		})
	}
	for !stop.Load() && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		done := time.Since(t0) >= warm
		for g := range counts {
			done = done && counts[g].Load() >= int64(perGroup)
		}
		if done || time.Since(t0) > 5*time.Minute {
			stop.Store(true)
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var per []string
	for g := range counts {
		per = append(per, strconv.FormatInt(counts[g].Load(), 10))
	}
	rig.b.logf("shards: %d groups: warmed up uncapped for %v (appends per group: %s)", rig.n, time.Since(t0).Round(100*time.Millisecond), strings.Join(per, " / "))
	return nil
}

// shardAck is one acknowledged append.
type shardAck struct {
	end   time.Time
	d     time.Duration
	group int
}

// run has every writer append without pause for warm and then windows
// windows of window, capped (each group's cgroup to the plan's shardQuotaUs) or not,
// and returns the rate of the median window. The audit replica is held
// back meanwhile.
func (rig *shardRig) run(ctx context.Context, ws []*shardWriter, contents []string, capped bool, warm, window time.Duration, windows int) (shardsRun, error) {
	r := shardsRun{Groups: rig.n, Capped: capped, Trees: make([]int, rig.n)}
	for _, w := range ws {
		r.Trees[w.group]++
	}
	quota := -1
	if capped {
		quota = rig.b.plan.shardQuotaUs
	}
	for i, g := range rig.groups {
		q := quota
		if i == rig.n {
			q = auditQuotaUs
		}
		if err := g.cap(q); err != nil {
			return r, err
		}
	}
	t0 := time.Now()
	from := t0.Add(warm)
	end := from.Add(time.Duration(windows) * window)
	var mu sync.Mutex
	var acks []shardAck
	var firstErr error
	var markedAt time.Time
	var kafka0, self0 int64
	brokerPID := strconv.Itoa(rig.broker.cmd.Process.Pid)
	marked := make(chan struct{})
	mark := time.AfterFunc(warm, func() {
		defer close(marked)
		for _, g := range rig.groups {
			g.mark()
		}
		markedAt, kafka0, self0 = time.Now(), cpuNs(brokerPID), cpuNs("self")
	})
	defer mark.Stop()
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				a := time.Now()
				ok, err := w.appendOne(ctx, i, contents)
				e := time.Now()
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				switch {
				case ok:
					acks = append(acks, shardAck{end: e, d: e.Sub(a), group: w.group})
				case !e.Before(from) && e.Before(end):
					r.Failed++
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return r, firstErr
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	<-marked // fired at warm, before the writers' end
	for _, g := range rig.groups[:rig.n] {
		th, cores := g.since()
		r.Throttled, r.CPU = append(r.Throttled, th), append(r.CPU, cores)
	}
	_, r.AuditCPU = rig.groups[rig.n].since()
	d := float64(time.Since(markedAt))
	r.KafkaCPU, r.WritersCPU = ratio(float64(cpuNs(brokerPID)-kafka0), d), ratio(float64(cpuNs("self")-self0), d)
	counts := make([]int, windows)
	perGroup := make([]int, rig.n)
	var lat []float64
	for _, a := range acks {
		if a.end.Before(from) || !a.end.Before(end) {
			continue
		}
		counts[int(a.end.Sub(from)/window)]++
		perGroup[a.group]++
		lat = append(lat, float64(a.d))
	}
	for _, c := range counts {
		r.Rates = append(r.Rates, float64(c)/window.Seconds())
	}
	total := time.Duration(windows) * window
	for _, c := range perGroup {
		r.PerGroup = append(r.PerGroup, float64(c)/total.Seconds())
	}
	r.Appends, r.APS = len(lat), median(r.Rates)
	r.P50, r.P99 = time.Duration(percentile(lat, 50)), time.Duration(percentile(lat, 99))
	how := "uncapped"
	if capped {
		how = fmt.Sprintf("capped to %.2f core each", float64(rig.b.plan.shardQuotaUs)/cgroupPeriodUs)
	}
	var pg []string
	for g := range rig.n {
		pg = append(pg, fmt.Sprintf("g%d %.1f/s (%.2f cores, throttled %.0f%%)", g, r.PerGroup[g], r.CPU[g], 100*r.Throttled[g]))
	}
	rig.b.logf("shards: %d groups %s: %.1f appends/s (windows %s), p50 %v p99 %v, %d failed; %s; cores used by Kafka %.2f, the writers %.2f, the audit replica %.2f",
		rig.n, how, r.APS, fmtRates(r.Rates), ms(r.P50), ms(r.P99), r.Failed, strings.Join(pg, ", "), r.KafkaCPU, r.WritersCPU, r.AuditCPU)
	return r, nil
}

func fmtRates(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprintf("%.1f", x))
	}
	return strings.Join(s, " ")
}

// check lifts every cap, waits until each group's replica and the audit
// replica have applied the whole of each log, reads every acknowledged
// append back through its writer's Store, and compares each group's
// replica with the audit replica's copy of that group's trees.
func (rig *shardRig) check(ctx context.Context, ws []*shardWriter) (shardsCheck, error) {
	c := shardsCheck{Groups: rig.n}
	for _, g := range rig.groups {
		if err := g.cap(-1); err != nil {
			return c, err
		}
	}
	t0 := time.Now()
	ends, err := rig.adm.ListEndOffsets(ctx, rig.topics...)
	if err != nil {
		return c, err
	}
	for g, topic := range rig.topics {
		o, ok := ends.Lookup(topic, 0)
		if !ok || o.Err != nil {
			return c, fmt.Errorf("end offset of %s/0: %v", topic, o.Err)
		}
		for _, a := range []*applierProc{rig.appliers[g], rig.appliers[rig.n+g]} {
			if err := waitPosition(ctx, a, o.Offset-1, 5*time.Minute); err != nil {
				return c, fmt.Errorf("group %d: %w", g, err)
			}
		}
	}
	c.Quiesce = time.Since(t0)
	for i, w := range ws {
		got, err := w.st.Load(ctx, w.s.ID)
		if err != nil {
			return c, fmt.Errorf("read writer %d's session back: %w", i, err)
		}
		have := map[string]bool{}
		for _, t := range got.Turns {
			have[t.Content] = true
		}
		c.Acked += len(w.acked)
		for _, a := range w.acked {
			if !have[a] {
				c.Lost++
			}
		}
	}
	dumps := make([]map[string]map[string]bool, rig.n+1)
	for i, f := range rig.fusekis {
		if dumps[i], err = graphsOf(ctx, f.Endpoint); err != nil {
			return c, fmt.Errorf("dump %s: %w", f.Endpoint, err)
		}
	}
	c.Identical, c.Diff, c.Graphs, c.Quads = compareShards(dumps[:rig.n], dumps[rig.n])
	rig.b.logf("shards: %d groups: quiescent after %.1f s; %d appends acknowledged, %d lost; %d session graphs and %d quads compared with the audit replica: identical %v %s",
		rig.n, c.Quiesce.Seconds(), c.Acked, c.Lost, c.Graphs, c.Quads, c.Identical, c.Diff)
	return c, nil
}

// waitPosition waits until applier a has applied offset off (-1: nothing
// to wait for).
func waitPosition(ctx context.Context, a *applierProc, off int64, within time.Duration) error {
	if off < 0 {
		return nil
	}
	rig := &clusterRig{appliers: []*applierProc{a}}
	return rig.waitApplied(ctx, 0, off, within)
}

// graphsOf dumps dataset and returns its quads by graph, as N-Quads lines
// the same serializer wrote, without the applied offsets (which name each
// replica's logs).
func graphsOf(ctx context.Context, dataset string) (map[string]map[string]bool, error) {
	q, err := kg.New(kg.Config{Endpoint: dataset, Timeout: 5 * time.Minute})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := q.Dump(ctx, &buf); err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	dec := rdf.NewQuadDecoder(&buf, rdf.NQuads)
	for {
		qd, err := dec.Decode()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if qd.Pred.String() == ontology.AppliedOffset {
			continue
		}
		g := qd.Ctx.String()
		line := qd.Serialize(rdf.NQuads)
		if qd.Subj.Type() == rdf.TermBlank || qd.Obj.Type() == rdf.TermBlank {
			line = "(blank) " + qd.Pred.String() // labels differ between stores
		}
		if out[g] == nil {
			out[g] = map[string]bool{}
		}
		out[g][line] = true
	}
	return out, nil
}

// compareShards compares the groups' replicas with the audit replica: each
// session graph is held by one group alone and the audit's copy is the
// same; every other graph of the audit is the union of the groups'.
func compareShards(groups []map[string]map[string]bool, audit map[string]map[string]bool) (same bool, diff string, graphs, quads int) {
	for _, qs := range audit {
		quads += len(qs)
	}
	union := map[string]map[string]bool{}
	owner := map[string]int{}
	for g, d := range groups {
		for name, qs := range d {
			if strings.HasPrefix(name, ontology.SessionBase) {
				if o, ok := owner[name]; ok {
					return false, fmt.Sprintf("graph %s is in groups %d and %d", name, o, g), graphs, quads
				}
				owner[name] = g
				graphs++
			}
			if union[name] == nil {
				union[name] = map[string]bool{}
			}
			for l := range qs {
				union[name][l] = true
			}
		}
	}
	names := map[string]bool{}
	for n := range union {
		names[n] = true
	}
	for n := range audit {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		a, u := audit[n], union[n]
		for l := range u {
			if !a[l] {
				return false, fmt.Sprintf("graph %s: the audit replica lacks %s (group %d's)", n, l, owner[n]), graphs, quads
			}
		}
		for l := range a {
			if !u[l] {
				return false, fmt.Sprintf("graph %s: only the audit replica has %s", n, l), graphs, quads
			}
		}
	}
	return true, "", graphs, quads
}

// judge returns the shards targets.
func (s *shardsResult) judge() []target {
	one := s.rate(1, true)
	scale := func(n int, want float64, name string) target {
		if !slices.ContainsFunc(s.Runs, func(r shardsRun) bool { return r.Groups == n && r.Capped }) {
			return target{name, fmt.Sprintf("capped, %d groups: not measured", n), false}
		}
		r := s.rate(n, true)
		return target{name, fmt.Sprintf("capped to %.2f core a group: %d groups %.1f appends/s, 1 group %.1f: %s (efficiency %.0f%%)",
			s.Cores, n, r, one, x(ratio(r, one)), 100*ratio(r, float64(n)*one)), one > 0 && r/one >= want}
	}
	var acked, lost int
	same := len(s.Checks) > 0
	var diffs, lostBy []string
	for _, c := range s.Checks {
		acked, lost = acked+c.Acked, lost+c.Lost
		lostBy = append(lostBy, fmt.Sprintf("%d groups %d of %s", c.Groups, c.Lost, thousands(c.Acked)))
		if !c.Identical {
			same = false
			diffs = append(diffs, fmt.Sprintf("%d groups: %s", c.Groups, c.Diff))
		} else {
			diffs = append(diffs, fmt.Sprintf("%d groups: %d session graphs identical", c.Groups, c.Graphs))
		}
	}
	return []target{
		scale(2, shardsScale2, tShards2),
		scale(4, shardsScale4, tShards4),
		{tShardsLost, fmt.Sprintf("%s acknowledged appends read back, %d lost (%s)", thousands(acked), lost, strings.Join(lostBy, ", ")), len(s.Checks) > 0 && lost == 0},
		{tShardsSame, "each group's replica against the audit replica's copy of its trees: " + strings.Join(diffs, "; "), same},
	}
}

// markdown writes section 12.
func (s *shardsResult) markdown(w io.Writer) {
	fmt.Fprintf(w, "## 12. Shards: capacity of replica groups (issue 38)\n\n")
	fmt.Fprintf(w, "Trails through `cluster.Sharded` on N replica groups (N = %s), each a topic of its own on one Kafka broker the run starts "+
		"(KRaft, one node, replication factor 1: the log is shared and not what is measured), one Fuseki replica (TDB2 in $TMPDIR, started like the direct one) "+
		"and its applier (`cluster.Applier` as `cmd/trails-replica` runs it, a child process). "+
		"To measure what a group does on a machine of its own on this one, each group's Fuseki JVM and applier run in a cgroup v1 CPU cgroup "+
		"(`/sys/fs/cgroup/cpu/trails-bench-gK`, `cpu.cfs_quota_us` %d per `cpu.cfs_period_us` %d: **%.2f of a core per group**); "+
		"the broker, the writers and the audit replica share the rest of the machine. "+
		"The audit replica (one Fuseki, an applier per group) is the group replicas' second copy: it is held to %.2f of a core while the writers are timed "+
		"and lifted for the checks. Uncapped is the same cluster with the groups' quotas lifted.\n\n",
		groupsList(s.Runs), int(math.Round(s.Cores*cgroupPeriodUs)), cgroupPeriodUs, s.Cores, s.Audit)
	fmt.Fprintf(w, "**Writers.** %d agents, each with a `cluster.Sharded` and a `session.Store` of its own and a tree of its own "+
		"(its root's id drawn so that the groups have as many trees each), append one turn per `Persist` without pause: "+
		"first uncapped for at least %v and until each group has applied %d appends (its JVM compiles: each group as many, however many groups share the writers), then for each configuration %v of warm-up and %d windows of %v; "+
		"appends/s is the median window's, p50 and p99 are over every acknowledged append of the windows, per group is over all windows. "+
		"**× 1 group** = rate(N) / rate(1) and **efficiency** = rate(N) / (N × rate(1)), each row against the 1-group row capped as it is. **Throttled** is the share of CPU periods in which a group's cgroup used its whole quota "+
		"(near 0%%: the cap did not bind); **cores used** is what processes used over the windows (utime and stime of /proc/PID/stat): "+
		"each group's, and the rest of the machine's (the broker, this process with its %d writers, the audit replica), "+
		"which shows when the %d cores, not the groups, were the limit. The groups' databases share this machine's disk, which no cgroup caps.\n\n",
		s.Writers, s.Warm, s.JIT, s.Warm, s.Windows, s.Window, s.Writers, runtime.NumCPU())
	one := s.rate(1, true)
	var rows [][]string
	for _, r := range s.Runs {
		cpu := "uncapped"
		if r.Capped {
			cpu = fmt.Sprintf("%.2f", s.Cores)
		}
		var pg, cores, th, trees []string
		for g := range r.PerGroup {
			trees = append(trees, fmt.Sprint(r.Trees[g]))
			pg = append(pg, fmt.Sprintf("%.1f", r.PerGroup[g]))
			cores = append(cores, fmt.Sprintf("%.2f", r.CPU[g]))
			th = append(th, fmt.Sprintf("%.0f%%", 100*r.Throttled[g]))
		}
		base := s.rate(1, r.Capped)
		cols := []string{"—", "—"}
		if r.Capped && r.Groups == 2 {
			cols[0] = verdict(one > 0 && r.APS/one >= shardsScale2)
		}
		if r.Capped && r.Groups == 4 {
			cols[1] = verdict(one > 0 && r.APS/one >= shardsScale4)
		}
		rows = append(rows, append([]string{fmt.Sprint(r.Groups), cpu, fmt.Sprintf("%.1f", r.APS), msf(r.P50), msf(r.P99),
			strings.Join(pg, " / "), strings.Join(trees, " / "), strings.Join(cores, " / "), strings.Join(th, " / "),
			fmt.Sprintf("%.2f / %.2f / %.2f", r.KafkaCPU, r.WritersCPU, r.AuditCPU), thousands(r.Failed),
			x(ratio(r.APS, base)), fmt.Sprintf("%.0f%%", 100*ratio(r.APS, float64(r.Groups)*base))}, cols...))
	}
	table(w, []string{"groups", "cores per group", "appends/s", "p50 ms", "p99 ms", "per group appends/s", "trees per group",
		"cores used per group", "throttled", "cores used by Kafka / writers / audit", "failed", "× 1 group", "efficiency", tShards2, tShards4}, rows)
	fmt.Fprintf(w, "**Checks.** After each cluster's runs every cap is lifted and the run waits until each group's replica and the audit replica "+
		"have applied the whole of each group's log (**quiescent**); then every acknowledged append is read back through its writer's Store "+
		"(`Store.Load`, from its group's replica) and each group's replica is compared with the audit replica: both dumped as N-Quads "+
		"(the applied offsets left out, which name each replica's logs), each session graph must be in one group alone and the same in the audit replica, "+
		"and every other graph of the audit replica (the replica graph's `trails:group` records) the union of the groups'. "+
		"One replica per group and the audit replica make the two copies of each group compared.\n\n")
	rows = nil
	for _, c := range s.Checks {
		same := "yes"
		if !c.Identical {
			same = "no: " + c.Diff
		}
		rows = append(rows, []string{fmt.Sprint(c.Groups), fmt.Sprintf("%.1f", c.Quiesce.Seconds()), thousands(c.Acked), thousands(c.Lost),
			thousands(c.Graphs), thousands(c.Quads), same, verdict(c.Lost == 0), verdict(c.Identical)})
	}
	table(w, []string{"groups", "quiescent after s", "acknowledged", "lost", "session graphs", "audit quads", "identical", tShardsLost, tShardsSame}, rows)
}

func groupsList(rs []shardsRun) string {
	var ns []string
	for _, r := range rs {
		if r.Capped {
			ns = append(ns, fmt.Sprint(r.Groups))
		}
	}
	return strings.Join(ns, ", ")
}
