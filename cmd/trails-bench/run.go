package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/benchreport"
	"github.com/trails-kg/trails/internal/exit"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

const usageText = `Usage: trails-bench [-short] [-store fuseki|oxigraph]
                    [-only wide|tail|agent|cluster|signing|shards|tdb] [-o FILE] [-data DIR]
                    [-json] [-trails-admin FILE] [-cpuprofile FILE] [-memprofile FILE]

Starts a Fuseki of its own (TDB2 on disk, fuseki/trails.ttl) from the cached
jar, or an Oxigraph with -store oxigraph, runs every benchmark scenario
against it and prints a markdown report: fork cost, load vs chain depth,
persist throughput, store-size scaling, client cost, concurrency, a wide
fork tree, tail loads, agent sessions and what signing each write costs,
each next to its baselines, with one column per target saying "meets" or
"misses", and under the Targets table a summary computed from it (how many
were met; what was measured for each one missed). Run it inside the Trails
checkout (it finds the Fuseki jar and configuration, and scripts/pytools,
there). The full run on Fuseki took 10 minutes on the 2-core machine at a
load average of 1 to 2 (its report's last table says where the time goes),
and needs some 12 GB free in $TMPDIR (section 4 of the report gives the
size the database reached).

Flags:
  -short     tiny sizes and one run of each, to check that it works (CI)
  -store fuseki|oxigraph
             the store measured (default fuseki). With oxigraph it starts
             Oxigraph 0.5.13 (the oxigraph command of the PyPI package
             oxigraph==0.5.13, from the Python environment scripts/pytools
             makes on first use; RocksDB on disk, the union default graph)
             and runs the same scenarios through a kg client of the
             oxigraph profile, which sends the process's updates one at a
             time; every floor and baseline is then Oxigraph's own. Its
             server does not sync to disk at each update (TDB2 syncs every
             commit), as the report says, with what it left out: the SHACL
             shapes of section 7's check (Oxigraph has no SHACL endpoint)
             and the Graph Store POST that section 9's 16 MiB turn is
             compared with (Oxigraph refuses a literal over 16 MiB in
             N-Quads; Persist sends it in chunks).
             -only cluster and -only shards need Fuseki replicas and
             refuse it
  -only wide run scenario 7 alone (the wide tree: one parent, 10,000
             forks), a few minutes; its report has the Targets and section 7
  -only tail run scenario 8 alone (the last 50 turns of a 100,000-turn
             session against a whole 50-turn one), under a minute
  -only agent
             run issue 13's scenarios together: 9 (single-turn appends,
             an agent loop of structured turns, a 16 MiB turn, a load with
             state at depth 32) and 8 (tail loads), a minute or two
  -only cluster
             run scenario 10 alone: issue 23's targets through the
             replicated log (append latency against the direct Fuseki, 64
             writers, a new replica's catch-up, failover when an applier,
             a replica's Fuseki or the log's leader broker is killed), some
             10 minutes. It needs the Kafka nodes of scripts/cluster:
               set -a; eval "$(scripts/cluster start --kafka-only)"; set +a
             (TRAILS_KAFKA_BROKERS; TRAILS_KAFKA_PORT if not the default);
             it starts its own replicas (their databases in $TMPDIR, where
             the direct one's is without -data), appliers and topic, and
             kills and restarts one node with scripts/cluster kill-node /
             start-node
  -only signing
             run scenario 11 alone: the bound of issues 24 and 37 on what
             signing and witnessing (session.WithSigning) add to a
             single-turn append's p50 and to the agent loop of scenario 9,
             with the witness as a process of its own over HTTP
             (trails-admin witness serve, started and stopped by the run)
             and as a witness.Dir in the benchmark's process, both beside
             the store's database; witness.Sign and each witness's Add (an
             fsync) timed alone; a minute or two
  -only shards
             run scenario 12 alone: issue 38's capacity of replica
             groups sharded by session tree, at 1, 2 and 4 groups, each
             group's Fuseki and applier in a cgroup v1 CPU cgroup capped
             to 0.25 of a core (/sys/fs/cgroup/cpu/trails-bench-gK; it
             needs root and cgroup v1, and fails without them, never
             running uncapped instead), and uncapped at 1 and 2 groups;
             64 writers through cluster.Sharded; then every acknowledged
             append read back and each group's replica compared with the
             audit replica. It starts its own Kafka broker (one node,
             from the jars of scripts/cluster fetch), replicas and
             appliers; some 8 minutes
  -only tdb  run scenario 13 alone: issue 39's TDB2 tuning, the default
             database (six quad indexes, memory-mapped files) against four
             quad indexes and the direct file mode, each on a Fuseki and a
             new database of its own (a tdb.cfg; under -data DIR or
             $TMPDIR, which must be on disk), with the same write load
             (bulk filler, concurrent single-turn appends, a raw INSERT
             DATA floor) and the audit pack's queries, and a verdict for
             each; some 5 minutes
  -shard-cores F
             each group's cap in -only shards, a share of one core
             (default 0.25: four groups then leave a core of a 2-core
             machine to the broker, the writers and the audit replica)
  -o FILE    write the report to FILE instead of stdout; if FILE has the
             lines <!-- trails-bench:begin --> and <!-- trails-bench:end -->,
             only the text between them is replaced; with -only wide the
             lines <!-- trails-bench:wide:begin --> and
             <!-- trails-bench:wide:end -->, which the file must have (and
             likewise for the other scenarios -only runs); with -store
             oxigraph the lines <!-- trails-bench:oxigraph:begin --> and
             <!-- trails-bench:oxigraph:end --> (trails-bench:oxigraph:wide
             with -only wide, ...), which the file must have, so that a run
             on Oxigraph never replaces Fuseki's report
  -data DIR  keep the database in DIR (new or empty) instead of a
             temporary directory removed at the end: Fuseki's TDB2 in
             DIR/databases/trails, Oxigraph's RocksDB in DIR/oxigraph
  -json      print the measurements as JSON instead of markdown
  -trails-admin FILE
             the trails-admin binary scenario 11 starts as its witness
             server (default: built from the checkout with go build)
  -cpuprofile FILE, -memprofile FILE
             write the Go side's CPU or allocation profile (go tool pprof);
             the store side's per-request times are in Fuseki's log, whose
             path the progress lines on stderr give

Example:
  go run ./cmd/trails-bench -o BENCHMARKS.md

Exit codes: 0 the report was written (whether targets were met or not),
1 failure, 2 usage, 130 interrupted.
`

// run is the command: it parses args, runs the benchmark and writes the
// report. Errors are also printed to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return exit.Report(stderr, "trails-bench", runBench(ctx, args, stdout, stderr))
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == childFlag {
		return rssChild(ctx, args[1:], stdout)
	}
	if len(args) > 0 && args[0] == applierChildFlag {
		return applierChild(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("trails-bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	short := fs.Bool("short", false, "")
	out := fs.String("o", "", "")
	data := fs.String("data", "", "")
	asJSON := fs.Bool("json", false, "")
	only := fs.String("only", "", "")
	storeFlag := fs.String("store", string(kg.Fuseki), "")
	adminBin := fs.String("trails-admin", "", "")
	cpuProfile := fs.String("cpuprofile", "", "")
	memProfile := fs.String("memprofile", "", "")
	shardCores := fs.Float64("shard-cores", float64(defaultGroupQuotaUs)/cgroupPeriodUs, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return nil
		}
		return exit.Usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return exit.Usagef("unexpected argument %q: trails-bench takes flags only", fs.Arg(0))
	}
	if *only != "" && !slices.Contains([]string{"wide", "tail", "agent", "cluster", "signing", "shards", "tdb"}, *only) {
		return exit.Usagef("-only %q: the scenarios that run alone are wide, tail, agent, cluster, signing, shards and tdb", *only)
	}
	store, err := parseStore(*storeFlag)
	if err != nil {
		return err
	}
	if err := checkEnv(store); err != nil {
		return err
	}
	if why, ok := fusekiOnly[*only]; ok && store != kg.Fuseki {
		return exit.Usagef("-only %s runs on Fuseki only: %s; run it without -store %s", *only, why, store)
	}
	var cenv clusterEnv
	if *only == "cluster" {
		if cenv, err = clusterEnvFromOS(); err != nil {
			return err
		}
	}
	if *only == "shards" {
		if err := checkCgroups(); err != nil {
			return err
		}
	}
	if (*only != "" || store != kg.Fuseki) && *out != "" {
		old, err := os.ReadFile(*out)
		if m := markers(store, *only); err == nil && !m.In(old) {
			return exit.Usagef("-o %s: the file has no lines %s and %s, between which the report of %s goes", *out, m.Begin, m.End, runName(store, *only))
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		defer func() {
			if f, err := os.Create(*memProfile); err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	p := fullPlan()
	if *short {
		p = shortPlan()
	}
	if *shardCores < 0.05 || *shardCores > 2 {
		return exit.Usagef("-shard-cores %g: give each group's cap as a share of a core between 0.05 and 2", *shardCores)
	}
	p.shardQuotaUs = int(math.Round(*shardCores * cgroupPeriodUs))
	dir := *data
	if dir != "" {
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			return exit.Usagef("-data %s: not empty; give a new or empty directory (the scenarios count what the store holds)", dir)
		}
	} else {
		tmp, err := os.MkdirTemp("", "trails-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}

	t0 := time.Now()
	b := &bench{plan: p, log: stderr, t0: t0, store: store, ct: newCounter(), gen: newTextGen(1), adminBin: *adminBin}
	b.logf("starting %s on %s in %s", storeName(store), storeDisk(store), dir)
	srv, oxVersion, err := startStore(store, dir)
	if err != nil {
		return err
	}
	defer srv.Close() // and its scratch directory (config, log): Stop left them behind
	b.srv = srv
	if b.c, err = b.storeClient(b.ct); err != nil {
		return err
	}
	b.st = b.newStore()
	b.ds = admin.New(b.c)
	b.logf("%s answers at %s (log %s)", storeName(store), srv.Endpoint, srv.Log)

	r := &results{
		Command: strings.Join(append([]string{"go run ./cmd/trails-bench"}, args...), " "),
		Plan:    p.name,
		Only:    *only,
		Store:   store,
		LeftOut: leftOut(store, *only),
		Date:    t0,
		Machine: describeMachine(srv, store, oxVersion),
		Runs:    p.runs,
		LoadAvg: []string{benchreport.LoadAvg()},

		PersistBudget: p.persistBudget,
		WarmLoads:     p.warmLoads,
	}
	if err := b.all(ctx, r, dir, cenv); err != nil {
		if ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if b.c.Ping(pctx) != nil {
				return fmt.Errorf("%w (%s no longer answers: was it stopped from outside? its log: %s)", err, storeName(store), srv.Log)
			}
		}
		return err
	}
	r.Wall = time.Since(t0)
	r.LoadAvg = append(r.LoadAvg, benchreport.LoadAvg())
	r.judge()
	b.logf("done in %v", r.Wall.Round(time.Second))

	report, err := benchreport.Render(*asJSON, r, r.markdown)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err := stdout.Write(report)
		return err
	}
	return writeReport(*out, report, store, *only)
}

// all runs the scenarios in an order that keeps each one's store as it
// needs it: the small-store measurement of the scaling scenario first, the
// big-store one last. It records how long each step took.
func (b *bench) all(ctx context.Context, r *results, dir string, cenv clusterEnv) error {
	var sc *scaling
	var fx *loadFixtures
	var binDir string // where the run built trails-admin, removed at the end
	defer func() {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
	}()
	type step struct {
		name string
		f    func() error
	}
	wide := step{"7. wide tree (bulk-load the forks, measure, delete)", func() (err error) {
		r.Wide, err = b.wide(ctx)
		return err
	}}
	steps := []step{
		{"start " + storeName(b.store), func() error { return nil }},
		{fmt.Sprintf("scaling: bulk-load %s filler turns, store the fork", thousands(b.plan.fillerSmall)), func() (err error) {
			sc, err = b.scaleSetup(ctx)
			r.Scaling = sc
			return err
		}},
		{warmStep(b.store), func() error { return b.warmUp(ctx, sc.chain, true) }},
		{"scaling: measure with the small store", func() error { return b.scaleMeasure(ctx, sc, b.plan.fillerSmall, dir) }},
		{"1. fork cost", func() (err error) {
			r.Fork, err = b.forkCost(ctx)
			return err
		}},
		{"2. load vs depth (storing the chains through Persist, measuring)", func() (err error) {
			r.Load, fx, err = b.loadVsDepth(ctx)
			return err
		}},
		{"2. load over a network (added latency)", func() (err error) {
			r.Latency, err = b.overNetwork(ctx, fx)
			return err
		}},
		{"5. client allocations", func() (err error) {
			r.Alloc, err = b.allocCost(ctx, fx)
			return err
		}},
		{"5. peak RSS (bulk-load the session, load it in a child)", func() (err error) {
			r.RSS, err = b.peakRSS(ctx)
			return err
		}},
		{"3. persist throughput", func() (err error) {
			r.Persist, err = b.persistThroughput(ctx)
			return err
		}},
		{"6. concurrency", func() (err error) {
			r.Concurrency, err = b.concurrency(ctx, sc.chain.leaf().ID, sc.Turns)
			return err
		}},
		wide,
		{fmt.Sprintf("4. scaling: bulk-load filler up to %s other turns, measure", thousands(b.plan.fillerBig)), func() error {
			return b.scaleMeasure(ctx, sc, b.plan.fillerBig, dir)
		}},
	}
	tail := step{"8. tail loads (bulk-load the long session, measure)", func() (err error) {
		r.Tail, err = b.tailLoads(ctx)
		return err
	}}
	agent := step{"9. agent sessions (appends, agent loop, big turn, load with state)", func() (err error) {
		r.Agent, err = b.agent(ctx)
		if err == nil && r.Agent.BigTurn.NoGSP != "" {
			r.LeftOut = append(r.LeftOut, "the Graph Store POST that section 9's big turn is compared with, and so its target: "+r.Agent.BigTurn.NoGSP)
		}
		return err
	}}
	clusterStep := step{"10. cluster (latency, writers, catch-up, failover)", func() (err error) {
		r.Cluster, err = b.cluster(ctx, cenv)
		return err
	}}
	build := step{"11. build trails-admin (the witness server)", func() (err error) {
		if b.adminBin != "" {
			return nil
		}
		b.adminBin, binDir, err = buildAdmin(ctx)
		return err
	}}
	signing := step{"11. signing (appends, Sign and Add alone, agent loop, each Store in turn)", func() (err error) {
		r.Signing, err = b.signing(ctx, dir, b.adminBin)
		return err
	}}
	shardsStep := step{"12. shards (groups capped and not, read back, replicas compared)", func() (err error) {
		r.Shards, err = b.shards(ctx)
		return err
	}}
	tdbStep := step{"13. TDB2 tuning (each variant: start, write, audit queries)", func() (err error) {
		r.TDB, err = b.tdb(ctx, dir)
		return err
	}}
	switch r.Only {
	case "tdb":
		steps = []step{steps[0], tdbStep}
	case "shards":
		steps = []step{steps[0], shardsStep}
	case "cluster":
		steps = []step{steps[0], clusterStep}
	case "wide":
		steps = []step{steps[0], wide}
	case "tail":
		steps = []step{steps[0], tail}
	case "agent":
		steps = []step{steps[0], agent, tail}
	case "signing":
		steps = []step{steps[0], build, signing}
	default:
		steps = slices.Insert(steps, len(steps)-1, tail, agent, build, signing) // before the big filler
	}
	r.Phases = append(r.Phases, phase{Name: steps[0].name, D: time.Since(b.t0)})
	for _, s := range steps[1:] {
		t0 := time.Now()
		if err := s.f(); err != nil {
			return err
		}
		r.Phases = append(r.Phases, phase{Name: s.name, D: time.Since(t0)})
	}
	return nil
}

// phase is one step of the run and how long it took.
type phase struct {
	Name string        `json:"name"`
	D    time.Duration `json:"ns"`
}

// writeReport writes report to path, between the markers if the file has
// them, else as the whole file. The report of a run with -only, or of a
// run on a store other than Fuseki, goes between markers of its own, which
// the file must have (it would otherwise replace Fuseki's full report).
func writeReport(path string, report []byte, st kg.Store, only string) error {
	return benchreport.WriteFile(path, report, markers(st, only), only != "" || st != kg.Fuseki, false)
}

// Markers of the generated part of an output file.
const (
	beginMarker = "<!-- trails-bench:begin -->"
	endMarker   = "<!-- trails-bench:end -->"
)

// markers returns the lines between which the report of a run on st with
// -only only ("" for a full run) goes: trails-bench, trails-bench:ONLY
// on Fuseki, trails-bench:oxigraph and trails-bench:oxigraph:ONLY on
// Oxigraph.
func markers(st kg.Store, only string) benchreport.Markers {
	name := "trails-bench"
	if st != kg.Fuseki {
		name += ":" + string(st)
	}
	if only != "" {
		name += ":" + only
	}
	if name == "trails-bench" {
		return benchreport.Markers{Begin: beginMarker, End: endMarker}
	}
	return benchreport.NewMarkers(name)
}

// runName names a run on st with -only only in messages.
func runName(st kg.Store, only string) string {
	var flags []string
	if only != "" {
		flags = append(flags, "-only "+only)
	}
	if st != kg.Fuseki {
		flags = append(flags, "-store "+string(st))
	}
	if len(flags) == 0 {
		return "a full run"
	}
	return "a run with " + strings.Join(flags, " ")
}

// machine describes where the benchmark ran: Java and Fuseki on
// Fuseki, Oxigraph on Oxigraph.
type machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	MemBytes int64  `json:"mem_bytes"`
	OS       string `json:"os"`
	Go       string `json:"go"`
	Java     string `json:"java,omitempty"`
	Fuseki   string `json:"fuseki,omitempty"`
	Oxigraph string `json:"oxigraph,omitempty"` // oxigraph --version, the number
	Source   string `json:"source"`             // git describe of the checkout measured
}

// describeMachine describes the machine and the store st that srv runs;
// oxVersion is Oxigraph's version (startStore).
func describeMachine(srv *fusekitest.Server, st kg.Store, oxVersion string) machine {
	e := benchreport.Environment(srv.Log)
	m := machine{CPUs: e.CPUs, CPUModel: e.CPUModel, OS: e.OS, Go: e.Go, Source: e.Source}
	if n, err := memTotal(); err == nil {
		m.MemBytes = n
	}
	if st == kg.Oxigraph {
		m.Oxigraph = oxVersion
		return m
	}
	m.Java, m.Fuseki = "java (unknown version)", e.Fuseki
	switch {
	case len(e.Java) > 1:
		m.Java = e.Java[0] + " (" + e.Java[1] + ")"
	case len(e.Java) == 1:
		m.Java = e.Java[0]
	}
	if m.Fuseki == "unknown version" {
		if root, err := fusekitest.RepoRoot(); err == nil {
			if b, err := os.ReadFile(filepath.Join(root, ".env")); err == nil {
				if v := regexp.MustCompile(`(?m)^FUSEKI_VERSION=(\S+)`).FindSubmatch(b); v != nil {
					m.Fuseki = string(v[1])
				}
			}
		}
	}
	return m
}

func memTotal() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	var kB int64
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			_, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kB)
			return kB * 1024, err
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}
