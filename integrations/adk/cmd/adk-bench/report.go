package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
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
	Fork    []forkRow             `json:"fork"` // the short session's, then the long one's
	Writers map[string]writersRow `json:"writers"`
	Pair    map[string]pairRow    `json:"pair"`
	Phases  []phase               `json:"phases"`
	Wall    time.Duration         `json:"wall_ns"`
	Targets []target              `json:"targets"`
}

// target is one target of the issue, judged.
type target struct {
	Name    string `json:"name"`
	SQLite  string `json:"sqlite"`
	Trails  string `json:"trails"`
	Verdict string `json:"verdict"` // meets, misses, or reported (no bar)
}

// sections are the report's headings, in order (the test checks them).
var sections = []string{
	"### Targets",
	"### Appends",
	"### Get",
	"### Fork",
	"### Concurrent writers, a session each",
	"### Two writers on one session",
	"### Where the time went",
}

// targetNames are the targets' names, in order (the test checks them).
var targetNames = []string{
	"Get of the whole session faster than SQLite",
	"Get of the tail faster than SQLite",
	"fork ≥ 10× faster than a copy",
	"fork constant in size",
	"every append of the concurrent writers succeeds",
	"a refused append is never left in the caller's value",
	"append p50 ≤ 1.5× Fuseki's floor",
	"append p50 against SQLite",
}

func verdict(ok bool) string {
	if ok {
		return "meets"
	}
	return "misses"
}

// ratio returns a/b.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// judge fills r.Targets.
func (r *results) judge() {
	g, a := r.Get, r.Append
	small, long := r.Fork[0], r.Fork[len(r.Fork)-1]
	ws, wt := r.Writers[sqliteBackend.String()], r.Writers[trailsBackend.String()]
	ps, pt := r.Pair[sqliteBackend.String()], r.Pair[trailsBackend.String()]
	total := r.Plan.writers * r.Plan.perWriter
	refused := func(p pairRow) string {
		return fmt.Sprintf("values hold %d and %d refused events, %d and %d events the store lacks",
			p.Writers[0].Refused, p.Writers[1].Refused, p.Writers[0].Unstored, p.Writers[1].Unstored)
	}
	clean := func(pw pairWriter) bool { return pw.Refused == 0 && pw.Unstored == 0 && pw.Prefix }
	r.Targets = []target{
		{targetNames[0], ms(g.SQLite.P50) + " ms", fmt.Sprintf("%s ms (%.2f×)", ms(g.Trails.P50), ratio(g.Trails.P50, g.SQLite.P50)), verdict(g.Trails.P50 < g.SQLite.P50)},
		{targetNames[1], ms(g.SQLiteTail.P50) + " ms", fmt.Sprintf("%s ms (%.2f×)", ms(g.TrailsTail.P50), ratio(g.TrailsTail.P50, g.SQLiteTail.P50)), verdict(g.TrailsTail.P50 < g.SQLiteTail.P50)},
		{targetNames[2], ms(long.SQLite.P50) + " ms", fmt.Sprintf("%s ms (%.1f× faster)", ms(long.Trails.P50), ratio(long.SQLite.P50, long.Trails.P50)), verdict(ratio(long.SQLite.P50, long.Trails.P50) >= 10)},
		{targetNames[3], fmt.Sprintf("%+d / %+d bytes (%d / %d events)", small.SQLiteBytes, long.SQLiteBytes, small.Events, long.Events),
			fmt.Sprintf("%+d / %+d quads (%d / %d events)", small.Quads, long.Quads, small.Events, long.Events), verdict(small.Quads == long.Quads)},
		{targetNames[4], fmt.Sprintf("%d of %d", ws.OK, total), fmt.Sprintf("%d of %d", wt.OK, total), verdict(wt.OK == total && wt.Stored == total)},
		{targetNames[5], refused(ps), refused(pt), verdict(clean(pt.Writers[0]) && clean(pt.Writers[1]))},
		{targetNames[6], "—", fmt.Sprintf("%s ms against %s ms (%.2f×)", ms(a.Trails.P50), ms(a.Floor.P50), ratio(a.Trails.P50, a.Floor.P50)), verdict(ratio(a.Trails.P50, a.Floor.P50) <= 1.5)},
		{targetNames[7], ms(a.SQLite.P50) + " ms", fmt.Sprintf("%s ms (%.2f×)", ms(a.Trails.P50), ratio(a.Trails.P50, a.SQLite.P50)), "reported"},
	}
}

// markdown writes the report.
func (r *results) markdown(w io.Writer) {
	m := r.Machine
	p := r.Plan
	fmt.Fprintf(w, "Run %s with `%s` (%s plan) on %d × %s, %s, %s, %s, Fuseki %s; ",
		r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Command, p.name, m.CPUs, m.CPUModel, m.OS, m.Go, m.Java, m.Fuseki)
	var mods []string
	for _, k := range slices.Sorted(mapKeys(m.Modules)) {
		mods = append(mods, k+" "+m.Modules[k])
	}
	fmt.Fprintf(w, "%s; checkout %s. Load average %s at the start, %s at the end: the machine is shared, so the figures are indicative.\n\n",
		strings.Join(mods, ", "), m.Source, r.LoadAvg[0], r.LoadAvg[len(r.LoadAvg)-1])

	fmt.Fprintf(w, "%s\n\n", sections[0])
	fmt.Fprintln(w, "| target | ADK on SQLite | Trails on Fuseki | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, t := range r.Targets {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.Name, t.SQLite, t.Trails, t.Verdict)
	}

	a := r.Append
	fmt.Fprintf(w, "\n%s\n\n", sections[1])
	fmt.Fprintf(w, "%d appends of the same events into one session on each backend, after %d to warm up; the three ways take turns event by event. "+
		"The floor is one INSERT DATA, per append, of the triples that append's update inserted (%.0f triples, %.1f KB of SPARQL), into a graph of its own.\n\n",
		a.Trails.N, p.warmup, a.Triples, a.FloorLen/1000)
	fmt.Fprintln(w, "| way | p50 ms | p99 ms | max ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, row := range []struct {
		name string
		d    dist
	}{{"ADK on SQLite: `AppendEvent`", a.SQLite}, {"Trails on Fuseki: `AppendEvent`", a.Trails}, {"Fuseki's floor: raw `INSERT DATA`", a.Floor}} {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", row.name, ms(row.d.P50), ms(row.d.P99), ms(row.d.Max))
	}
	fmt.Fprintf(w, "\nA Trails append: %.3g round trips, %.1f KB sent, %.0f bytes received. Its requests (the state query only for the first append of the session value):\n\n", a.Trips, a.Sent/1000, a.Received)
	kindTable(w, a.Requests)

	g := r.Get
	fmt.Fprintf(w, "\n%s\n\n", sections[2])
	fmt.Fprintf(w, "The session of the appends (%d events), %d Gets of each kind, the backends alternating.\n\n", g.Events, g.Trails.N)
	fmt.Fprintln(w, "| Get | ADK on SQLite p50 ms | Trails p50 ms | Trails p99 ms | Trails / SQLite | Trails round trips | Trails KB received |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	fmt.Fprintf(w, "| whole session (%d events) | %s | %s | %s | %.2f× | %d | %.1f |\n", g.Events, ms(g.SQLite.P50), ms(g.Trails.P50), ms(g.Trails.P99), ratio(g.Trails.P50, g.SQLite.P50), g.Trips, float64(g.Received)/1000)
	fmt.Fprintf(w, "| `NumRecentEvents: %d` | %s | %s | %s | %.2f× | %d | %.1f |\n", g.Tail, ms(g.SQLiteTail.P50), ms(g.TrailsTail.P50), ms(g.TrailsTail.P99), ratio(g.TrailsTail.P50, g.SQLiteTail.P50), g.TailTrips, float64(g.TailReceived)/1000)
	fmt.Fprintf(w, "\nFuseki's floor for a Get: one query for the raw copies of the events and their indices, nothing else (`raw-copies.rq`, parsed by the kg client): "+
		"%s ms for the whole session (%.1f KB), %s ms for the last %d (%.1f KB).\n",
		ms(g.Floor.P50), float64(g.FloorBytes)/1000, ms(g.FloorTail.P50), g.Tail, float64(g.FloorTailLen)/1000)
	fmt.Fprintln(w, "\nThe requests of a whole Get:")
	fmt.Fprintln(w)
	kindTable(w, g.Requests)
	fmt.Fprintln(w, "\nOf a tail Get:")
	fmt.Fprintln(w)
	kindTable(w, g.TailRequests)

	fmt.Fprintf(w, "\n%s\n\n", sections[3])
	fmt.Fprintf(w, "ADK has no fork: its way is a Get of the session, a Create and an AppendEvent of a copy of each event. Trails' is `SessionService.Fork` at the last event. "+
		"%d of each, alternating; sizes are the last one's: the SQLite file's growth, and for Fuseki the quads added (what the store holds) and the TDB2 files' growth (length and disk blocks; TDB2 grows its files in large steps and never shrinks them without a compaction).\n\n", p.forkRuns)
	fmt.Fprintln(w, "| events | ADK copy ms | Trails fork ms | speed-up | ADK bytes added | Trails quads added | TDB2 length added | TDB2 blocks added | Trails round trips | Trails KB sent / received |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range r.Fork {
		fmt.Fprintf(w, "| %d | %s | %s | %.1f× | %d | %d | %d | %d | %d | %.1f / %.1f |\n", f.Events, ms(f.SQLite.P50), ms(f.Trails.P50), ratio(f.SQLite.P50, f.Trails.P50),
			f.SQLiteBytes, f.Quads, f.TDBLength, f.TDBBlocks, f.Trips, float64(f.Sent)/1000, float64(f.Received)/1000)
	}
	if len(r.Fork) > 0 {
		f := r.Fork[len(r.Fork)-1]
		fmt.Fprintf(w, "\nFor comparison, one more append to the session of %d events added %d bytes to the SQLite file; to Fuseki %d quads and %d bytes of TDB2 blocks.\n",
			f.Events, f.AppendBytes, f.AppendQuads, f.AppendBlocks)
		fmt.Fprintf(w, "\nThe requests of a fork of %d events:\n\n", r.Fork[len(r.Fork)-1].Events)
		kindTable(w, r.Fork[len(r.Fork)-1].Requests)
	}

	fmt.Fprintf(w, "\n%s\n\n", sections[4])
	fmt.Fprintf(w, "%d writers at once, each appending %d events to a session of its own (a user each, one app: their `app:` keys are shared), going on after an error; one backend after the other.\n\n", p.writers, p.perWriter)
	fmt.Fprintln(w, "| backend | appends that succeeded | events stored | wall s | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|")
	for _, k := range []backend{sqliteBackend, trailsBackend} {
		row := r.Writers[k.String()]
		fmt.Fprintf(w, "| %v | %d of %d | %d | %.1f | %s |\n", k, row.OK, p.writers*p.perWriter, row.Stored, row.Wall.Seconds(), errList(row.Errors))
	}

	fmt.Fprintf(w, "\n%s\n\n", sections[5])
	fmt.Fprintf(w, "A session of %d events; two writers each Get it (a value each) and append %d events through their value at once, going on after an error. "+
		"The two writers' events have the same text (two replicas answering the same question), their ids differ. "+
		"Afterwards each value is compared with a fresh Get: does it hold events whose append was refused, or events the store lacks; is it the store's history or a prefix of it?\n\n",
		perInvocation, p.pairEvents)
	fmt.Fprintln(w, "| backend | writer | appends that succeeded | errors | events in its value | refused events in it | events in it the store lacks | value = store | value a prefix of the store |")
	fmt.Fprintln(w, "|---|---|---:|---|---:|---:|---:|---|---|")
	for _, k := range []backend{sqliteBackend, trailsBackend} {
		row := r.Pair[k.String()]
		for i, pw := range row.Writers {
			fmt.Fprintf(w, "| %v (%d stored) | %d | %d of %d | %s | %d | %d | %d | %s | %s |\n", k, row.Stored, i+1, pw.OK, p.pairEvents, errList(pw.Errors), pw.Held, pw.Refused, pw.Unstored, yes(pw.Equal), yes(pw.Prefix))
		}
	}

	fmt.Fprintf(w, "\n%s\n\n", sections[6])
	fmt.Fprintln(w, "| step | seconds |")
	fmt.Fprintln(w, "|---|---:|")
	for _, ph := range r.Phases {
		fmt.Fprintf(w, "| %s | %.0f |\n", ph.Name, ph.D.Seconds())
	}
	fmt.Fprintf(w, "| **total** | **%.0f** |\n", r.Wall.Seconds())
}

// kindTable writes the requests of an operation by kind.
func kindTable(w io.Writer, ks []kindStat) {
	fmt.Fprintln(w, "| request | per call | p50 ms | p99 ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, k := range ks {
		fmt.Fprintf(w, "| `%s` | %.3g | %s | %s |\n", k.Kind, k.PerCall, ms(k.Time.P50), ms(k.Time.P99))
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
