package main

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// bigTurnResult is scenario 9b: Persist of one turn of bigTurnBytes
// against a Graph Store POST of the same turn as N-Quads.
type bigTurnResult struct {
	Bytes  int  `json:"bytes"` // of the turn's content
	Trails stat `json:"trails"`
	GSP    stat `json:"gsp"`
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
	r.Trails, r.GSP = medianOf(tr), medianOf(gs)
	b.logf("big turn: %.1f MiB: Persist %v (%v trips), Graph Store POST %v: %s", float64(n)/(1<<20),
		ms(r.Trails.D), r.Trails.Trips, ms(r.GSP.D), x(r.Ratio()))
	return r, nil
}
