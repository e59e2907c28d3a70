package fusekitest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/trails-kg/trails/internal/pytools"
	"github.com/trails-kg/trails/kg"
)

// EnvStore names the environment variable choosing the store the tests
// run on: "fuseki" (or unset, the default) or "oxigraph".
const EnvStore = "TRAILS_TEST_STORE"

// SkipPrefix starts the message of every test skipped because it needs a
// feature the test store lacks (see RequireFuseki), so that CI can count
// and print them.
const SkipPrefix = "fusekitest: fuseki only:"

// TestStore returns the store profile the tests run on, from
// TRAILS_TEST_STORE. A value that names no profile the tests can start
// (generic has no server to start) panics with the reason, so that a typo
// does not run the suite on Fuseki unnoticed.
func TestStore() kg.Store {
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
// and no configuration file: Users, Config and Datasets are refused.
func startOxigraph(opts Options) (*Server, error) {
	switch {
	case len(opts.Users) > 0:
		return nil, errors.New("fusekitest: Oxigraph has no HTTP authentication (Options.Users)")
	case opts.Config != "":
		return nil, errors.New("fusekitest: Oxigraph takes no configuration file (Options.Config)")
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
