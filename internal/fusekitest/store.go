package fusekitest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/pytools"
	"github.com/trails-kg/trails/kg"
)

// EnvStore names the environment variable choosing the store the tests
// run on: "fuseki" (or unset, the default), "oxigraph", or "kafka" (see
// OnCluster).
const EnvStore = "TRAILS_TEST_STORE"

// Kafka is the value of TRAILS_TEST_STORE that runs the tests on a
// replicated store (see OnCluster).
const Kafka = "kafka"

// SkipPrefix starts the message of every test skipped because it needs a
// feature the test store lacks (see RequireFuseki), so that CI can count
// and print them.
const SkipPrefix = "fusekitest: fuseki only:"

// SkipLogPrefix starts the message of every test skipped on the kafka
// profile because it works on one store's HTTP requests (see
// RequireDirect), so that CI can count and print them.
const SkipLogPrefix = "fusekitest: not through the log:"

// OnCluster reports whether TRAILS_TEST_STORE is kafka: the tests' stores
// are then replicas fed from a Kafka log, each a Fuseki dataset of the
// binary's Fuseki with its applier, and the tests write through a
// cluster.Client (internal/clustertest sets them up). TestStore is then
// kg.Fuseki, the replicas' profile; Endpoint is a test's first replica,
// for its reads.
func OnCluster() bool { return strings.EqualFold(os.Getenv(EnvStore), Kafka) }

// RequireDirect skips tb, with a message that starts with SkipLogPrefix
// and gives why, when the tests run on the kafka profile (OnCluster): for
// a test that counts the HTTP requests of its store, injects faults in
// them, or writes to the store around the log, none of which a store
// reached through the log has. Never call it to hide a failure.
func RequireDirect(tb testing.TB, why string) {
	tb.Helper()
	if OnCluster() {
		tb.Skipf("%s %s", SkipLogPrefix, why)
	}
}

// TestStore returns the store profile the tests run on, from
// TRAILS_TEST_STORE (kg.Fuseki for kafka, whose replicas are Fuseki
// datasets). A value that names no profile the tests can start (generic
// has no server to start) panics with the reason, so that a typo does not
// run the suite on Fuseki unnoticed.
func TestStore() kg.Store {
	if OnCluster() {
		return kg.Fuseki
	}
	st, err := kg.ParseStore(os.Getenv(EnvStore))
	if err == nil && st == kg.Generic {
		err = errors.New("the tests start Fuseki or Oxigraph, not a generic store")
	}
	if err != nil {
		panic(fmt.Sprintf("fusekitest: %s=%q: %v", EnvStore, os.Getenv(EnvStore), err))
	}
	return st
}

// RequireFuseki skips tb, with a message that starts with SkipPrefix and
// names feature, unless the tests run on Fuseki. Call it only for what
// the other store does not have (the SHACL endpoint, HTTP authentication,
// Fuseki's own configuration), never to hide a failure.
func RequireFuseki(tb testing.TB, feature string) {
	tb.Helper()
	if st := TestStore(); st != kg.Fuseki {
		tb.Skipf("%s %s (%s has none)", SkipPrefix, feature, st)
	}
}

// startOxigraph starts an Oxigraph server (the oxigraph command of PyPI's
// oxigraph package) on opts.DataDir with --union-default-graph, as Trails
// needs. Oxigraph serves one dataset at its root, with no authentication
// and no configuration file: Users, Config, Datasets and Admin are refused.
func startOxigraph(opts Options) (*Server, error) {
	switch {
	case len(opts.Users) > 0:
		return nil, errors.New("fusekitest: Oxigraph has no HTTP authentication (Options.Users)")
	case opts.Config != "":
		return nil, errors.New("fusekitest: Oxigraph takes no configuration file (Options.Config)")
	case opts.Admin:
		return nil, errors.New("fusekitest: Oxigraph has no admin API (Options.Admin)")
	case opts.Datasets > 0:
		return nil, errors.New("fusekitest: Oxigraph serves one dataset (Options.Datasets); start a server per dataset")
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	oxigraph, err := pytools.Command(root, "oxigraph")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(ScratchDir(), "trails-fuseki-") // the prefix .ci/run cleans up after
	if err != nil {
		return nil, err
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(dir, "data")
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, oxigraph: oxigraph, dir: dir, Log: filepath.Join(dir, "oxigraph.log")}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// store names the server's store in messages.
func (s *Server) store() kg.Store {
	if s.oxigraph != "" {
		return kg.Oxigraph
	}
	return kg.Fuseki
}
