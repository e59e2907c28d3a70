package main

import (
	"context"
	"fmt"
	"io"
)

// agentResult is scenario 9, the targets of issue 13 that concern an
// agent's sessions: structured turns, a 16 MiB turn, a load with state
// and single-turn appends (the tail loads are scenario 8).
type agentResult struct {
	Loop    *loopResult    `json:"agent_loop"`
	BigTurn *bigTurnResult `json:"big_turn"`
	State   *stateResult   `json:"load_with_state"`
	Appends *appendResult  `json:"single_turn_appends"`
}

// agent runs scenario 9: single-turn appends first (the store is
// smallest then), the agent loop, the big turn, the load with state.
func (b *bench) agent(ctx context.Context) (*agentResult, error) {
	var r agentResult
	var err error
	if r.Appends, err = b.appendBench(ctx); err != nil {
		return nil, err
	}
	if r.Loop, err = b.loopBench(ctx, b.st); err != nil {
		return nil, err
	}
	if r.BigTurn, err = b.bigTurnBench(ctx); err != nil {
		return nil, err
	}
	if r.State, err = b.stateBench(ctx); err != nil {
		return nil, err
	}
	return &r, nil
}

// judge returns the targets of scenario 9.
func (a *agentResult) judge() []target {
	l, g, s, p := a.Loop, a.BigTurn, a.State, a.Appends
	ts := []target{
		{tLoop, fmt.Sprintf("Persist %.1f loops/s, raw INSERT DATA of the same %d triples %.1f loops/s: %.0f%%",
			l.TrailsLPS, l.Triples, l.RawLPS, 100*l.Ratio()), l.RawLPS > 0 && l.Ratio() >= loopTarget},
	}
	ts = append(ts, g.judge()...)
	return append(ts, []target{
		{tStateTrips, fmt.Sprintf("round trips of Load with state: %.0f (%s turns, depth %d)", s.Trails.Trips, thousands(s.History), s.Depth),
			s.Trails.Trips > 0 && s.Trails.Trips <= stateTrips},
		{tStateFloor, fmt.Sprintf("Load with state %s ms, floor %s ms: %s", msf(s.Trails.D), msf(s.Floor.D), x(s.Ratio())),
			s.Floor.D > 0 && s.Ratio() <= stateFloorTarget},
		{tAppend, fmt.Sprintf("Persist %.0f turns/s (p50 %s ms, p99 %s ms, %.0f trip), raw INSERT DATA %.0f turns/s (p50 %s ms, p99 %s ms): %.0f%%",
			p.TrailsTPS, msf(p.TrailsP50), msf(p.TrailsP99), p.Trails.Trips, p.RawTPS, msf(p.RawP50), msf(p.RawP99), 100*p.Ratio()),
			p.RawTPS > 0 && p.Ratio() >= appendTarget},
	}...)
}

// markdown writes section 9.
func (a *agentResult) markdown(w io.Writer) {
	fmt.Fprintf(w, "## 9. Agent sessions\n\n")
	fmt.Fprintf(w, "Issue 13's targets for what an agent writes and reads (the tail loads are section 8). "+
		"Throughput per run is the calls over the summed wall time of a way's calls, the two ways alternating call by call; "+
		"the tables show the medians over the runs, and latency percentiles over every measured call.\n\n")

	l := a.Loop
	fmt.Fprintf(w, "**Structured turns.** One agent loop per `Persist`: a user's question, a model turn with a tool call, "+
		"model, finish reason and token usage, the tool's result, the model's answer (four structured turns, content made beforehand), "+
		"appended to a stored session; against one INSERT DATA of exactly the triples Persist writes for them "+
		"(read back from a template session that Persist stored with the same turns, renamed into another session's graph), "+
		"with a new count and digest.\n\n")
	table(w, []string{"loops", "triples per loop", "Persist loops/s", "ms per call", "trips", "raw loops/s", "ms per call", "trips", "Persist / raw", tLoop},
		[][]string{{thousands(l.Loops), fmt.Sprint(l.Triples), fmt.Sprintf("%.1f", l.TrailsLPS), msf(l.Trails.D), fmt.Sprintf("%.0f", l.Trails.Trips),
			fmt.Sprintf("%.1f", l.RawLPS), msf(l.Raw.D), fmt.Sprintf("%.0f", l.Raw.Trips), fmt.Sprintf("%.0f%%", 100*l.Ratio()),
			verdict(l.RawLPS > 0 && l.Ratio() >= loopTarget)}})

	a.BigTurn.markdown(w)

	s := a.State
	fmt.Fprintf(w, "**Load with state.** `Store.Load` of the leaf of a chain of depth %d (%s turns, every session of app %q starting "+
		"with values of its own, user: and app: keys; %d of them with start values or a turn's delta, a removal now and then), "+
		"its state included (%d keys), against its floor: one hand-written SELECT (`queries/floor-state.rq`) of exactly the "+
		"history's turns, their changes, the sessions' start values and the shared values, the sessions and ranges given, "+
		"read into turns and values.\n\n", s.Depth, thousands(s.History), stateApp, s.Changes, s.Keys)
	table(w, []string{"turns", "depth", "Load ms", "trips", "KB", "floor ms", "trips", "KB", "Load / floor", tStateTrips, tStateFloor},
		[][]string{{thousands(s.History), fmt.Sprint(s.Depth), msf(s.Trails.D), fmt.Sprintf("%.0f", s.Trails.Trips), kb(s.Trails.Bytes),
			msf(s.Floor.D), fmt.Sprintf("%.0f", s.Floor.Trips), kb(s.Floor.Bytes), x(s.Ratio()),
			verdict(s.Trails.Trips > 0 && s.Trails.Trips <= stateTrips), verdict(s.Floor.D > 0 && s.Ratio() <= stateFloorTarget)}})

	p := a.Appends
	fmt.Fprintf(w, "**Single-turn appends.** `Persist` of one new turn of a session this value stored before, what an agent does "+
		"after every event, against a raw one-turn INSERT DATA of the same triples (nine, the new count and digest).\n\n")
	table(w, []string{"appends", "Persist turns/s", "trips", "p50 ms", "p99 ms", "raw turns/s", "trips", "p50 ms", "p99 ms", "Persist / raw", tAppend},
		[][]string{{thousands(p.Appends), fmt.Sprintf("%.0f", p.TrailsTPS), fmt.Sprintf("%.0f", p.Trails.Trips), msf(p.TrailsP50), msf(p.TrailsP99),
			fmt.Sprintf("%.0f", p.RawTPS), fmt.Sprintf("%.0f", p.Raw.Trips), msf(p.RawP50), msf(p.RawP99), fmt.Sprintf("%.0f%%", 100*p.Ratio()),
			verdict(p.RawTPS > 0 && p.Ratio() >= appendTarget)}})
}
