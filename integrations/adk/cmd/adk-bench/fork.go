package main

import (
	"context"
	"fmt"
	"time"

	"github.com/trails-kg/trails/integrations/adk"
	trails "github.com/trails-kg/trails/session"
)

// forkRow is the fork scenario for one history length: ADK has no fork,
// so its way is to Get the session, Create a new one and append copies of
// the events; Trails' is the adapter's Fork at the last event, which
// shares the history in the store.
type forkRow struct {
	Events   int  `json:"events"`
	SQLite   dist `json:"sqlite"`
	Postgres dist `json:"postgres"`
	Trails   dist `json:"trails"`

	SQLiteBytes   int64      `json:"sqlite_bytes"`      // growth of the database file, per fork (the last)
	PostgresBytes int64      `json:"postgres_bytes"`    // growth of pg_database_size, per fork (the last)
	Quads         int64      `json:"trails_quads"`      // quads added to Fuseki, per fork (the last)
	TDBLength     int64      `json:"trails_tdb_length"` // growth of the TDB2 files' lengths, per fork (the last)
	TDBBlocks     int64      `json:"trails_tdb_blocks"` // growth of the disk blocks they hold, per fork (the last)
	Trips         int64      `json:"trails_trips"`      // round trips of a fork
	Sent          int64      `json:"trails_bytes_sent"` // bytes it sends
	Received      int64      `json:"trails_bytes_recv"` // bytes it receives
	Requests      []kindStat `json:"trails_requests"`   // what a fork sends, by kind

	// One more append to the session forked, for comparison.
	AppendBytes  int64 `json:"sqlite_append_bytes"`
	AppendPGSize int64 `json:"postgres_append_bytes"`
	AppendQuads  int64 `json:"trails_append_quads"`
	AppendBlocks int64 `json:"trails_append_tdb_blocks"`
}

// forkUser is the user of the session of n events forked.
func forkUser(n int) string { return fmt.Sprintf("forker%d", n) }

// forks runs the fork scenario on sessions of the plan's lengths, src[i]
// holding b.plan.forks[i] events (filled by fillAll for forkUser of it).
func (b *bench) forks(ctx context.Context, src []filled) ([]forkRow, error) {
	var rows []forkRow
	for i, n := range b.plan.forks {
		row, err := b.forkOf(ctx, src[i], n)
		if err != nil {
			return nil, fmt.Errorf("fork of %d events: %w", n, err)
		}
		b.logf("fork of %d events: SQLite copy %s ms, +%d bytes; PostgreSQL copy %s ms, +%d bytes; Trails fork %s ms, +%d quads", n,
			ms(row.SQLite.P50), row.SQLiteBytes, ms(row.Postgres.P50), row.PostgresBytes, ms(row.Trails.P50), row.Quads)
		rows = append(rows, row)
	}
	return rows, nil
}

// forkOf forks src, a session of n events on each backend, the plan's
// number of times each way, the ways taking turns (which goes first
// rotates).
func (b *bench) forkOf(ctx context.Context, src filled, n int) (forkRow, error) {
	row := forkRow{Events: n}
	user := forkUser(n)
	last := src[trailsBackend].Events().At(n - 1).ID
	var dS, dP, dT []time.Duration
	kinds := map[string][]time.Duration{}
	for run := range b.plan.forkRuns {
		for _, k := range rotate(backends, run) {
			if k != trailsBackend {
				size0, err := b.adkSize(ctx, k)
				if err != nil {
					return row, err
				}
				t0 := time.Now()
				if err := b.copySession(ctx, k, user, src[k].ID(), n); err != nil {
					return row, err
				}
				d := time.Since(t0)
				size1, err := b.adkSize(ctx, k)
				if err != nil {
					return row, err
				}
				if k == postgresBackend {
					dP, row.PostgresBytes = append(dP, d), size1-size0
				} else {
					dS, row.SQLiteBytes = append(dS, d), size1-size0
				}
				continue
			}
			q0, err := b.quads(ctx)
			if err != nil {
				return row, err
			}
			l0, a0, err := b.tdbSize()
			if err != nil {
				return row, err
			}
			before := b.ct.snapshot()
			b.ct.record()
			t0 := time.Now()
			f, err := b.trails.Fork(ctx, adk.Key{AppName: app, UserID: user, SessionID: src[k].ID()}, adk.AtEvent(last), "")
			d := time.Since(t0)
			_, ks := b.ct.stop()
			tr := b.ct.snapshot().minus(before)
			if err != nil {
				return row, fmt.Errorf("trails: fork: %w", err)
			}
			// The fork value holds none of the events it inherits (Get
			// returns them): its stored history says how many it has.
			info, err := trails.NewStore(b.c).Info(ctx, f.TrailsID())
			if err != nil {
				return row, fmt.Errorf("trails: the fork: %w", err)
			}
			if info.Turns != n {
				return row, fmt.Errorf("trails: the fork holds %d events, want %d", info.Turns, n)
			}
			dT = append(dT, d)
			for kk, v := range ks {
				kinds[kk] = append(kinds[kk], v...)
			}
			row.Trips, row.Sent, row.Received = tr.trips, tr.sent, tr.received
			q1, err := b.quads(ctx)
			if err != nil {
				return row, err
			}
			l1, a1, err := b.tdbSize()
			if err != nil {
				return row, err
			}
			row.Quads, row.TDBLength, row.TDBBlocks = q1-q0, l1-l0, a1-a0
		}
	}
	row.SQLite, row.Postgres, row.Trails = distOf(dS), distOf(dP), distOf(dT)
	row.Requests = kindStats(kinds, b.plan.forkRuns)

	for _, k := range adkBackends {
		size0, err := b.adkSize(ctx, k)
		if err != nil {
			return row, err
		}
		if err := b.svc(k).AppendEvent(ctx, src[k], event("f", n, time.Now())); err != nil {
			return row, fmt.Errorf("%v: %w", k, err)
		}
		size1, err := b.adkSize(ctx, k)
		if err != nil {
			return row, err
		}
		if k == postgresBackend {
			row.AppendPGSize = size1 - size0
		} else {
			row.AppendBytes = size1 - size0
		}
	}
	q0, err := b.quads(ctx)
	if err != nil {
		return row, err
	}
	_, a0, err := b.tdbSize()
	if err != nil {
		return row, err
	}
	if err := b.trails.AppendEvent(ctx, src[trailsBackend], event("f", n, time.Now())); err != nil {
		return row, err
	}
	q1, err := b.quads(ctx)
	if err != nil {
		return row, err
	}
	_, a1, err := b.tdbSize()
	if err != nil {
		return row, err
	}
	row.AppendQuads, row.AppendBlocks = q1-q0, a1-a0
	return row, nil
}

// copySession is ADK's fork on its backend k: Get session id, Create a
// new session of the same user and append copies of its n events.
func (b *bench) copySession(ctx context.Context, k backend, user, id string, n int) error {
	g, err := b.get(ctx, k, user, id, 0)
	if err != nil {
		return err
	}
	if got := g.Events().Len(); got != n {
		return fmt.Errorf("%v: the session to copy holds %d events, want %d", k, got, n)
	}
	c, err := b.create(ctx, k, user)
	if err != nil {
		return err
	}
	for ev := range g.Events().All() {
		if err := b.svc(k).AppendEvent(ctx, c, copyEvent(ev)); err != nil {
			return fmt.Errorf("%v: copy event %s: %w", k, ev.ID, err)
		}
	}
	return nil
}
