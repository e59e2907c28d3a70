package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trails-kg/trails/internal/benchreport"
	"github.com/trails-kg/trails/kg"
)

// results is everything a run measured; the markdown report and -json
// are two renderings of it.
type results struct {
	Command       string         `json:"command"`
	Plan          string         `json:"plan"`
	Only          string         `json:"only,omitempty"`     // the one scenario run (-only), "" for all
	Store         kg.Store       `json:"store"`              // the store measured (-store)
	LeftOut       []string       `json:"left_out,omitempty"` // what the store lacks for, and why
	Date          time.Time      `json:"date"`
	Machine       machine        `json:"machine"`
	Runs          int            `json:"runs"`
	LoadAvg       []string       `json:"load_avg"` // at the start and the end
	PersistBudget time.Duration  `json:"persist_budget_ns"`
	WarmLoads     int            `json:"warm_loads"`
	Wall          time.Duration  `json:"wall_ns"`
	Fork          []forkRow      `json:"fork"`
	Load          []loadRow      `json:"load"`
	Latency       []latencyRow   `json:"load_over_network"`
	Persist       []persistRow   `json:"persist"`
	Scaling       *scaling       `json:"scaling"`
	Alloc         []allocRow     `json:"alloc"`
	RSS           rssResult      `json:"rss"`
	Concurrency   []concRow      `json:"concurrency"`
	Wide          *wideTree      `json:"wide_tree"`
	Tail          *tailResult    `json:"tail"`
	Agent         *agentResult   `json:"agent"`
	Cluster       *clusterResult `json:"cluster,omitempty"`
	Signing       *signingResult `json:"signing"`
	Shards        *shardsResult  `json:"shards,omitempty"`
	TDB           *tdbResult     `json:"tdb,omitempty"`
	Targets       []target       `json:"targets"`
	Summary       string         `json:"summary"` // of the targets, as the report writes it under them
	Phases        []phase        `json:"phases"`
}

// target is one of the targets, judged.
type target struct {
	Name     string `json:"name"`
	Measured string `json:"measured"`
	Meets    bool   `json:"meets"`
}

// judged returns ts as the report renders them.
func judged(ts []target) []benchreport.Target {
	out := make([]benchreport.Target, len(ts))
	for i, t := range ts {
		out[i] = benchreport.Target{Name: t.Name, Cells: []string{t.Measured}, Verdict: benchreport.Judge(t.Meets)}
	}
	return out
}

// The targets' column headings; the CI test checks that each appears.
const (
	tForkTriples   = "fork ≤ 25 triples, same for every N"
	tTrips         = "depth 32: ≤ 3 round trips"
	tFlat          = "depth 32: ≤ 1.3× flat"
	tFloor         = "depth 32: ≤ 1.3× floor"
	tNaive         = "depth 32: naive ≥ 3× slower"
	tPersist       = "batch 100: ≥ 80% of raw"
	tScaling       = "ratio ≤ 1.5"
	tRSS           = "peak RSS < 4× content"
	tWideRoots     = "wide: roots ≤ 2× floor"
	tWideTree      = "wide: tree ≤ 2× floor"
	tWideBranch    = "wide: branches ≤ 2× floor"
	tWideExport    = "wide: export ≤ 5 s"
	tWideDelete    = "wide: delete ≥ 200 sessions/s"
	tTail          = "tail: last 50 ≤ 1.5× whole 50"
	tLoop          = "agent loop: ≥ 80% of raw"
	tBigTurn       = "16 MiB turn: ≤ 1.5× Graph Store POST"
	tStateTrips    = "state, depth 32: ≤ 3 round trips"
	tStateFloor    = "state, depth 32: ≤ 1.3× floor"
	tAppend        = "single-turn append: ≥ 70% of raw"
	tSignAppend    = "signing over HTTP: append p50 ≤ +5%"
	tSignLoop      = "signing over HTTP: agent loop p50 ≤ +5%"
	tSignDirAppend = "signing, local Dir: append p50 ≤ +5%"
	tSignDirLoop   = "signing, local Dir: agent loop p50 ≤ +5%"
	tSpoolAppend   = "signing over HTTP, spooled: append p50 ≤ +5%"
	tSpoolLoop     = "signing over HTTP, spooled: agent loop p50 ≤ +5%"
)

// The wide tree's targets.
const (
	wideFloorRatio = 2.0
	wideExportMax  = 5 * time.Second
	wideDeleteRate = 200.0
)

// targetColumns lists every target column, in report order.
var targetColumns = []string{tForkTriples, tTrips, tFlat, tFloor, tNaive, tPersist, tScaling, tRSS,
	tWideRoots, tWideTree, tWideBranch, tWideExport, tWideDelete, tTail, tLoop, tBigTurn, tStateTrips, tStateFloor, tAppend, tSpoolAppend, tSpoolLoop, tSignAppend, tSignLoop, tSignDirAppend, tSignDirLoop}

// The section headings; the CI test checks that each appears.
var sections = []string{
	"## Targets",
	"## 1. Fork cost",
	"## 2. Load vs depth",
	"## 3. Persist throughput",
	"## 4. Store-size scaling",
	"## 5. Client cost",
	"## 6. Concurrency",
	"## 7. Wide tree",
	"## 8. Tail loads",
	"## 9. Agent sessions",
	"## 11. Signing and witnessing (issues 24 and 37)",
}

const (
	targetDepth = 32
	targetBatch = 100
)

func verdict(ok bool) string {
	if ok {
		return "meets"
	}
	return "misses"
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func msf(d time.Duration) string {
	v := float64(d) / 1e6
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func kb(b float64) string { return fmt.Sprintf("%.0f", b/1024) }

func mb(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func x(r float64) string { return fmt.Sprintf("%.2f×", r) }

func us(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/1e3) }

// pct writes an overhead as a signed percentage: +3.1%.
func pct(o float64) string { return fmt.Sprintf("%+.1f%%", 100*o) }

// share writes a part of a whole as a percentage: 91%.
func share(r float64) string { return fmt.Sprintf("%.0f%%", 100*r) }

// thousands writes n with comma separators: 1,000,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// forkOK reports whether every fork wrote the same number of triples, at
// most 25.
func forkOK(rows []forkRow) bool {
	for _, r := range rows {
		if r.TrailsTriples > 25 || r.TrailsTriples != rows[0].TrailsTriples {
			return false
		}
	}
	return len(rows) > 0
}

// judge computes the targets from the measurements: all of them, or the
// wide tree's, the tail loads', the agent scenarios', the cluster's,
// signing's or the shards' alone after -only.
func (r *results) judge() {
	var ts []target
	if r.Only == "" {
		ts = r.judgeAll()
	}
	if w := r.Wide; w != nil {
		n := thousands(w.Forks) + " forks"
		fl := func(name string, a, b stat) target {
			rr := ratio(float64(a.D), float64(b.D))
			return target{name, fmt.Sprintf("%s ms, floor %s ms: %s (%s)", msf(a.D), msf(b.D), x(rr), n), rr <= wideFloorRatio}
		}
		ts = append(ts,
			fl(tWideRoots, w.List, w.ListFloor),
			fl(tWideTree, w.Tree, w.TreeFloor),
			fl(tWideBranch, w.Branches, w.BranchesFloor),
			target{tWideExport, fmt.Sprintf("export of the tree: %.2f s (%s)", w.Export.D.Seconds(), n), w.Export.D > 0 && w.Export.D <= wideExportMax},
			target{tWideDelete, fmt.Sprintf("delete --cascade: %.0f sessions/s (%s sessions in %.1f s)", w.DeleteRate(), thousands(w.DeleteSteps), w.Delete.Seconds()), w.DeleteRate() >= wideDeleteRate},
		)
	}
	if t := r.Tail; t != nil {
		ts = append(ts, t.judge())
	}
	if a := r.Agent; a != nil {
		ts = append(ts, a.judge()...)
	}
	if c := r.Cluster; c != nil {
		ts = append(ts, c.judge()...)
	}
	if s := r.Signing; s != nil {
		ts = append(ts, s.judge()...)
	}
	if s := r.Shards; s != nil {
		ts = append(ts, s.judge()...)
	}
	r.Targets = ts
	r.Summary = benchreport.Summary(judged(ts))
}

// judgeAll computes the targets of scenarios 1 to 6.
func (r *results) judgeAll() []target {
	var ts []target

	var counts []string
	for _, f := range r.Fork {
		counts = append(counts, fmt.Sprintf("%d (N = %s)", f.TrailsTriples, thousands(f.ParentTurns)))
	}
	ts = append(ts, target{tForkTriples, "triples per fork: " + strings.Join(counts, ", "), forkOK(r.Fork)})

	var trips, flat, floor, naive []string
	okTrips, okFlat, okFloor, okNaive, seen := true, true, true, true, false
	for _, l := range r.Load {
		if l.Depth != targetDepth {
			continue
		}
		seen = true
		h := thousands(l.History) + " turns"
		trips = append(trips, fmt.Sprintf("%.0f (%s)", l.Trails.Trips, h))
		rf, rl, rn := ratio(float64(l.Trails.D), float64(l.Flat.D)), ratio(float64(l.Trails.D), float64(l.Floor.D)), ratio(float64(l.Naive.D), float64(l.Trails.D))
		flat = append(flat, fmt.Sprintf("%s (%s)", x(rf), h))
		floor = append(floor, fmt.Sprintf("%s (%s)", x(rl), h))
		naive = append(naive, fmt.Sprintf("%s (%s)", x(rn), h))
		okTrips = okTrips && l.Trails.Trips <= 3
		okFlat = okFlat && rf <= 1.3
		okFloor = okFloor && rl <= 1.3
		okNaive = okNaive && rn >= 3
	}
	ts = append(ts,
		target{tTrips, "round trips of Load: " + strings.Join(trips, ", "), seen && okTrips},
		target{tFlat, "Load / flat load: " + strings.Join(flat, ", "), seen && okFlat},
		target{tFloor, "Load / floor: " + strings.Join(floor, ", "), seen && okFloor},
		target{tNaive, "naive walk / Load: " + strings.Join(naive, ", "), seen && okNaive},
	)

	pt := target{Name: tPersist, Measured: "no batch of 100 measured"}
	for _, p := range r.Persist {
		if p.Batch == targetBatch {
			rr := ratio(p.TrailsTPS, p.RawTPS)
			pt = target{tPersist, fmt.Sprintf("Persist %.0f turns/s, raw INSERT DATA %.0f turns/s: %.0f%%", p.TrailsTPS, p.RawTPS, 100*rr), rr >= 0.8}
		}
	}
	ts = append(ts, pt)

	st := target{Name: tScaling, Measured: "not measured"}
	if r.Scaling != nil && len(r.Scaling.Rows) >= 2 {
		a, b := r.Scaling.Rows[0], r.Scaling.Rows[len(r.Scaling.Rows)-1]
		st = target{tScaling, fmt.Sprintf("load with %s other turns %s ms, with %s: %s ms: %s",
			thousands(a.OtherTurns), msf(a.Load.D), thousands(b.OtherTurns), msf(b.Load.D), x(r.Scaling.Ratio())), r.Scaling.Ratio() <= 1.5}
	}
	ts = append(ts, st)

	ts = append(ts, target{tRSS, fmt.Sprintf("%s turns, %s MiB of content: peak RSS %s MiB, %s",
		thousands(r.RSS.Turns), mb(r.RSS.ContentBytes), mb(r.RSS.PeakRSS), x(r.RSS.Ratio())), r.RSS.ContentBytes > 0 && r.RSS.Ratio() < 4})
	return ts
}

// table writes a markdown table, its first column aligned left and the
// others right.
func table(w io.Writer, head []string, rows [][]string) { tableLeft(w, 1, head, rows) }

// tableLeft writes a markdown table with its first left columns aligned
// left and the others right.
func tableLeft(w io.Writer, left int, head []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(head, " | "))
	seps := make([]string, len(head))
	for i := range seps {
		seps[i] = "---"
		if i >= left {
			seps[i] = "---:"
		}
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}

// markdown writes the report.
func (r *results) markdown(w io.Writer) {
	m := r.Machine
	if r.Store == kg.Fuseki {
		fmt.Fprintf(w, "# Trails benchmark results\n\n")
	} else {
		fmt.Fprintf(w, "# Trails benchmark results on %s\n\n", storeName(r.Store))
	}
	fmt.Fprintf(w, "- Command: `%s` (plan %q; wall time %s)\n", r.Command, r.Plan, r.Wall.Round(time.Second))
	fmt.Fprintf(w, "- Date: %s; source: `%s` (git describe; -dirty: with uncommitted changes)\n", r.Date.UTC().Format("2006-01-02 15:04 MST"), m.Source)
	fmt.Fprintf(w, "- Machine: %d cores (%s), %s GiB memory, %s\n", m.CPUs, m.CPUModel, fmt.Sprintf("%.1f", float64(m.MemBytes)/(1<<30)), m.OS)
	fmt.Fprintf(w, "- %s\n", benchreport.LoadLine(r.LoadAvg[0], r.LoadAvg[len(r.LoadAvg)-1]))
	r.markdownStore(w)
	fmt.Fprintf(w, "- Method: unless a section says otherwise, every figure is the median of %d measured runs after one warm-up run, "+
		"all in one process against one %s, every baseline and floor included; round trips (trips) are HTTP requests and KB are response bytes received, "+
		"counted by an http.RoundTripper around the client.\n", r.Runs, storeName(r.Store))
	if len(r.LeftOut) > 0 {
		fmt.Fprintf(w, "- Left out on %s: %s.\n", storeName(r.Store), strings.Join(r.LeftOut, "; "))
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "## Targets\n\n")
	benchreport.WriteTargets(w, []string{"measured"}, judged(r.Targets))

	if r.Only == "" {
		r.markdownScenarios(w)
	}
	if wt := r.Wide; wt != nil {
		wt.markdown(w)
	}
	if t := r.Tail; t != nil {
		t.markdown(w)
	}
	if a := r.Agent; a != nil {
		a.markdown(w)
	}
	if c := r.Cluster; c != nil {
		c.markdown(w)
	}
	if s := r.Signing; s != nil {
		s.markdown(w)
	}
	if s := r.Shards; s != nil {
		s.markdown(w)
	}
	if t := r.TDB; t != nil {
		t.markdown(w)
	}

	fmt.Fprintf(w, "## Where the time went\n\n")
	var rows [][]string
	for _, p := range r.Phases {
		rows = append(rows, []string{p.Name, fmt.Sprintf("%.0f", p.D.Seconds())})
	}
	rows = append(rows, []string{"**total**", fmt.Sprintf("**%.0f**", r.Wall.Seconds())})
	table(w, []string{"step", "seconds"}, rows)
}

// markdownStore writes the line of the header that says which store was
// measured and how it keeps its data.
func (r *results) markdownStore(w io.Writer) {
	m := r.Machine
	if r.Store != kg.Oxigraph {
		fmt.Fprintf(w, "- Software: %s; %s; Apache Jena Fuseki %s on TDB2 on disk with `fuseki/trails.ttl`\n", m.Go, m.Java, m.Fuseki)
		return
	}
	fmt.Fprintf(w, "- Software: %s; Oxigraph %s (`oxigraph serve`, PyPI's %s, from scripts/pytools) on RocksDB on disk "+
		"with `--union-default-graph`, through a kg client of the `oxigraph` profile, which sends the process's updates one at a time. "+
		"Oxigraph's server does not fsync at each update (docs/stores.md), TDB2 syncs every commit: "+
		"an acknowledged write here survives the server process dying, not the machine losing power, "+
		"so these figures are not of Fuseki's durability\n", m.Go, m.Oxigraph, oxigraphPackage)
}

// markdownScenarios writes sections 1 to 6.
func (r *results) markdownScenarios(w io.Writer) {
	fmt.Fprintf(w, "## 1. Fork cost\n\n")
	fmt.Fprintf(w, "A Trails fork (Persist of a new fork of an N-turn parent, no turns of its own yet) against copy-on-fork "+
		"(one INSERT DATA of a new session holding a copy of the N turns, as the bub tape or a kagent fork does). "+
		"Triples are the growth of the store's quad count.\n\n")
	var rows [][]string
	ok := forkOK(r.Fork)
	for _, f := range r.Fork {
		rows = append(rows, []string{
			thousands(f.ParentTurns),
			fmt.Sprint(f.TrailsTriples), msf(f.Trails.D), fmt.Sprintf("%.0f", f.Trails.Trips),
			thousands(f.CopyTriples), msf(f.Copy.D), fmt.Sprintf("%.0f", f.Copy.Trips),
			x(ratio(float64(f.CopyTriples), float64(f.TrailsTriples))), x(ratio(float64(f.Copy.D), float64(f.Trails.D))),
			verdict(ok && f.TrailsTriples <= 25),
		})
	}
	table(w, []string{"parent turns", "Trails triples", "Trails ms", "Trails trips", "copy triples", "copy ms", "copy trips",
		"copy / Trails triples", "copy / Trails time", tForkTriples}, rows)

	fmt.Fprintf(w, "## 2. Load vs depth\n\n")
	fmt.Fprintf(w, "The same effective history spread over a root and `depth` forks. **Trails** is `Store.Load` of the leaf; "+
		"**naive** walks up with one query per ancestor for its parent link and one per ancestor for its turns; "+
		"**flat** is `Store.Load` of a root holding as many turns; **floor** is one hand-written SELECT of exactly those turns, "+
		"their sessions and ranges given. All read tab-separated results with `kg.Client.Select` into the same turns. "+
		"Target columns apply at depth %d.\n\n", targetDepth)
	rows = nil
	for _, l := range r.Load {
		rf, rl, rn := ratio(float64(l.Trails.D), float64(l.Flat.D)), ratio(float64(l.Trails.D), float64(l.Floor.D)), ratio(float64(l.Naive.D), float64(l.Trails.D))
		cols := []string{"—", "—", "—", "—"}
		if l.Depth == targetDepth {
			cols = []string{verdict(l.Trails.Trips <= 3), verdict(rf <= 1.3), verdict(rl <= 1.3), verdict(rn >= 3)}
		}
		rows = append(rows, append([]string{
			thousands(l.History), fmt.Sprint(l.Depth),
			msf(l.Trails.D), fmt.Sprintf("%.0f", l.Trails.Trips), kb(l.Trails.Bytes),
			msf(l.Naive.D), fmt.Sprintf("%.0f", l.Naive.Trips), kb(l.Naive.Bytes),
			msf(l.Flat.D), fmt.Sprintf("%.0f", l.Flat.Trips),
			msf(l.Floor.D), fmt.Sprintf("%.0f", l.Floor.Trips), kb(l.Floor.Bytes),
			x(rf), x(rl), x(rn),
		}, cols...))
	}
	table(w, []string{"turns", "depth", "Trails ms", "trips", "KB", "naive ms", "trips", "KB", "flat ms", "trips",
		"floor ms", "trips", "KB", "Trails / flat", "Trails / floor", "naive / Trails", tTrips, tFlat, tFloor, tNaive}, rows)
	fmt.Fprintf(w, "The same ratios from each way's fastest run, which a busy machine disturbs least (not what the targets judge):\n\n")
	rows = nil
	for _, l := range r.Load {
		rows = append(rows, []string{thousands(l.History), fmt.Sprint(l.Depth),
			msf(l.Trails.Min), msf(l.Naive.Min), msf(l.Flat.Min), msf(l.Floor.Min),
			x(ratio(float64(l.Trails.Min), float64(l.Flat.Min))), x(ratio(float64(l.Trails.Min), float64(l.Floor.Min))),
			x(ratio(float64(l.Naive.Min), float64(l.Trails.Min)))})
	}
	table(w, []string{"turns", "depth", "Trails min ms", "naive min ms", "flat min ms", "floor min ms", "Trails / flat", "Trails / floor", "naive / Trails"}, rows)

	if len(r.Latency) > 0 {
		fmt.Fprintf(w, "Over a network: the deepest chains again, Trails against the naive walk, through a client that waits %v "+
			"before every request, as a store on another machine would make it (the store itself unchanged):\n\n", r.Latency[0].RTT)
		rows = nil
		for _, l := range r.Latency {
			rows = append(rows, []string{thousands(l.History), fmt.Sprint(l.Depth), l.RTT.String(),
				msf(l.Trails.D), fmt.Sprintf("%.0f", l.Trails.Trips), msf(l.Naive.D), fmt.Sprintf("%.0f", l.Naive.Trips),
				x(ratio(float64(l.Naive.D), float64(l.Trails.D)))})
		}
		table(w, []string{"turns", "depth", "added per round trip", "Trails ms", "trips", "naive ms", "trips", "naive / Trails"}, rows)
	}

	fmt.Fprintf(w, "## 3. Persist throughput\n\n")
	fmt.Fprintf(w, "Appending turns to one session, `batch` turns per `Persist`, against raw INSERT DATA of the same triples "+
		"(seven per turn, the new turn count and digest) in requests of the same size, the two alternating call by call. "+
		"Each of the %d runs appends up to 1/%d of the target with each way and stops early once its `Persist` calls have taken %v "+
		"(%s). Throughput is turns over the summed wall time of a way's calls "+
		"in a run (content made beforehand); trips are per call.\n\n", r.Runs, r.Runs, r.PersistBudget, commitNote(r.Store))
	rows = nil
	for _, p := range r.Persist {
		col := "—"
		if p.Batch == targetBatch {
			col = verdict(ratio(p.TrailsTPS, p.RawTPS) >= 0.8)
		}
		rows = append(rows, []string{
			fmt.Sprint(p.Batch), thousands(p.Target), thousands(p.Turns),
			fmt.Sprintf("%.0f", p.TrailsTPS), fmt.Sprintf("%.0f", p.Trails.Trips),
			fmt.Sprintf("%.0f", p.RawTPS), fmt.Sprintf("%.0f", p.Raw.Trips),
			fmt.Sprintf("%.0f%%", 100*ratio(p.TrailsTPS, p.RawTPS)), col,
		})
	}
	table(w, []string{"turns per call", "target", "turns appended", "Persist turns/s", "trips per call",
		"raw turns/s", "trips per call", "Persist / raw", tPersist}, rows)

	fmt.Fprintf(w, "## 4. Store-size scaling\n\n")
	if sc := r.Scaling; sc != nil {
		fmt.Fprintf(w, "`Store.Load` of a %s-turn fork at depth %d with few, then many other turns in the store "+
			"(bulk-loaded filler sessions of realistic turns of 200 to 400 characters, each turn's content distinct). "+
			"Before each measurement the disk is synced and the fork loaded until its load time has settled "+
			"(at least %d times; see `warmUp`); then %d measured loads, %v apart, give the median and the fastest.\n\n",
			thousands(sc.Turns), sc.Depth, r.WarmLoads, sc.Runs, sc.Gap)
		rows = nil
		for i, s := range sc.Rows {
			rr, col := "1.00×", "—"
			if i > 0 {
				rr = x(ratio(float64(s.Load.D), float64(sc.Rows[0].Load.D)))
				col = verdict(ratio(float64(s.Load.D), float64(sc.Rows[0].Load.D)) <= 1.5)
			}
			rows = append(rows, []string{thousands(s.OtherTurns), thousands(s.Quads), mb(s.DiskBytes),
				msf(s.Load.D), msf(s.Load.Min), fmt.Sprintf("%.0f", s.Load.Trips), kb(s.Load.Bytes), rr,
				x(ratio(float64(s.Load.Min), float64(sc.Rows[0].Load.Min))), col})
		}
		table(w, []string{"other turns", "quads in store", storeDisk(r.Store) + " MiB on disk", "Load ms", "fastest ms", "trips", "KB", "ratio", "fastest ratio", tScaling}, rows)
	}

	fmt.Fprintf(w, "## 5. Client cost\n\n")
	fmt.Fprintf(w, "Allocations of the Go client per loaded turn (runtime.MemStats over %d loads, as `-benchmem` counts them):\n\n", r.Runs)
	rows = nil
	for _, a := range r.Alloc {
		rows = append(rows, []string{a.What, thousands(a.Turns), fmt.Sprintf("%.1f", a.AllocsPerTurn),
			fmt.Sprintf("%.0f", a.BytesPerTurn), fmt.Sprintf("%.0f", a.ContentPerTrn), x(ratio(a.BytesPerTurn, a.ContentPerTrn))})
	}
	table(w, []string{"session", "turns", "allocs per turn", "bytes per turn", "content bytes per turn", "bytes / content"}, rows)
	rs := r.RSS
	fmt.Fprintf(w, "Peak memory of loading one large session, in a child process that does nothing else "+
		"(VmHWM of /proc/self/status after the load). The session is bulk-loaded beforehand as N-Quads with the triples Persist writes (%s).\n\n", rs.Store.Round(time.Second))
	table(w, []string{"turns", "content MiB", "RSS before MiB", "peak RSS MiB", "live heap after GC MiB", "heap spans in use MiB", "load s", "peak / content", tRSS},
		[][]string{{thousands(rs.Turns), mb(rs.ContentBytes), mb(rs.BaseRSS), mb(rs.PeakRSS), mb(rs.HeapLive), mb(rs.HeapInUse),
			fmt.Sprintf("%.2f", rs.Load.Seconds()), x(rs.Ratio()), verdict(rs.ContentBytes > 0 && rs.Ratio() < 4)}})

	fmt.Fprintf(w, "## 6. Concurrency\n\n")
	if r.Scaling != nil {
		fmt.Fprintf(w, "Loads per second of the %s-turn fork at depth %d by concurrent readers (one Store, one client), "+
			"while one writer appends one turn per `Persist` to a session of its own; both share the machine's cores with %s. "+
			"Latencies are over all measured loads.\n\n", thousands(r.Scaling.Turns), r.Scaling.Depth, storeName(r.Store))
	}
	rows = nil
	for _, c := range r.Concurrency {
		rows = append(rows, []string{fmt.Sprint(c.Readers), fmt.Sprintf("%.1f", c.LoadsPerSec), msf(c.P50), msf(c.P95), fmt.Sprintf("%.1f", c.AppendsPerSe)})
	}
	table(w, []string{"readers", "loads/s", "p50 ms", "p95 ms", "writer appends/s"}, rows)
}

// findingsOf says how many findings Check reported on the wide tree's
// store, by rule.
func findingsOf(wt *wideTree) string {
	var rules []string
	for _, r := range slices.Sorted(maps.Keys(wt.FindingRules)) {
		rules = append(rules, fmt.Sprintf("%s %s", r, thousands(wt.FindingRules[r])))
	}
	if len(rules) == 0 {
		return fmt.Sprintf("%s findings", thousands(wt.Findings))
	}
	return fmt.Sprintf("%s findings (%s)", thousands(wt.Findings), strings.Join(rules, ", "))
}

// checkCall names the check row's call: without its SHACL shapes on a
// store that has no SHACL endpoint.
func checkCall(wt *wideTree) string {
	if wt.NoSHACL != "" {
		return fmt.Sprintf("`Check()` (`check`; every rule but the SHACL shapes: %s has no SHACL endpoint)", wt.NoSHACL)
	}
	return "`Check()` (`check`)"
}

// markdown writes section 7.
func (wt *wideTree) markdown(w io.Writer) {
	fmt.Fprintf(w, "## 7. Wide tree\n\n")
	fmt.Fprintf(w, "One parent of %s turns with %s forks of %d turns each (two stored through Persist, the others bulk-loaded "+
		"with INSERT DATA in the shape Persist writes, %s quads in all, in %.1f s), beside %d roots in the store. "+
		"Each way is the library call behind a `trails-admin` command; its **floor** is one hand-written SELECT of exactly the same rows "+
		"(their columns as required patterns, the principal read in the session's own graph, no OPTIONAL), "+
		"read with `kg.Client.Select` into the same descriptions. "+
		"Export writes the tree as N-Quads to a counter; check examines the whole store. "+
		"Last, `Store.Delete` with `Cascade` deletes the tree once (not a median).\n\n",
		thousands(wt.ParentTurns), thousands(wt.Forks), wt.ForkTurns, thousands(wt.Quads), wt.Setup.Seconds(), wt.Roots)
	var rows [][]string
	fl := func(what, cmd string, rowsGot int, a, b stat, col int) {
		rr := ratio(float64(a.D), float64(b.D))
		cols := []string{"—", "—", "—"}
		cols[col] = verdict(rr <= wideFloorRatio)
		rows = append(rows, append([]string{what, cmd, thousands(rowsGot), msf(a.D), fmt.Sprintf("%.0f", a.Trips), kb(a.Bytes),
			msf(b.D), kb(b.Bytes), x(rr)}, cols...))
	}
	fl("`List(Roots())`", "`sessions --roots`", wt.Roots, wt.List, wt.ListFloor, 0)
	fl("`Tree(parent)`", "`tree ID`", wt.Forks+1, wt.Tree, wt.TreeFloor, 1)
	fl("`Branches(parent)`", "—", wt.Forks, wt.Branches, wt.BranchesFloor, 2)
	tableLeft(w, 2, []string{"call", "command", "rows", "ms", "trips", "KB", "floor ms", "floor KB", "/ floor", tWideRoots, tWideTree, tWideBranch}, rows)
	tableLeft(w, 1, []string{"call", "ms", "trips", "result", tWideExport, tWideDelete}, [][]string{
		{"`Export(parent)` (`export ID`)", msf(wt.Export.D), fmt.Sprintf("%.0f", wt.Export.Trips), fmt.Sprintf("%s KB of N-Quads", kb(float64(wt.ExportBytes))),
			verdict(wt.Export.D > 0 && wt.Export.D <= wideExportMax), "—"},
		{checkCall(wt), msf(wt.Check.D), fmt.Sprintf("%.0f", wt.Check.Trips), findingsOf(wt), "—", "—"},
		{"`Delete(parent, DeleteOptions{Cascade: true})` (`delete ID --cascade`)", msf(wt.Delete), fmt.Sprint(wt.DeleteTrips),
			fmt.Sprintf("%s sessions, %.0f/s", thousands(wt.DeleteSteps), wt.DeleteRate()), "—", verdict(wt.DeleteRate() >= wideDeleteRate)},
	})
}
