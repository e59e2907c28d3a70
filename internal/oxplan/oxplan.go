// Package oxplan reads how Oxigraph evaluates a query, for tests that
// check the library's queries' work there: the plan its own evaluator
// makes (the oxigraph command's query --explain, which the server does not
// offer) on a database of its own, and with --stats how many rows each
// step yielded. Such tests count work, not time.
package oxplan

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/pytools"
)

// Node is one step of an Oxigraph query plan.
type Node struct {
	Name     string `json:"name"`
	Results  *int   `json:"number of results"` // with stats only
	Children []Node `json:"children"`
}

// Walk calls f on n and every step below it, with the chain of steps
// above each.
func (n Node) Walk(f func(n Node, above []Node)) {
	var rec func(n Node, above []Node)
	rec = func(n Node, above []Node) {
		f(n, above)
		for _, c := range n.Children {
			rec(c, append(above, n))
		}
	}
	rec(n, nil)
}

// Short is the step's name cut for a failure message.
func (n Node) Short() string {
	if len(n.Name) > 80 {
		return n.Name[:80] + "..."
	}
	return n.Name
}

// Explain returns the plan Oxigraph makes for query q on a new database
// holding data (N-Quads, "" for none), its default graph the union of the
// named graphs as the tests' server has it, with each step's row count,
// and the query's results as CSV. It fails tb, saying how, when the tests'
// Python environment (scripts/pytools, which installs Oxigraph) cannot be
// made.
func Explain(tb testing.TB, data, q string) (Node, string) {
	tb.Helper()
	root, err := fusekitest.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	bin, err := pytools.Command(root, "oxigraph")
	if err != nil {
		tb.Fatalf("these tests run the oxigraph command of the tests' Python environment: %v", err)
	}
	dir := tb.TempDir()
	db := filepath.Join(dir, "db")
	file := filepath.Join(dir, "data.nq")
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command(bin, "load", "--location", db, "--file", file).CombinedOutput(); err != nil {
		tb.Fatalf("oxigraph load: %v\n%s", err, out)
	}
	qf, plan, res := filepath.Join(dir, "q.rq"), filepath.Join(dir, "plan.json"), filepath.Join(dir, "results.csv")
	if err := os.WriteFile(qf, []byte(q), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "query", "--location", db, "--union-default-graph", "--query-file", qf,
		"--results-file", res, "--explain-file", plan, "--stats")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("oxigraph query: %v\n%s", err, out)
	}
	b, err := os.ReadFile(plan)
	if err != nil {
		tb.Fatal(err)
	}
	var p struct {
		Plan Node `json:"plan"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		tb.Fatalf("oxigraph's plan: %v\n%s", err, b)
	}
	csv, err := os.ReadFile(res)
	if err != nil {
		tb.Fatal(err)
	}
	return p.Plan, string(csv)
}
