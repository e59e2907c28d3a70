package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trails-kg/trails/internal/exit"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/pytools"
	"github.com/trails-kg/trails/kg"
)

// benchStores are the stores -store can name: each is started by the run.
var benchStores = []kg.Store{kg.Fuseki, kg.Oxigraph}

// oxigraphPackage is the PyPI package, at the version the tests pin
// (scripts/python-requirements.txt), whose oxigraph command serves
// Oxigraph.
const oxigraphPackage = "oxigraph==0.5.13"

// fusekiOnly gives, for each scenario that runs alone (-only) and needs
// Fuseki, why.
var fusekiOnly = map[string]string{
	"cluster": "its replicas are Fuseki datasets fed from the Kafka log (the direct store it compares them with too)",
	"shards":  "its replica groups are Fuseki replicas fed from the Kafka log, each under a CPU cap",
	"tdb":     "it compares TDB2 databases of different store parameters (tdb.cfg)",
}

// parseStore returns the store -store names, or a usage error.
func parseStore(s string) (kg.Store, error) {
	st, err := kg.ParseStore(s)
	if err != nil || !slices.Contains(benchStores, st) {
		return "", exit.Usagef("-store %q: trails-bench starts the store it measures itself: fuseki (the default) or oxigraph", s)
	}
	return st, nil
}

// checkEnv returns a usage error when the environment would have
// startStore start another store than st: fusekitest.StartServer starts
// an Oxigraph in place of Fuseki when the tests' TRAILS_TEST_STORE says
// oxigraph.
func checkEnv(st kg.Store) error {
	v := os.Getenv(fusekitest.EnvStore)
	if got, err := kg.ParseStore(v); st == kg.Fuseki && err == nil && got == kg.Oxigraph {
		return exit.Usagef("%s=%s would start Oxigraph in place of Fuseki: unset it, or measure Oxigraph with -store oxigraph", fusekitest.EnvStore, v)
	}
	return nil
}

// storeName names st in the report's sentences.
func storeName(st kg.Store) string {
	if st == kg.Oxigraph {
		return "Oxigraph"
	}
	return "Fuseki"
}

// storeDisk names st's database on disk.
func storeDisk(st kg.Store) string {
	if st == kg.Oxigraph {
		return "RocksDB"
	}
	return "TDB2"
}

// startStore starts the store st with its database under dir: Fuseki
// with fuseki/trails.ttl (TDB2 in dir/databases/trails), or Oxigraph
// with RocksDB in dir/oxigraph. It returns the server and, for
// Oxigraph, the version its command gives ("unknown version" when it
// gives none).
func startStore(st kg.Store, dir string) (*fusekitest.Server, string, error) {
	if st != kg.Oxigraph {
		srv, err := fusekitest.StartServer(fusekitest.Options{DataDir: dir})
		return srv, "", err
	}
	root, err := fusekitest.RepoRoot()
	if err != nil {
		return nil, "", err
	}
	bin, err := pytools.Command(root, "oxigraph")
	if err != nil {
		return nil, "", fmt.Errorf("oxigraph: %w; -store oxigraph runs the oxigraph command of the PyPI package %s from the Python environment "+
			"of scripts/pytools: run scripts/pytools ensure in the Trails checkout, which pip-installs it there "+
			"(it needs python3 with its venv module, apt-get install python3 python3-venv on Debian, and PyPI)", err, oxigraphPackage)
	}
	version := "unknown version"
	if out, err := exec.Command(bin, "--version").Output(); err == nil { // "oxigraph 0.5.13"
		if f := strings.Fields(string(out)); len(f) > 0 {
			version = f[len(f)-1]
		}
	}
	srv, err := fusekitest.StartOxigraph(fusekitest.Options{DataDir: filepath.Join(dir, "oxigraph")})
	if err != nil {
		return nil, "", fmt.Errorf("oxigraph: %w", err)
	}
	return srv, version, nil
}

// leftOut returns what a run of st with -only only leaves out of the
// report because st lacks what it needs, each with why; none on Fuseki.
func leftOut(st kg.Store, only string) []string {
	if st == kg.Fuseki {
		return nil
	}
	var out []string
	if only == "" || only == "wide" {
		out = append(out, fmt.Sprintf("the SHACL shapes in section 7's `Check`: %s has no SHACL endpoint, "+
			"so `Check` runs every other rule and its time is without the shapes", storeName(st)))
	}
	if only == "" {
		out = append(out, "sections 10 and 12 (cluster, shards; `-only cluster` and `-only shards` refuse `-store oxigraph`): "+
			"they measure Fuseki replicas fed from the Kafka log")
	}
	return out
}

// warmStep names the step that warms the store up before the first
// measurements: on Fuseki, its JVM compiles its code paths meanwhile.
func warmStep(st kg.Store) string {
	if st == kg.Fuseki {
		return "warm the JVM up"
	}
	return "warm " + storeName(st) + " up"
}

// commitNote says what each write of st waits for.
func commitNote(st kg.Store) string {
	if st == kg.Oxigraph {
		return "every write is an Oxigraph update, which its server acknowledges without syncing to disk"
	}
	return "every write is a TDB2 commit that waits for the disk"
}
