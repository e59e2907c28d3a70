package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// appendResult is scenario 9d: single-turn appends, what an agent does
// after every event: Persist of one new turn against raw INSERT DATA of
// one turn's triples, with each way's latency per append.
type appendResult struct {
	Appends   int           `json:"appends"` // by each way, over all measured runs
	Trails    stat          `json:"trails"`  // per call
	TrailsTPS float64       `json:"trails_turns_per_s"`
	TrailsP50 time.Duration `json:"trails_p50_ns"`
	TrailsP99 time.Duration `json:"trails_p99_ns"`
	Raw       stat          `json:"raw"`
	RawTPS    float64       `json:"raw_turns_per_s"`
	RawP50    time.Duration `json:"raw_p50_ns"`
	RawP99    time.Duration `json:"raw_p99_ns"`
}

// Ratio is Persist's throughput over raw INSERT DATA's.
func (a *appendResult) Ratio() float64 { return ratio(a.TrailsTPS, a.RawTPS) }

// appendTarget is the bound on that ratio.
const appendTarget = 0.7

// appendBench runs scenario 9d: one session appended to by Persist, one
// turn per call, and one by raw INSERT DATA of the same triples (nine
// per turn, the new count and digest), alternating call by call and
// which goes first; appendsPerRun calls of each way per run after a
// warm-up run. Throughput per run is its appends over the summed wall
// time of its calls; the table shows the medians, and the percentiles
// of the latency of every measured call.
func (b *bench) appendBench(ctx context.Context) (*appendResult, error) {
	s := b.newRoot(2)
	if err := b.st.Persist(ctx, s); err != nil {
		return nil, err
	}
	raw := newRawSession(b.newRoot(2))
	if err := raw.create(ctx, b.c); err != nil {
		return nil, err
	}
	r := &appendResult{}
	var tr, rw []sample
	var trTPS, rwTPS []float64
	var trLat, rwLat []float64
	for run := 0; run <= b.plan.runs; run++ {
		contents := make([]string, b.plan.appendsPerRun)
		for i := range contents {
			contents[i] = b.gen.turn()
		}
		var st, sr sample
		for i, c := range contents {
			trails := func() error {
				s.Append(role(len(s.Turns)), c)
				return b.st.Persist(ctx, s)
			}
			rawCall := func() error { return raw.append(ctx, b.c, []string{c}) }
			ways := []struct {
				f   func() error
				sum *sample
				lat *[]float64
			}{{trails, &st, &trLat}, {rawCall, &sr, &rwLat}}
			if i%2 == 1 {
				ways[0], ways[1] = ways[1], ways[0]
			}
			for _, w := range ways {
				one, err := b.measure(w.f)
				if err != nil {
					return nil, fmt.Errorf("single-turn appends: %w", err)
				}
				w.sum.d += one.d
				w.sum.trips += one.trips
				w.sum.bytes += one.bytes
				if run > 0 {
					*w.lat = append(*w.lat, float64(one.d))
				}
			}
		}
		if run == 0 {
			continue
		}
		n := int64(len(contents))
		r.Appends += len(contents)
		tr = append(tr, sample{d: st.d / time.Duration(n), trips: st.trips / n, bytes: st.bytes / n})
		rw = append(rw, sample{d: sr.d / time.Duration(n), trips: sr.trips / n, bytes: sr.bytes / n})
		trTPS = append(trTPS, float64(n)/st.d.Seconds())
		rwTPS = append(rwTPS, float64(n)/sr.d.Seconds())
	}
	got, err := b.st.Load(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	if !slices.EqualFunc(got.Turns, s.Turns, sameTurn) {
		return nil, fmt.Errorf("single-turn appends: the session loads back with %d turns, want the %d appended", len(got.Turns), len(s.Turns))
	}
	r.Trails, r.Raw = medianOf(tr), medianOf(rw)
	r.TrailsTPS, r.RawTPS = median(trTPS), median(rwTPS)
	r.TrailsP50, r.TrailsP99 = time.Duration(percentile(trLat, 50)), time.Duration(percentile(trLat, 99))
	r.RawP50, r.RawP99 = time.Duration(percentile(rwLat, 50)), time.Duration(percentile(rwLat, 99))
	b.logf("single-turn appends: %d each way: Trails %.0f turns/s (%v trips, p50 %v, p99 %v), raw %.0f turns/s (p50 %v, p99 %v): %.0f%%",
		r.Appends, r.TrailsTPS, r.Trails.Trips, ms(r.TrailsP50), ms(r.TrailsP99), r.RawTPS, ms(r.RawP50), ms(r.RawP99), 100*r.Ratio())
	return r, nil
}

// percentile returns the p-th percentile of xs (nearest rank), 0 for none.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(k, 0), len(s)-1)]
}
