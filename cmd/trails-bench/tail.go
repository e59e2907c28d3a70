package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/trails-kg/trails/session"
)

// tailResult is scenario 8: Store.LoadTail of the last tailLast turns of
// a long root against Store.Load of a whole root holding as many turns.
type tailResult struct {
	History int  `json:"history"` // turns of the long root
	Last    int  `json:"last"`    // turns of the tail, and of the short root
	Warm    int  `json:"warm_runs"`
	Tail    stat `json:"tail"`  // LoadTail(Last) of the long root
	Whole   stat `json:"whole"` // Load of the short root
}

// Ratio is the tail load's time over the whole short load's.
func (t *tailResult) Ratio() float64 { return ratio(float64(t.Tail.D), float64(t.Whole.D)) }

// tailTarget is the bound on that ratio.
const tailTarget = 1.5

// tailLoads runs scenario 8: a root of tailTurns turns, bulk-loaded in the
// shape Persist writes (as the peak-RSS scenario does: through Persist it
// takes minutes), and a root of tailLast turns stored through Persist;
// then, run by run and alternating which goes first, LoadTail of the long
// root's last tailLast turns and Load of the short root. The warm-up run
// checks that the tail is the long root's last turns.
func (b *bench) tailLoads(ctx context.Context) (*tailResult, error) {
	long := b.newRoot(b.plan.tailTurns)
	if err := b.bulkRoot(ctx, long); err != nil {
		return nil, fmt.Errorf("tail: store a session of %d turns: %w", b.plan.tailTurns, err)
	}
	want := slices.Clone(long.Turns[len(long.Turns)-b.plan.tailLast:])
	id := long.ID
	long = nil // only its tail is needed from here on
	short := b.newRoot(b.plan.tailLast)
	if err := b.st.Persist(ctx, short); err != nil {
		return nil, fmt.Errorf("tail: store a session of %d turns: %w", b.plan.tailLast, err)
	}
	warm := max(b.plan.warmLoads, 1)
	r := &tailResult{History: b.plan.tailTurns, Last: b.plan.tailLast, Warm: warm}
	var tl, wh []sample
	for run := 0; run < warm+b.plan.runs; run++ {
		ways := []struct {
			samples *[]sample
			f       func() (*session.Session, error)
		}{
			{&tl, func() (*session.Session, error) { return b.st.LoadTail(ctx, id, session.Tail{Last: b.plan.tailLast}) }},
			{&wh, func() (*session.Session, error) { return b.st.Load(ctx, short.ID) }},
		}
		for j := range ways {
			w := ways[(j+run)%len(ways)]
			var got *session.Session
			s, err := b.measure(func() error {
				var err error
				got, err = w.f()
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("tail: %w", err)
			}
			if len(got.Turns) != b.plan.tailLast {
				return nil, fmt.Errorf("tail: got %d turns, want %d", len(got.Turns), b.plan.tailLast)
			}
			if w.samples == &tl && run == 0 && !slices.EqualFunc(got.Turns, want, sameTurn) {
				return nil, fmt.Errorf("tail: LoadTail differs from the last %d turns stored", b.plan.tailLast)
			}
			if run >= warm {
				*w.samples = append(*w.samples, s)
			}
		}
	}
	r.Tail, r.Whole = medianOf(tl), medianOf(wh)
	b.logf("tail: last %d of %d turns %v (%v trips, %.0f KB), whole %d-turn session %v: %s", r.Last, r.History,
		ms(r.Tail.D), r.Tail.Trips, r.Tail.Bytes/1024, r.Last, ms(r.Whole.D), x(r.Ratio()))
	return r, nil
}

// judge is the target of scenario 8.
func (t *tailResult) judge() target {
	return target{tTail, fmt.Sprintf("last %d of %s turns %s ms, whole %d-turn session %s ms: %s",
		t.Last, thousands(t.History), msf(t.Tail.D), t.Last, msf(t.Whole.D), x(t.Ratio())), t.Whole.D > 0 && t.Ratio() <= tailTarget}
}

// markdown writes section 8.
func (t *tailResult) markdown(w io.Writer) {
	fmt.Fprintf(w, "## 8. Tail loads\n\n")
	fmt.Fprintf(w, "`Store.LoadTail` of the last %d turns of a %s-turn root (bulk-loaded in the shape Persist writes) "+
		"against `Store.Load` of a whole %d-turn root stored through Persist, alternating which goes first; "+
		"the median of %d runs after %d warm-up runs.\n\n", t.Last, thousands(t.History), t.Last, t.Tail.Runs, t.Warm)
	table(w, []string{"history", "tail ms", "tail trips", "tail KB", "whole ms", "whole trips", "whole KB", tTail},
		[][]string{{thousands(t.History), msf(t.Tail.D), fmt.Sprintf("%.0f", t.Tail.Trips), kb(t.Tail.Bytes),
			msf(t.Whole.D), fmt.Sprintf("%.0f", t.Whole.Trips), kb(t.Whole.Bytes), x(t.Ratio())}})
}
