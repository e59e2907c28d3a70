package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/adk/v2/session"

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

	// The same on Oxigraph (its files' growth is not measured).
	Oxigraph         dist       `json:"oxigraph"`
	OxigraphQuads    int64      `json:"oxigraph_quads"`
	OxigraphTrips    int64      `json:"oxigraph_trips"`
	OxigraphSent     int64      `json:"oxigraph_bytes_sent"`
	OxigraphReceived int64      `json:"oxigraph_bytes_recv"`
	OxigraphRequests []kindStat `json:"oxigraph_requests"`

	// One more append to the session forked, for comparison.
	AppendBytes         int64 `json:"sqlite_append_bytes"`
	AppendPGSize        int64 `json:"postgres_append_bytes"`
	AppendQuads         int64 `json:"trails_append_quads"`
	AppendBlocks        int64 `json:"trails_append_tdb_blocks"`
	OxigraphAppendQuads int64 `json:"oxigraph_append_quads"`
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
		b.logf("fork of %d events: SQLite copy %s ms, +%d bytes; PostgreSQL copy %s ms, +%d bytes; Trails fork on Fuseki %s ms, +%d quads; on Oxigraph %s ms, +%d quads", n,
			ms(row.SQLite.P50), row.SQLiteBytes, ms(row.Postgres.P50), row.PostgresBytes, ms(row.Trails.P50), row.Quads, ms(row.Oxigraph.P50), row.OxigraphQuads)
		rows = append(rows, row)
	}
	return rows, nil
}

// trailsFork is one Trails fork: how long it took, what it sent and
// received, its requests by kind and what it added to the store (TDB2's
// files only on Fuseki).
type trailsFork struct {
	d                        time.Duration
	tr                       traffic
	kinds                    map[string][]time.Duration
	quads, length, allocated int64
}

// fork forks s, a session of n events of user on Trails backend k, at its
// last event, and checks that the fork holds n events.
func (b *bench) fork(ctx context.Context, k backend, user string, s session.Session, n int) (trailsFork, error) {
	var f trailsFork
	on := b.on(k)
	q0, err := on.quads(ctx)
	if err != nil {
		return f, err
	}
	var l0, a0 int64
	if k == trailsBackend {
		if l0, a0, err = b.tdbSize(); err != nil {
			return f, err
		}
	}
	before := on.ct.snapshot()
	on.ct.record()
	t0 := time.Now()
	fk, err := on.svc.Fork(ctx, adk.Key{AppName: app, UserID: user, SessionID: s.ID()}, adk.AtEvent(s.Events().At(n-1).ID), "")
	f.d = time.Since(t0)
	_, f.kinds = on.ct.stop()
	f.tr = on.ct.snapshot().minus(before)
	if err != nil {
		return f, fmt.Errorf("%v: fork: %w", k, err)
	}
	// The fork value holds none of the events it inherits (Get returns
	// them): its stored history says how many it has.
	info, err := trails.NewStore(on.c).Info(ctx, fk.TrailsID())
	if err != nil {
		return f, fmt.Errorf("%v: the fork: %w", k, err)
	}
	if info.Turns != n {
		return f, fmt.Errorf("%v: the fork holds %d events, want %d", k, info.Turns, n)
	}
	q1, err := on.quads(ctx)
	if err != nil {
		return f, err
	}
	f.quads = q1 - q0
	if k == trailsBackend {
		l1, a1, err := b.tdbSize()
		if err != nil {
			return f, err
		}
		f.length, f.allocated = l1-l0, a1-a0
	}
	return f, nil
}

// forkOf forks src, a session of n events on each backend, the plan's
// number of times each way, the ways taking turns (which goes first
// rotates).
func (b *bench) forkOf(ctx context.Context, src filled, n int) (forkRow, error) {
	row := forkRow{Events: n}
	user := forkUser(n)
	var dS, dP, dT, dO []time.Duration
	kinds := map[backend]map[string][]time.Duration{trailsBackend: {}, oxigraphBackend: {}}
	for run := range b.plan.forkRuns {
		for _, k := range rotate(backends, run) {
			if !k.trails() {
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
			f, err := b.fork(ctx, k, user, src[k], n)
			if err != nil {
				return row, err
			}
			for kk, v := range f.kinds {
				kinds[k][kk] = append(kinds[k][kk], v...)
			}
			if k == oxigraphBackend {
				dO = append(dO, f.d)
				row.OxigraphTrips, row.OxigraphSent, row.OxigraphReceived, row.OxigraphQuads = f.tr.trips, f.tr.sent, f.tr.received, f.quads
				continue
			}
			dT = append(dT, f.d)
			row.Trips, row.Sent, row.Received = f.tr.trips, f.tr.sent, f.tr.received
			row.Quads, row.TDBLength, row.TDBBlocks = f.quads, f.length, f.allocated
		}
	}
	row.SQLite, row.Postgres, row.Trails, row.Oxigraph = distOf(dS), distOf(dP), distOf(dT), distOf(dO)
	row.Requests = kindStats(kinds[trailsBackend], b.plan.forkRuns)
	row.OxigraphRequests = kindStats(kinds[oxigraphBackend], b.plan.forkRuns)

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
	for _, k := range trailsBackends {
		on := b.on(k)
		q0, err := on.quads(ctx)
		if err != nil {
			return row, err
		}
		var a0 int64
		if k == trailsBackend {
			if _, a0, err = b.tdbSize(); err != nil {
				return row, err
			}
		}
		if err := on.svc.AppendEvent(ctx, src[k], event("f", n, time.Now())); err != nil {
			return row, fmt.Errorf("%v: %w", k, err)
		}
		q1, err := on.quads(ctx)
		if err != nil {
			return row, err
		}
		if k == oxigraphBackend {
			row.OxigraphAppendQuads = q1 - q0
			continue
		}
		_, a1, err := b.tdbSize()
		if err != nil {
			return row, err
		}
		row.AppendQuads, row.AppendBlocks = q1-q0, a1-a0
	}
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
