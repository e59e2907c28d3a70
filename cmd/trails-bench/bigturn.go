package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/staged"
	"github.com/trails-kg/trails/kg"
)

// bigTurnResult is scenario 9b: Persist of one turn of bigTurnBytes
// against a Graph Store POST of the same turn as N-Quads.
type bigTurnResult struct {
	Bytes  int  `json:"bytes"` // of the turn's content
	Trails stat `json:"trails"`
	GSP    stat `json:"gsp"`
	// NoGSP says why the Graph Store POST was left out ("" when it ran):
	// the store refuses the turn's literal in N-Quads (Oxigraph's parser
	// takes no token over 16 MiB). Persist's time is then reported alone.
	NoGSP string `json:"gsp_left_out,omitempty"`
}

// oxigraphMaxToken is the longest token Oxigraph's N-Triples and N-Quads
// parsers take (its "buffer maximal size"): a longer literal is refused
// with HTTP 400 "Reached the buffer maximal size of 16777216". Trails
// sends such content in chunks (internal/staged); the baseline cannot.
const oxigraphMaxToken = 16 << 20

// gspRefuses says why the store b measures would refuse a Graph Store POST
// of a literal holding content as N-Quads, "" when it would take it.
func (b *bench) gspRefuses(content string) string {
	if b.store != kg.Oxigraph {
		return ""
	}
	if n := len(kg.String(content).Serialize(rdf.NQuads)); n > oxigraphMaxToken {
		return fmt.Sprintf("the %s MiB turn's literal is %s bytes in N-Quads, and %s's parser takes no token over %s "+
			"(HTTP 400 \"Reached the buffer maximal size\"); Persist sends it in chunks of %s MiB (internal/staged)",
			mb(int64(len(content))), thousands(n), storeName(b.store), thousands(oxigraphMaxToken), mb(staged.Chunk))
	}
	return ""
}

// Ratio is Persist's time over the Graph Store POST's.
func (t *bigTurnResult) Ratio() float64 { return ratio(float64(t.Trails.D), float64(t.GSP.D)) }

// bigTurnTarget is the bound on that ratio.
const bigTurnTarget = 1.5

// bigText returns n bytes of fresh content, valid UTF-8, made of the
// generator's turns.
func (b *bench) bigText(n int) string {
	var sb strings.Builder
	sb.Grow(n + 8192)
	for sb.Len() < n {
		sb.WriteString(b.gen.turn())
		sb.WriteString("\n\n")
	}
	s := sb.String()[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// bigTurnBench runs scenario 9b: run by run, alternating which goes
// first, Persist appends one turn of bigTurnBytes to a stored session
// (its content goes through the Graph Store into a staging graph, then
// the update) and the baseline posts the same turn's triples (nine, its
// count and digest too) as N-Quads through the Graph Store Protocol into
// another session's graph. Each turn's content is new (the store keeps a
// literal once).
func (b *bench) bigTurnBench(ctx context.Context) (*bigTurnResult, error) {
	n := b.plan.bigTurnBytes
	s := b.newRoot(1)
	if err := b.st.Persist(ctx, s); err != nil {
		return nil, err
	}
	rs := b.newRoot(1)
	raw := newRawSession(rs)
	if err := raw.create(ctx, b.c); err != nil {
		return nil, err
	}
	r := &bigTurnResult{Bytes: n}
	var tr, gs []sample
	for run := 0; run <= b.plan.runs; run++ {
		mine, theirs := b.bigText(n), b.bigText(n)
		if run == 0 {
			r.NoGSP = b.gspRefuses(theirs)
		}
		ways := []struct {
			samples *[]sample
			f       func() error
		}{
			{&tr, func() error {
				s.Append("tool", mine)
				return b.st.Persist(ctx, s)
			}},
			{&gs, func() error {
				t := rs.Append("tool", theirs)
				w := &quadWriter{}
				head := raw.dg.add(t)
				g := sessionIRI(rs.ID)
				addTurn(w, g, t, raw.dg.chain)
				addHead(w, g, len(rs.Turns), head)
				if w.err != nil {
					return w.err
				}
				return b.c.LoadQuads(ctx, w.buf.Bytes())
			}},
		}
		if r.NoGSP != "" {
			ways = ways[:1]
		}
		for j := range ways {
			w := ways[(j+run)%len(ways)]
			one, err := b.measure(w.f)
			if err != nil {
				return nil, fmt.Errorf("big turn: %w", err)
			}
			if run > 0 {
				*w.samples = append(*w.samples, one)
			}
		}
	}
	got, err := b.st.Load(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	if len(got.Turns) != len(s.Turns) || got.Turns[len(got.Turns)-1].Content != s.Turns[len(s.Turns)-1].Content {
		return nil, fmt.Errorf("big turn: the session does not load back as persisted")
	}
	r.Trails = medianOf(tr)
	if r.NoGSP != "" {
		b.logf("big turn: %.1f MiB: Persist %v (%v trips); no Graph Store POST: %s", float64(n)/(1<<20),
			ms(r.Trails.D), r.Trails.Trips, r.NoGSP)
		return r, nil
	}
	r.GSP = medianOf(gs)
	b.logf("big turn: %.1f MiB: Persist %v (%v trips), Graph Store POST %v: %s", float64(n)/(1<<20),
		ms(r.Trails.D), r.Trails.Trips, ms(r.GSP.D), x(r.Ratio()))
	return r, nil
}

// judge returns the target of scenario 9b: none when the baseline was
// left out (the report's header says why).
func (g *bigTurnResult) judge() []target {
	if g.NoGSP != "" {
		return nil
	}
	return []target{{tBigTurn, fmt.Sprintf("%s MiB turn: Persist %s ms, Graph Store POST of the same N-Quads %s ms: %s",
		mb(int64(g.Bytes)), msf(g.Trails.D), msf(g.GSP.D), x(g.Ratio())), g.GSP.D > 0 && g.Ratio() <= bigTurnTarget}}
}

// markdown writes scenario 9b's part of section 9.
func (g *bigTurnResult) markdown(w io.Writer) {
	if g.NoGSP != "" {
		fmt.Fprintf(w, "**A %s MiB turn.** `Persist` appending one tool turn of %s bytes to a stored session (the content goes ahead "+
			"through the Graph Store into a staging graph, then the conditional update); fresh content every run. "+
			"No Graph Store POST of the same turn's triples to compare with: %s.\n\n", mb(int64(g.Bytes)), thousands(g.Bytes), g.NoGSP)
		table(w, []string{"content bytes", "Persist ms", "trips"},
			[][]string{{thousands(g.Bytes), msf(g.Trails.D), fmt.Sprintf("%.0f", g.Trails.Trips)}})
		return
	}
	fmt.Fprintf(w, "**A %s MiB turn.** `Persist` appending one tool turn of %s bytes to a stored session (the content goes ahead "+
		"through the Graph Store into a staging graph, then the conditional update) against a Graph Store POST of the same turn's "+
		"triples as N-Quads; fresh content every run.\n\n", mb(int64(g.Bytes)), thousands(g.Bytes))
	table(w, []string{"content bytes", "Persist ms", "trips", "Graph Store POST ms", "trips", "Persist / POST", tBigTurn},
		[][]string{{thousands(g.Bytes), msf(g.Trails.D), fmt.Sprintf("%.0f", g.Trails.Trips), msf(g.GSP.D), fmt.Sprintf("%.0f", g.GSP.Trips),
			x(g.Ratio()), verdict(g.GSP.D > 0 && g.Ratio() <= bigTurnTarget)}})
}
