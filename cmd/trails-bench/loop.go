package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// loopResult is scenario 9a: a typical agent loop (a user's question, a
// model turn with a tool call and usage, the tool's result, the model's
// answer), four structured turns per Persist, against raw INSERT DATA of
// exactly the triples Persist writes for them.
type loopResult struct {
	Loops     int     `json:"loops"`            // appended by each way, over all measured runs
	Triples   int     `json:"triples_per_loop"` // in each way's request: the four turns' and the new count and digest
	Trails    stat    `json:"trails"`           // per call
	TrailsLPS float64 `json:"trails_loops_per_s"`
	Raw       stat    `json:"raw"`
	RawLPS    float64 `json:"raw_loops_per_s"`
}

// Ratio is Persist's throughput over raw INSERT DATA's.
func (l *loopResult) Ratio() float64 { return ratio(l.TrailsLPS, l.RawLPS) }

// loopTarget is the bound on that ratio.
const loopTarget = 0.8

// agentLoop returns the four turns of agent loop k, created at t: what an
// ADK or langchaingo agent persists for one question answered with one
// tool call.
func (b *bench) agentLoop(k int, t time.Time) []session.Turn {
	call := fmt.Sprintf("call_%d_%s", k, strings.Repeat("x", 8))
	args, _ := json.Marshal(map[string]any{"query": b.gen.text(60), "max_results": 5, "lang": "en"})
	result, _ := json.Marshal(map[string]any{"results": []string{b.gen.text(300), b.gen.text(300)}, "took_ms": 41})
	usage := func(in, out int64) *session.Usage {
		return &session.Usage{Input: in, Output: out, Cached: in / 2, Reasoning: out / 4, Total: in + out}
	}
	question := b.gen.turn()
	answer := b.gen.turn()
	at := func(i int) time.Time { return t.Add(time.Duration(i) * time.Millisecond) }
	return []session.Turn{
		{Role: "user", Content: question, Created: at(0), Structure: &session.Structure{Author: "user",
			Parts: []session.Part{{Kind: session.PartText, Text: question}}}},
		{Role: "assistant", Created: at(1), Structure: &session.Structure{Author: "planner", InvocationID: fmt.Sprintf("inv-%d", k),
			Model: "gemini-2.5-flash", FinishReason: "tool_calls", Usage: usage(1800, 40),
			Parts: []session.Part{{Kind: session.PartToolCall, CallID: call, ToolName: "web_search", Arguments: args}}}},
		{Role: "tool", Content: string(result), Created: at(2), Structure: &session.Structure{Author: "web_search", InvocationID: fmt.Sprintf("inv-%d", k),
			Parts: []session.Part{{Kind: session.PartToolResult, CallID: call, ToolName: "web_search", Result: result}}}},
		{Role: "assistant", Content: answer, Created: at(3), Structure: &session.Structure{Author: "planner", InvocationID: fmt.Sprintf("inv-%d", k),
			Model: "gemini-2.5-flash", FinishReason: "stop", Usage: usage(2600, 310),
			Parts: []session.Part{{Kind: session.PartText, Text: answer}}}},
	}
}

// loopBench runs scenario 9a through store (the benchmark's Store, or
// scenario 11's with signing or without). A template session is stored
// through Persist first with every loop the runs will append; its graph,
// read back as N-Triples, gives for each loop exactly the triples Persist
// wrote for its turns (subjects under the loop's turn IRIs). Then, call
// by call and alternating which goes first, Persist appends loop k to a
// second session (the same turns, so the same triples in its graph) and
// the raw way sends one INSERT DATA of the template's triples of loop k
// renamed into a third session's graph, with a new count and digest (2
// triples, as Persist's update replaces). Content is made beforehand.
func (b *bench) loopBench(ctx context.Context, store *session.Store) (*loopResult, error) {
	perRun := b.plan.loopsPerRun
	total := perRun * (b.plan.runs + 1) // the first run warms up
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	loops := make([][]session.Turn, total)
	for k := range loops {
		loops[k] = b.agentLoop(k, t0.Add(time.Duration(k)*time.Second))
	}
	tmpl := session.New(principal)
	s := session.New(principal)
	for _, l := range loops {
		for _, t := range l {
			tmpl.AppendTurn(t)
		}
	}
	if err := b.persistInSteps(ctx, store, tmpl, 400); err != nil {
		return nil, fmt.Errorf("agent loop: store the template: %w", err)
	}
	nt, err := b.c.GetGraph(ctx, sessionIRI(tmpl.ID))
	if err != nil {
		return nil, fmt.Errorf("agent loop: read the template: %w", err)
	}
	raw := session.New(principal)
	if err := newRawSession(raw).create(ctx, b.c); err != nil {
		return nil, err
	}
	perLoop, err := loopTriples(nt, tmpl.ID, raw.ID, total)
	if err != nil {
		return nil, err
	}
	// The Trails session starts stored, empty, so that every measured
	// Persist is an append.
	if err := store.Persist(ctx, s); err != nil {
		return nil, err
	}
	r := &loopResult{}
	var tr, rw []sample
	var trLPS, rwLPS []float64
	dg := newRunningDigest()
	for run := 0; run <= b.plan.runs; run++ {
		var st, sr sample
		for j := range perRun {
			k := run*perRun + j
			trails := func() error {
				for _, t := range loops[k] {
					s.AppendTurn(t)
				}
				return store.Persist(ctx, s)
			}
			rawCall := func() error {
				var buf bytes.Buffer
				buf.WriteString("INSERT DATA {\n  GRAPH ")
				buf.WriteString(mustTerm(sessionIRI(raw.ID)))
				buf.WriteString(" {\n")
				buf.WriteString(perLoop[k])
				for _, t := range loops[k] {
					dg.add(t)
				}
				fmt.Fprintf(&buf, "%s %s %s .\n", mustTerm(sessionIRI(raw.ID)), mustTerm(pOwn), mustTerm(kg.Int((k+1)*4)))
				fmt.Fprintf(&buf, "%s %s %s .\n", mustTerm(sessionIRI(raw.ID)), mustTerm(pHead), mustTerm(kg.String(dg.chain)))
				buf.WriteString("  }\n}\n")
				return b.c.Update(ctx, buf.String())
			}
			ways := []struct {
				f   func() error
				sum *sample
			}{{trails, &st}, {rawCall, &sr}}
			if k%2 == 1 {
				ways[0], ways[1] = ways[1], ways[0]
			}
			for _, w := range ways {
				one, err := b.measure(w.f)
				if err != nil {
					return nil, fmt.Errorf("agent loop %d: %w", k, err)
				}
				w.sum.d += one.d
				w.sum.trips += one.trips
				w.sum.bytes += one.bytes
			}
		}
		if run == 0 {
			continue
		}
		n := int64(perRun)
		r.Loops += perRun
		tr = append(tr, sample{d: st.d / time.Duration(n), trips: st.trips / n, bytes: st.bytes / n})
		rw = append(rw, sample{d: sr.d / time.Duration(n), trips: sr.trips / n, bytes: sr.bytes / n})
		trLPS = append(trLPS, float64(n)/st.d.Seconds())
		rwLPS = append(rwLPS, float64(n)/sr.d.Seconds())
	}
	got, err := store.Load(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	if len(got.Turns) != len(s.Turns) || got.Turns[1].Structure == nil || len(got.Turns[1].Structure.Parts) != 1 ||
		got.Turns[1].Structure.Parts[0].Kind != session.PartToolCall {
		return nil, fmt.Errorf("agent loop: the session loads back with %d turns, want %d with their tool calls", len(got.Turns), len(s.Turns))
	}
	r.Triples = strings.Count(perLoop[0], "\n") + 2
	r.Trails, r.Raw = medianOf(tr), medianOf(rw)
	r.TrailsLPS, r.RawLPS = median(trLPS), median(rwLPS)
	b.logf("agent loop: %d loops each way, %d triples per loop: Trails %.0f loops/s (%v trips per call), raw %.0f loops/s: %.0f%%",
		r.Loops, r.Triples, r.TrailsLPS, r.Trails.Trips, r.RawLPS, 100*r.Ratio())
	return r, nil
}

// loopTriples splits the N-Triples of the template session's graph by
// loop (four turns each): the triples whose subject is a loop's turn or
// lies under its IRI (parts, tool calls, the model invocation), renamed
// from session from to session to. It checks that every loop has the
// same number of triples.
func loopTriples(nt []byte, from, to string, loops int) ([]string, error) {
	out := make([]strings.Builder, loops)
	g := ontology.SessionIRI(from)
	turnPrefix := ontology.TurnIRI(g, 0)
	turnPrefix = "<" + turnPrefix[:len(turnPrefix)-1] // the IRI up to the index
	for _, line := range strings.Split(string(nt), "\n") {
		rest, ok := strings.CutPrefix(line, turnPrefix)
		if !ok {
			continue
		}
		end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if end <= 0 {
			continue
		}
		var i int
		fmt.Sscan(rest[:end], &i)
		if i/4 >= loops {
			return nil, fmt.Errorf("agent loop: turn %d in the template, beyond its %d loops", i, loops)
		}
		out[i/4].WriteString(strings.ReplaceAll(line, from, to))
		out[i/4].WriteByte('\n')
	}
	ss := make([]string, loops)
	for k := range out {
		ss[k] = out[k].String()
		if n, n0 := strings.Count(ss[k], "\n"), strings.Count(ss[0], "\n"); n != n0 || n == 0 {
			return nil, fmt.Errorf("agent loop: loop %d has %d triples in the template, loop 0 %d", k, n, n0)
		}
	}
	return ss, nil
}

// mustTerm serializes a term the benchmark made itself.
func mustTerm(t rdf.Term) string {
	s, err := kg.Term(t)
	if err != nil {
		panic(err)
	}
	return s
}
