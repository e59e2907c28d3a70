package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/oxplan"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// TestChainPlanWork checks that the chain query (chain.rq) reads each
// session's principal and app a bounded number of times, however many
// sessions the principal and app have: Persist describes the agent and
// the app in every session's graph, and Oxigraph's union default graph
// returns a triple once per graph holding it, so reading the description
// there made each session of the chain a row per session of its
// principal (a chain of 33 sessions, 1,221 rows; Load at depth 32 6x
// slower than a flat one). It reads the rows each step of Oxigraph's plan
// yields (internal/oxplan), and the principal and app of each session of
// the chain in the results.
func TestChainPlanWork(t *testing.T) {
	const others, depth = 300, 4
	var b strings.Builder
	nq := func(s, p, o, g string) { fmt.Fprintf(&b, "<%s> <%s> %s <%s> .\n", s, p, o, g) }
	agent, app := ontology.AgentIRI("alice"), ontology.AppIRI("shop")
	session := func(id string) string {
		s := ontology.SessionIRI(id)
		nq(s, ontology.RDFType, "<"+ontology.Session+">", s)
		nq(s, ontology.Principal, "<"+agent+">", s)
		nq(agent, ontology.DCTIdentifier, `"alice"`, s)
		nq(s, ontology.App, "<"+app+">", s)
		nq(app, ontology.DCTIdentifier, `"shop"`, s)
		nq(s, ontology.OwnTurns, `"1"^^<http://www.w3.org/2001/XMLSchema#integer>`, s)
		return s
	}
	for i := range others {
		session(fmt.Sprintf("01a22762-0000-7000-8000-%012d", i))
	}
	var parent, self string
	for k := range depth {
		id := fmt.Sprintf("01a22762-0000-7000-9000-%012d", k)
		s := session(id)
		if parent != "" {
			nq(s, ontology.ParentSession, "<"+parent+">", s)
			nq(s, ontology.ForkedAtIndex, `"1"^^<http://www.w3.org/2001/XMLSchema#integer>`, s)
			nq(s, ontology.Branch, `"b"`, s)
		}
		parent, self = s, id
	}
	q, err := bind("chain", qChain, kg.Params{"self": kg.MustIRI(ontology.SessionIRI(self))})
	if err != nil {
		t.Fatal(err)
	}
	plan, csv := oxplan.Explain(t, b.String(), q)
	plan.Walk(func(n oxplan.Node, _ []oxplan.Node) {
		if n.Results != nil && *n.Results > 10*depth {
			t.Errorf("a step yielded %d rows for a chain of %d sessions whose principal and app have %d more, want at most %d: %s",
				*n.Results, depth, others, 10*depth, n.Short())
		}
	})
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if len(lines) != depth+1 {
		t.Fatalf("got %d rows, want %d (one per session of the chain):\n%s", len(lines)-1, depth, csv)
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, ",alice,") || !strings.Contains(l, ",shop,") {
			t.Errorf("got row %q, want principal alice and app shop", l)
		}
	}
}
