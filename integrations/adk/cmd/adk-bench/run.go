package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"google.golang.org/adk/v2/session/database"
	pgdriver "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/trails-kg/trails/internal/benchreport"
	"github.com/trails-kg/trails/internal/exit"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

const usageText = `Usage: adk-bench [-short] [-o FILE] [-json]

Runs the same agent events (user text, a model turn with a function call
and usage, the function's response, model text; state changes of the
session, user: and app: scopes) against four ADK Go v2 session services,
one after the other or interleaved, and prints a markdown report judging
the targets of issues 14 and 21 on the first three, with a summary line
computed from them, and the fourth's figures beside them (issue 39):

  ADK's database service (google.golang.org/adk/v2/session/database) on
  SQLite through github.com/glebarez/sqlite, default settings, a file in a
  temporary directory;
  the same service on PostgreSQL through gorm.io/driver/postgres, on a
  server it starts itself from the machine's binaries (initdb and postgres
  from /usr/lib/postgresql/*/bin, the Debian package postgresql; default
  settings, a cluster in a temporary directory, 127.0.0.1 only; as root
  they run as the user postgres), stopped when the bench ends, fails or
  is interrupted;
  Trails' service (github.com/trails-kg/trails/integrations/adk) on a
  Fuseki it starts itself from the cached jar (TDB2 on disk, the project's
  configuration);
  the same Trails service on an Oxigraph it starts itself (the oxigraph
  command of the PyPI package oxigraph==0.5.13, from the Python
  environment scripts/pytools makes on first use; RocksDB on disk, the
  union default graph), through a kg client of the oxigraph profile,
  which sends the process's updates one at a time (docs/stores.md): its
  concurrent writers wait for each other. Its figures are not judged,
  and are not of the same durability: Oxigraph's server does not sync
  its write-ahead log to disk at each update, TDB2 syncs every commit.

gorm's logger is silent on both ADK databases (it would print inside
timed calls).

It measures AppendEvent and each store's floor for it (raw INSERT DATA
of the triples the append wrote, into Fuseki and into Oxigraph), Get of a
1,000- and a 10,000-event session and of a tail, forks of sessions of 50,
500 and 5,000 events (ADK: a copy), 8 and 64 concurrent writers on
sessions of their own (appends per second, p50 and p99, commits per
append, every session read back) and each store's floor for them (their
appends' triples as raw INSERT DATA, 8 or 64 appends a request), and two
writers on one session. Run it inside the Trails checkout (it finds the
Fuseki jar and configuration and scripts/pytools there). Without
PostgreSQL's binaries or Oxigraph it fails at once, saying how to get
them. The full run took 7 to 12 minutes on a 2-core machine before
Oxigraph joined, most of it filling the long sessions (which fill on
Oxigraph at the same time).

Flags:
  -short   tiny sizes, to check that it works (CI)
  -o FILE  write the report into FILE between the lines
           <!-- adk-bench:begin --> and <!-- adk-bench:end -->, which the
           file must have; a new FILE gets the report between them
  -json    print the measurements as JSON instead of markdown

Example:
  go run ./integrations/adk/cmd/adk-bench -o BENCHMARKS.md

Exit codes: 0 the report was written (whether targets were met or not),
1 failure, 2 usage, 130 interrupted.
`

// Markers of the generated part of an output file.
const (
	beginMarker = "<!-- adk-bench:begin -->"
	endMarker   = "<!-- adk-bench:end -->"
)

// markers are the lines between which the report goes.
var markers = benchreport.Markers{Begin: beginMarker, End: endMarker}

// run is the command: it parses args, runs the benchmark and writes the
// report. Errors are also printed to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return exit.Report(stderr, "adk-bench", runBench(ctx, args, stdout, stderr))
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("adk-bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	short := fs.Bool("short", false, "")
	out := fs.String("o", "", "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return nil
		}
		return exit.Usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return exit.Usagef("unexpected argument %q: adk-bench takes flags only", fs.Arg(0))
	}
	if *out != "" {
		if old, err := os.ReadFile(*out); err == nil && !markers.In(old) {
			return exit.Usagef("-o %s: the file has no lines %s and %s, between which the report goes", *out, beginMarker, endMarker)
		}
	}
	p := fullPlan()
	if *short {
		p = shortPlan()
	}
	tmp, err := os.MkdirTemp("", "adk-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	t0 := time.Now()
	b := &bench{plan: p, log: stderr, t0: t0,
		dbPath: filepath.Join(tmp, "adk.db"), dataDir: filepath.Join(tmp, "tdb2")}
	r := &results{
		Command: strings.Join(append([]string{"go run ./integrations/adk/cmd/adk-bench"}, args...), " "),
		Plan:    p,
		Date:    t0,
		LoadAvg: []string{benchreport.LoadAvg()},
	}

	// PostgreSQL's binaries and Oxigraph first: without them nothing
	// else starts.
	pgBin, err := findPostgres(postgresBins)
	if err != nil {
		return err
	}
	root, err := fusekitest.RepoRoot()
	if err != nil {
		return err
	}
	oxBin, err := findOxigraph(root)
	if err != nil {
		return err
	}
	b.logf("starting PostgreSQL from %s", pgBin)
	if b.pg, err = startPostgres(ctx, pgBin); err != nil {
		return err
	}
	defer func() {
		if err := b.pg.Stop(); err != nil {
			b.logf("%v", err)
		}
	}()
	b.logf("PostgreSQL answers on 127.0.0.1:%d (log %s)", b.pg.Port, b.pg.Log)

	// ADK's database service, as its own tests make it but on a file (and
	// on PostgreSQL) and with gorm's defaults but a silent logger: gorm's
	// Warn logger prints "record not found" and slow statements inside
	// timed calls.
	gormConfig := func() *gorm.Config { return &gorm.Config{Logger: logger.Discard} }
	if b.sqlite, err = database.NewSessionService(sqlite.Open(b.dbPath), gormConfig()); err != nil {
		return err
	}
	if err := database.AutoMigrate(b.sqlite); err != nil {
		return err
	}
	if b.pgsql, err = database.NewSessionService(pgdriver.Open(b.pg.DSN()), gormConfig()); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := database.AutoMigrate(b.pgsql); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	if b.pgDB, err = gorm.Open(pgdriver.Open(b.pg.DSN()), gormConfig()); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if db, err := b.pgDB.DB(); err == nil {
		defer db.Close()
	}

	b.logf("starting Fuseki on TDB2 in %s", b.dataDir)
	srv, err := fusekitest.StartServer(fusekitest.Options{DataDir: b.dataDir})
	if err != nil {
		return err
	}
	defer srv.Close()
	if b.fu, err = newTrailsOn("Fuseki", srv, kg.Fuseki); err != nil {
		return err
	}
	b.logf("Fuseki answers at %s (log %s)", srv.Endpoint, srv.Log)
	oxDir := filepath.Join(tmp, "oxigraph")
	b.logf("starting Oxigraph (%s) on RocksDB in %s", oxBin, oxDir)
	oxSrv, err := fusekitest.StartOxigraph(fusekitest.Options{DataDir: oxDir})
	if err != nil {
		return fmt.Errorf("oxigraph: %w", err)
	}
	defer oxSrv.Close()
	if b.ox, err = newTrailsOn("Oxigraph", oxSrv, kg.Oxigraph); err != nil {
		return err
	}
	b.logf("Oxigraph answers at %s (log %s)", oxSrv.Endpoint, oxSrv.Log)
	r.Machine = describeMachine(srv, b.pg, oxigraphVersion(oxBin))

	var long []filled // the long Get's session, then the sessions forked
	steps := []struct {
		name string
		f    func() error
	}{
		{"warm up (append and Get on each)", func() error { return b.warmUp(ctx) }},
		{"appends, floor and Gets", func() (err error) { r.Append, r.Get, err = b.appends(ctx); return err }},
		{"fill the long sessions (not measured)", func() (err error) {
			jobs := []fillJob{{longUser, p.longGet}}
			for _, n := range p.forks {
				jobs = append(jobs, fillJob{forkUser(n), n})
			}
			long, err = b.fillAll(ctx, "f", jobs)
			return err
		}},
		{"Get of the long session", func() error { return b.longGet(ctx, &r.Get, longUser, long[0], p.longGet) }},
		{"forks", func() (err error) { r.Fork, err = b.forks(ctx, long[1:]); return err }},
		{"concurrent writers, then each store's floor", func() error {
			rows, floors, err := b.writers(ctx, p.writers, p.perWriter)
			r.Writers, r.WritersFloor, r.OxigraphWritersFloor = rows, floors[trailsBackend], floors[oxigraphBackend]
			return err
		}},
		{"many concurrent writers, then each store's floor", func() error {
			rows, floors, err := b.writers(ctx, p.many, p.perMany)
			r.Many, r.ManyFloor, r.OxigraphManyFloor = rows, floors[trailsBackend], floors[oxigraphBackend]
			return err
		}},
		{"two writers on one session", func() (err error) { r.Pair, err = b.pair(ctx); return err }},
	}
	r.Phases = append(r.Phases, phase{Name: "start PostgreSQL, Fuseki and Oxigraph, migrate SQLite and PostgreSQL", D: time.Since(t0)})
	for _, s := range steps {
		t := time.Now()
		b.logf("%s", s.name)
		if err := s.f(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		r.Phases = append(r.Phases, phase{Name: s.name, D: time.Since(t)})
	}
	r.Wall = time.Since(t0)
	r.LoadAvg = append(r.LoadAvg, benchreport.LoadAvg())
	r.judge()
	b.logf("done in %v", r.Wall.Round(time.Second))

	report, err := benchreport.Render(*asJSON, r, r.markdown)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err := stdout.Write(report)
		return err
	}
	return writeReport(*out, report)
}

// writeReport writes report into path between the markers, or as a new
// file with the markers around it.
func writeReport(path string, report []byte) error {
	return benchreport.WriteFile(path, report, markers, true, true)
}

// phase is one step of the run and how long it took.
type phase struct {
	Name string        `json:"name"`
	D    time.Duration `json:"ns"`
}

// machine describes where the benchmark ran and what it ran.
type machine struct {
	CPUs     int               `json:"cpus"`
	CPUModel string            `json:"cpu_model"`
	OS       string            `json:"os"`
	Go       string            `json:"go"`
	Java     string            `json:"java"`
	Fuseki   string            `json:"fuseki"`
	Oxigraph string            `json:"oxigraph"` // oxigraph --version
	Postgres string            `json:"postgres"` // postgres --version
	Modules  map[string]string `json:"modules"`  // versions of the modules measured
	Source   string            `json:"source"`   // git describe of the checkout
}

func describeMachine(srv *fusekitest.Server, pg *postgres, oxigraph string) machine {
	e := benchreport.Environment(srv.Log)
	m := machine{CPUs: e.CPUs, CPUModel: e.CPUModel, OS: e.OS, Go: e.Go, Java: "java (unknown version)",
		Fuseki: e.Fuseki, Oxigraph: oxigraph, Postgres: "PostgreSQL (unknown version)", Source: e.Source, Modules: map[string]string{}}
	if pg.Version != "" {
		m.Postgres = pg.Version
	}
	if len(e.Java) > 0 {
		m.Java = e.Java[0]
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "google.golang.org/adk/v2", "github.com/glebarez/sqlite", "modernc.org/sqlite", "gorm.io/gorm",
				"gorm.io/driver/postgres", "github.com/jackc/pgx/v5":
				m.Modules[d.Path] = d.Version
			}
		}
	}
	return m
}
