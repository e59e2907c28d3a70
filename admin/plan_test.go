package admin

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/pytools"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// These tests read how Oxigraph evaluates the library's queries: the plan
// its own evaluator makes (the oxigraph command's query --explain, which
// the server does not offer) on a database of its own, and with --stats
// how many rows each step yielded. They count work, not time.

// planNode is one step of an Oxigraph query plan.
type planNode struct {
	Name     string     `json:"name"`
	Results  *int       `json:"number of results"` // with stats only
	Children []planNode `json:"children"`
}

// walk calls f on n and every step below it, with the chain of steps
// above each.
func (n planNode) walk(f func(n planNode, above []planNode)) {
	var rec func(n planNode, above []planNode)
	rec = func(n planNode, above []planNode) {
		f(n, above)
		for _, c := range n.Children {
			rec(c, append(above, n))
		}
	}
	rec(n, nil)
}

// oxigraphPlan returns the plan Oxigraph makes for query q on a new
// database holding data (N-Quads, "" for none), its default graph the
// union of the named graphs as the tests' server has it, with each step's
// row count, and the query's results as CSV. It fails tb, saying how,
// when the tests' Python environment (scripts/pytools, which installs
// Oxigraph) cannot be made.
func oxigraphPlan(tb testing.TB, data, q string) (planNode, string) {
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
		Plan planNode `json:"plan"`
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

// shortName is a step's name cut for a failure message.
func shortName(n planNode) string {
	if len(n.Name) > 80 {
		return n.Name[:80] + "..."
	}
	return n.Name
}

// TestExportProvPlan checks that Oxigraph reads the session table of the
// PROV query of an export (export-prov) once, not once per row of another
// step: a VALUES block of more rows than its estimate of a pattern with a
// constant predicate and object (about 1,000) was put behind that pattern
// as the inner side of a nested loop, and an export of a tree of 10,000
// sessions did not finish in minutes.
func TestExportProvPlan(t *testing.T) {
	rows := make([][]rdf.Term, 2000)
	for i := range rows {
		rows[i] = []rdf.Term{sessionIRI(fmt.Sprintf("01a22762-0000-7000-8000-%012d", i))}
	}
	q, err := kg.BindTables(qExportProv, kg.Params{"prov": kg.MustIRI(ontology.ProvGraph)},
		map[string]kg.Table{"sessions": {Vars: []string{"x"}, Rows: rows}})
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := oxigraphPlan(t, "", q)
	plan.walk(func(n planNode, _ []planNode) {
		if n.Name != "Lateral" || len(n.Children) != 2 {
			return
		}
		n.Children[1].walk(func(inner planNode, _ []planNode) {
			if strings.HasPrefix(inner.Name, "StaticBindings") {
				t.Errorf("the session table (%s) is the inner side of a nested loop: read once per row of %s",
					shortName(inner), shortName(n.Children[0]))
			}
		})
	})
}

// TestCheckMissingProvWork checks that the missing-prov rule of Check
// reads each fork's PROV record a bounded number of times: with FILTER
// NOT EXISTS, Oxigraph read, for each fork, the Fork activities until one
// matched (half of them on average), n²/2 rows for n forks. It also
// checks that the rule finds the one fork without a record.
func TestCheckMissingProvWork(t *testing.T) {
	const forks = 300
	var b strings.Builder
	nq := func(s, p, o, g string) { fmt.Fprintf(&b, "<%s> <%s> <%s> <%s> .\n", s, p, o, g) }
	parent := ontology.SessionIRI("01a22762-0000-7000-8000-000000000000")
	nq(parent, ontology.RDFType, ontology.Session, parent)
	var missing string
	for i := 1; i <= forks; i++ {
		s := ontology.SessionIRI(fmt.Sprintf("01a22762-0000-7000-8000-%012d", i))
		nq(s, ontology.RDFType, ontology.Session, s)
		nq(s, ontology.ParentSession, parent, s)
		if i == forks/2 {
			missing = s
			continue
		}
		act := s + "/fork"
		nq(s, ontology.ProvWasGeneratedBy, act, ontology.ProvGraph)
		nq(act, ontology.RDFType, ontology.Fork, ontology.ProvGraph)
	}
	plan, csv := oxigraphPlan(t, b.String(), qCheckMissingProv)
	plan.walk(func(n planNode, _ []planNode) {
		if n.Results != nil && *n.Results > 10*forks {
			t.Errorf("a step yielded %d rows for %d forks, want at most %d: %s", *n.Results, forks, 10*forks, shortName(n))
		}
	})
	if got, want := strings.Fields(csv), []string{"s", missing}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
}
