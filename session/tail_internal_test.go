package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/oxplan"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// tailPlanData returns N-Quads of sessions sessions of turns turns each,
// in the shape Persist writes them (each turn in its session's graph), and
// the IRI of the first.
func tailPlanData(sessions, turns int) (string, string) {
	var b strings.Builder
	nq := func(s, p, o, g string) { fmt.Fprintf(&b, "<%s> <%s> %s <%s> .\n", s, p, o, g) }
	integer := func(i int) string { return fmt.Sprintf(`"%d"^^<http://www.w3.org/2001/XMLSchema#integer>`, i) }
	var first string
	for k := range sessions {
		s := ontology.SessionIRI(fmt.Sprintf("01a22762-0000-7000-8000-%012d", k))
		if first == "" {
			first = s
		}
		nq(s, ontology.RDFType, "<"+ontology.Session+">", s)
		nq(s, ontology.OwnTurns, integer(turns), s)
		for i := range turns {
			t := ontology.TurnIRI(s, i)
			nq(t, ontology.TurnSession, "<"+s+">", s)
			nq(t, ontology.Index, integer(i), s)
			nq(t, ontology.Role, `"user"`, s)
			nq(t, ontology.Content, fmt.Sprintf(`"turn %d of %d"`, i, k), s)
			nq(t, ontology.Branch, `"main"`, s)
			nq(t, ontology.Created, `"2026-11-29T13:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>`, s)
		}
	}
	return b.String(), first
}

// TestTailPlanWork checks that a tail load's query (turns-tail.rq) reads
// the turns asked for, not the history nor the store: on Oxigraph, the
// last 50 turns of a 100,000-turn session took 9 s (456 times a whole
// 50-turn session). It reads the rows each step of Oxigraph's plan yields
// (internal/oxplan), and the turns in the results.
func TestTailPlanWork(t *testing.T) {
	const sessions, turns, last = 4, 1000, 50
	data, s := tailPlanData(sessions, turns)
	rows := make([][]rdf.Term, 0, last)
	for i := turns - last; i < turns; i++ {
		rows = append(rows, []rdf.Term{kg.MustIRI(s), kg.Int(i), kg.Int(0)})
	}
	q, err := kg.BindTables(qTurnsTail, nil, map[string]kg.Table{"turns": {Vars: []string{"s", "i", "gen"}, Rows: rows}})
	if err != nil {
		t.Fatal(err)
	}
	plan, csv := oxplan.Explain(t, data, q)
	plan.Walk(func(n oxplan.Node, _ []oxplan.Node) {
		if n.Results != nil && *n.Results > 10*last {
			t.Errorf("a step yielded %d rows for a tail of %d turns (%d sessions of %d turns in the store), want at most %d: %s",
				*n.Results, last, sessions, turns, 10*last, n.Short())
		}
	})
	if got := strings.Count(csv, "\n") - 1; got != last {
		t.Errorf("got %d turns, want %d:\n%s", got, last, csv)
	}
}
