package admin_test

import (
	"context"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

func TestInit(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := newStore(t)
	ctx := context.Background()
	count := func() int {
		q, _ := kg.Bind("SELECT (COUNT(*) AS ?n) { GRAPH $g { ?s ?p ?o } }", kg.Params{"g": kg.MustIRI(ontology.OntologyGraph)})
		res, err := c.Select(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := res.Solutions[0].Int("n")
		return n
	}
	for range 2 { // idempotent
		if _, err := st.Init(ctx); err != nil {
			t.Fatal(err)
		}
	}
	first := count()
	if _, err := st.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != first || n < 100 {
		t.Fatalf("got %d then %d triples in the ontology graph, want the same, over 100", first, n)
	}
	q := `PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
ASK { <https://w3id.org/trails/ns#Session> rdfs:label "Session"@en }`
	if ok, err := c.Ask(ctx, q); err != nil || !ok {
		t.Fatalf("an auditor's query for the label of trails:Session: got %v, %v; want true", ok, err)
	}
}
