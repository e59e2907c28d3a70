package main

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

//go:embed queries/raw-copies.rq
var qRawCopies string

// appendResult is the append scenario: appends of the same events into
// one session on each backend, and each store's floor, raw INSERT DATA of
// what each Trails append on it inserted.
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

	// The same on Oxigraph: Trails' appends, and Oxigraph's floor (raw
	// INSERT DATA of what they inserted, into Oxigraph).
	Oxigraph         dist       `json:"oxigraph"`
	OxigraphFloor    dist       `json:"oxigraph_floor"`
	OxigraphTrips    float64    `json:"oxigraph_trips_per_append"`
	OxigraphSent     float64    `json:"oxigraph_bytes_sent_per_append"`
	OxigraphReceived float64    `json:"oxigraph_bytes_received_per_append"`
	OxigraphTriples  float64    `json:"oxigraph_floor_triples_per_insert"`
	OxigraphRequests []kindStat `json:"oxigraph_requests"`
}

// kindStat is one kind of request of an operation: how many per call and
// how long each takes (until its response body is closed).
type kindStat struct {
	Kind    string        `json:"kind"`
	PerCall float64       `json:"per_call"`
	Time    dist          `json:"time"`
	Total   time.Duration `json:"total_ns"` // of all of them
}

// kindStats summarizes the recorded request times of calls calls.
func kindStats(kinds map[string][]time.Duration, calls int) []kindStat {
	var out []kindStat
	for _, k := range slices.Sorted(mapKeys(kinds)) {
		var total time.Duration
		for _, d := range kinds[k] {
			total += d
		}
		out = append(out, kindStat{Kind: k, PerCall: float64(len(kinds[k])) / float64(calls), Time: distOf(kinds[k]), Total: total})
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

	// All of Trails' figures again, on Oxigraph (the floor: raw-copies.rq
	// on Oxigraph).
	OxigraphFloor            dist       `json:"oxigraph_floor"`
	OxigraphFloorTail        dist       `json:"oxigraph_floor_tail"`
	OxigraphFloorBytes       int64      `json:"oxigraph_floor_bytes_received"`
	OxigraphFloorTailLen     int64      `json:"oxigraph_floor_tail_bytes_received"`
	Oxigraph                 dist       `json:"oxigraph"`
	OxigraphTail             dist       `json:"oxigraph_tail"`
	OxigraphTrips            int64      `json:"oxigraph_trips"`
	OxigraphReceived         int64      `json:"oxigraph_bytes_received"`
	OxigraphTailTrips        int64      `json:"oxigraph_tail_trips"`
	OxigraphTailReceived     int64      `json:"oxigraph_tail_bytes_received"`
	OxigraphRequests         []kindStat `json:"oxigraph_requests"`
	OxigraphTailRequests     []kindStat `json:"oxigraph_tail_requests"`
	OxigraphCold             dist       `json:"oxigraph_uncached"`
	OxigraphColdTail         dist       `json:"oxigraph_uncached_tail"`
	OxigraphColdTrips        int64      `json:"oxigraph_uncached_trips"`
	OxigraphColdReceived     int64      `json:"oxigraph_uncached_bytes_received"`
	OxigraphColdTailTrips    int64      `json:"oxigraph_uncached_tail_trips"`
	OxigraphColdTailReceived int64      `json:"oxigraph_uncached_tail_bytes_received"`
	OxigraphLong             dist       `json:"oxigraph_long"`
	OxigraphLongTrips        int64      `json:"oxigraph_long_trips"`
	OxigraphLongReceived     int64      `json:"oxigraph_long_bytes_received"`
	OxigraphLongRequests     []kindStat `json:"oxigraph_long_requests"`
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

// trailsAppends is what the append scenario keeps of Trails' appends on
// one store and of that store's floor.
type trailsAppends struct {
	on    *trailsOn
	s     session.Session
	ids   *strings.Replacer // the session's Trails id → the floor's session
	d, fd []time.Duration   // the appends', the floor's
	kinds map[string][]time.Duration

	sent, received, floorLen, triples int64
	body                              string // the last append's update, for the floor
}

// append appends event i to the store's session, timed, keeping its
// update for the floor.
func (t *trailsAppends) append(ctx context.Context, i int) error {
	ev := event("a", i, time.Now())
	before := t.on.ct.snapshot()
	t.on.ct.record()
	t0 := time.Now()
	err := t.on.svc.AppendEvent(ctx, t.s, ev)
	t.d = append(t.d, time.Since(t0))
	ups, ks := t.on.ct.stop()
	tr := t.on.ct.snapshot().minus(before)
	t.sent, t.received = t.sent+tr.sent, t.received+tr.received
	for k, v := range ks {
		t.kinds[k] = append(t.kinds[k], v...)
	}
	if err != nil {
		return fmt.Errorf("trails on %s: %w", t.on.name, err)
	}
	if len(ups) != 1 {
		return fmt.Errorf("trails on %s: append %d sent %d updates, want 1", t.on.name, i, len(ups))
	}
	t.body = ups[0]
	return nil
}

// floor sends the store the raw INSERT DATA of what append i inserted,
// timed.
func (t *trailsAppends) floor(ctx context.Context, i int) error {
	u, nt, err := floorOf(t.body, t.ids)
	if err != nil {
		return fmt.Errorf("%s's floor of append %d: %w", t.on.name, i, err)
	}
	t.floorLen, t.triples = t.floorLen+int64(len(u)), t.triples+int64(nt)
	t0 := time.Now()
	err = t.on.c.Update(ctx, u)
	t.fd = append(t.fd, time.Since(t0))
	if err != nil {
		return fmt.Errorf("%s's floor: %w", t.on.name, err)
	}
	return nil
}

// appends runs the append scenario and then the Get scenario on the
// session it filled. The six ways take turns event by event (SQLite,
// PostgreSQL, Trails and its floor on Fuseki, the same on Oxigraph; which
// goes first rotates), so that load on the machine touches each alike; a
// store's floor's INSERT DATA of event i right follows the Trails append
// of event i it copies.
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
	ts := map[backend]*trailsAppends{}
	ids := map[backend]string{sqliteBackend: sS.ID(), postgresBackend: sP.ID()}
	tids := map[backend]string{}
	for _, k := range trailsBackends {
		s, err := b.create(ctx, k, user)
		if err != nil {
			return r, getResult{}, err
		}
		tid := s.(*adk.Session).TrailsID()
		ids[k], ids[k.cold()], tids[k] = s.ID(), s.ID(), tid
		ts[k] = &trailsAppends{on: b.on(k), s: s, kinds: map[string][]time.Duration{},
			ids: strings.NewReplacer(tid, uuid.Must(uuid.NewV7()).String())} // the floor's session
	}
	var dS, dP []time.Duration
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
	ways := [][]func(int) error{{sqliteWay}, {postgresWay}}
	for _, k := range trailsBackends {
		ways = append(ways, []func(int) error{
			func(i int) error { return ts[k].append(ctx, i) },
			func(i int) error { return ts[k].floor(ctx, i) },
		})
	}
	for i := range n {
		for _, w := range rotate(ways, i) {
			for _, way := range w {
				if err := way(i); err != nil {
					return r, getResult{}, fmt.Errorf("append %d: %w", i, err)
				}
			}
		}
		if ctx.Err() != nil {
			return r, getResult{}, ctx.Err()
		}
		if (i+1)%200 == 0 {
			b.logf("appends: %d of %d", i+1, n)
		}
	}
	fu, ox := ts[trailsBackend], ts[oxigraphBackend]
	r.SQLite, r.Postgres = distOf(dS), distOf(dP)
	r.Trails, r.Floor, r.Oxigraph, r.OxigraphFloor = distOf(fu.d), distOf(fu.fd), distOf(ox.d), distOf(ox.fd)
	perAppend := func(v int64) float64 { return float64(v) / float64(n) }
	r.Trips, r.OxigraphTrips = perAppend(fu.trips()), perAppend(ox.trips())
	r.Sent, r.Received = perAppend(fu.sent), perAppend(fu.received)
	r.OxigraphSent, r.OxigraphReceived = perAppend(ox.sent), perAppend(ox.received)
	r.FloorLen, r.Triples, r.OxigraphTriples = perAppend(fu.floorLen), perAppend(fu.triples), perAppend(ox.triples)
	r.Requests, r.OxigraphRequests = kindStats(fu.kinds, n), kindStats(ox.kinds, n)
	b.logf("appends: SQLite p50 %s ms, PostgreSQL p50 %s ms, Trails on Fuseki p50 %s ms (floor %s ms), Trails on Oxigraph p50 %s ms (floor %s ms)",
		ms(r.SQLite.P50), ms(r.Postgres.P50), ms(r.Trails.P50), ms(r.Floor.P50), ms(r.Oxigraph.P50), ms(r.OxigraphFloor.P50))

	g, err := b.gets(ctx, user, ids, tids)
	return r, g, err
}

// trips returns the requests of the appends.
func (t *trailsAppends) trips() int64 {
	var n int
	for _, v := range t.kinds {
		n += len(v)
	}
	return int64(n)
}

// getTimes is what the Get scenarios keep of one backend's Gets (or of a
// store's floor): their times, the traffic of the last, and with
// recording the requests by kind.
type getTimes struct {
	d     []time.Duration
	tr    traffic
	kinds map[string][]time.Duration
}

// timedGet runs get on backend k, timed into ts[k] (made if missing), with
// its traffic on Trails and, with rec, its requests by kind.
func (b *bench) timedGet(ts map[backend]*getTimes, k backend, rec bool, get func() error) error {
	t := ts[k]
	if t == nil {
		t = &getTimes{kinds: map[string][]time.Duration{}}
		ts[k] = t
	}
	on := b.on(k)
	rec = rec && on != nil
	var before traffic
	if on != nil {
		if rec {
			on.ct.record()
		}
		before = on.ct.snapshot()
	}
	t0 := time.Now()
	err := get()
	t.d = append(t.d, time.Since(t0))
	if on != nil {
		t.tr = on.ct.snapshot().minus(before)
	}
	if rec {
		_, ks := on.ct.stop()
		for kk, v := range ks {
			t.kinds[kk] = append(t.kinds[kk], v...)
		}
	}
	return err
}

// gets measures Gets of the appends' session (of id ids[k] on backend
// k) on each backend, whole and its tail, the backends taking turns
// (which goes first rotates; Trails without its cache last), and before
// each round each store's Get floor (rawCopies of the Trails session of
// id tids[k] on Trails backend k).
func (b *bench) gets(ctx context.Context, user string, ids, tids map[backend]string) (getResult, error) {
	g := getResult{Events: b.plan.appends, Tail: b.plan.tail}
	for _, tail := range []bool{false, true} {
		n := 0
		if tail {
			n = b.plan.tail
		}
		ts := map[backend]*getTimes{}     // by backend
		floors := map[backend]*getTimes{} // by the Trails backend of each store
		for run := range b.plan.getRuns {
			for _, k := range trailsBackends {
				on := b.on(k)
				if err := b.timedGet(floors, k, false, func() error { return b.rawCopies(ctx, on, tids[k], b.plan.appends-n, n) }); err != nil {
					return g, err
				}
			}
			for _, k := range append(rotate(backends, run), coldBackend, coldOxigraphBackend) {
				var s session.Session
				err := b.timedGet(ts, k, k == trailsBackend || k == oxigraphBackend, func() (err error) { s, err = b.get(ctx, k, user, ids[k], n); return err })
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
		d := func(k backend) dist { return distOf(ts[k].d) }
		fu, ox, cfu, cox := ts[trailsBackend], ts[oxigraphBackend], ts[coldBackend], ts[coldOxigraphBackend]
		ffu, fox := floors[trailsBackend], floors[oxigraphBackend]
		runs := b.plan.getRuns
		if tail {
			g.SQLiteTail, g.PostgresTail, g.TrailsTail = d(sqliteBackend), d(postgresBackend), d(trailsBackend)
			g.TailTrips, g.TailReceived = fu.tr.trips, fu.tr.received
			g.ColdTail, g.ColdTailTrips, g.ColdTailReceived = d(coldBackend), cfu.tr.trips, cfu.tr.received
			g.TailRequests = kindStats(fu.kinds, runs)
			g.FloorTail, g.FloorTailLen = distOf(ffu.d), ffu.tr.received
			g.OxigraphTail, g.OxigraphTailTrips, g.OxigraphTailReceived = d(oxigraphBackend), ox.tr.trips, ox.tr.received
			g.OxigraphColdTail, g.OxigraphColdTailTrips, g.OxigraphColdTailReceived = d(coldOxigraphBackend), cox.tr.trips, cox.tr.received
			g.OxigraphTailRequests = kindStats(ox.kinds, runs)
			g.OxigraphFloorTail, g.OxigraphFloorTailLen = distOf(fox.d), fox.tr.received
		} else {
			g.SQLite, g.Postgres, g.Trails = d(sqliteBackend), d(postgresBackend), d(trailsBackend)
			g.Trips, g.Received = fu.tr.trips, fu.tr.received
			g.Cold, g.ColdTrips, g.ColdReceived = d(coldBackend), cfu.tr.trips, cfu.tr.received
			g.Requests = kindStats(fu.kinds, runs)
			g.Floor, g.FloorBytes = distOf(ffu.d), ffu.tr.received
			g.Oxigraph, g.OxigraphTrips, g.OxigraphReceived = d(oxigraphBackend), ox.tr.trips, ox.tr.received
			g.OxigraphCold, g.OxigraphColdTrips, g.OxigraphColdReceived = d(coldOxigraphBackend), cox.tr.trips, cox.tr.received
			g.OxigraphRequests = kindStats(ox.kinds, runs)
			g.OxigraphFloor, g.OxigraphFloorBytes = distOf(fox.d), fox.tr.received
		}
	}
	b.logf("gets: %d events: SQLite %s ms, PostgreSQL %s ms, Trails on Fuseki %s ms, on Oxigraph %s ms; last %d: SQLite %s ms, PostgreSQL %s ms, Trails on Fuseki %s ms, on Oxigraph %s ms",
		g.Events, ms(g.SQLite.P50), ms(g.Postgres.P50), ms(g.Trails.P50), ms(g.Oxigraph.P50),
		g.Tail, ms(g.SQLiteTail.P50), ms(g.PostgresTail.P50), ms(g.TrailsTail.P50), ms(g.OxigraphTail.P50))
	return g, nil
}

// longUser is the user of the long session whose Get is measured.
const longUser = "reader"

// longGet measures Gets of session s (filled with n events on each
// backend by fillAll, of user), the backends taking turns, into g.
func (b *bench) longGet(ctx context.Context, g *getResult, user string, s filled, n int) error {
	ts := map[backend]*getTimes{}
	for run := range b.plan.longRuns {
		for _, k := range rotate(backends, run) {
			var got session.Session
			err := b.timedGet(ts, k, k.trails(), func() (err error) { got, err = b.get(ctx, k, user, s[k].ID(), 0); return err })
			if err != nil {
				return err
			}
			if l := got.Events().Len(); l != n {
				return fmt.Errorf("%v: get: %d events, want %d", k, l, n)
			}
		}
	}
	fu, ox := ts[trailsBackend], ts[oxigraphBackend]
	g.LongEvents = n
	g.SQLiteLong, g.PostgresLong = distOf(ts[sqliteBackend].d), distOf(ts[postgresBackend].d)
	g.TrailsLong, g.LongTrips, g.LongReceived = distOf(fu.d), fu.tr.trips, fu.tr.received
	g.LongRequests = kindStats(fu.kinds, b.plan.longRuns)
	g.OxigraphLong, g.OxigraphLongTrips, g.OxigraphLongReceived = distOf(ox.d), ox.tr.trips, ox.tr.received
	g.OxigraphLongRequests = kindStats(ox.kinds, b.plan.longRuns)
	b.logf("gets: %d events: SQLite %s ms, PostgreSQL %s ms, Trails on Fuseki %s ms, on Oxigraph %s ms",
		n, ms(g.SQLiteLong.P50), ms(g.PostgresLong.P50), ms(g.TrailsLong.P50), ms(g.OxigraphLong.P50))
	return nil
}

// rawCopies runs a store's Get floor, raw-copies.rq, on the Trails
// session of Trails id tid from index from, and checks that it read want
// rows (all when want is 0).
func (b *bench) rawCopies(ctx context.Context, on *trailsOn, tid string, from, want int) error {
	if want == 0 {
		from, want = 0, b.plan.appends
	}
	q, err := kg.Bind(qRawCopies, kg.Params{"g": kg.MustIRI(ontology.SessionIRI(tid)), "from": kg.Int(from)})
	if err != nil {
		return err
	}
	res, err := on.c.Select(ctx, q)
	if err != nil {
		return fmt.Errorf("raw copies on %s: %w", on.name, err)
	}
	if len(res.Solutions) != want {
		return fmt.Errorf("raw copies on %s: %d rows, want %d", on.name, len(res.Solutions), want)
	}
	return nil
}
