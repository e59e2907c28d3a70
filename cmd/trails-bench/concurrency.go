package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trails-kg/trails/session"
)

// concRow is scenario 6 for one number of readers: loads per second of
// the scaling scenario's fork while one writer appends a turn per Persist
// to a session of its own.
type concRow struct {
	Readers      int           `json:"readers"`
	LoadsPerSec  float64       `json:"loads_per_s"`
	P50          time.Duration `json:"p50_ns"`
	P95          time.Duration `json:"p95_ns"`
	AppendsPerSe float64       `json:"writer_appends_per_s"`
	Runs         int           `json:"runs"`
}

// concurrency runs scenario 6. Each reader count gets a warm-up window and
// runs measured windows; each window's rate is its completed loads over
// the time until the last reader stopped, and the row shows the medians.
func (b *bench) concurrency(ctx context.Context, leaf string, turns int) ([]concRow, error) {
	// The writer has a client and Store of its own (its requests are not
	// the readers'), and appends until the scenario ends.
	wc, err := b.storeClient(newCounter())
	if err != nil {
		return nil, err
	}
	wst := session.NewStore(wc)
	ws := b.newRoot(1)
	if err := wst.Persist(ctx, ws); err != nil {
		return nil, err
	}
	contents := make([]string, 512)
	for i := range contents {
		contents[i] = b.gen.turn()
	}
	var appends atomic.Int64
	wctx, stop := context.WithCancel(ctx)
	var werr error // the writer's failure, readable once done is closed
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; wctx.Err() == nil; i++ {
			ws.Append(role(len(ws.Turns)), contents[i%len(contents)])
			if err := wst.Persist(wctx, ws); err != nil {
				if wctx.Err() == nil {
					werr = err
				}
				return
			}
			appends.Add(1)
		}
	}()
	defer func() { stop(); <-done }()

	var rows []concRow
	for _, n := range b.plan.readers {
		var rates, writes []float64
		var lat []time.Duration
		for run := 0; run <= b.plan.runs; run++ {
			a0 := appends.Load()
			count, ls, d, err := b.readWindow(ctx, leaf, turns, n)
			if err != nil {
				return nil, fmt.Errorf("concurrency: %d readers: %w", n, err)
			}
			if run == 0 {
				continue
			}
			rates = append(rates, float64(count)/d.Seconds())
			writes = append(writes, float64(appends.Load()-a0)/d.Seconds())
			lat = append(lat, ls...)
		}
		select {
		case <-done:
			return nil, fmt.Errorf("concurrency: the writer stopped: %v", werr)
		default:
		}
		slices.Sort(lat)
		row := concRow{Readers: n, LoadsPerSec: median(rates), AppendsPerSe: median(writes), Runs: b.plan.runs}
		if len(lat) > 0 {
			row.P50, row.P95 = lat[len(lat)/2], lat[len(lat)*95/100]
		}
		rows = append(rows, row)
		b.logf("concurrency: %2d readers: %.1f loads/s (p50 %v, p95 %v), writer %.1f appends/s", n, row.LoadsPerSec, ms(row.P50), ms(row.P95), row.AppendsPerSe)
	}
	return rows, nil
}

// readWindow runs n readers loading leaf until the window closes and
// returns the loads they completed, each one's latency and the time until
// the last reader stopped.
func (b *bench) readWindow(ctx context.Context, leaf string, turns, n int) (int, []time.Duration, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(b.plan.window)
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				s, err := b.st.Load(ctx, leaf)
				if err == nil && len(s.Turns) != turns {
					err = fmt.Errorf("got %d turns, want %d", len(s.Turns), turns)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return len(lat), lat, time.Since(start), firstErr
}
