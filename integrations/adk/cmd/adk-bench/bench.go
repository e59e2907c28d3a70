package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"google.golang.org/adk/v2/session"
	"gorm.io/gorm"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	trails "github.com/trails-kg/trails/session"
)

// app is the ADK app name of every session the benchmark writes.
const app = "weather_app"

// plan holds the sizes of one run.
type plan struct {
	name       string
	warmup     int   // events appended to each backend before anything is measured
	appends    int   // measured appends, into one session (then its Get)
	getRuns    int   // Gets of that session, and of its tail, measured
	tail       int   // NumRecentEvents of the tail Get
	longGet    int   // events of the long session whose Get is measured too
	longRuns   int   // its Gets measured
	forks      []int // events of the sessions forked, shortest first; the targets judge the last two
	forkRuns   int   // forks (and copies) measured
	writers    int   // concurrent writers, one session each
	perWriter  int   // appends of each of them
	many       int   // writers of the many-writers scenario, one session each
	perMany    int   // appends of each of them
	pairEvents int   // appends of each of the two writers on one session
}

func fullPlan() plan {
	return plan{name: "full", warmup: 200, appends: 1000, getRuns: 20, tail: 50, longGet: 10000, longRuns: 10,
		forks: []int{50, 500, 5000}, forkRuns: 3, writers: 8, perWriter: 200, many: 64, perMany: 100, pairEvents: 200}
}

func shortPlan() plan {
	return plan{name: "short", warmup: 4, appends: 12, getRuns: 2, tail: 5, longGet: 24, longRuns: 1,
		forks: []int{4, 8, 16}, forkRuns: 1, writers: 3, perWriter: 4, many: 6, perMany: 3, pairEvents: 4}
}

// bench is one run: the services, Trails on each store, the paths whose
// size the fork scenario measures.
type bench struct {
	plan plan
	log  io.Writer
	t0   time.Time

	fu      *trailsOn // Trails on Fuseki, which the targets judge
	ox      *trailsOn // Trails on Oxigraph, figures beside it
	sqlite  session.Service
	pg      *postgres       // the PostgreSQL server of the bench
	pgsql   session.Service // ADK's database service on it
	pgDB    *gorm.DB        // the same database, for its size
	dbPath  string          // the SQLite database file
	dataDir string          // Fuseki's TDB2 database
}

// trailsOn is Trails on one store: the kg client (with the store's
// profile) and the counter of that client's requests, and the adapter's
// services over it.
type trailsOn struct {
	name string // the store: Fuseki, Oxigraph
	ct   *counter
	c    *kg.Client
	svc  *adk.SessionService
	cold *adk.SessionService // without the service's cache (adk.WithCache(nil))
}

// newTrailsOn returns Trails on srv, a store of profile st named name.
func newTrailsOn(name string, srv *fusekitest.Server, st kg.Store) (*trailsOn, error) {
	t := &trailsOn{name: name, ct: newCounter()}
	var err error
	if t.c, err = kg.New(kg.Config{Endpoint: srv.Endpoint, Store: st, HTTPClient: &http.Client{Transport: t.ct}}); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t.svc = adk.NewSessionService(trails.NewStore(t.c))
	t.cold = adk.NewSessionService(trails.NewStore(t.c), adk.WithCache(nil))
	return t, nil
}

// backend names one of the services under test.
type backend int

const (
	sqliteBackend backend = iota
	trailsBackend
	coldBackend         // Trails without its cache: what a process's first Get of a session costs
	postgresBackend     // ADK's database service on PostgreSQL
	oxigraphBackend     // Trails on Oxigraph
	coldOxigraphBackend // Trails on Oxigraph without its cache
)

// backends are the four services compared in every scenario, in the
// order of the report's columns.
var backends = []backend{sqliteBackend, postgresBackend, trailsBackend, oxigraphBackend}

// adkBackends are ADK's own database service on its two databases.
var adkBackends = []backend{sqliteBackend, postgresBackend}

// trailsBackends are Trails on its two stores: Fuseki, then Oxigraph.
var trailsBackends = []backend{trailsBackend, oxigraphBackend}

func (k backend) String() string {
	switch k {
	case sqliteBackend:
		return "ADK database on SQLite"
	case postgresBackend:
		return "ADK database on PostgreSQL"
	case coldBackend:
		return "Trails on Fuseki, no cache"
	case oxigraphBackend:
		return "Trails on Oxigraph"
	case coldOxigraphBackend:
		return "Trails on Oxigraph, no cache"
	}
	return "Trails on Fuseki"
}

// trails reports whether k is Trails' service, on either store, with or
// without its cache.
func (k backend) trails() bool { return k != sqliteBackend && k != postgresBackend }

// cold returns Trails backend k without its cache.
func (k backend) cold() backend {
	if k == oxigraphBackend {
		return coldOxigraphBackend
	}
	return coldBackend
}

// on returns the store of Trails backend k, nil for ADK's.
func (b *bench) on(k backend) *trailsOn {
	switch k {
	case trailsBackend, coldBackend:
		return b.fu
	case oxigraphBackend, coldOxigraphBackend:
		return b.ox
	}
	return nil
}

// svc returns the service of backend k.
func (b *bench) svc(k backend) session.Service {
	switch k {
	case sqliteBackend:
		return b.sqlite
	case postgresBackend:
		return b.pgsql
	case coldBackend, coldOxigraphBackend:
		return b.on(k).cold
	}
	return b.on(k).svc
}

// rotate returns ks turned left by i places, so that which goes first
// changes from one run to the next.
func rotate[T any](ks []T, i int) []T {
	i %= len(ks)
	return append(slices.Clone(ks[i:]), ks[:i]...)
}

// logf writes a progress line to the diagnostics writer.
func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "[%6.1fs] %s\n", time.Since(b.t0).Seconds(), fmt.Sprintf(format, args...))
}

// create creates a session of user on backend k.
func (b *bench) create(ctx context.Context, k backend, user string) (session.Session, error) {
	r, err := b.svc(k).Create(ctx, &session.CreateRequest{AppName: app, UserID: user})
	if err != nil {
		return nil, fmt.Errorf("%v: create: %w", k, err)
	}
	return r.Session, nil
}

// get returns session id of user on backend k, its last n events (all
// when n is 0).
func (b *bench) get(ctx context.Context, k backend, user, id string, n int) (session.Session, error) {
	r, err := b.svc(k).Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: id, NumRecentEvents: n})
	if err != nil {
		return nil, fmt.Errorf("%v: get: %w", k, err)
	}
	return r.Session, nil
}

// fill appends events 0..n-1 (ids prefixed prefix) to s on backend k.
func (b *bench) fill(ctx context.Context, k backend, s session.Session, prefix string, n int) error {
	for i := range n {
		if err := b.svc(k).AppendEvent(ctx, s, event(prefix, i, time.Now())); err != nil {
			return fmt.Errorf("%v: append %d: %w", k, i, err)
		}
	}
	return nil
}

// filled is a session filled on each backend.
type filled map[backend]session.Session

// fillJob is a session to fill: its user and its number of events.
type fillJob struct {
	user string
	n    int
}

// fillAll creates a session of each job's user on each backend and
// appends the job's number of events to it (ids prefixed prefix),
// returning them in the order of jobs. The backends fill at once; on
// Trails (on both stores) and PostgreSQL every session fills at once too
// (SQLite's file takes one writer at a time, so its sessions fill one
// after the other).
// Nothing is measured.
func (b *bench) fillAll(ctx context.Context, prefix string, jobs []fillJob) ([]filled, error) {
	out := make([]filled, len(jobs))
	for i := range out {
		out[i] = filled{}
	}
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	one := func(k backend, i int) {
		s, err := b.create(ctx, k, jobs[i].user)
		if err == nil {
			err = b.fill(ctx, k, s, prefix, jobs[i].n)
		}
		if err != nil {
			fail(err)
			return
		}
		mu.Lock()
		out[i][k] = s
		mu.Unlock()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range jobs {
			one(sqliteBackend, i)
		}
	})
	for i := range jobs {
		for _, k := range []backend{trailsBackend, oxigraphBackend, postgresBackend} {
			wg.Go(func() { one(k, i) })
		}
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// sqliteSize returns the bytes of the SQLite database: the file and any
// journal or WAL beside it.
func (b *bench) sqliteSize() (int64, error) {
	matches, err := filepath.Glob(b.dbPath + "*")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil {
			return 0, err
		}
		n += fi.Size()
	}
	return n, nil
}

// postgresSize returns the bytes of the PostgreSQL database the bench
// writes to (pg_database_size: its tables' and indexes' files, not the
// write-ahead log).
func (b *bench) postgresSize(ctx context.Context) (int64, error) {
	var n int64
	err := b.pgDB.WithContext(ctx).Raw("SELECT pg_database_size(current_database())").Scan(&n).Error
	return n, err
}

// adkSize returns the bytes of ADK backend k's database.
func (b *bench) adkSize(ctx context.Context, k backend) (int64, error) {
	if k == postgresBackend {
		return b.postgresSize(ctx)
	}
	return b.sqliteSize()
}

// tdbSize returns the bytes of Fuseki's TDB2 directory: the files'
// lengths and the disk blocks they hold (TDB2 grows its files in large
// steps, and may leave them sparse).
func (b *bench) tdbSize() (length, allocated int64, err error) {
	err = filepath.WalkDir(b.dataDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		length += fi.Size()
		allocated += blocks(fi)
		return nil
	})
	return length, allocated, err
}

// quads returns the number of quads the store holds, in every graph.
func (t *trailsOn) quads(ctx context.Context) (int64, error) {
	res, err := t.c.Select(ctx, "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
	if err != nil {
		return 0, err
	}
	if len(res.Solutions) != 1 {
		return 0, fmt.Errorf("count quads: %d rows", len(res.Solutions))
	}
	n, err := res.Solutions[0].Int("n")
	return int64(n), err
}

// dist is a distribution of durations.
type dist struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

func distOf(ds []time.Duration) dist {
	if len(ds) == 0 {
		return dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return dist{N: len(s), P50: pct(s, 50), P99: pct(s, 99), Max: s[len(s)-1]}
}

// pct returns the p-th percentile of sorted s, nearest rank.
func pct(s []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// ms formats d in milliseconds.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// blocks returns the bytes of disk a file holds (its blocks), its length
// where the system does not say.
func blocks(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
