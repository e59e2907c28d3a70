package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trails-kg/trails/internal/exit"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// Scenario 13 (issue 39, item 5, "TDB2 tuned, measured"): what Jena
// offers a write-heavy TDB2 dataset, each setup on a Fuseki and a new
// database of its own, measured with the same write load and judged
// against the audit pack's query times.
//
// How TDB2 5.6.0 takes store parameters, read from its source and checked
// on the Fuseki jar: when it opens the database at a tdb2:location (here
// "databases/trails" under the data directory, fuseki/trails.ttl), it
// reads tdb.cfg, a JSON object, from the storage directory it uses
// (Data-0001) or else from the location itself (StoreParamsCodec.read in
// DatabaseOps.createSwitchable; the storage directory's file wins). Keys
// are the StoreParamsConst names with "tdb." in front ("tdb.quad_indexes":
// ["GSPO", ...], four or six of them; "tdb.file_mode": "mapped" or
// "direct"; the cache sizes); a key left out keeps its default, an
// unknown key is an error; a file that is not JSON is ignored with a
// warning in the log, and the defaults apply. The file is read at every
// start, so the index list must never change once the database exists
// (TDB2 would read indexes it never wrote). The run writes it into the
// location before Fuseki first starts, then checks that it took: the quad
// index files in Data-0001 and the index files the server memory-maps
// (/proc/PID/maps) must be the variant's.
//
// Two things TDB2 5.6.0 does not do, both seen on the jar:
//   - It does not honour "tdb.file_mode": the storage builder opens every
//     B+tree through BPlusTreeFactory.createBPTree, which passes no file
//     mode to BlockMgrFactory, so the JVM-wide SystemIndex.fileMode()
//     decides, and that is "mapped" whenever the system property
//     sun.arch.data.model is "64" (no property or context symbol reaches
//     it). A database created with {"tdb.file_mode": "direct"} still has
//     its 8 MiB mapped segments and every index file in /proc/PID/maps.
//     The direct variant therefore starts Fuseki's JVM with
//     -Dsun.arch.data.model=32, TDB2's only switch to direct mode from
//     outside the process, and its tdb.cfg sets the node caches back to
//     the 64-bit defaults that switch would otherwise shrink.
//   - It has no journal mode: no store parameter or property changes how
//     the journal (journal.jrnl) is written; every commit writes and syncs
//     it (TransactionCoordinator.executeCommitWriter). There is no journal
//     variant to measure.
//
// Compaction (/$/compact) builds the new Data-NNNN with all six quad
// indexes whatever tdb.cfg says (seen on the jar); after a restart the
// server again keeps only tdb.cfg's, leaving the others' files stale.

// tdbStorage is where TDB2 keeps a new database's files under the data
// directory: the configuration's tdb2:location and the first generation.
var tdbStorage = filepath.Join("databases", "trails", "Data-0001")

// tdbSixQuads are the quad indexes TDB2 keeps by default: three led by the
// graph, for patterns that name it, and three with the graph last, for
// patterns over any graph.
var tdbSixQuads = []string{"GSPO", "GPOS", "GOSP", "SPOG", "POSG", "OSPG"}

// tdbReducedQuads are the quad indexes the reduced variant keeps. TDB2
// answers a quad pattern from the index whose leading columns its bound
// slots fill (the longest such prefix), and scans a whole index when none
// leads with a bound slot. Trails' patterns (session/queries,
// prov/queries, admin/queries) are of four shapes:
//
//   - graph bound, subject bound: the conditional writes' checks
//     (GRAPH $s { $s trails:ownTurns ?n } in append.ru, rewind.ru,
//     merge.ru), a session's whole graph: GSPO;
//   - graph bound, predicate and object bound, subject free
//     (GRAPH $s { ?pt trails:index $pi }): GPOS;
//   - graph free, subject bound: every audit query and most reads query
//     the union default graph (tdb2:unionDefaultGraph, no GRAPH clause),
//     and many session queries name the graph by a variable; a bound
//     subject (?t trails:role ?role after ?t is bound, $self
//     trails:parentSession* ?s, GRAPH ?g { ?x ?p ?o } in delete.ru): SPOG;
//   - graph free, predicate and object bound (?fork a trails:Fork,
//     ?fork prov:used $session, ?t trails:session ?s, ?s
//     trails:parentSession* $session, SHACL's targets): POSG.
//
// With the graph last, SPOG and POSG also give a triple's copies in
// several graphs side by side, which is how TDB2 drops them from a union
// (StageMatchTuple's distinctAdjacent). GOSP and OSPG lead only for an
// object bound with the predicate free (?s ?p <o>), which no query has:
// every pattern with a bound object names its predicate. So these four
// serve every shape, and each quad goes into four indexes instead of six.
// Four is also the fewest TDB2 5.6.0 takes: TDB2StorageBuilder refuses a
// list of any length but four or six at start ("Wrong number of quad
// table indexes"). So it refuses the three graph-led indexes alone,
// which writes that name their graph might suggest; they would anyway
// leave every union-graph pattern (the whole audit pack) with no index
// that leads with a bound slot.
var tdbReducedQuads = []string{"GSPO", "GPOS", "SPOG", "POSG"}

// tdbDirectJVM is the JVM option that puts TDB2 5.6.0 in direct mode (see
// above); tdbNodeCaches the node cache sizes a 64-bit JVM would have had
// (SystemTDB), which the direct variant's tdb.cfg restores.
const tdbDirectJVM = "-Dsun.arch.data.model=32"

var tdbNodeCaches = map[string]any{"tdb.node2nodeid_cache_size": 200000, "tdb.nodeid2node_cache_size": 1000000}

// The verdict's bounds (issue 39: keep a change only when writes gain and
// no audit query loses more than 20%).
const (
	tdbGain = 0.05 // a write rate gains when at least 5% above the default's, on both rates
	tdbLoss = 0.20 // an audit query loses when its p50 is more than 20% above the default's
)

// tdbVariant is one setup of TDB2 that scenario 13 measures.
type tdbVariant struct {
	Name   string   `json:"name"`
	Quads  []string `json:"quad_indexes"` // the quad indexes it keeps
	Direct bool     `json:"direct"`       // TDB2's own block caches, not memory-mapped files
	What   string   `json:"what"`
}

// tdbVariants returns the variants, the default first: the others are
// judged against it.
func tdbVariants() []tdbVariant {
	return []tdbVariant{
		{Name: "default", Quads: tdbSixQuads, What: "TDB2 as fuseki/trails.ttl makes it: six quad indexes, memory-mapped files, no tdb.cfg"},
		{Name: "reduced", Quads: tdbReducedQuads, What: "four quad indexes: GOSP and OSPG, which no Trails pattern leads with, dropped"},
		{Name: "direct", Quads: tdbSixQuads, Direct: true, What: "six quad indexes, files read and written through TDB2's block caches in the heap instead of memory-mapped"},
	}
}

// config returns v's tdb.cfg, nil for the default (no file).
func (v tdbVariant) config() ([]byte, error) {
	m := map[string]any{}
	if !slices.Equal(v.Quads, tdbSixQuads) {
		m["tdb.quad_indexes"] = v.Quads
	}
	if v.Direct {
		m["tdb.file_mode"] = "direct"
		for k, n := range tdbNodeCaches {
			m[k] = n
		}
	}
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.MarshalIndent(m, "", "  ")
	return append(b, '\n'), err
}

// tdbPlan holds scenario 13's sizes.
type tdbPlan struct {
	filler    int // turns bulk-loaded first, in roots of plan.fillerPerSession turns
	writers   int // concurrent writers, each with trees of its own
	trees     int // session trees of the workload, a root and three forks each
	appends   int // single-turn appends over all writers and rounds, timed
	floor     int // raw INSERT DATA requests over all writers and rounds, timed
	rounds    int // the appends and the floor go in this many rounds, the variants in turn
	auditWarm int // warm-up runs of each audit query
	auditRuns int // measured runs of each audit query
}

// tdbPlanOf returns the sizes for p: the full run's take some 5 minutes
// on the 2-core machine (16 writers append some 150 turns/s to one
// Fuseki there), -short's about one.
func tdbPlanOf(p plan) tdbPlan {
	if p.name == "short" {
		return tdbPlan{filler: 200, writers: 2, trees: 2, appends: 48, floor: 24, rounds: 2, auditWarm: 1, auditRuns: 3}
	}
	return tdbPlan{filler: 20000, writers: 16, trees: 32, appends: 4800, floor: 800, rounds: 5, auditWarm: 2, auditRuns: 9}
}

// The shape of a tree: the root's turns before its forks, where a and c
// fork it, and each fork's own turns at creation. b forks a at a's end.
const (
	tdbRootTurns = 8
	tdbForkA     = 4
	tdbForkC     = 6
	tdbForkTurns = 4
)

// tdbResult is scenario 13.
type tdbResult struct {
	Dir        string   `json:"dir"`         // where the variants' databases are
	FileSystem string   `json:"file_system"` // of Dir, from /proc/mounts
	Filler     int      `json:"filler_turns"`
	Writers    int      `json:"writers"`
	Trees      int      `json:"trees"`
	Appends    int      `json:"appends"`        // by each variant
	Floor      int      `json:"floor_requests"` // to each variant
	Rounds     int      `json:"rounds"`
	AuditWarm  int      `json:"audit_warm_up_runs"`
	AuditRuns  int      `json:"audit_runs"`
	Variants   []tdbRun `json:"variants"`
}

// tdbRun is what one variant measured.
type tdbRun struct {
	Variant tdbVariant `json:"variant"`
	Config  string     `json:"tdb_cfg"` // the file written, "" for none

	Bulk         time.Duration `json:"bulk_ns"` // bulk-loading the filler
	BulkQuads    int           `json:"bulk_quads"`
	Append       time.Duration `json:"append_ns"` // the timed appends, wall, over all rounds
	AppendP50    time.Duration `json:"append_p50_ns"`
	AppendP99    time.Duration `json:"append_p99_ns"`
	AppendsPerS  float64       `json:"appends_per_s"` // the median round's
	FloorD       time.Duration `json:"floor_ns"`      // the floor, wall, over all rounds
	FloorQuads   int           `json:"floor_quads"`
	FloorQuadsPS float64       `json:"floor_quads_per_s"` // the median round's
	AppendRounds []float64     `json:"appends_per_s_by_round"`
	FloorRounds  []float64     `json:"floor_quads_per_s_by_round"`

	Quads       int      `json:"quads"`        // in the store after the workload
	DiskBytes   int64    `json:"disk_bytes"`   // allocated by Data-0001's files
	QuadFiles   []string `json:"quad_indexes"` // the quad indexes whose files Data-0001 has
	MappedFiles int      `json:"mapped_files"` // Data-0001 files in the server's memory maps

	Audits []tdbAudit `json:"audits"`

	AppendsRatio float64 `json:"appends_ratio"` // to the default's
	FloorRatio   float64 `json:"floor_ratio"`
	Verdict      string  `json:"verdict"` // baseline, keep or drop
	Reason       string  `json:"reason"`
}

// tdbAudit is one audit query's times in one variant.
type tdbAudit struct {
	Name  string        `json:"name"`
	Rows  int           `json:"rows"`
	P50   time.Duration `json:"p50_ns"`
	Min   time.Duration `json:"min_ns"`
	Ratio float64       `json:"ratio"` // p50 over the default's
}

// tdb runs scenario 13. Every variant gets a Fuseki and a new database of
// its own under dir, in turn, and the untimed part of the workload; the
// servers then stay up, so that the timed parts alternate between the
// variants: the appends and the floor in rounds, each round the variants
// in an order that rotates, and each run of an audit query on every
// variant in a rotating order. Drift and bursts of other work on the
// machine then touch every variant alike.
func (b *bench) tdb(ctx context.Context, dir string) (*tdbResult, error) {
	tp := tdbPlanOf(b.plan)
	if onTmpfs(dir) {
		return nil, exit.Usagef("-only tdb: %s is on %s: TDB2 must be measured on disk; give -data DIR or TMPDIR on a disk", dir, fileSystem(dir))
	}
	if tp.trees < tp.writers {
		return nil, fmt.Errorf("tdb: %d trees for %d writers: each writer needs a tree", tp.trees, tp.writers)
	}
	per := tp.appends / tp.writers / tp.rounds
	fper := tp.floor / tp.writers / tp.rounds
	r := &tdbResult{Dir: dir, FileSystem: fileSystem(dir), Filler: tp.filler, Writers: tp.writers, Trees: tp.trees,
		Appends: per * tp.writers * tp.rounds, Floor: fper * tp.writers * tp.rounds, Rounds: tp.rounds,
		AuditWarm: tp.auditWarm, AuditRuns: tp.auditRuns}
	var ws []*tdbWorkload
	defer func() {
		for _, w := range ws {
			w.srv.Close()
		}
	}()
	for _, v := range tdbVariants() {
		w, err := b.tdbStart(tp, v, filepath.Join(dir, "tdb-"+v.Name))
		if w != nil {
			ws = append(ws, w)
		}
		if err != nil {
			return nil, fmt.Errorf("tdb %s: %w", v.Name, err)
		}
		if err := w.prepare(ctx); err != nil {
			return nil, fmt.Errorf("tdb %s: %w", v.Name, err)
		}
	}
	for k := range tp.rounds {
		for j := range ws {
			w := ws[(j+k)%len(ws)]
			if err := w.appendRound(ctx, k); err != nil {
				return nil, fmt.Errorf("tdb %s: %w", w.run.Variant.Name, err)
			}
			if err := w.floorRound(ctx, k); err != nil {
				return nil, fmt.Errorf("tdb %s: %w", w.run.Variant.Name, err)
			}
		}
	}
	for _, w := range ws {
		if err := w.finishWrites(ctx); err != nil {
			return nil, fmt.Errorf("tdb %s: %w", w.run.Variant.Name, err)
		}
	}
	if err := tdbAudits(ctx, ws); err != nil {
		return nil, err
	}
	for _, w := range ws {
		if err := w.check(ctx); err != nil {
			return nil, fmt.Errorf("tdb %s: %w", w.run.Variant.Name, err)
		}
		if len(r.Variants) > 0 {
			if err := sameAnswers(r.Variants[0], *w.run); err != nil {
				return nil, err
			}
		}
		r.Variants = append(r.Variants, *w.run)
	}
	for _, w := range ws {
		if err := w.srv.Close(); err != nil {
			return nil, fmt.Errorf("tdb %s: %w", w.run.Variant.Name, err)
		}
	}
	ws = nil
	r.judge()
	return r, nil
}

// tdbWorkload is one variant while the scenario runs: its Fuseki on its
// database in dir, a bench of its own (its client, its Store and content
// from the same seed as every other variant's, so that each writes the
// same turns), the workload's trees, the timed writes made beforehand and
// what was measured.
type tdbWorkload struct {
	b    *bench
	tp   tdbPlan
	dir  string
	srv  *fusekitest.Server
	run  *tdbRun
	from time.Time // the audit window's start

	trees   []*tdbTree
	ops     [][]tdbOp   // each writer's appends
	floors  [][]string  // each writer's floor requests
	fquads  [][]int     // their quads
	lat     []float64   // every timed append's latency
	aRates  []float64   // appends/s of each round
	fRates  []float64   // floor quads/s of each round
	queries []string    // the audit queries, bound
	times   [][]float64 // each audit query's measured times
	mu      sync.Mutex  // guards lat
}

// tdbOp is one timed append: a turn made beforehand and its session.
type tdbOp struct {
	s *session.Session
	t session.Turn
}

// tdbStart writes v's tdb.cfg into a new data directory dir and starts a
// Fuseki on it.
func (b *bench) tdbStart(tp tdbPlan, v tdbVariant, dir string) (*tdbWorkload, error) {
	run := &tdbRun{Variant: v}
	cfg, err := v.config()
	if err != nil {
		return nil, err
	}
	loc := filepath.Dir(filepath.Join(dir, tdbStorage))
	if err := os.MkdirAll(loc, 0o755); err != nil {
		return nil, err
	}
	if cfg != nil {
		run.Config = string(cfg)
		if err := os.WriteFile(filepath.Join(loc, "tdb.cfg"), cfg, 0o644); err != nil {
			return nil, err
		}
	}
	b.logf("tdb %s: starting Fuseki on a new TDB2 database in %s", v.Name, dir)
	srv, err := startTDB(v, dir)
	if err != nil {
		return nil, err
	}
	b.logf("tdb %s: Fuseki answers at %s (log %s)", v.Name, srv.Endpoint, srv.Log)
	vb := &bench{plan: b.plan, log: b.log, t0: b.t0, srv: srv, ct: newCounter(), gen: newTextGen(13)}
	w := &tdbWorkload{b: vb, tp: tp, dir: dir, srv: srv, run: run, from: time.Now().UTC().Add(-time.Hour)}
	if vb.c, err = newClient(srv.Endpoint, vb.ct); err != nil {
		return w, err
	}
	vb.st = vb.newStore()
	return w, nil
}

// startTDB starts a Fuseki on the database in dir, in direct mode for a
// variant that asks for it. The JVM option goes through fusekitest's
// environment variable of JVM options (added to what it holds, which is
// restored at once): the server reads it when it starts, and nothing
// else starts a server meanwhile.
func startTDB(v tdbVariant, dir string) (*fusekitest.Server, error) {
	if v.Direct {
		old, had := os.LookupEnv(fusekitest.EnvJavaOpts)
		if err := os.Setenv(fusekitest.EnvJavaOpts, strings.TrimSpace(old+" "+tdbDirectJVM)); err != nil {
			return nil, err
		}
		defer func() {
			if had {
				os.Setenv(fusekitest.EnvJavaOpts, old)
			} else {
				os.Unsetenv(fusekitest.EnvJavaOpts)
			}
		}()
	}
	return fusekitest.StartServer(fusekitest.Options{DataDir: dir})
}

// tdbTree is one session tree: root forked at tdbForkA (a) and tdbForkC
// (c), a forked at its end (b), each with a writer's principal.
type tdbTree struct {
	writer        int
	root, a, b, c *session.Session
}

func (t *tdbTree) sessions() []*session.Session { return []*session.Session{t.root, t.a, t.b, t.c} }

// tdbPrincipal is writer w's principal.
func tdbPrincipal(w int) string { return fmt.Sprintf("tdb-writer-%02d", w) }

// tdbTurn returns own turn j of session tag: an agent loop's four turns
// in turn (a user's question; the model's tool call, with usage; the
// tool's result; the model's answer, with usage and a state change), each
// a structured turn as an agent framework persists it, one per append.
func tdbTurn(g *textGen, tag string, j int, at time.Time) session.Turn {
	k := j / 4
	call := fmt.Sprintf("call_%s_%d", tag, k)
	inv := fmt.Sprintf("inv-%s-%d", tag, k)
	usage := func(in, out int64) *session.Usage {
		return &session.Usage{Input: in, Output: out, Cached: in / 2, Reasoning: out / 4, Total: in + out}
	}
	switch j % 4 {
	case 0:
		q := g.turn()
		return session.Turn{Role: "user", Content: q, Created: at, Structure: &session.Structure{Author: "user",
			Parts: []session.Part{{Kind: session.PartText, Text: q}}}}
	case 1:
		args, _ := json.Marshal(map[string]any{"query": g.text(60), "max_results": 5})
		return session.Turn{Role: "assistant", Created: at, Structure: &session.Structure{Author: "planner", InvocationID: inv,
			Model: "gemini-2.5-flash", FinishReason: "tool_calls", Usage: usage(1800+int64(j), 40),
			Parts: []session.Part{{Kind: session.PartToolCall, CallID: call, ToolName: "web_search", Arguments: args}}}}
	case 2:
		res, _ := json.Marshal(map[string]any{"results": []string{g.text(300), g.text(300)}, "took_ms": 41})
		return session.Turn{Role: "tool", Content: string(res), Created: at, Structure: &session.Structure{Author: "web_search", InvocationID: inv,
			Parts: []session.Part{{Kind: session.PartToolResult, CallID: call, ToolName: "web_search", Result: res}}}}
	default:
		a := g.turn()
		step, _ := json.Marshal(k)
		return session.Turn{Role: "assistant", Content: a, Created: at, Structure: &session.Structure{Author: "planner", InvocationID: inv,
			Model: "gemini-2.5-flash", FinishReason: "stop", Usage: usage(2600+int64(j), 310),
			Parts: []session.Part{{Kind: session.PartText, Text: a}}, Delta: map[string]json.RawMessage{"step": step}}}
	}
}

// tdbNow is a turn's creation time: the store keeps milliseconds.
func tdbNow() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// prepare runs the untimed start of the workload: the filler bulk-loaded
// (its rate reported, not judged), the trees stored through Persist, one
// after the other; and makes the timed writes: each writer's appends to
// its sessions in turn, one turn each, and its floor requests.
func (w *tdbWorkload) prepare(ctx context.Context) error {
	b, tp, run := w.b, w.tp, w.run
	pl := newPool(b.gen, 1000, b.plan.fillerChars[0], b.plan.fillerChars[1])
	t0 := time.Now()
	if err := b.fill(ctx, pl, 0, tp.filler); err != nil {
		return err
	}
	run.Bulk = time.Since(t0)
	var err error
	if run.BulkQuads, err = b.count(ctx, qCountQuads); err != nil {
		return err
	}
	b.logf("tdb %s: filler of %s turns, %s quads bulk-loaded in %v", run.Variant.Name, thousands(tp.filler),
		thousands(run.BulkQuads), run.Bulk.Round(time.Millisecond))

	next := func(s *session.Session, tag string) session.Turn {
		return tdbTurn(b.gen, tag, len(s.Turns)-s.ForkedAt, tdbNow())
	}
	for i := range tp.trees {
		t := &tdbTree{writer: i % tp.writers}
		tag := func(s string) string { return fmt.Sprintf("t%d%s", i, s) }
		t.root = session.New(tdbPrincipal(t.writer))
		for range tdbRootTurns {
			t.root.AppendTurn(next(t.root, tag("r")))
		}
		if err := b.st.Persist(ctx, t.root); err != nil {
			return fmt.Errorf("tree %d: %w", i, err)
		}
		fork := func(parent *session.Session, at int, s string) (*session.Session, error) {
			f, err := parent.Fork(at)
			if err != nil {
				return nil, err
			}
			for range tdbForkTurns {
				f.AppendTurn(next(f, tag(s)))
			}
			return f, b.st.Persist(ctx, f)
		}
		if t.a, err = fork(t.root, tdbForkA, "a"); err != nil {
			return fmt.Errorf("tree %d: %w", i, err)
		}
		if t.c, err = fork(t.root, tdbForkC, "c"); err != nil {
			return fmt.Errorf("tree %d: %w", i, err)
		}
		if t.b, err = fork(t.a, len(t.a.Turns), "b"); err != nil {
			return fmt.Errorf("tree %d: %w", i, err)
		}
		w.trees = append(w.trees, t)
	}

	per := tp.appends / tp.writers / tp.rounds * tp.rounds
	w.ops = make([][]tdbOp, tp.writers)
	for k := range tp.writers {
		type target struct {
			s   *session.Session
			tag string
			own int // own turns it will have before the next append
		}
		var mine []*target
		for i, t := range w.trees {
			if t.writer == k {
				for j, s := range t.sessions() {
					mine = append(mine, &target{s, fmt.Sprintf("t%d%c", i, "rabc"[j]), len(s.Turns) - s.ForkedAt})
				}
			}
		}
		for n := range per {
			o := mine[n%len(mine)]
			w.ops[k] = append(w.ops[k], tdbOp{o.s, tdbTurn(b.gen, o.tag, o.own, tdbNow())})
			o.own++
		}
	}
	if err := w.makeFloor(ctx); err != nil {
		return err
	}
	b.logf("tdb %s: %d trees of 4 sessions stored; %d appends and %d floor requests made", run.Variant.Name,
		tp.trees, per*tp.writers, len(w.floors[0])*tp.writers)
	return nil
}

// makeFloor makes the floor's raw INSERT DATA requests, of the appends'
// shape: each one turn's triples as Persist wrote them (those of the
// first tree's root, read back) renamed into a raw session of the
// writer's, with the raw session's new count and digest. A raw session
// takes each of the template's turns once; then the writer goes on in a
// new one.
func (w *tdbWorkload) makeFloor(ctx context.Context) error {
	b, tp := w.b, w.tp
	tmpl := w.trees[0].root
	nt, err := b.c.GetGraph(ctx, sessionIRI(tmpl.ID))
	if err != nil {
		return fmt.Errorf("floor: read the template: %w", err)
	}
	byTurn, err := turnTriples(nt, tmpl.ID, len(tmpl.Turns))
	if err != nil {
		return err
	}
	per := tp.floor / tp.writers / tp.rounds * tp.rounds
	w.floors, w.fquads = make([][]string, tp.writers), make([][]int, tp.writers)
	for k := range tp.writers {
		raw := ""
		for n := range per {
			i := n % len(byTurn)
			if i == 0 {
				raw = session.New(tdbPrincipal(k)).ID
			}
			g := mustTerm(sessionIRI(raw))
			sum := sha256.Sum256([]byte(raw + strconv.Itoa(i)))
			var sb strings.Builder
			fmt.Fprintf(&sb, "INSERT DATA {\n  GRAPH %s {\n", g)
			sb.WriteString(strings.ReplaceAll(byTurn[i], tmpl.ID, raw))
			fmt.Fprintf(&sb, "%s %s %s .\n", g, mustTerm(pOwn), mustTerm(kg.Int(i+1)))
			fmt.Fprintf(&sb, "%s %s %s .\n", g, mustTerm(pHead), mustTerm(kg.String("sha256:"+hex.EncodeToString(sum[:]))))
			sb.WriteString("  }\n}\n")
			w.floors[k] = append(w.floors[k], sb.String())
			w.fquads[k] = append(w.fquads[k], strings.Count(byTurn[i], "\n")+2)
		}
	}
	return nil
}

// turnTriples splits the N-Triples of session id's graph by turn: for
// each of its n own turns, the lines whose subject is the turn or lies
// under its IRI (parts, tool calls, the model invocation, state changes).
func turnTriples(nt []byte, id string, n int) ([]string, error) {
	out := make([]strings.Builder, n)
	prefix := ontology.TurnIRI(ontology.SessionIRI(id), 0)
	prefix = "<" + prefix[:len(prefix)-1] // the IRI up to the index
	for _, line := range strings.Split(string(nt), "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if end <= 0 {
			continue
		}
		i, err := strconv.Atoi(rest[:end])
		if err != nil || i >= n {
			return nil, fmt.Errorf("floor: turn %s in the template, which has %d turns", rest[:end], n)
		}
		out[i].WriteString(line)
		out[i].WriteByte('\n')
	}
	ss := make([]string, n)
	for i := range out {
		if ss[i] = out[i].String(); ss[i] == "" {
			return nil, fmt.Errorf("floor: no triples of turn %d in the template", i)
		}
	}
	return ss, nil
}

// appendRound runs round k of the appends: every writer at once, each
// its share of the round, one turn per Persist (group commit on, as a
// Store has it by default).
func (w *tdbWorkload) appendRound(ctx context.Context, k int) error {
	per := len(w.ops[0]) / w.tp.rounds
	t0 := time.Now()
	err := tdbGo(ctx, w.tp.writers, func(ctx context.Context, wr int) error {
		for n, o := range w.ops[wr][k*per : (k+1)*per] {
			o.s.AppendTurn(o.t)
			t1 := time.Now()
			if err := w.b.st.Persist(ctx, o.s); err != nil {
				return fmt.Errorf("writer %d, append %d: %w", wr, k*per+n, err)
			}
			d := time.Since(t1)
			w.mu.Lock()
			w.lat = append(w.lat, float64(d))
			w.mu.Unlock()
		}
		return nil
	})
	d := time.Since(t0)
	if err != nil {
		return err
	}
	w.run.Append += d
	w.aRates = append(w.aRates, float64(per*w.tp.writers)/d.Seconds())
	w.b.logf("tdb %s: round %d: %d appends by %d writers in %v: %.0f appends/s", w.run.Variant.Name, k+1,
		per*w.tp.writers, w.tp.writers, d.Round(time.Millisecond), w.aRates[len(w.aRates)-1])
	return nil
}

// floorRound sends round k of the floor's requests: every writer at once,
// each its share of the round.
func (w *tdbWorkload) floorRound(ctx context.Context, k int) error {
	per := len(w.floors[0]) / w.tp.rounds
	quads := 0
	for wr := range w.tp.writers {
		for _, q := range w.fquads[wr][k*per : (k+1)*per] {
			quads += q
		}
	}
	t0 := time.Now()
	err := tdbGo(ctx, w.tp.writers, func(ctx context.Context, wr int) error {
		for n, u := range w.floors[wr][k*per : (k+1)*per] {
			if err := w.b.c.Update(ctx, u); err != nil {
				return fmt.Errorf("floor: writer %d, request %d: %w", wr, k*per+n, err)
			}
		}
		return nil
	})
	d := time.Since(t0)
	if err != nil {
		return err
	}
	w.run.FloorD += d
	w.run.FloorQuads += quads
	w.fRates = append(w.fRates, float64(quads)/d.Seconds())
	w.b.logf("tdb %s: round %d: floor of %d requests, %s quads in %v: %.0f quads/s", w.run.Variant.Name, k+1,
		per*w.tp.writers, thousands(quads), d.Round(time.Millisecond), w.fRates[len(w.fRates)-1])
	return nil
}

// finishWrites sums up the timed writes, checks that a session loads
// back with every turn appended, and runs the workload's untimed end:
// each tree's b merged into a, c rewound, every other root completed
// (which flags its descendants for cancellation), b deleted in every
// fourth tree from the second on, so that every audit query has rows to
// find.
func (w *tdbWorkload) finishWrites(ctx context.Context) error {
	b, run := w.b, w.run
	run.AppendRounds, run.FloorRounds = w.aRates, w.fRates
	run.AppendsPerS, run.FloorQuadsPS = median(w.aRates), median(w.fRates)
	run.AppendP50, run.AppendP99 = time.Duration(percentile(w.lat, 50)), time.Duration(percentile(w.lat, 99))
	s := w.trees[0].b
	got, err := b.st.Load(ctx, s.ID)
	if err != nil {
		return err
	}
	if !slices.EqualFunc(got.Turns, s.Turns, sameTurn) {
		return fmt.Errorf("appends: a session loads back with %d turns, want the %d appended", len(got.Turns), len(s.Turns))
	}
	for i, t := range w.trees {
		if _, err := b.st.Merge(ctx, t.b.ID, session.MergeResult{Status: session.MergeCompleted, Summary: b.gen.text(200)}); err != nil {
			return fmt.Errorf("tree %d: merge: %w", i, err)
		}
		if _, _, err := b.st.Rewind(ctx, t.c.ID, t.c.ForkedAt+2, session.RewindOptions{Reason: "back to the plan"}); err != nil {
			return fmt.Errorf("tree %d: rewind: %w", i, err)
		}
		if i%2 == 0 {
			if _, err := b.st.SetState(ctx, t.root.ID, session.StateCompleted, session.StateOptions{Reason: "done"}); err != nil {
				return fmt.Errorf("tree %d: set state: %w", i, err)
			}
		}
		if i%4 == 1 {
			if err := b.st.Delete(ctx, t.b.ID, session.DeleteOptions{}); err != nil {
				return fmt.Errorf("tree %d: delete: %w", i, err)
			}
		}
	}
	b.logf("tdb %s: appends %.0f/s (median round; p50 %v, p99 %v), floor %.0f quads/s; trees merged, rewound, completed, pruned",
		run.Variant.Name, run.AppendsPerS, ms(run.AppendP50), ms(run.AppendP99), run.FloorQuadsPS)
	return nil
}

// tdbAudits runs every query of the audit pack (prov.Queries) on every
// variant: auditWarm runs to warm up (the first counts each query's
// rows), then auditRuns runs; in each run each query goes to every
// variant in turn, in an order that rotates from run to run. A query's
// time is its one request, as kg.Client.Select sends and reads it; its
// p50 is the median of the measured runs.
func tdbAudits(ctx context.Context, ws []*tdbWorkload) error {
	qs := prov.Queries()
	to := time.Now().UTC().Add(time.Hour)
	tp := ws[0].tp
	for _, w := range ws {
		w.queries, w.times = make([]string, len(qs)), make([][]float64, len(qs))
		w.run.Audits = make([]tdbAudit, len(qs))
		for i, q := range qs {
			vals, err := w.values(q, to)
			if err != nil {
				return err
			}
			if w.queries[i], err = q.Bind(vals); err != nil {
				return fmt.Errorf("audit query %s: %w", q.Name, err)
			}
			w.run.Audits[i].Name = q.Name
		}
	}
	t0 := time.Now()
	for r := range tp.auditWarm + tp.auditRuns {
		for i, q := range qs {
			for j := range ws {
				w := ws[(j+r)%len(ws)]
				t1 := time.Now()
				res, err := w.b.c.Select(ctx, w.queries[i])
				d := time.Since(t1)
				if err != nil {
					return fmt.Errorf("tdb %s: audit query %s: %w", w.run.Variant.Name, q.Name, err)
				}
				switch {
				case r == 0:
					w.run.Audits[i].Rows = len(res.Solutions)
				case r >= tp.auditWarm:
					w.times[i] = append(w.times[i], float64(d))
				}
			}
		}
	}
	for _, w := range ws {
		for i := range qs {
			w.run.Audits[i].P50 = time.Duration(median(w.times[i]))
			w.run.Audits[i].Min = time.Duration(slices.Min(w.times[i]))
		}
	}
	ws[0].b.logf("tdb: %d audit queries on %d variants, %d warm-up and %d measured runs, in %v", len(qs), len(ws),
		tp.auditWarm, tp.auditRuns, time.Since(t0).Round(time.Millisecond))
	return nil
}

// values binds q's parameters: a session of the first tree (the root for
// the queries about a tree, its forks and its state; a for merges-into;
// c for rewinds-of; b, at depth 2, for the rest), the first writer's
// principal, a window from an hour before the workload to an hour after
// to, k half b's history and a limit of 2 forks. A parameter it has no
// value for is an error: a new one needs a value chosen here.
func (w *tdbWorkload) values(q prov.Query, to time.Time) (map[string]string, error) {
	t := w.trees[0]
	sid := t.b.ID
	switch q.Name {
	case "forks-of", "usage-of-tree", "state-changes":
		sid = t.root.ID
	case "merges-into":
		sid = t.a.ID
	case "rewinds-of":
		sid = t.c.ID
	}
	vals := map[string]string{}
	for _, p := range q.Params {
		switch p.Name {
		case "session":
			vals[p.Name] = sid
		case "principal":
			vals[p.Name] = tdbPrincipal(t.writer)
		case "from":
			vals[p.Name] = w.from.Format(time.RFC3339Nano)
		case "to":
			vals[p.Name] = to.Format(time.RFC3339Nano)
		case "k":
			vals[p.Name] = strconv.Itoa(len(t.b.Turns) / 2)
		case "max":
			vals[p.Name] = "2"
		default:
			return nil, fmt.Errorf("audit query %s: the tdb scenario has no value for its parameter $%s", q.Name, p.Name)
		}
	}
	return vals, nil
}

// check records what the variant's database holds and checks that it is
// the variant's: the quad index files in Data-0001 those asked for, the
// files memory-mapped or, in direct mode, not.
func (w *tdbWorkload) check(ctx context.Context) error {
	run, v, dir := w.run, w.run.Variant, w.dir
	var err error
	if run.Quads, err = w.b.count(ctx, qCountQuads); err != nil {
		return err
	}
	if run.QuadFiles, err = quadIndexFiles(dir); err != nil {
		return err
	}
	if run.MappedFiles, err = mappedFiles(dir); err != nil {
		return err
	}
	if run.DiskBytes, err = diskBytes(filepath.Join(dir, tdbStorage)); err != nil {
		return err
	}
	storage := filepath.Join(dir, tdbStorage)
	if want := slices.Sorted(slices.Values(v.Quads)); !slices.Equal(run.QuadFiles, want) {
		return fmt.Errorf("%s has the files of the quad indexes %v, want %v: the tdb.cfg did not take effect", storage, run.QuadFiles, want)
	}
	switch {
	case v.Direct && run.MappedFiles > 0:
		return fmt.Errorf("the server memory-maps %d files of %s, want none in direct mode (%s did not take effect)",
			run.MappedFiles, storage, tdbDirectJVM)
	case !v.Direct && run.MappedFiles == 0:
		return fmt.Errorf("the server memory-maps no file of %s, want its index files mapped (TDB2's mode on a 64-bit JVM)", storage)
	}
	w.b.logf("tdb %s: %s quads, %s MiB in Data-0001, quad indexes %s, %d files memory-mapped", v.Name,
		thousands(run.Quads), mb(run.DiskBytes), strings.Join(run.QuadFiles, " "), run.MappedFiles)
	return nil
}

// sameAnswers checks that v's audit queries found as many rows as the
// default's: the same workload must get the same answers whatever the
// indexes.
func sameAnswers(def, v tdbRun) error {
	for i, a := range v.Audits {
		if i >= len(def.Audits) || def.Audits[i].Name != a.Name || def.Audits[i].Rows != a.Rows {
			want := -1
			if i < len(def.Audits) {
				want = def.Audits[i].Rows
			}
			return fmt.Errorf("tdb %s: audit query %s found %d rows, the default %d: the same workload must give the same answers",
				v.Variant.Name, a.Name, a.Rows, want)
		}
	}
	return nil
}

// tdbGo runs f for writers 0 to n-1 at once and returns the first error
// that is not another's cancellation; the first error cancels the
// others' context.
func tdbGo(ctx context.Context, n int, f func(ctx context.Context, k int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			if errs[k] = f(ctx, k); errs[k] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

// quadIndexFiles lists, sorted, the quad indexes whose files the database
// in the data directory dir has: the .dat files named by four of G, S, P
// and O.
func quadIndexFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, tdbStorage))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), ".dat")
		if ok && len(base) == 4 && strings.Count(base, "G") == 1 && strings.ContainsAny(base, "S") &&
			strings.ContainsAny(base, "P") && strings.ContainsAny(base, "O") {
			out = append(out, base)
		}
	}
	slices.Sort(out)
	return out, nil
}

// mappedFiles returns how many files of the database in the data
// directory dir the process working in dir (its Fuseki: fusekitest starts
// java there) has memory-mapped, from /proc/PID/maps.
func mappedFiles(dir string) (int, error) {
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return 0, err
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	storage := filepath.Join(want, tdbStorage) + "/"
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd")); err != nil || cwd != want {
			continue
		}
		maps, err := os.ReadFile(filepath.Join("/proc", p.Name(), "maps"))
		if err != nil {
			return 0, err
		}
		files := map[string]bool{}
		for _, line := range strings.Split(string(maps), "\n") {
			if f := strings.Fields(line); len(f) >= 6 && strings.HasPrefix(f[5], storage) {
				files[f[5]] = true
			}
		}
		return len(files), nil
	}
	return 0, fmt.Errorf("no process works in %s, where its Fuseki should run", dir)
}

// diskBytes returns what the files under dir take on disk (allocated
// blocks: a mapped file's unused space is not counted).
func diskBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	return n, err
}

// onTmpfs reports whether dir is on a file system in memory.
func onTmpfs(dir string) bool {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return false
	}
	const tmpfsMagic, ramfsMagic = 0x01021994, 0x858458f6
	return st.Type == tmpfsMagic || st.Type == ramfsMagic
}

// judge compares each variant with the default (the first) and gives its
// verdict: keep only when both write rates gain at least tdbGain and no
// audit query's p50 is more than tdbLoss above the default's.
func (r *tdbResult) judge() {
	def := &r.Variants[0]
	def.Verdict, def.AppendsRatio, def.FloorRatio = "baseline", 1, 1
	for i := range def.Audits {
		def.Audits[i].Ratio = 1
	}
	for k := 1; k < len(r.Variants); k++ {
		v := &r.Variants[k]
		v.AppendsRatio = ratio(v.AppendsPerS, def.AppendsPerS)
		v.FloorRatio = ratio(v.FloorQuadsPS, def.FloorQuadsPS)
		worst := -1
		for i := range v.Audits {
			v.Audits[i].Ratio = ratio(float64(v.Audits[i].P50), float64(def.Audits[i].P50))
			if worst < 0 || v.Audits[i].Ratio > v.Audits[worst].Ratio {
				worst = i
			}
		}
		gains := v.AppendsRatio >= 1+tdbGain && v.FloorRatio >= 1+tdbGain
		loses := worst >= 0 && v.Audits[worst].Ratio > 1+tdbLoss
		var why []string
		if gains {
			why = append(why, fmt.Sprintf("writes gain (appends %s, floor %s)", x(v.AppendsRatio), x(v.FloorRatio)))
		} else {
			why = append(why, fmt.Sprintf("writes do not gain (appends %s, floor %s; %s on both is a gain)", x(v.AppendsRatio), x(v.FloorRatio), x(1+tdbGain)))
		}
		if worst >= 0 {
			a := v.Audits[worst]
			if loses {
				why = append(why, fmt.Sprintf("audit query `%s` loses (%s, over %s)", a.Name, x(a.Ratio), x(1+tdbLoss)))
			} else {
				why = append(why, fmt.Sprintf("no audit query loses (the slowest against the default: `%s`, %s)", a.Name, x(a.Ratio)))
			}
		}
		v.Verdict = "drop"
		if gains && !loses {
			v.Verdict = "keep"
		}
		v.Reason = strings.Join(why, "; ")
	}
}

// markdown writes section 13.
func (r *tdbResult) markdown(w io.Writer) {
	fmt.Fprintf(w, "## 13. TDB2 tuning (issue 39, item 5)\n\n")
	fmt.Fprintf(w, "What Jena offers a write-heavy TDB2 dataset, measured against the audit pack's query times. "+
		"Each variant has a Fuseki of its own (`FusekiMainCmd`, `fuseki/trails.ttl`) on a new database under %s (%s). "+
		"TDB2 takes a new database's store parameters from `tdb.cfg`, a JSON object, in the database's location "+
		"(`databases/trails`, beside the `Data-0001` directory TDB2 makes there) or in `Data-0001`, read at every start; "+
		"keys are `tdb.` and the parameter's name (`tdb.quad_indexes`, which takes four or six, `tdb.file_mode`, the cache sizes), and a key left out keeps its default. "+
		"The run writes it before the first start and checks afterwards that it took: the quad index files in `Data-0001` and the files the server "+
		"memory-maps (`/proc/PID/maps`) are the variant's. TDB2 5.6.0 reads `tdb.file_mode` but does not use it (its index files are memory-mapped "+
		"on any 64-bit JVM), so the direct variant starts Fuseki's JVM with `%s`, TDB2's only switch to direct mode from outside the process, "+
		"and sets the node caches that switch would shrink back to their 64-bit sizes. TDB2 has no journal mode to choose: every commit writes "+
		"and syncs its journal.\n\n", "`"+r.Dir+"`", r.FileSystem, tdbDirectJVM)
	fmt.Fprintf(w, "**Workload**, the same turns in every variant (content from one seed). Untimed, each variant in turn as its server starts: "+
		"%s filler turns bulk-loaded (N-Quads through the Graph Store Protocol; **bulk** is its rate, reported, not judged), "+
		"%d session trees stored through Persist (a root of %d turns, forks a at %d and c at %d, a forked again at its end: b at depth 2; "+
		"%d own turns each). Timed, with every server up, in %d rounds, each round the variants in an order that rotates: "+
		"**%s single-turn appends** per variant by %d concurrent writers (each its own principal and trees, one `Persist` per turn, "+
		"group commit on as by default; turns of an agent loop: question, tool call with usage, tool result, answer with usage and a "+
		"state change), then the **floor**: %s raw `INSERT DATA` requests per variant by the same writers, each one turn's triples as "+
		"Persist wrote them (the first root's, read back) renamed into a raw session, with its count and digest. A rate is the median "+
		"round's (the rounds' rates are in the table); p50 and p99 are over every append. Untimed again: each tree's b merged into a, "+
		"c rewound, every other root completed (its forks flagged), every fourth b deleted.\n\n",
		thousands(r.Filler), r.Trees, tdbRootTurns, tdbForkA, tdbForkC, tdbForkTurns, r.Rounds, thousands(r.Appends), r.Writers, thousands(r.Floor))
	fmt.Fprintf(w, "**Audit queries**: every query of `prov/queries` (the pack `trails-admin audit` runs), its parameters bound to the first "+
		"tree (the root for `forks-of`, `usage-of-tree` and `state-changes`, a for `merges-into`, c for `rewinds-of`, b for the rest; "+
		"the first writer's principal; a window around the run; `k` half b's history; `max` 2); %d warm-up runs, the first counting each "+
		"query's rows (the same in every variant, or the run fails), then %d measured runs; in each run each query goes to every variant "+
		"in turn, the order rotating. p50 is the median of the measured runs, one request each.\n\n", r.AuditWarm, r.AuditRuns)

	var rows [][]string
	for _, v := range r.Variants {
		mode := "mapped"
		if v.Variant.Direct {
			mode = "direct"
		}
		cfg := "none"
		if v.Config != "" {
			cfg = "`" + strings.Join(strings.Fields(v.Config), " ") + "`"
		}
		rows = append(rows, []string{v.Variant.Name, v.Variant.What, strings.Join(v.Variant.Quads, " "), mode, cfg,
			strings.Join(v.QuadFiles, " "), fmt.Sprint(v.MappedFiles), thousands(v.Quads), mb(v.DiskBytes)})
	}
	tableLeft(w, 6, []string{"variant", "what", "quad indexes", "file mode", "tdb.cfg", "quad index files in Data-0001",
		"files memory-mapped", "quads", "MiB on disk"}, rows)

	rounds := func(rs []float64) string {
		ss := make([]string, len(rs))
		for i, x := range rs {
			ss[i] = fmt.Sprintf("%.0f", x)
		}
		return strings.Join(ss, " / ")
	}
	rows = nil
	for _, v := range r.Variants {
		rows = append(rows, []string{v.Variant.Name, fmt.Sprintf("%.0f", float64(v.BulkQuads)/v.Bulk.Seconds()),
			fmt.Sprintf("%.1f", v.AppendsPerS), rounds(v.AppendRounds), msf(v.AppendP50), msf(v.AppendP99), x(v.AppendsRatio),
			fmt.Sprintf("%.0f", v.FloorQuadsPS), rounds(v.FloorRounds), x(v.FloorRatio)})
	}
	table(w, []string{"variant", "bulk quads/s", "appends/s", "appends/s by round", "append p50 ms", "append p99 ms", "appends / default",
		"floor quads/s", "floor quads/s by round", "floor / default"}, rows)

	fmt.Fprintf(w, "**Verdicts.** A variant is kept only when both write rates gain (at least %s the default's: less is not told apart "+
		"from this machine's noise) and no audit query's p50 is more than %s the default's. Audit cells are p50 ms (ratio to the default).\n\n",
		x(1+tdbGain), x(1+tdbLoss))
	head := []string{"measure"}
	for _, v := range r.Variants {
		head = append(head, v.Variant.Name)
	}
	rate := func(what string, f func(tdbRun) (float64, float64), format string) []string {
		row := []string{what}
		for k, v := range r.Variants {
			val, rr := f(v)
			cell := fmt.Sprintf(format, val)
			if k > 0 {
				cell += " (" + x(rr) + ")"
			}
			row = append(row, cell)
		}
		return row
	}
	rows = [][]string{
		rate("appends/s", func(v tdbRun) (float64, float64) { return v.AppendsPerS, v.AppendsRatio }, "%.1f"),
		rate("floor quads/s", func(v tdbRun) (float64, float64) { return v.FloorQuadsPS, v.FloorRatio }, "%.0f"),
	}
	for i, a := range r.Variants[0].Audits {
		row := []string{fmt.Sprintf("`%s` p50 ms (%s)", a.Name, plural(a.Rows, "row", "rows"))}
		for k, v := range r.Variants {
			cell := msf(v.Audits[i].P50)
			if k > 0 {
				cell += " (" + x(v.Audits[i].Ratio) + ")"
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	verdicts := []string{"verdict"}
	for _, v := range r.Variants {
		verdicts = append(verdicts, v.Verdict)
	}
	rows = append(rows, verdicts)
	table(w, head, rows)
	for _, v := range r.Variants[1:] {
		fmt.Fprintf(w, "- **%s: %s.** %s.\n", v.Variant.Name, v.Verdict, capitalize(v.Reason))
	}
	fmt.Fprintln(w)
}

// plural writes n with the singular or plural noun: 1 row, 3 rows.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(n) + " " + many
}

// capitalize returns s with its first letter upper-case.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
