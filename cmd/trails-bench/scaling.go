package main

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// scaleRow is one load of the scaling scenario's fork with some number of
// other turns in the store.
type scaleRow struct {
	OtherTurns int   `json:"other_turns"`
	Quads      int   `json:"quads"`
	DiskBytes  int64 `json:"disk_bytes"`
	Load       stat  `json:"load"`
}

// scaling is scenario 4: the same fork loaded with few and with many other
// turns in the store.
type scaling struct {
	Turns int           `json:"turns"`
	Depth int           `json:"depth"`
	Rows  []scaleRow    `json:"rows"`
	Runs  int           `json:"runs"`
	Gap   time.Duration `json:"gap_ns"`

	chain *chain
	pool  *pool
	next  int // the next filler turn's number
}

// Ratio is the big store's load time over the small one's.
func (s *scaling) Ratio() float64 {
	if len(s.Rows) < 2 || s.Rows[0].Load.D == 0 {
		return 0
	}
	return float64(s.Rows[len(s.Rows)-1].Load.D) / float64(s.Rows[0].Load.D)
}

// scaleSetup starts scenario 4 on the empty store: fillerSmall filler
// turns, then the fork through Persist.
func (b *bench) scaleSetup(ctx context.Context) (*scaling, error) {
	sc := &scaling{
		Turns: b.plan.scaleTurns, Depth: b.plan.scaleDepth, Runs: b.plan.scaleRuns, Gap: b.plan.scaleGap,
		pool: newPool(newTextGen(2), 4096, b.plan.fillerChars[0], b.plan.fillerChars[1]),
	}
	if err := b.fill(ctx, sc.pool, 0, b.plan.fillerSmall); err != nil {
		return nil, err
	}
	sc.next = b.plan.fillerSmall
	ch, err := b.buildChain(ctx, b.plan.scaleTurns, b.plan.scaleDepth)
	if err != nil {
		return nil, fmt.Errorf("scaling: store the fork: %w", err)
	}
	sc.chain = ch
	return sc, nil
}

// scaleMeasure tops the store up to other turns besides the fork, then
// measures the fork's load.
func (b *bench) scaleMeasure(ctx context.Context, sc *scaling, other int, dataDir string) error {
	n, err := b.count(ctx, qCountTurns)
	if err != nil {
		return err
	}
	have := n - sc.Turns
	if have < other {
		t0 := time.Now()
		if err := b.fill(ctx, sc.pool, sc.next, other-have); err != nil {
			return err
		}
		sc.next += other - have
		b.logf("scaling: loaded %d filler turns in %v", other-have, time.Since(t0).Round(time.Millisecond))
		if n, err = b.count(ctx, qCountTurns); err != nil {
			return err
		}
		have = n - sc.Turns
	}
	row := scaleRow{OtherTurns: have}
	if row.Quads, err = b.count(ctx, qCountQuads); err != nil {
		return err
	}
	row.DiskBytes = dirSize(dataDir)
	// Let the store settle alike before both measurements: the bulk load
	// leaves gigabytes of dirty pages whose writeback would compete with
	// the loads, and the JVM's caches hold the filler; then warm up.
	syscall.Sync()
	if err := b.warmUp(ctx, sc.chain, false); err != nil {
		return err
	}
	leaf := sc.chain.leaf().ID
	var ss []sample
	// Both measurements take scaleRuns samples spread over a few seconds,
	// so that a burst of other work on the machine spoils few of them.
	for run := 0; run <= b.plan.scaleRuns; run++ {
		if run > 0 {
			time.Sleep(b.plan.scaleGap)
		}
		s, err := b.measure(func() error {
			got, err := b.st.Load(ctx, leaf)
			if err == nil && len(got.Turns) != sc.Turns {
				err = fmt.Errorf("got %d turns, want %d", len(got.Turns), sc.Turns)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("scaling: load: %w", err)
		}
		if run > 0 {
			ss = append(ss, s)
		}
	}
	row.Load = medianOf(ss)
	sc.Rows = append(sc.Rows, row)
	b.logf("scaling: %d other turns (%d quads, %.0f MB on disk): load %v", have, row.Quads, float64(row.DiskBytes)/1e6, ms(row.Load.D))
	return nil
}

// dirSize returns the bytes allocated on disk to the files under dir (TDB2
// files are sparse: their length overstates).
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				} else {
					n += fi.Size()
				}
			}
		}
		return nil
	})
	return n
}
