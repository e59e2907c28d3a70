package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk"
	trails "github.com/trails-kg/trails/session"
)

// writersRow is one backend's run of concurrent writers: each writer
// appends to a session of its own (of a user of its own, in one app, so
// that their app: keys are shared), all at once.
type writersRow struct {
	Writers   int           `json:"writers"`
	PerWriter int           `json:"per_writer"`
	OK        int           `json:"ok"`
	Stored    int           `json:"stored"` // events a Get of each session returns afterwards, in all
	Wall      time.Duration `json:"wall_ns"`
	Errors    []errCount    `json:"errors"`
	Latency   dist          `json:"latency"` // of every AppendEvent call, refused ones included

	// Read back: the sessions whose stored events are exactly the
	// acknowledged ones, in the order acknowledged, and the events
	// acknowledged but not stored, or stored but refused.
	Correct  int `json:"sessions_as_acknowledged"`
	Lost     int `json:"acknowledged_not_stored"`
	Phantoms int `json:"refused_but_stored"`

	// Writes is the update requests (commits) the Trails client sent
	// during the run; 0 for ADK's databases, which the counter does not see.
	Writes int64 `json:"trails_writes"`
	// Requests is the Trails client's requests during the run by kind
	// (per call: per append), Sent the bytes it sent: where the writers'
	// time goes (writersPhases).
	Requests []kindStat `json:"trails_requests"`
	Sent     int64      `json:"trails_bytes_sent"`
}

// Rate is the acknowledged appends per second of wall time.
func (r writersRow) Rate() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.OK) / r.Wall.Seconds()
}

// CommitsPerAppend is the update requests per AppendEvent call.
func (r writersRow) CommitsPerAppend() float64 {
	if n := r.Writers * r.PerWriter; n > 0 {
		return float64(r.Writes) / float64(n)
	}
	return 0
}

// errCount is how often a kind of error came, with one message.
type errCount struct {
	Kind    string `json:"kind"`
	N       int    `json:"n"`
	Example string `json:"example"`
}

// errTally counts errors by kind. It is safe for concurrent use.
type errTally struct {
	mu sync.Mutex
	m  map[string]*errCount
}

func (t *errTally) add(k backend, err error) {
	kind := classify(k, err)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*errCount{}
	}
	if t.m[kind] == nil {
		msg := err.Error()
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		t.m[kind] = &errCount{Kind: kind, Example: msg}
	}
	t.m[kind].N++
}

func (t *errTally) list() []errCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []errCount
	for _, c := range t.m {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b errCount) int { return b.N - a.N })
	return out
}

// classify names the kind of an append's error. ADK's database service
// has no sentinel errors: its kinds are told by their messages, for this
// report only.
func classify(k backend, err error) string {
	msg := err.Error()
	var pgErr *pgconn.PgError
	switch {
	case k.trails() && errors.Is(err, trails.ErrConflict):
		return "session.ErrConflict (compare and swap refused: stale value)"
	case k.trails() && errors.Is(err, adk.ErrNotFound):
		return "adk.ErrNotFound"
	case strings.Contains(msg, "stale session"):
		return "stale session error"
	case strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked"):
		return "SQLITE_BUSY (database is locked)"
	case errors.As(err, &pgErr):
		return fmt.Sprintf("PostgreSQL SQLSTATE %s (%s)", pgErr.Code, pgErr.Message)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return "context: " + err.Error()
	}
	return "other"
}

// writers runs n concurrent writers of per appends each, a session each,
// on each backend in turn (SQLite, PostgreSQL, Trails on Fuseki, Trails
// on Oxigraph), and reads every session back; then each store's floor
// for the appends Trails' writers on it sent, n a request, by the Trails
// backend of the store. On Oxigraph the kg client sends one update at a
// time (kg.Store.SerialUpdates): its writers wait for each other there.
func (b *bench) writers(ctx context.Context, n, per int) (map[string]writersRow, map[backend]writersFloor, error) {
	out := map[string]writersRow{}
	ups, tids := map[backend][]string{}, map[backend][]string{} // the Trails writers' update requests, their sessions' Trails ids
	for _, k := range backends {
		user := func(w int) string { return fmt.Sprintf("writer%d-of-%d", w, n) }
		sess := make([]session.Session, n)
		for w := range sess {
			s, err := b.create(ctx, k, user(w))
			if err != nil {
				return nil, nil, err
			}
			sess[w] = s
			if k.trails() {
				tids[k] = append(tids[k], s.(*adk.Session).TrailsID())
			}
		}
		row := writersRow{Writers: n, PerWriter: per}
		acked := make([][]string, n)   // by writer, in the order acknowledged
		refused := make([][]string, n) // by writer
		lat := make([][]time.Duration, n)
		var tally errTally
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w, s := range sess {
			wg.Go(func() {
				<-start
				for i := range per {
					if ctx.Err() != nil {
						return
					}
					ev := event(fmt.Sprintf("w%d", w), i, time.Now())
					t0 := time.Now()
					err := b.svc(k).AppendEvent(ctx, s, ev)
					lat[w] = append(lat[w], time.Since(t0))
					if err != nil {
						tally.add(k, err)
						refused[w] = append(refused[w], ev.ID)
						continue
					}
					acked[w] = append(acked[w], ev.ID)
				}
			})
		}
		on := b.on(k)
		var before traffic
		if on != nil {
			on.ct.record()
			before = on.ct.snapshot()
		}
		t0 := time.Now()
		close(start)
		wg.Wait()
		row.Wall = time.Since(t0)
		if on != nil {
			d := on.ct.snapshot().minus(before)
			row.Writes, row.Sent = d.writes, d.sent
			var ks map[string][]time.Duration
			ups[k], ks = on.ct.stop()
			row.Requests = kindStats(ks, n*per)
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		row.Errors = tally.list()
		row.Latency = distOf(slices.Concat(lat...))
		for w, s := range sess {
			row.OK += len(acked[w])
			g, err := b.get(ctx, k, user(w), s.ID(), 0)
			if err != nil {
				return nil, nil, err
			}
			stored := ids(g)
			row.Stored += len(stored)
			if slices.Equal(stored, acked[w]) {
				row.Correct++
			}
			in := make(map[string]bool, len(stored))
			for _, id := range stored {
				in[id] = true
			}
			for _, id := range acked[w] {
				if !in[id] {
					row.Lost++
				}
			}
			for _, id := range refused[w] {
				if in[id] {
					row.Phantoms++
				}
			}
		}
		b.logf("writers: %d × %d on %v: %d acknowledged in %v (%.0f/s, p50 %s ms, p99 %s ms), %d stored, %d of %d sessions as acknowledged, %d update requests",
			n, per, k, row.OK, row.Wall.Round(time.Millisecond), row.Rate(), ms(row.Latency.P50), ms(row.Latency.P99), row.Stored, row.Correct, n, row.Writes)
		out[k.String()] = row
	}
	floors := map[backend]writersFloor{}
	for _, k := range trailsBackends {
		on := b.on(k)
		f, err := b.writersFloor(ctx, on, ups[k], tids[k], n)
		if err != nil {
			return nil, nil, err
		}
		b.logf("writers: %d × %d, %s's floor: %d appends in %d requests of %d (%.0f triples an append) in %v (%.0f/s, p50 %s ms a request)",
			n, per, on.name, f.Appends, f.Requests, n, f.Triples, f.Wall.Round(time.Millisecond), f.Rate(), ms(f.Latency.P50))
		floors[k] = f
	}
	return out, floors, nil
}

// pairWriter is one of two writers on one session: what it got, and how
// its session value compares with the store afterwards.
type pairWriter struct {
	OK       int        `json:"ok"`
	Errors   []errCount `json:"errors"`
	Held     int        `json:"held"`     // events in its session value afterwards
	Refused  int        `json:"refused"`  // of them, events whose append was refused
	Unstored int        `json:"unstored"` // of them, events the store lacks (refused, or accepted but not stored)
	Equal    bool       `json:"equal"`    // its events are a fresh Get's
	Prefix   bool       `json:"prefix"`   // its events are a prefix of a fresh Get's
}

// pairRow is one backend's run of two writers on one session.
type pairRow struct {
	Initial int           `json:"initial"` // events the session held when both loaded it
	Stored  int           `json:"stored"`  // events a fresh Get returns afterwards
	Writers [2]pairWriter `json:"writers"`
}

// pair runs two writers on one session on each backend in turn
// (SQLite, PostgreSQL, Trails on Fuseki, Trails on Oxigraph): each
// Gets the session (a value of its own) and appends the plan's events
// through it, both at once, going on after an error as a careless caller
// would.
func (b *bench) pair(ctx context.Context) (map[string]pairRow, error) {
	out := map[string]pairRow{}
	const initial = perInvocation
	for _, k := range backends {
		user := "pair"
		s, err := b.create(ctx, k, user)
		if err != nil {
			return nil, err
		}
		if err := b.fill(ctx, k, s, "p", initial); err != nil {
			return nil, err
		}
		var vals [2]session.Session
		for w := range vals {
			if vals[w], err = b.get(ctx, k, user, s.ID(), 0); err != nil {
				return nil, err
			}
		}
		row := pairRow{Initial: initial}
		refused := [2]map[string]bool{{}, {}}
		var tallies [2]errTally
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range vals {
			wg.Go(func() {
				<-start
				for i := range b.plan.pairEvents {
					if ctx.Err() != nil {
						return
					}
					ev := event(fmt.Sprintf("p%d", w), initial+i, time.Now())
					if err := b.svc(k).AppendEvent(ctx, vals[w], ev); err != nil {
						tallies[w].add(k, err)
						refused[w][ev.ID] = true
						continue
					}
					row.Writers[w].OK++
				}
			})
		}
		close(start)
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fresh, err := b.get(ctx, k, user, s.ID(), 0)
		if err != nil {
			return nil, err
		}
		stored := ids(fresh)
		row.Stored = len(stored)
		for w, v := range vals {
			held := ids(v)
			pw := &row.Writers[w]
			pw.Errors = tallies[w].list()
			pw.Held = len(held)
			inStore := make(map[string]bool, len(stored))
			for _, id := range stored {
				inStore[id] = true
			}
			for _, id := range held {
				if refused[w][id] {
					pw.Refused++
				}
				if !inStore[id] {
					pw.Unstored++
				}
			}
			pw.Equal = slices.Equal(held, stored)
			pw.Prefix = len(held) <= len(stored) && slices.Equal(held, stored[:len(held)])
		}
		b.logf("pair: %v: writers got %d and %d; %d stored; values hold %d (%d refused, %d not stored) and %d (%d refused, %d not stored)", k,
			row.Writers[0].OK, row.Writers[1].OK, row.Stored, row.Writers[0].Held, row.Writers[0].Refused, row.Writers[0].Unstored,
			row.Writers[1].Held, row.Writers[1].Refused, row.Writers[1].Unstored)
		out[k.String()] = row
	}
	return out, nil
}

// ids returns the ids of the events of s.
func ids(s session.Session) []string {
	var out []string
	for ev := range s.Events().All() {
		out = append(out, ev.ID)
	}
	return out
}
