package main

import (
	"context"
	"fmt"
	"time"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// persistRow is the persist scenario for one batch size: appending turns
// to one session with Persist, batch turns per call, against raw INSERT
// DATA of the same triples (seven per turn, the new count and digest) in
// requests of the same size.
type persistRow struct {
	Batch     int     `json:"batch"`
	Target    int     `json:"target"` // turns to append by each way, at most
	Turns     int     `json:"turns"`  // appended by each way, over all measured runs
	Trails    stat    `json:"trails"`
	TrailsTPS float64 `json:"trails_turns_per_s"`
	Raw       stat    `json:"raw"`
	RawTPS    float64 `json:"raw_turns_per_s"`
}

// persistThroughput runs scenario 3. Each batch size appends up to its
// target of turns with each way, in runs of target/runs turns. Within a
// run the two ways alternate call by call (which one goes first alternates
// too), so that a burst of load on the machine touches both alike. A run
// also stops once its Persist calls have taken the plan's time budget
// (every write is a TDB2 commit, which waits for the disk). A way's
// throughput in a run is its turns over the summed wall time of its calls,
// and the row shows the medians. Content is made before the clock starts.
// Round trips and bytes are per call.
func (b *bench) persistThroughput(ctx context.Context) ([]persistRow, error) {
	var rows []persistRow
	for _, pp := range b.plan.persist {
		batch := pp.batch
		perRun := max(pp.turns/b.plan.runs, batch)
		perRun -= perRun % batch
		row := persistRow{Batch: batch, Target: perRun * b.plan.runs}

		// Warm-up: create both sessions with a first batch.
		s := b.newRoot(batch)
		if err := b.st.Persist(ctx, s); err != nil {
			return nil, err
		}
		raw := newRawSession(b.newRoot(batch))
		if err := raw.create(ctx, b.c); err != nil {
			return nil, err
		}

		var tr, rw []sample
		var trTPS, rwTPS []float64
		for range b.plan.runs {
			contents := make([]string, perRun)
			for i := range contents {
				contents[i] = b.gen.turn()
			}
			var st, sr sample
			n := 0
			for n < perRun && (n == 0 || st.d < b.plan.persistBudget) {
				batchContents := contents[n : n+batch]
				trails := func() error {
					for _, c := range batchContents {
						s.Append(role(len(s.Turns)), c)
					}
					return b.st.Persist(ctx, s)
				}
				rawCall := func() error { return raw.append(ctx, b.c, batchContents) }
				ways := []struct {
					f   func() error
					sum *sample
				}{{trails, &st}, {rawCall, &sr}}
				if (n/batch)%2 == 1 {
					ways[0], ways[1] = ways[1], ways[0]
				}
				for _, w := range ways {
					one, err := b.measure(w.f)
					if err != nil {
						return nil, fmt.Errorf("persist: batches of %d: %w", batch, err)
					}
					w.sum.d += one.d
					w.sum.trips += one.trips
					w.sum.bytes += one.bytes
				}
				n += batch
			}
			calls := int64(n / batch)
			row.Turns += n
			tr = append(tr, sample{d: st.d, trips: st.trips / calls, bytes: st.bytes / calls})
			rw = append(rw, sample{d: sr.d, trips: sr.trips / calls, bytes: sr.bytes / calls})
			trTPS = append(trTPS, float64(n)/st.d.Seconds())
			rwTPS = append(rwTPS, float64(n)/sr.d.Seconds())
		}
		row.Trails, row.Raw = medianOf(tr), medianOf(rw)
		row.TrailsTPS, row.RawTPS = median(trTPS), median(rwTPS)
		rows = append(rows, row)
		b.logf("persist: batches of %3d: %d turns each way: Trails %.0f turns/s (%v trips per call), raw %.0f turns/s",
			batch, row.Turns, row.TrailsTPS, row.Trails.Trips, row.RawTPS)
	}
	return rows, nil
}

// rawSession is the raw INSERT DATA baseline's session: it keeps its own
// turns and a running digest, and writes each batch as one INSERT DATA.
type rawSession struct {
	s    *session.Session
	dg   *runningDigest
	head string
}

func newRawSession(s *session.Session) *rawSession {
	return &rawSession{s: s, dg: newRunningDigest()}
}

// create writes the session's metadata and its turns so far.
func (r *rawSession) create(ctx context.Context, c *kg.Client) error {
	var d kg.Data
	g := addRootSession(&d, r.s.ID, r.s.Principal, time.Now())
	for _, t := range r.s.Turns {
		r.head = r.dg.add(t)
		addTurn(&d, g, t, r.dg.chain)
	}
	addHead(&d, g, len(r.s.Turns), r.head)
	u, err := d.InsertData()
	if err != nil {
		return err
	}
	return c.Update(ctx, u)
}

// append writes turns with the given contents: their seven triples each
// and the session's new count and digest, in one INSERT DATA (the old
// count and digest stay: a baseline need not clean up).
func (r *rawSession) append(ctx context.Context, c *kg.Client, contents []string) error {
	var d kg.Data
	g := sessionIRI(r.s.ID)
	for _, content := range contents {
		t := r.s.Append(role(len(r.s.Turns)), content)
		r.head = r.dg.add(t)
		addTurn(&d, g, t, r.dg.chain)
	}
	addHead(&d, g, len(r.s.Turns), r.head)
	u, err := d.InsertData()
	if err != nil {
		return err
	}
	return c.Update(ctx, u)
}
