package main

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

//go:embed queries/raw-copies.rq
var qRawCopies string

// appendResult is the append scenario: appends of the same events into
// one session on each backend, and Fuseki's floor, raw INSERT DATA of
// what each Trails append inserted.
type appendResult struct {
	SQLite   dist `json:"sqlite"`
	Postgres dist `json:"postgres"`
	Trails   dist `json:"trails"`
	Floor    dist `json:"floor"`

	Trips    float64    `json:"trails_trips_per_append"`
	Sent     float64    `json:"trails_bytes_sent_per_append"`
	Received float64    `json:"trails_bytes_received_per_append"`
	FloorLen float64    `json:"floor_bytes_per_insert"` // the INSERT DATA's length
	Triples  float64    `json:"floor_triples_per_insert"`
	Requests []kindStat `json:"trails_requests"` // what an append sends, by kind
}

// kindStat is one kind of request of an operation: how many per call and
// how long each takes (until its response body is closed).
type kindStat struct {
	Kind    string  `json:"kind"`
	PerCall float64 `json:"per_call"`
	Time    dist    `json:"time"`
}

// kindStats summarizes the recorded request times of calls calls.
func kindStats(kinds map[string][]time.Duration, calls int) []kindStat {
	var out []kindStat
	for _, k := range slices.Sorted(mapKeys(kinds)) {
		out = append(out, kindStat{Kind: k, PerCall: float64(len(kinds[k])) / float64(calls), Time: distOf(kinds[k])})
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// getResult is the Get scenario: a whole session of the append scenario's
// events, and its tail.
type getResult struct {
	Floor        dist  `json:"floor"`      // raw-copies.rq over the whole session
	FloorTail    dist  `json:"floor_tail"` // and over its tail
	FloorBytes   int64 `json:"floor_bytes_received"`
	FloorTailLen int64 `json:"floor_tail_bytes_received"`

	Events       int        `json:"events"`
	Tail         int        `json:"tail"`
	SQLite       dist       `json:"sqlite"`
	Postgres     dist       `json:"postgres"`
	Trails       dist       `json:"trails"`
	SQLiteTail   dist       `json:"sqlite_tail"`
	PostgresTail dist       `json:"postgres_tail"`
	TrailsTail   dist       `json:"trails_tail"`
	Trips        int64      `json:"trails_trips"`
	Received     int64      `json:"trails_bytes_received"`
	TailTrips    int64      `json:"trails_tail_trips"`
	TailReceived int64      `json:"trails_tail_bytes_received"`
	Requests     []kindStat `json:"trails_requests"`
	TailRequests []kindStat `json:"trails_tail_requests"`

	// The same Gets through a service without its cache (a process's
	// first Get of a session).
	Cold             dist  `json:"trails_uncached"`
	ColdTail         dist  `json:"trails_uncached_tail"`
	ColdTrips        int64 `json:"trails_uncached_trips"`
	ColdReceived     int64 `json:"trails_uncached_bytes_received"`
	ColdTailTrips    int64 `json:"trails_uncached_tail_trips"`
	ColdTailReceived int64 `json:"trails_uncached_tail_bytes_received"`

	// The Get of a longer session, filled for it.
	LongEvents   int        `json:"long_events"`
	SQLiteLong   dist       `json:"sqlite_long"`
	PostgresLong dist       `json:"postgres_long"`
	TrailsLong   dist       `json:"trails_long"`
	LongTrips    int64      `json:"trails_long_trips"`
	LongReceived int64      `json:"trails_long_bytes_received"`
	LongRequests []kindStat `json:"trails_long_requests"`
}

// warmUp appends the plan's warm-up events to a session of each backend
// and Gets it, so that the JVM's compiler and the databases' caches are
// warm.
func (b *bench) warmUp(ctx context.Context) error {
	for _, k := range backends {
		s, err := b.create(ctx, k, "warmup")
		if err != nil {
			return err
		}
		if err := b.fill(ctx, k, s, "w", b.plan.warmup); err != nil {
			return err
		}
		for range 3 {
			if _, err := b.get(ctx, k, "warmup", s.ID(), 0); err != nil {
				return err
			}
			if _, err := b.get(ctx, k, "warmup", s.ID(), b.plan.tail); err != nil {
				return err
			}
		}
	}
	return nil
}

// appends runs the append scenario and then the Get scenario on the
// session it filled. The four ways take turns event by event (which
// backend goes first rotates), so that load on the machine touches each
// alike; the floor's INSERT DATA of event i right follows the Trails
// append of event i it copies.
func (b *bench) appends(ctx context.Context) (appendResult, getResult, error) {
	var r appendResult
	n := b.plan.appends
	user := "alice"
	sS, err := b.create(ctx, sqliteBackend, user)
	if err != nil {
		return r, getResult{}, err
	}
	sP, err := b.create(ctx, postgresBackend, user)
	if err != nil {
		return r, getResult{}, err
	}
	sT, err := b.create(ctx, trailsBackend, user)
	if err != nil {
		return r, getResult{}, err
	}
	tid := sT.(*adk.Session).TrailsID()
	ids := strings.NewReplacer(tid, uuid.Must(uuid.NewV7()).String()) // the floor's session
	var dS, dP, dT, dF []time.Duration
	kinds := map[string][]time.Duration{}
	var sent, received, floorLen, triples int64
	var body string // the Trails append's update, for the floor
	sqliteWay := func(i int) error {
		ev := event("a", i, time.Now())
		t0 := time.Now()
		err := b.sqlite.AppendEvent(ctx, sS, ev)
		dS = append(dS, time.Since(t0))
		return err
	}
	postgresWay := func(i int) error {
		ev := event("a", i, time.Now())
		t0 := time.Now()
		err := b.pgsql.AppendEvent(ctx, sP, ev)
		dP = append(dP, time.Since(t0))
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		return nil
	}
	trailsWay := func(i int) error {
		ev := event("a", i, time.Now())
		before := b.ct.snapshot()
		b.ct.record()
		t0 := time.Now()
		err := b.trails.AppendEvent(ctx, sT, ev)
		dT = append(dT, time.Since(t0))
		ups, ks := b.ct.stop()
		tr := b.ct.snapshot().minus(before)
		sent, received = sent+tr.sent, received+tr.received
		for k, v := range ks {
			kinds[k] = append(kinds[k], v...)
		}
		if err == nil && len(ups) != 1 {
			return fmt.Errorf("trails: append %d sent %d updates, want 1", i, len(ups))
		}
		if err == nil {
			body = ups[0]
		}
		return err
	}
	floorWay := func(i int) error {
		u, nt, err := floorOf(body, ids)
		if err != nil {
			return fmt.Errorf("floor of append %d: %w", i, err)
		}
		floorLen, triples = floorLen+int64(len(u)), triples+int64(nt)
		t0 := time.Now()
		err = b.c.Update(ctx, u)
		dF = append(dF, time.Since(t0))
		return err
	}
	orders := [][]func(int) error{{sqliteWay, postgresWay, trailsWay, floorWay}, {postgresWay, trailsWay, floorWay, sqliteWay}, {trailsWay, floorWay, sqliteWay, postgresWay}}
	for i := range n {
		for _, way := range orders[i%len(orders)] {
			if err := way(i); err != nil {
				return r, getResult{}, fmt.Errorf("append %d: %w", i, err)
			}
		}
		if ctx.Err() != nil {
			return r, getResult{}, ctx.Err()
		}
		if (i+1)%200 == 0 {
			b.logf("appends: %d of %d", i+1, n)
		}
	}
	r.SQLite, r.Postgres, r.Trails, r.Floor = distOf(dS), distOf(dP), distOf(dT), distOf(dF)
	var trips int
	for _, v := range kinds {
		trips += len(v)
	}
	r.Trips = float64(trips) / float64(n)
	r.Sent, r.Received = float64(sent)/float64(n), float64(received)/float64(n)
	r.FloorLen, r.Triples = float64(floorLen)/float64(n), float64(triples)/float64(n)
	r.Requests = kindStats(kinds, n)
	b.logf("appends: SQLite p50 %s ms, PostgreSQL p50 %s ms, Trails p50 %s ms, floor p50 %s ms", ms(r.SQLite.P50), ms(r.Postgres.P50), ms(r.Trails.P50), ms(r.Floor.P50))

	g, err := b.gets(ctx, user, map[backend]string{sqliteBackend: sS.ID(), postgresBackend: sP.ID(), trailsBackend: sT.ID(), coldBackend: sT.ID()}, tid)
	return r, g, err
}

// gets measures Gets of the appends' session (of id ids[k] on backend
// k) on each backend, whole and its tail, the backends taking turns
// (which goes first rotates; Trails without its cache last), and before
// each round the Get floor (rawCopies) on Fuseki.
func (b *bench) gets(ctx context.Context, user string, ids map[backend]string, tid string) (getResult, error) {
	g := getResult{Events: b.plan.appends, Tail: b.plan.tail}
	for _, tail := range []bool{false, true} {
		n := 0
		if tail {
			n = b.plan.tail
		}
		var dS, dP, dT, dC, dF []time.Duration
		kinds := map[string][]time.Duration{}
		var tr, trC, trF traffic
		for run := range b.plan.getRuns {
			before := b.ct.snapshot()
			t0 := time.Now()
			err := b.rawCopies(ctx, tid, b.plan.appends-n, n)
			dF = append(dF, time.Since(t0))
			trF = b.ct.snapshot().minus(before)
			if err != nil {
				return g, err
			}
			for _, k := range append(rotate(backends, run), coldBackend) {
				id := ids[k]
				if k == trailsBackend {
					b.ct.record()
				}
				before := b.ct.snapshot()
				t0 := time.Now()
				s, err := b.get(ctx, k, user, id, n)
				d := time.Since(t0)
				switch k {
				case trailsBackend:
					_, ks := b.ct.stop()
					for kk, v := range ks {
						kinds[kk] = append(kinds[kk], v...)
					}
					tr = b.ct.snapshot().minus(before)
					dT = append(dT, d)
				case coldBackend:
					trC = b.ct.snapshot().minus(before)
					dC = append(dC, d)
				case postgresBackend:
					dP = append(dP, d)
				default:
					dS = append(dS, d)
				}
				if err != nil {
					return g, err
				}
				want := b.plan.appends
				if tail {
					want = n
				}
				if got := s.Events().Len(); got != want {
					return g, fmt.Errorf("%v: get (last %d): %d events, want %d", k, n, got, want)
				}
			}
		}
		if tail {
			g.SQLiteTail, g.PostgresTail, g.TrailsTail = distOf(dS), distOf(dP), distOf(dT)
			g.TailTrips, g.TailReceived = tr.trips, tr.received
			g.ColdTail, g.ColdTailTrips, g.ColdTailReceived = distOf(dC), trC.trips, trC.received
			g.TailRequests = kindStats(kinds, b.plan.getRuns)
			g.FloorTail, g.FloorTailLen = distOf(dF), trF.received
		} else {
			g.SQLite, g.Postgres, g.Trails = distOf(dS), distOf(dP), distOf(dT)
			g.Trips, g.Received = tr.trips, tr.received
			g.Cold, g.ColdTrips, g.ColdReceived = distOf(dC), trC.trips, trC.received
			g.Requests = kindStats(kinds, b.plan.getRuns)
			g.Floor, g.FloorBytes = distOf(dF), trF.received
		}
	}
	b.logf("gets: %d events: SQLite %s ms, PostgreSQL %s ms, Trails %s ms; last %d: SQLite %s ms, PostgreSQL %s ms, Trails %s ms", g.Events,
		ms(g.SQLite.P50), ms(g.Postgres.P50), ms(g.Trails.P50), g.Tail, ms(g.SQLiteTail.P50), ms(g.PostgresTail.P50), ms(g.TrailsTail.P50))
	return g, nil
}

// longUser is the user of the long session whose Get is measured.
const longUser = "reader"

// longGet measures Gets of session s (filled with n events on each
// backend by fillAll, of user), the backends taking turns, into g.
func (b *bench) longGet(ctx context.Context, g *getResult, user string, s filled, n int) error {
	var dS, dP, dT []time.Duration
	kinds := map[string][]time.Duration{}
	var tr traffic
	for run := range b.plan.longRuns {
		for _, k := range rotate(backends, run) {
			if k == trailsBackend {
				b.ct.record()
			}
			before := b.ct.snapshot()
			t0 := time.Now()
			got, err := b.get(ctx, k, user, s[k].ID(), 0)
			d := time.Since(t0)
			switch k {
			case trailsBackend:
				_, ks := b.ct.stop()
				for kk, v := range ks {
					kinds[kk] = append(kinds[kk], v...)
				}
				tr = b.ct.snapshot().minus(before)
				dT = append(dT, d)
			case postgresBackend:
				dP = append(dP, d)
			default:
				dS = append(dS, d)
			}
			if err != nil {
				return err
			}
			if l := got.Events().Len(); l != n {
				return fmt.Errorf("%v: get: %d events, want %d", k, l, n)
			}
		}
	}
	g.LongEvents = n
	g.SQLiteLong, g.PostgresLong, g.TrailsLong = distOf(dS), distOf(dP), distOf(dT)
	g.LongTrips, g.LongReceived = tr.trips, tr.received
	g.LongRequests = kindStats(kinds, b.plan.longRuns)
	b.logf("gets: %d events: SQLite %s ms, PostgreSQL %s ms, Trails %s ms", n, ms(g.SQLiteLong.P50), ms(g.PostgresLong.P50), ms(g.TrailsLong.P50))
	return nil
}

// rawCopies runs the Get floor, raw-copies.rq, on the Trails session of
// Trails id tid from index from, and checks that it read want rows (all
// when want is 0).
func (b *bench) rawCopies(ctx context.Context, tid string, from, want int) error {
	if want == 0 {
		from, want = 0, b.plan.appends
	}
	q, err := kg.Bind(qRawCopies, kg.Params{"g": kg.MustIRI(ontology.SessionIRI(tid)), "from": kg.Int(from)})
	if err != nil {
		return err
	}
	res, err := b.c.Select(ctx, q)
	if err != nil {
		return fmt.Errorf("raw copies: %w", err)
	}
	if len(res.Solutions) != want {
		return fmt.Errorf("raw copies: %d rows, want %d", len(res.Solutions), want)
	}
	return nil
}
