package admin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/oxplan"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// These tests read how Oxigraph evaluates the library's queries
// (internal/oxplan): they count work, not time.

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
	plan, _ := oxplan.Explain(t, "", q)
	plan.Walk(func(n oxplan.Node, _ []oxplan.Node) {
		if n.Name != "Lateral" || len(n.Children) != 2 {
			return
		}
		n.Children[1].Walk(func(inner oxplan.Node, _ []oxplan.Node) {
			if strings.HasPrefix(inner.Name, "StaticBindings") {
				t.Errorf("the session table (%s) is the inner side of a nested loop: read once per row of %s",
					inner.Short(), n.Children[0].Short())
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
	plan, csv := oxplan.Explain(t, b.String(), qCheckMissingProv)
	plan.Walk(func(n oxplan.Node, _ []oxplan.Node) {
		if n.Results != nil && *n.Results > 10*forks {
			t.Errorf("a step yielded %d rows for %d forks, want at most %d: %s", *n.Results, forks, 10*forks, n.Short())
		}
	})
	if got, want := strings.Fields(csv), []string{"s", missing}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
}
