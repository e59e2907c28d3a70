package kg_test

import (
	"testing"

	"github.com/trails-kg/trails/kg"
)

func TestNondeterministicCall(t *testing.T) {
	for _, c := range []struct{ update, want string }{
		{`INSERT { <urn:a> <urn:t> ?now } WHERE { BIND(NOW() AS ?now) }`, "NOW"},
		{`INSERT { <urn:a> <urn:t> ?n } WHERE { BIND(rand () AS ?n) }`, "RAND"},
		{`INSERT { <urn:a> <urn:t> ?n } WHERE { BIND(STRUUID() AS ?n) }`, "STRUUID"},
		{`INSERT { <urn:a> <urn:t> ?n } WHERE { BIND(uuid() AS ?n) }`, "UUID"},
		{`INSERT { ?b <urn:t> 1 } WHERE { BIND(BNODE() AS ?b) }`, "BNODE"},
		{"INSERT { <urn:a> <urn:t> ?n } WHERE {\n  # no NOW() here\n  BIND(NOW\n(\n) AS ?n) }", "NOW"},
		// Not calls: text in literals (short, long, escaped quotes), IRIs,
		// comments, variables, prefixed names, a keyword without '('.
		{`INSERT DATA { <urn:a> <urn:c> "call NOW() and RAND()" }`, ""},
		{`INSERT DATA { <urn:a> <urn:c> "say \"NOW()\" twice" ; <urn:d> 'UUID()' }`, ""},
		{"INSERT DATA { <urn:a> <urn:c> \"\"\"a \"NOW()\" b\n RAND() \"\"\" ; <urn:d> '''STRUUID()''' }", ""},
		{`INSERT DATA { <urn:NOW()> <http://x/RAND()> 1 }`, ""},
		{"INSERT DATA { <urn:a> <urn:b> 1 } # BNODE()\n", ""},
		{`PREFIX ex: <urn:ex:> INSERT { <urn:a> <urn:b> ?now } WHERE { ?x ex:NOW ?now . FILTER(ex:rand(?x)) BIND(?now AS ?uuid) }`, ""},
		{`DELETE WHERE { GRAPH <urn:g> { ?s ?p ?o } }`, ""},
		{`INSERT DATA { <urn:a> <urn:b> "unterminated NOW()`, ""},
	} {
		if got := kg.NondeterministicCall(c.update); got != c.want {
			t.Errorf("NondeterministicCall(%q) = %q, want %q", c.update, got, c.want)
		}
	}
}
