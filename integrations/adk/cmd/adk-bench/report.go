package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/trails-kg/trails/internal/benchreport"
)

// results is everything one run measured, and the targets judged.
type results struct {
	Command string                `json:"command"`
	Plan    plan                  `json:"-"`
	Date    time.Time             `json:"date"`
	Machine machine               `json:"machine"`
	LoadAvg []string              `json:"load_avg"` // at the start and at the end
	Append  appendResult          `json:"append"`
	Get     getResult             `json:"get"`
	Fork    []forkRow             `json:"fork"` // by the plan's lengths, shortest first
	Writers map[string]writersRow `json:"writers"`
	Many    map[string]writersRow `json:"many_writers"`
	Pair    map[string]pairRow    `json:"pair"`
	Phases  []phase               `json:"phases"`
	Wall    time.Duration         `json:"wall_ns"`
	Targets []benchreport.Target  `json:"targets"`
	Summary string                `json:"summary"` // of the targets, as the report writes it under them

	// Fuseki's floor for each writers scenario: its Trails appends as
	// raw INSERT DATA, as many a request as there are writers.
	WritersFloor writersFloor `json:"writers_floor"`
	ManyFloor    writersFloor `json:"many_writers_floor"`
	// Oxigraph's, of the Trails appends on it.
	OxigraphWritersFloor writersFloor `json:"oxigraph_writers_floor"`
	OxigraphManyFloor    writersFloor `json:"oxigraph_many_writers_floor"`
}

// sections are the report's headings, in order (the test checks them).
var sections = []string{
	"### Targets",
	"### Appends",
	"### Get",
	"### Fork",
	"### Concurrent writers, a session each",
	"### Many concurrent writers",
	"### Two writers on one session",
	"### Where the time went",
}

// The bars.
const (
	getBar       = 1.0  // Trails' Get p50 over SQLite's, at most
	forkBar      = 10.0 // the shorter judged fork: ADK's copy over Trails' fork, at least
	longForkBar  = 50.0 // the longer one
	sameBytes    = 0.01 // a fork's bytes received at the two judged lengths may differ by this share of the larger
	writersBar   = 2.0  // the concurrent writers' wall over SQLite's, at most
	manyRateBar  = 1000 // the many writers' acknowledged appends per second, at least
	commitsBar   = 0.2  // the many writers' update requests per append, below
	appendRawBar = 1.2  // a lone append's p50 over raw INSERT DATA's, at most
)

// targetNames are the targets' names for plan p, in order (the test
// checks them).
func targetNames(p plan) []string {
	f0, f1 := p.forks[len(p.forks)-2], p.forks[len(p.forks)-1]
	return []string{
		fmt.Sprintf("Get of %s events ≤ %.1f× SQLite's p50", thousands(p.appends), getBar),
		fmt.Sprintf("Get of %s events ≤ %.1f× SQLite's p50", thousands(p.longGet), getBar),
		fmt.Sprintf("Get with `NumRecentEvents: %d` ≤ %.1f× SQLite's p50", p.tail, getBar),
		fmt.Sprintf("fork of %s events ≥ %.0f× faster than ADK's copy", thousands(f0), forkBar),
		fmt.Sprintf("fork of %s events ≥ %.0f× faster than ADK's copy", thousands(f1), longForkBar),
		fmt.Sprintf("fork: bytes received the same at %s and %s events (±%.0f%%)", thousands(f0), thousands(f1), 100*sameBytes),
		"fork: quads stored the same at every length",
		fmt.Sprintf("%d writers × %d appends: every append acknowledged and read back", p.writers, p.perWriter),
		fmt.Sprintf("%d writers × %d appends: wall ≤ %.0f× SQLite's", p.writers, p.perWriter, writersBar),
		floorName(p.writers, p.perWriter),
		fmt.Sprintf("%d writers × %d appends: ≥ %s appends/s", p.many, p.perMany, thousands(manyRateBar)),
		floorName(p.many, p.perMany),
		fmt.Sprintf("%d writers × %d appends: every append acknowledged and read back", p.many, p.perMany),
		fmt.Sprintf("%d writers × %d appends: commits per append < %.1f", p.many, p.perMany, commitsBar),
		fmt.Sprintf("%d writers × %d appends: append p50 / p99", p.many, p.perMany),
		"a refused append is never left in the caller's value",
		fmt.Sprintf("lone append p50 ≤ %.1f× Fuseki's raw INSERT DATA", appendRawBar),
		"lone append p50 against SQLite",
	}
}

// floorName is the name of the Targets row of Fuseki's floor for n
// writers of per appends each (reported, with no bar).
func floorName(n, per int) string {
	return fmt.Sprintf("%d writers × %d appends: Fuseki's floor (raw INSERT DATA, %d appends a request)", n, per, n)
}

// ratio returns a/b.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// rateRatio returns a/b, 0 when b is 0.
func rateRatio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// thousands writes n with comma separators: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// kb formats bytes in kilobytes (1,000 bytes), as the tables do.
func kb(n int64) string { return fmt.Sprintf("%.1f KB", float64(n)/1000) }

// judge fills r.Targets and r.Summary. The verdicts are Trails on
// Fuseki's; each target's last cell gives Trails on Oxigraph's figures,
// with no verdict.
func (r *results) judge() {
	p, g, a := r.Plan, r.Get, r.Append
	names := targetNames(p)
	var f0, f1 forkRow
	if n := len(r.Fork); n >= 2 {
		f0, f1 = r.Fork[n-2], r.Fork[n-1]
	}
	ws, wp, wt := r.Writers[sqliteBackend.String()], r.Writers[postgresBackend.String()], r.Writers[trailsBackend.String()]
	ms64, mp, mt := r.Many[sqliteBackend.String()], r.Many[postgresBackend.String()], r.Many[trailsBackend.String()]
	ps, pp, pt := r.Pair[sqliteBackend.String()], r.Pair[postgresBackend.String()], r.Pair[trailsBackend.String()]
	wo, mo, po := r.Writers[oxigraphBackend.String()], r.Many[oxigraphBackend.String()], r.Pair[oxigraphBackend.String()]

	// pgCell is PostgreSQL's figure d beside Trails' t: d, then Trails /
	// PostgreSQL.
	pgCell := func(d, t time.Duration) string {
		return fmt.Sprintf("%s ms (Trails / PostgreSQL %.2f×)", ms(d), ratio(t, d))
	}
	// oxCell is Trails on Oxigraph's figure: d and what follows it, then
	// Oxigraph / Fuseki of what it measures (ox against fu).
	oxCell := func(d string, ox, fu float64) string {
		return fmt.Sprintf("%s; Oxigraph / Fuseki %.2f×)", d, rateRatio(ox, fu))
	}
	get := func(name string, s, pg, t, o dist, trips, recv, oTrips, oRecv int64) benchreport.Target {
		rr := ratio(t.P50, s.P50)
		return benchreport.Target{Name: name,
			Cells: []string{ms(s.P50) + " ms", pgCell(pg.P50, t.P50), fmt.Sprintf("%s ms (%.2f×; %d round trips, %s received)", ms(t.P50), rr, trips, kb(recv)),
				oxCell(fmt.Sprintf("%s ms (%.2f× SQLite's; %d round trips, %s received", ms(o.P50), ratio(o.P50, s.P50), oTrips, kb(oRecv)), float64(o.P50), float64(t.P50))},
			Got:     fmt.Sprintf("%.2f×", rr),
			Verdict: benchreport.Judge(s.P50 > 0 && t.P50 > 0 && rr <= getBar)}
	}
	fork := func(name string, f forkRow, bar float64) benchreport.Target {
		rr := ratio(f.SQLite.P50, f.Trails.P50)
		return benchreport.Target{Name: name,
			Cells: []string{ms(f.SQLite.P50) + " ms", fmt.Sprintf("%s ms (Trails %.1f× faster)", ms(f.Postgres.P50), ratio(f.Postgres.P50, f.Trails.P50)),
				fmt.Sprintf("%s ms (%.1f× faster; %d round trips, %s received)", ms(f.Trails.P50), rr, f.Trips, kb(f.Received)),
				oxCell(fmt.Sprintf("%s ms (%.1f× faster than SQLite's copy; %d round trips, %s received", ms(f.Oxigraph.P50), ratio(f.SQLite.P50, f.Oxigraph.P50), f.OxigraphTrips, kb(f.OxigraphReceived)),
					float64(f.Oxigraph.P50), float64(f.Trails.P50))},
			Got:     fmt.Sprintf("%.1f× faster", rr),
			Verdict: benchreport.Judge(f.Trails.P50 > 0 && rr >= bar)}
	}
	asAcked := func(w writersRow) string {
		return fmt.Sprintf("%d of %d acknowledged; read back: %d of %d sessions as acknowledged, %d acknowledged not stored, %d refused but stored",
			w.OK, w.Writers*w.PerWriter, w.Correct, w.Writers, w.Lost, w.Phantoms)
	}
	allAcked := func(w writersRow) bool {
		return w.Writers > 0 && w.OK == w.Writers*w.PerWriter && w.Stored == w.OK && w.Correct == w.Writers && w.Lost == 0 && w.Phantoms == 0
	}
	pairCell := func(p pairRow) string {
		return fmt.Sprintf("values hold %d and %d refused events, %d and %d events the store lacks",
			p.Writers[0].Refused, p.Writers[1].Refused, p.Writers[0].Unstored, p.Writers[1].Unstored)
	}
	clean := func(pw pairWriter) bool { return pw.Refused == 0 && pw.Unstored == 0 && pw.Prefix }
	maxB := max(f0.Received, f1.Received)
	diff := f1.Received - f0.Received
	wr := ratio(wt.Wall, ws.Wall)
	ar := ratio(a.Trails.P50, a.Floor.P50)
	wf, mf := r.WritersFloor, r.ManyFloor
	owf, omf := r.OxigraphWritersFloor, r.OxigraphManyFloor
	oar := ratio(a.Oxigraph.P50, a.OxigraphFloor.P50)

	r.Targets = []benchreport.Target{
		get(names[0], g.SQLite, g.Postgres, g.Trails, g.Oxigraph, g.Trips, g.Received, g.OxigraphTrips, g.OxigraphReceived),
		get(names[1], g.SQLiteLong, g.PostgresLong, g.TrailsLong, g.OxigraphLong, g.LongTrips, g.LongReceived, g.OxigraphLongTrips, g.OxigraphLongReceived),
		get(names[2], g.SQLiteTail, g.PostgresTail, g.TrailsTail, g.OxigraphTail, g.TailTrips, g.TailReceived, g.OxigraphTailTrips, g.OxigraphTailReceived),
		fork(names[3], f0, forkBar),
		fork(names[4], f1, longForkBar),
		{Name: names[5], Cells: []string{"—", "—", fmt.Sprintf("%s / %s", kb(f0.Received), kb(f1.Received)), fmt.Sprintf("%s / %s", kb(f0.OxigraphReceived), kb(f1.OxigraphReceived))},
			Got:     fmt.Sprintf("%s against %s", kb(f1.Received), kb(f0.Received)),
			Verdict: benchreport.Judge(maxB > 0 && float64(max(diff, -diff)) <= sameBytes*float64(maxB))},
		r.forkQuads(names[6]),
		{Name: names[7], Cells: []string{asAcked(ws), asAcked(wp), asAcked(wt), asAcked(wo)}, Verdict: benchreport.Judge(allAcked(wt))},
		{Name: names[8], Cells: []string{fmt.Sprintf("%.1f s (%d appends succeeded)", ws.Wall.Seconds(), ws.OK),
			fmt.Sprintf("%.1f s (%d appends succeeded; Trails / PostgreSQL %.2f×)", wp.Wall.Seconds(), wp.OK, ratio(wt.Wall, wp.Wall)), fmt.Sprintf("%.1f s (%.2f×)", wt.Wall.Seconds(), wr),
			oxCell(fmt.Sprintf("%.1f s (%.2f× SQLite's", wo.Wall.Seconds(), ratio(wo.Wall, ws.Wall)), float64(wo.Wall), float64(wt.Wall))},
			Got: fmt.Sprintf("%.2f×", wr), Verdict: benchreport.Judge(ws.Wall > 0 && wr <= writersBar)},
		{Name: names[9], Cells: []string{"—", "—", fmt.Sprintf("%.0f/s: wall %.1f s, %.2f× SQLite's (the bar: ≤ %.0f×)", wf.Rate(), wf.Wall.Seconds(), ratio(wf.Wall, ws.Wall), writersBar),
			fmt.Sprintf("Oxigraph's floor: %.0f/s: wall %.1f s, %.2f× SQLite's", owf.Rate(), owf.Wall.Seconds(), ratio(owf.Wall, ws.Wall))},
			Verdict: benchreport.Reported},
		{Name: names[10], Cells: []string{fmt.Sprintf("%.0f/s", ms64.Rate()), fmt.Sprintf("%.0f/s (%d in %.1f s; Trails / PostgreSQL %.2f×)", mp.Rate(), mp.OK, mp.Wall.Seconds(), rateRatio(mt.Rate(), mp.Rate())), fmt.Sprintf("%.0f/s (%d in %.1f s)", mt.Rate(), mt.OK, mt.Wall.Seconds()),
			oxCell(fmt.Sprintf("%.0f/s (%d in %.1f s", mo.Rate(), mo.OK, mo.Wall.Seconds()), mo.Rate(), mt.Rate())},
			Got: fmt.Sprintf("%.0f/s", mt.Rate()), Verdict: benchreport.Judge(mt.Rate() >= manyRateBar)},
		{Name: names[11], Cells: []string{"—", "—", fmt.Sprintf("%.0f/s: wall %.1f s, %.2f× the bar of %s/s", mf.Rate(), mf.Wall.Seconds(), mf.Rate()/manyRateBar, thousands(manyRateBar)),
			fmt.Sprintf("Oxigraph's floor: %.0f/s: wall %.1f s, %.2f× the bar of %s/s", omf.Rate(), omf.Wall.Seconds(), omf.Rate()/manyRateBar, thousands(manyRateBar))},
			Verdict: benchreport.Reported},
		{Name: names[12], Cells: []string{asAcked(ms64), asAcked(mp), asAcked(mt), asAcked(mo)}, Verdict: benchreport.Judge(allAcked(mt))},
		{Name: names[13], Cells: []string{"—", "—", fmt.Sprintf("%.3f (%d update requests for %d appends)", mt.CommitsPerAppend(), mt.Writes, mt.Writers*mt.PerWriter),
			fmt.Sprintf("%.3f (%d update requests for %d appends)", mo.CommitsPerAppend(), mo.Writes, mo.Writers*mo.PerWriter)},
			Got: fmt.Sprintf("%.3f", mt.CommitsPerAppend()), Verdict: benchreport.Judge(mt.Writers > 0 && mt.CommitsPerAppend() < commitsBar)},
		{Name: names[14], Cells: []string{fmt.Sprintf("%s / %s ms", ms(ms64.Latency.P50), ms(ms64.Latency.P99)), fmt.Sprintf("%s / %s ms", ms(mp.Latency.P50), ms(mp.Latency.P99)), fmt.Sprintf("%s / %s ms", ms(mt.Latency.P50), ms(mt.Latency.P99)),
			fmt.Sprintf("%s / %s ms", ms(mo.Latency.P50), ms(mo.Latency.P99))},
			Verdict: benchreport.Reported},
		{Name: names[15], Cells: []string{pairCell(ps), pairCell(pp), pairCell(pt), pairCell(po)}, Verdict: benchreport.Judge(clean(pt.Writers[0]) && clean(pt.Writers[1]))},
		{Name: names[16], Cells: []string{"—", "—", fmt.Sprintf("%s ms against %s ms (%.2f×)", ms(a.Trails.P50), ms(a.Floor.P50), ar),
			fmt.Sprintf("%s ms against Oxigraph's %s ms (%.2f×)", ms(a.Oxigraph.P50), ms(a.OxigraphFloor.P50), oar)},
			Got: fmt.Sprintf("%.2f×", ar), Verdict: benchreport.Judge(a.Floor.P50 > 0 && ar <= appendRawBar)},
		{Name: names[17], Cells: []string{ms(a.SQLite.P50) + " ms", pgCell(a.Postgres.P50, a.Trails.P50), fmt.Sprintf("%s ms (%.2f×)", ms(a.Trails.P50), ratio(a.Trails.P50, a.SQLite.P50)),
			oxCell(fmt.Sprintf("%s ms (%.2f× SQLite's", ms(a.Oxigraph.P50), ratio(a.Oxigraph.P50, a.SQLite.P50)), float64(a.Oxigraph.P50), float64(a.Trails.P50))},
			Verdict: benchreport.Reported},
	}
	r.Summary = benchreport.Summary(r.Targets)
}

// forkQuads judges that a fork stores as many quads whatever the length
// of the session forked.
func (r *results) forkQuads(name string) benchreport.Target {
	var sb, pb, tq, oq []string
	same := len(r.Fork) > 0
	for _, f := range r.Fork {
		sb = append(sb, fmt.Sprintf("%+d", f.SQLiteBytes))
		pb = append(pb, fmt.Sprintf("%+d", f.PostgresBytes))
		tq = append(tq, fmt.Sprintf("%+d", f.Quads))
		oq = append(oq, fmt.Sprintf("%+d", f.OxigraphQuads))
		same = same && f.Quads == r.Fork[0].Quads
	}
	var ns []string
	for _, f := range r.Fork {
		ns = append(ns, thousands(f.Events))
	}
	of := fmt.Sprintf(" (%s events)", strings.Join(ns, " / "))
	return benchreport.Target{Name: name,
		Cells: []string{strings.Join(sb, " / ") + " bytes" + of, strings.Join(pb, " / ") + " bytes" + of, strings.Join(tq, " / ") + " quads" + of,
			strings.Join(oq, " / ") + " quads" + of},
		Verdict: benchreport.Judge(same)}
}

// markdown writes the report.
func (r *results) markdown(w io.Writer) {
	m := r.Machine
	p := r.Plan
	fmt.Fprintf(w, "Run %s with `%s` (%s plan) on %d × %s, %s, %s, %s, Fuseki %s, %s, %s; ",
		r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Command, p.name, m.CPUs, m.CPUModel, m.OS, m.Go, m.Java, m.Fuseki, m.Oxigraph, m.Postgres)
	var mods []string
	for _, k := range slices.Sorted(mapKeys(m.Modules)) {
		mods = append(mods, k+" "+m.Modules[k])
	}
	fmt.Fprintf(w, "%s; checkout %s. %s.\n\n",
		strings.Join(mods, ", "), m.Source, benchreport.LoadLine(r.LoadAvg[0], r.LoadAvg[len(r.LoadAvg)-1]))

	fmt.Fprintf(w, "%s\n\n", sections[0])
	fmt.Fprintln(w, "The bars are the issues', against ADK on SQLite; ADK on PostgreSQL (default settings, a server of the bench's own on the same machine) stands beside them, with Trails / PostgreSQL. "+
		"The results judge Trails on Fuseki. Trails on Oxigraph (the same service through a kg client of the `oxigraph` profile, on an Oxigraph of the bench's own, RocksDB on disk) has its figures in the last column, "+
		"with Oxigraph / Fuseki (Trails on each; for rates, Oxigraph's rate over Fuseki's), and no verdict. "+
		"The two stores do not promise the same: TDB2 syncs its files to disk at every commit, Oxigraph 0.5.13's server does not sync its write-ahead log at each update "+
		"(under strace, 20 `INSERT DATA` requests made no fsync or fdatasync call, 2026-11-28): an update it acknowledged survives its process's crash, not the machine's.")
	fmt.Fprintln(w)
	benchreport.WriteTargets(w, []string{"ADK on SQLite", "ADK on PostgreSQL", "Trails on Fuseki", "Trails on Oxigraph"}, r.Targets)

	a := r.Append
	fmt.Fprintf(w, "%s\n\n", sections[1])
	fmt.Fprintf(w, "%d appends of the same events into one session on each backend, after %d to warm up; the six ways take turns event by event. "+
		"A store's floor is one INSERT DATA into that store, per append, of the triples the Trails append on it inserted (%.0f triples, %.1f KB of SPARQL), into a graph of its own; "+
		"Trails on each store is compared with that store's floor.\n\n",
		a.Trails.N, p.warmup, a.Triples, a.FloorLen/1000)
	fmt.Fprintln(w, "| way | p50 ms | p99 ms | max ms | Trails on Fuseki / this, p50 | Trails on Oxigraph / this, p50 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, row := range []struct {
		name   string
		d      dist
		fu, ox bool // whether Trails on Fuseki, on Oxigraph, is compared with it
	}{
		{"ADK on SQLite: `AppendEvent`", a.SQLite, true, true},
		{"ADK on PostgreSQL: `AppendEvent`", a.Postgres, true, true},
		{"Trails on Fuseki: `AppendEvent`", a.Trails, false, true},
		{"Fuseki's floor: raw `INSERT DATA`", a.Floor, true, false},
		{"Trails on Oxigraph: `AppendEvent`", a.Oxigraph, true, false},
		{"Oxigraph's floor: raw `INSERT DATA`", a.OxigraphFloor, false, true},
	} {
		fu, ox := "—", "—"
		if row.fu {
			fu = fmt.Sprintf("%.2f×", ratio(a.Trails.P50, row.d.P50))
		}
		if row.ox {
			ox = fmt.Sprintf("%.2f×", ratio(a.Oxigraph.P50, row.d.P50))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", row.name, ms(row.d.P50), ms(row.d.P99), ms(row.d.Max), fu, ox)
	}
	fmt.Fprintf(w, "\nA Trails append: on Fuseki %.3g round trips, %.1f KB sent, %.0f bytes received; on Oxigraph %.3g round trips, %.1f KB sent, %.0f bytes received. "+
		"Its requests (the state query only for the first append of the session value):\n\n",
		a.Trips, a.Sent/1000, a.Received, a.OxigraphTrips, a.OxigraphSent/1000, a.OxigraphReceived)
	kindTable(w, a.Requests, a.OxigraphRequests)

	g := r.Get
	fmt.Fprintf(w, "\n%s\n\n", sections[2])
	fmt.Fprintf(w, "The session of the appends (%d events), %d Gets of each kind, the backends taking turns. "+
		"Trails' service keeps a cache of what Get read (`session.Cache`, on by default in the adapter), checked against the store by the chain query at every Get: "+
		"the rows without \"no cache\" are the Gets of a session read before and unchanged since, as ADK's runner reads its session at every Run; "+
		"the \"no cache\" rows are the same Gets through a service made with `adk.WithCache(nil)`, what a process's first Get of a session costs. "+
		"The long session's Gets are through the cache too. Round trips and KB received are Trails' on Fuseki / on Oxigraph.\n\n", g.Events, g.Trails.N)
	fmt.Fprintln(w, "| Get | ADK on SQLite p50 ms | ADK on PostgreSQL p50 ms | Trails on Fuseki p50 ms | Trails on Fuseki p99 ms | Trails on Oxigraph p50 ms | Trails on Oxigraph p99 ms | "+
		"Trails on Fuseki / SQLite | Trails on Fuseki / PostgreSQL | Oxigraph / Fuseki | Trails round trips | Trails KB received |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	getRow := func(name string, s, pg, t, o dist, trips, recv, oTrips, oRecv int64) {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.2f× | %.2f× | %.2f× | %d / %d | %.1f / %.1f |\n", name, ms(s.P50), ms(pg.P50), ms(t.P50), ms(t.P99), ms(o.P50), ms(o.P99),
			ratio(t.P50, s.P50), ratio(t.P50, pg.P50), ratio(o.P50, t.P50), trips, oTrips, float64(recv)/1000, float64(oRecv)/1000)
	}
	getRow(fmt.Sprintf("whole session (%d events)", g.Events), g.SQLite, g.Postgres, g.Trails, g.Oxigraph, g.Trips, g.Received, g.OxigraphTrips, g.OxigraphReceived)
	getRow(fmt.Sprintf("`NumRecentEvents: %d`", g.Tail), g.SQLiteTail, g.PostgresTail, g.TrailsTail, g.OxigraphTail, g.TailTrips, g.TailReceived, g.OxigraphTailTrips, g.OxigraphTailReceived)
	getRow(fmt.Sprintf("whole session (%d events), no cache", g.Events), g.SQLite, g.Postgres, g.Cold, g.OxigraphCold, g.ColdTrips, g.ColdReceived, g.OxigraphColdTrips, g.OxigraphColdReceived)
	getRow(fmt.Sprintf("`NumRecentEvents: %d`, no cache", g.Tail), g.SQLiteTail, g.PostgresTail, g.ColdTail, g.OxigraphColdTail,
		g.ColdTailTrips, g.ColdTailReceived, g.OxigraphColdTailTrips, g.OxigraphColdTailReceived)
	getRow(fmt.Sprintf("whole session (%d events; %d Gets each)", g.LongEvents, g.TrailsLong.N), g.SQLiteLong, g.PostgresLong, g.TrailsLong, g.OxigraphLong,
		g.LongTrips, g.LongReceived, g.OxigraphLongTrips, g.OxigraphLongReceived)
	fmt.Fprintf(w, "\nEach store's floor for a Get: one query for the raw copies of the events and their indices, nothing else (`raw-copies.rq`, parsed by the kg client): "+
		"on Fuseki %s ms for the whole session (%.1f KB), %s ms for the last %d (%.1f KB); on Oxigraph %s ms (%.1f KB) and %s ms (%.1f KB).\n",
		ms(g.Floor.P50), float64(g.FloorBytes)/1000, ms(g.FloorTail.P50), g.Tail, float64(g.FloorTailLen)/1000,
		ms(g.OxigraphFloor.P50), float64(g.OxigraphFloorBytes)/1000, ms(g.OxigraphFloorTail.P50), float64(g.OxigraphFloorTailLen)/1000)
	fmt.Fprintln(w, "\nThe requests of a whole Get:")
	fmt.Fprintln(w)
	kindTable(w, g.Requests, g.OxigraphRequests)
	fmt.Fprintln(w, "\nOf a tail Get:")
	fmt.Fprintln(w)
	kindTable(w, g.TailRequests, g.OxigraphTailRequests)
	fmt.Fprintf(w, "\nOf a Get of the session of %d events (filled for it, as the sessions forked below, each backend's sessions at once on Trails and PostgreSQL and one after the other on SQLite):\n\n", g.LongEvents)
	kindTable(w, g.LongRequests, g.OxigraphLongRequests)

	fmt.Fprintf(w, "\n%s\n\n", sections[3])
	fmt.Fprintf(w, "ADK has no fork: its way is a Get of the session, a Create and an AppendEvent of a copy of each event. Trails' is `SessionService.Fork` at the last event. "+
		"%d of each, taking turns; speed-up is ADK's copy over Trails' fork on Fuseki; sizes are the last one's: the SQLite file's growth, PostgreSQL's database's (`pg_database_size`, without the write-ahead log), "+
		"and for Fuseki the quads added (what the store holds) and the TDB2 files' growth (length and disk blocks; TDB2 grows its files in large steps and never shrinks them without a compaction). "+
		"Trails on Oxigraph's figures follow in a table of their own.\n\n", p.forkRuns)
	fmt.Fprintln(w, "| events | ADK copy on SQLite ms | ADK copy on PostgreSQL ms | Trails fork on Fuseki ms | Trails fork on Oxigraph ms | Oxigraph / Fuseki | speed-up over SQLite | speed-up over PostgreSQL | "+
		"SQLite bytes added | PostgreSQL bytes added | Trails quads added | TDB2 length added | TDB2 blocks added | Trails round trips | Trails KB sent / received |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range r.Fork {
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %.2f× | %.1f× | %.1f× | %d | %d | %d | %d | %d | %d | %.1f / %.1f |\n", f.Events, ms(f.SQLite.P50), ms(f.Postgres.P50), ms(f.Trails.P50),
			ms(f.Oxigraph.P50), ratio(f.Oxigraph.P50, f.Trails.P50), ratio(f.SQLite.P50, f.Trails.P50), ratio(f.Postgres.P50, f.Trails.P50),
			f.SQLiteBytes, f.PostgresBytes, f.Quads, f.TDBLength, f.TDBBlocks, f.Trips, float64(f.Sent)/1000, float64(f.Received)/1000)
	}
	fmt.Fprintln(w, "\nThe same forks on Oxigraph (the growth of its files, RocksDB's, is not measured: n/a):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| events | Trails fork on Oxigraph ms | speed-up over SQLite | speed-up over PostgreSQL | quads added | files added | round trips | KB sent / received |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range r.Fork {
		fmt.Fprintf(w, "| %d | %s | %.1f× | %.1f× | %d | n/a | %d | %.1f / %.1f |\n", f.Events, ms(f.Oxigraph.P50), ratio(f.SQLite.P50, f.Oxigraph.P50), ratio(f.Postgres.P50, f.Oxigraph.P50),
			f.OxigraphQuads, f.OxigraphTrips, float64(f.OxigraphSent)/1000, float64(f.OxigraphReceived)/1000)
	}
	if len(r.Fork) > 0 {
		f := r.Fork[len(r.Fork)-1]
		fmt.Fprintf(w, "\nFor comparison, one more append to the session of %d events added %d bytes to the SQLite file and %d to PostgreSQL's database; to Fuseki %d quads and %d bytes of TDB2 blocks; to Oxigraph %d quads.\n",
			f.Events, f.AppendBytes, f.AppendPGSize, f.AppendQuads, f.AppendBlocks, f.OxigraphAppendQuads)
		fmt.Fprintf(w, "\nThe requests of a fork of %d events:\n\n", f.Events)
		kindTable(w, f.Requests, f.OxigraphRequests)
	}

	fmt.Fprintf(w, "\n%s\n\n", sections[4])
	fmt.Fprintf(w, "%d writers at once, each appending %d events to a session of its own (a user each, one app: their `app:` keys are shared), going on after an error; one backend after the other. "+
		"Trails on Fuseki / this and Trails on Oxigraph / this are their walls over the row's. "+
		"Afterwards each session is read back with a Get and compared with the appends acknowledged to its writer. "+
		"On Oxigraph the kg client sends the process's updates one at a time (Oxigraph lets two conditional updates both commit: `docs/stores.md`), so its writers' requests queue in the process: expected, not worked around.\n\n", p.writers, p.perWriter)
	fmt.Fprintf(w, "%s\n\n", floorProse(r.WritersFloor, r.OxigraphWritersFloor))
	writersTable(w, r.Writers, r.WritersFloor, r.OxigraphWritersFloor)
	writersPhases(w, r.Writers, r.WritersFloor, r.OxigraphWritersFloor)
	fmt.Fprintf(w, "\n%s\n\n", sections[5])
	fmt.Fprintf(w, "The same with %d writers of %d appends each, a session each: what group commit is for. "+
		"Commits are the update requests the Trails client sent during the run (each one transaction of the store), counted by the transport. "+
		"Each store's floor as above, %d appends a request.\n\n", p.many, p.perMany, r.ManyFloor.PerRequest)
	writersTable(w, r.Many, r.ManyFloor, r.OxigraphManyFloor)
	writersPhases(w, r.Many, r.ManyFloor, r.OxigraphManyFloor)
	fmt.Fprintf(w, "\n%s\n\n", sections[6])
	fmt.Fprintf(w, "A session of %d events; two writers each Get it (a value each) and append %d events through their value at once, going on after an error. "+
		"The two writers' events have the same text (two replicas answering the same question), their ids differ. "+
		"Afterwards each value is compared with a fresh Get: does it hold events whose append was refused, or events the store lacks; is it the store's history or a prefix of it?\n\n",
		perInvocation, p.pairEvents)
	fmt.Fprintln(w, "| backend | writer | appends that succeeded | errors | events in its value | refused events in it | events in it the store lacks | value = store | value a prefix of the store |")
	fmt.Fprintln(w, "|---|---|---:|---|---:|---:|---:|---|---|")
	for _, k := range backends {
		row := r.Pair[k.String()]
		for i, pw := range row.Writers {
			fmt.Fprintf(w, "| %v (%d stored) | %d | %d of %d | %s | %d | %d | %d | %s | %s |\n", k, row.Stored, i+1, pw.OK, p.pairEvents, errList(pw.Errors), pw.Held, pw.Refused, pw.Unstored, yes(pw.Equal), yes(pw.Prefix))
		}
	}

	fmt.Fprintf(w, "\n%s\n\n", sections[7])
	fmt.Fprintln(w, "| step | seconds |")
	fmt.Fprintln(w, "|---|---:|")
	for _, ph := range r.Phases {
		fmt.Fprintf(w, "| %s | %.0f |\n", ph.Name, ph.D.Seconds())
	}
	fmt.Fprintf(w, "| **total** | **%.0f** |\n", r.Wall.Seconds())
}

// floorProse says what the writers' floor rows, Fuseki's f and
// Oxigraph's o, are.
func floorProse(f, o writersFloor) string {
	return fmt.Sprintf("Each store's floor, the last two rows, is measured in the same run right after Trails' writers on it: the triples each of their appends inserted "+
		"(taken from the update requests the Trails client sent, %.0f triples an append on Fuseki, %.0f on Oxigraph, its session renamed into a graph of the floor's), "+
		"sent as raw `INSERT DATA` of %d appends a request (group commit's best case: every request full, no condition, nothing read), "+
		"one request at a time (%.1f KB each), into the same store on disk: as many appends a second as that store takes in their shape.",
		f.Triples, o.Triples, f.PerRequest, f.Bytes/1000)
}

// writersTable writes the concurrent writers' rows of each backend, then
// the rows of the stores' floors, Fuseki's f and Oxigraph's o.
func writersTable(w io.Writer, rows map[string]writersRow, f, o writersFloor) {
	fmt.Fprintln(w, "| backend | appends acknowledged | events stored | sessions read back as acknowledged | wall s | appends/s | Trails on Fuseki / this, wall | Trails on Oxigraph / this, wall | p50 ms | p99 ms | commits per append | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	fu, ox := rows[trailsBackend.String()], rows[oxigraphBackend.String()]
	rel := func(t, this time.Duration, self bool) string {
		if self {
			return "—"
		}
		return fmt.Sprintf("%.2f×", ratio(t, this))
	}
	for _, k := range backends {
		row := rows[k.String()]
		commits := "—"
		if k.trails() {
			commits = fmt.Sprintf("%.3f", row.CommitsPerAppend())
		}
		fmt.Fprintf(w, "| %v | %d of %d | %d | %d of %d | %.1f | %.0f | %s | %s | %s | %s | %s | %s |\n", k, row.OK, row.Writers*row.PerWriter, row.Stored,
			row.Correct, row.Writers, row.Wall.Seconds(), row.Rate(), rel(fu.Wall, row.Wall, k == trailsBackend), rel(ox.Wall, row.Wall, k == oxigraphBackend),
			ms(row.Latency.P50), ms(row.Latency.P99), commits, errList(row.Errors))
	}
	for _, fl := range []struct {
		store  string
		f      writersFloor
		fu, ox string
	}{
		{"Fuseki", f, rel(fu.Wall, f.Wall, false), "—"},
		{"Oxigraph", o, "—", rel(ox.Wall, o.Wall, false)},
	} {
		fmt.Fprintf(w, "| %s's floor: raw `INSERT DATA`, %d appends a request | %d in %d requests | — | — | %.1f | %.0f | %s | %s | %s a request | %s a request | %.3f | — |\n",
			fl.store, fl.f.PerRequest, fl.f.Appends, fl.f.Requests, fl.f.Wall.Seconds(), fl.f.Rate(), fl.fu, fl.ox, ms(fl.f.Latency.P50), ms(fl.f.Latency.P99), fl.f.CommitsPerAppend())
	}
}

// writersPhases writes where the Trails writers' wall went, on each
// store: their client's requests by kind (how many, per append, their
// times, all of them together and as a share of the wall), beside the
// store's floor, and the bytes sent per append. A Store sends one
// update at a time (group commit); a batch's checks go beside the next
// update, so the shares may add up to more than the wall.
func writersPhases(w io.Writer, rows map[string]writersRow, f, o writersFloor) {
	fmt.Fprint(w, "\nWhere the Trails writers' wall went: the requests their client sent, by kind, beside the store's floor (its requests one after the other). "+
		"A Store has one write in flight at a time (a lone append, or a group commit of several writes): a SPARQL Update (`POST update`), or, on Fuseki with Trails' module, plain appends as a conditional patch (`POST conditional-patch`: each append's condition an ASK, its data an RDF Patch, the answer saying which applied). "+
		"After a SPARQL group commit one query asks its members' outcomes (checks), beside the next write, so the shares may add up to more than the wall. "+
		"A write's time is the store's evaluation of its conditions and writes plus the transfer; the floor's is the same triples' raw `INSERT DATA`.\n\n")
	fmt.Fprintln(w, "| store | request | requests | per append | p50 ms | p99 ms | all, s | share of the wall |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	var sent []string
	for _, st := range []struct {
		name string
		row  writersRow
		f    writersFloor
	}{{"Fuseki", rows[trailsBackend.String()], f}, {"Oxigraph", rows[oxigraphBackend.String()], o}} {
		if st.row.Wall <= 0 {
			continue
		}
		for _, k := range st.row.Requests {
			fmt.Fprintf(w, "| %s | `%s` | %d | %.3g | %s | %s | %.1f | %.0f%% |\n", st.name, k.Kind, k.Time.N, k.PerCall, ms(k.Time.P50), ms(k.Time.P99),
				k.Total.Seconds(), 100*k.Total.Seconds()/st.row.Wall.Seconds())
		}
		fmt.Fprintf(w, "| %s | the floor: raw `INSERT DATA`, %d appends a request | %d | %.3g | %s | %s | %.1f | — |\n", st.name, st.f.PerRequest, st.f.Requests,
			st.f.CommitsPerAppend(), ms(st.f.Latency.P50), ms(st.f.Latency.P99), st.f.Wall.Seconds())
		if n := st.row.Writers * st.row.PerWriter; n > 0 && st.f.PerRequest > 0 {
			sent = append(sent, fmt.Sprintf("on %s %.1f KB (its floor %.1f KB)", st.name, float64(st.row.Sent)/float64(n)/1000, st.f.Bytes/float64(st.f.PerRequest)/1000))
		}
	}
	if len(sent) > 0 {
		fmt.Fprintf(w, "\nBytes sent per append, every request of the run: %s.\n", strings.Join(sent, "; "))
	}
}

// kindTable writes the requests of an operation by kind, Trails on
// Fuseki's fu beside Trails on Oxigraph's ox: how many a call (one figure
// when both stores send as many, else Fuseki's / Oxigraph's) and how long
// each took on each store; "—" where a store sent none of a kind.
func kindTable(w io.Writer, fu, ox []kindStat) {
	fmt.Fprintln(w, "| request | per call | Fuseki p50 ms | Fuseki p99 ms | Oxigraph p50 ms | Oxigraph p99 ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	byKind := map[string][2]*kindStat{}
	for i, ks := range [][]kindStat{fu, ox} {
		for j := range ks {
			v := byKind[ks[j].Kind]
			v[i] = &ks[j]
			byKind[ks[j].Kind] = v
		}
	}
	for _, kind := range slices.Sorted(mapKeys(byKind)) {
		v := byKind[kind]
		var per [2]float64
		times := [2]string{"— | —", "— | —"}
		for i, k := range v {
			if k != nil {
				per[i] = k.PerCall
				times[i] = ms(k.Time.P50) + " | " + ms(k.Time.P99)
			}
		}
		perCall := fmt.Sprintf("%.3g", per[0])
		if per[0] != per[1] {
			perCall = fmt.Sprintf("%.3g / %.3g", per[0], per[1])
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", kind, perCall, times[0], times[1])
	}
}

// errList writes errors by kind, with one message each.
func errList(es []errCount) string {
	if len(es) == 0 {
		return "none"
	}
	var parts []string
	for _, e := range es {
		msg := strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(e.Example)
		parts = append(parts, fmt.Sprintf("%d × %s (e.g. “%s”)", e.N, e.Kind, msg))
	}
	return strings.Join(parts, "; ")
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
