// Package fusekitest gives tests a real Fuseki, or a real Oxigraph when
// TRAILS_TEST_STORE=oxigraph (see TestStore); when TRAILS_TEST_STORE=kafka
// its datasets are the first replicas of the replicated stores that
// internal/clustertest makes (see OnCluster). Each test binary gets a
// Fuseki of its own, found or started in this order: the dataset named by
// TRAILS_TEST_ENDPOINT (wiped first), a container built from
// fuseki/Dockerfile when a Docker engine is at hand, or the cached Fuseki
// jar run with java on a free port. When none works the test fails with a
// line saying what to run; it never skips. On the jar's Fuseki each
// top-level test gets a dataset of its own (see Endpoint), so tests that
// call Parallel run side by side. On Oxigraph, which serves one dataset per
// server, the binary starts a server per dataset instead (startOxigraphs),
// and tests that need what only Fuseki has call RequireFuseki.
//
// Packages that use it call Main from TestMain so that the server stops
// when the binary ends.
package fusekitest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trails-kg/trails/kg"
)

// EnvEndpoint names the environment variable holding the URL of a dataset
// the tests may use and wipe.
const EnvEndpoint = "TRAILS_TEST_ENDPOINT"

// howTo is the one line a test prints when it cannot get a Fuseki.
const howTo = "install Java 17+ and Maven and run scripts/fuseki fetch, or set " + EnvEndpoint +
	" to a Fuseki dataset URL the tests may wipe (e.g. after scripts/fuseki start --mem --port 3031)"

var (
	once     sync.Once
	shared   string // the binary's dataset URL
	sharedOK error
	stoppers []func()
	mu       sync.Mutex
)

// Main runs the tests and then stops every server this package started. Call
// it from TestMain: func TestMain(m *testing.M) { fusekitest.Main(m) }.
//
// Unless -parallel is given, it runs up to parallelTests tests at once
// instead of go test's GOMAXPROCS: the tests spend much of their time
// waiting for Fuseki (its disk syncs, its HTTP answers), so a machine of
// two cores is busier with four.
func Main(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !given {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n < parallelTests {
			f.Value.Set(strconv.Itoa(parallelTests))
		}
	}
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		shortLived = true
	}
	code := m.Run()
	StopAll()
	os.Exit(code)
}

// StopAll stops every server this package started in this process.
func StopAll() {
	mu.Lock()
	defer mu.Unlock()
	for i := len(stoppers) - 1; i >= 0; i-- {
		stoppers[i]()
	}
	stoppers = nil
}

// OnStop registers f to run when Main or StopAll stops the servers, e.g.
// to stop a server a test started with StartServer for the whole binary.
func OnStop(f func()) { onStop(f) }

func onStop(f func()) {
	mu.Lock()
	defer mu.Unlock()
	stoppers = append(stoppers, f)
}

// Endpoint returns the URL of tb's dataset, starting a Fuseki on the first
// call. It fails tb when no Fuseki can be had.
//
// When the binary's Fuseki has spare datasets (one started from the jar
// does: /t1 … /t8 besides /trails) each top-level test gets one of its own, wiped, on its
// first call, and keeps it until it ends; its subtests share it. Otherwise
// every test of the binary shares one dataset.
func Endpoint(tb testing.TB) string {
	tb.Helper()
	once.Do(func() { shared, sharedOK = start() })
	if sharedOK != nil {
		tb.Fatalf("fusekitest: no Fuseki for the tests: %v\nTo get one: %s", sharedOK, howTo)
	}
	if spare == nil {
		return shared
	}
	return dataset(tb)
}

// Start is Endpoint for code without a testing.TB, such as TestMain
// preparing an Example: it returns the URL of the binary's shared dataset
// (/trails, which no test takes for its own) or why there is none.
func Start() (string, error) {
	once.Do(func() { shared, sharedOK = start() })
	if sharedOK != nil {
		return "", fmt.Errorf("fusekitest: no Fuseki for the tests: %v\nTo get one: %s", sharedOK, howTo)
	}
	return shared, nil
}

// New returns a client of tb's dataset (see Endpoint).
func New(tb testing.TB) *kg.Client {
	tb.Helper()
	return Client(tb, kg.Config{Endpoint: Endpoint(tb)})
}

// Empty wipes tb's dataset (see Endpoint) and returns a client of it. With
// one dataset for the whole binary, a test that calls it must not run in
// parallel with others of its binary (Parallel sees to that).
func Empty(tb testing.TB) *kg.Client {
	tb.Helper()
	c := New(tb)
	if err := c.Update(context.Background(), "DROP ALL", kg.Idempotent()); err != nil {
		tb.Fatalf("fusekitest: wipe %s: %v", c.Endpoint(), err)
	}
	return c
}

// Client returns a client for cfg, failing tb on a bad config. A cfg with
// no Store gets the test store's (see TestStore).
func Client(tb testing.TB, cfg kg.Config) *kg.Client {
	tb.Helper()
	if cfg.Store == "" {
		cfg.Store = TestStore()
	}
	c, err := kg.New(cfg)
	if err != nil {
		tb.Fatalf("fusekitest: %v", err)
	}
	return c
}

// start finds or starts the binary's Fuseki and returns its dataset URL.
func start() (string, error) {
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		if OnCluster() {
			return "", fmt.Errorf("%s=%s: the kafka profile needs a dataset per test, which the jar's Fuseki gives; unset it", EnvEndpoint, ep)
		}
		return useEndpoint(ep)
	}
	if TestStore() == kg.Oxigraph {
		return startOxigraphs()
	}
	if dockerAvailable() && !OnCluster() { // the kafka profile needs a dataset per test: the jar's

		ep, err := startContainer()
		if err == nil {
			return ep, nil
		}
		fmt.Fprintf(os.Stderr, "fusekitest: Docker is here but the container failed (%v); trying the jar\n", err)
	}
	s, err := StartServer(Options{Datasets: spareDatasets})
	if err != nil {
		return "", err
	}
	onStop(func() { s.Close() })
	spare = make(chan string, len(s.Datasets)-1)
	for _, ep := range s.Datasets[1:] {
		spare <- ep
	}
	return s.Endpoint, nil
}

// startOxigraphs starts the Oxigraph servers of the binary: one for the
// shared dataset and one per spare dataset. Oxigraph serves one dataset per
// server, so a test's dataset of its own is a server of its own; a server
// takes a fraction of a second to start and some 25 MB, and keeps the
// tests as parallel as on Fuseki (running them one by one would make the
// suite several times slower).
func startOxigraphs() (string, error) {
	var eps []string
	for i := 0; i <= spareDatasets; i++ {
		s, err := StartServer(Options{})
		if err != nil {
			return "", err
		}
		onStop(func() { s.Close() })
		eps = append(eps, s.Endpoint)
	}
	spare = make(chan string, spareDatasets)
	for _, ep := range eps[1:] {
		spare <- ep
	}
	return eps[0], nil
}

// useEndpoint takes the dataset named by TRAILS_TEST_ENDPOINT: it waits for
// other test binaries using it to finish (a file lock), then wipes it.
func useEndpoint(ep string) (string, error) {
	c, err := kg.New(kg.Config{Endpoint: ep, Store: TestStore()})
	if err != nil {
		return "", fmt.Errorf("%s: %w", EnvEndpoint, err)
	}
	unlock, err := lockEndpoint(c.Endpoint())
	if err != nil {
		return "", err
	}
	onStop(unlock)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		return "", fmt.Errorf("%s=%s: %w", EnvEndpoint, ep, err)
	}
	if err := c.Update(ctx, "DROP ALL"); err != nil {
		return "", fmt.Errorf("wipe %s: %w", ep, err)
	}
	return c.Endpoint(), nil
}

// RepoRoot returns the root of this module's checkout, found by walking up
// from the working directory (go test runs in the package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/trails-kg/trails\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the trails checkout (no go.mod of github.com/trails-kg/trails above the working directory)")
		}
		dir = parent
	}
}
