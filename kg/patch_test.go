package kg_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// TestFencedPatch: the fenced-patch endpoint of Trails' module for Fuseki
// applies a patch only at the offset named, as one transaction, and a
// patch it refuses (a wrong offset, a body it cannot read) changes
// nothing.
func TestFencedPatch(t *testing.T) {
	fusekitest.RequireFuseki(t, "Trails' module for Fuseki (fenced-patch)")
	fusekitest.Parallel(t)
	c := newClient(t)
	ctx := context.Background()
	log := kg.MustIRI(ontology.LogIRI("fenced-"+uuid.NewString(), 0))
	l, rg, off := "<"+log.String()+">", "<"+ontology.ReplicaGraph+">", "<"+ontology.AppliedOffset+">"
	g := "<urn:test:fenced:" + uuid.NewString() + ">"
	count := func() int {
		t.Helper()
		res, err := c.Select(ctx, "SELECT (COUNT(*) AS ?n) WHERE { { GRAPH "+g+" { ?s ?p ?o } } UNION { GRAPH "+rg+" { "+l+" ?p ?o } } }")
		if err != nil {
			t.Fatal(err)
		}
		n, err := res.Solutions[0].Int("n")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	status := func(err error) int {
		var ke *kg.Error
		if !errors.As(err, &ke) {
			return 0
		}
		return ke.Status
	}
	xsd := "^^<http://www.w3.org/2001/XMLSchema#integer>"
	first := []byte("A " + l + " " + off + " \"0\"" + xsd + " " + rg + " .\nA <urn:s> <urn:p> \"one \\\"two\\\"\\nthree\" " + g + " .\n")
	if err := c.FencedPatch(ctx, log, -1, first); err != nil {
		t.Fatalf("patch at -1 on a dataset without the log's offset: %v", err)
	}
	if n := count(); n != 2 {
		t.Fatalf("after the first patch: %d quads, want 2", n)
	}
	// Sent again (an applier whose answer was lost): refused, nothing changes.
	if err := c.FencedPatch(ctx, log, -1, first); status(err) != http.StatusConflict {
		t.Errorf("the same patch again: %v, want 409", err)
	}
	second := []byte("D " + l + " " + off + " \"0\"" + xsd + " " + rg + " .\nA " + l + " " + off + " \"1\"" + xsd + " " + rg + " .\nA <urn:s> <urn:p> \"four\" " + g + " .\n")
	if err := c.FencedPatch(ctx, log, 7, second); status(err) != http.StatusConflict {
		t.Errorf("a patch at offset 7 on a dataset at 0: %v, want 409", err)
	}
	if n := count(); n != 2 {
		t.Fatalf("after refused patches: %d quads, want 2", n)
	}
	// A body the store cannot read: 400, and nothing of it lands, though
	// its first line could.
	bad := []byte("A <urn:s> <urn:p> \"five\" " + g + " .\nA <urn:s> <urn:p> \"broken " + g + " .\n")
	if err := c.FencedPatch(ctx, log, 0, bad); status(err) != http.StatusBadRequest {
		t.Errorf("an unreadable patch: %v, want 400", err)
	}
	if n := count(); n != 2 {
		t.Fatalf("after an unreadable patch: %d quads, want 2", n)
	}
	if err := c.FencedPatch(ctx, log, 0, second); err != nil {
		t.Fatalf("patch at the dataset's offset: %v", err)
	}
	if n := count(); n != 3 {
		t.Fatalf("after the second patch: %d quads, want 3 (the offset moved, one more triple)", n)
	}
	ok, err := c.Ask(ctx, "ASK { GRAPH "+rg+" { "+l+" "+off+" 1 } GRAPH "+g+" { <urn:s> <urn:p> \"one \\\"two\\\"\\nthree\" } }")
	if err != nil || !ok {
		t.Errorf("the offset 1 and the escaped literal: %v (%v)", ok, err)
	}
	// An empty patch at the offset: how an applier asks whether the
	// endpoint is there.
	if err := c.FencedPatch(ctx, log, 1, nil); err != nil {
		t.Errorf("an empty patch: %v", err)
	}
}

// TestConditionalPatch: the conditional-patch endpoint evaluates each
// record's ASK in the write transaction, after the records before it,
// applies records while their ASKs hold, moves the offset to the last
// applied, and changes nothing when it refuses (a wrong offset, a body
// it cannot read) or applies none.
func TestConditionalPatch(t *testing.T) {
	fusekitest.RequireFuseki(t, "Trails' module for Fuseki (conditional-patch)")
	fusekitest.Parallel(t)
	c := newClient(t)
	ctx := context.Background()
	log := kg.MustIRI(ontology.LogIRI("conditional-"+uuid.NewString(), 0))
	l, rg, off := "<"+log.String()+">", "<"+ontology.ReplicaGraph+">", "<"+ontology.AppliedOffset+">"
	g := "<urn:test:conditional:" + uuid.NewString() + ">"
	state := func() string {
		t.Helper()
		res, err := c.Select(ctx, "SELECT ?o ?n WHERE { { GRAPH "+g+" { <urn:s> <urn:p> ?o } } UNION { GRAPH "+rg+" { "+l+" "+off+" ?n } } }")
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, row := range res.Solutions {
			if v := row.String("o"); v != "" {
				s = append(s, "o="+v)
			}
			if v := row.String("n"); v != "" {
				s = append(s, "offset="+v)
			}
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	status := func(err error) int {
		var ke *kg.Error
		if !errors.As(err, &ke) {
			return 0
		}
		return ke.Status
	}
	rec := func(off int64, ask string, patch []byte) kg.Conditional {
		return kg.Conditional{Offset: off, Ask: ask, Patch: patch}
	}
	is := func(v string) string { return "ASK { GRAPH " + g + " { <urn:s> <urn:p> \"" + v + "\" } }" }
	none := "ASK { FILTER NOT EXISTS { GRAPH " + g + " { <urn:s> <urn:p> ?o } } }"
	set := func(from, to string) []byte {
		p := ""
		if from != "" {
			p = "D <urn:s> <urn:p> \"" + from + "\" " + g + " .\n"
		}
		return []byte(p + "A <urn:s> <urn:p> \"" + to + "\" " + g + " .\n")
	}
	// The second record's ASK holds only after the first; the third's
	// does not hold after the second: two applied, the offset at 1.
	recs := []kg.Conditional{rec(0, none, set("", "one")), rec(1, is("one"), set("one", "two")), rec(2, is("one"), set("one", "three")), rec(3, is("two"), set("two", "four"))}
	n, err := c.ConditionalPatch(ctx, log, -1, recs)
	if err != nil || n != 2 {
		t.Fatalf("records 0..3 at -1: %d applied (%v), want 2", n, err)
	}
	if s := state(); s != "o=two offset=1" {
		t.Fatalf("after records 0 and 1: %s, want o=two offset=1", s)
	}
	// Sent again: 409, nothing changes.
	if _, err := c.ConditionalPatch(ctx, log, -1, recs); status(err) != http.StatusConflict {
		t.Errorf("the same records again at -1: %v, want 409", err)
	}
	// None holds: 0, nothing changes.
	if n, err := c.ConditionalPatch(ctx, log, 1, recs[2:3:3]); err != nil || n != 0 {
		t.Errorf("a record whose ASK does not hold: %d applied (%v), want 0", n, err)
	}
	// Bodies the store cannot read: 400, nothing of them lands, though
	// their first record could.
	for name, bad := range map[string][]kg.Conditional{
		"offsets that skip":   {rec(2, is("two"), set("two", "five")), rec(4, is("five"), set("five", "six"))},
		"a SELECT":            {rec(2, is("two"), set("two", "five")), rec(3, "SELECT * WHERE { ?s ?p ?o }", set("five", "six"))},
		"a broken query":      {rec(2, is("two"), set("two", "five")), rec(3, "ASK { GRAPH ", set("five", "six"))},
		"an unreadable patch": {rec(2, is("two"), set("two", "five")), rec(3, is("five"), []byte("A <urn:s> <urn:p> \"broken "+g+" .\n"))},
		"a record's offset":   {rec(5, is("two"), set("two", "five"))},
	} {
		if _, err := c.ConditionalPatch(ctx, log, 1, bad); status(err) != http.StatusBadRequest {
			t.Errorf("%s: %v, want 400", name, err)
		}
	}
	if s := state(); s != "o=two offset=1" {
		t.Fatalf("after refused requests: %s, want o=two offset=1", s)
	}
	if n, err := c.ConditionalPatch(ctx, log, 1, []kg.Conditional{rec(2, is("two"), set("two", "four"))}); err != nil || n != 1 {
		t.Fatalf("record 2 at offset 1: %d applied (%v), want 1", n, err)
	}
	if s := state(); s != "o=four offset=2" {
		t.Fatalf("after record 2: %s, want o=four offset=2", s)
	}
	// Templates: the same ASK text with other values, bound by Params.
	tmpl := "ASK { GRAPH $g { <urn:s> <urn:p> $v } }"
	gi := kg.MustIRI(strings.Trim(g, "<>"))
	n, err = c.ConditionalPatch(ctx, log, 2, []kg.Conditional{
		{Offset: 3, Ask: tmpl, Patch: set("four", "five"), Params: kg.Params{"g": gi, "v": kg.String("four")}},
		{Offset: 4, Ask: tmpl, Patch: set("five", "six"), Params: kg.Params{"g": gi, "v": kg.String("five")}},
		{Offset: 5, Ask: tmpl, Patch: set("six", "seven"), Params: kg.Params{"g": gi, "v": kg.String("four")}},
	})
	if err != nil || n != 2 {
		t.Fatalf("templated records 3..5 at offset 2: %d applied (%v), want 2", n, err)
	}
	if s := state(); s != "o=six offset=4" {
		t.Fatalf("after templated records: %s, want o=six offset=4", s)
	}
	offset := int64(4)

	// No records: how an applier asks whether the endpoint is there.
	if n, err := c.ConditionalPatch(ctx, log, offset, nil); err != nil || n != 0 {
		t.Errorf("no records: %d (%v)", n, err)
	}
}

// TestConditionalBatch: the conditional-patch endpoint's gated mode
// applies each record whose ASK holds on the dataset as the records
// before it left it, whatever the others' outcome, says which applied,
// empties the graphs named to drop, and changes nothing when its gate is
// fenced or when it cannot read the body.
func TestConditionalBatch(t *testing.T) {
	fusekitest.RequireFuseki(t, "Trails' module for Fuseki (conditional-patch)")
	fusekitest.Parallel(t)
	c := newClient(t)
	ctx := context.Background()
	g := "<urn:test:batch:" + uuid.NewString() + ">"
	drop := kg.MustIRI("urn:test:batch-drop:" + uuid.NewString())
	if err := c.Update(ctx, "INSERT DATA { GRAPH <"+drop.String()+"> { <urn:s> <urn:p> 1 } }"); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		t.Helper()
		res, err := c.Select(ctx, "SELECT ?o ?d WHERE { { GRAPH "+g+" { <urn:s> <urn:p> ?o } } UNION { GRAPH <"+drop.String()+"> { ?s ?p ?d } } }")
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, row := range res.Solutions {
			if v := row.String("o"); v != "" {
				s = append(s, "o="+v)
			}
			if _, ok := row["d"]; ok {
				s = append(s, "drop")
			}
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	status := func(err error) int {
		var ke *kg.Error
		if !errors.As(err, &ke) {
			return 0
		}
		return ke.Status
	}
	has := func(v string) string { return "ASK { GRAPH " + g + " { <urn:s> <urn:p> \"" + v + "\" } }" }
	add := func(v string) []byte { return []byte("A <urn:s> <urn:p> \"" + v + "\" " + g + " .\n") }
	gate := func() rdf.IRI { return kg.MustIRI(ontology.StagingBase + uuid.NewString()) }
	// The second holds only after the first; the third never; the fourth
	// holds although the third did not.
	recs := []kg.Conditional{
		{Ask: "ASK {}", Patch: add("a")},
		{Ask: has("a"), Patch: add("b")},
		{Ask: has("z"), Patch: add("c")},
		{Ask: has("b"), Patch: add("d")},
	}
	// Bodies it cannot read, and a fenced gate: nothing changes, the
	// graph to drop neither.
	fenced := gate()
	if err := c.Update(ctx, "INSERT DATA { GRAPH <"+ontology.FencesGraph+"> { <"+fenced.String()+"> <"+ontology.FencedAt+"> \"2026-11-29T00:00:00Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> } }"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConditionalBatch(ctx, kg.Gated{Gate: fenced, Drop: []rdf.IRI{drop}}, recs); status(err) != http.StatusConflict {
		t.Errorf("a fenced gate: %v, want 409", err)
	}
	for name, bad := range map[string][]kg.Conditional{
		"a SELECT":            {recs[0], {Ask: "SELECT * WHERE { ?s ?p ?o }", Patch: add("x")}},
		"a broken query":      {recs[0], {Ask: "ASK { GRAPH ", Patch: add("x")}},
		"an unreadable patch": {recs[0], {Ask: "ASK {}", Patch: []byte("A <urn:s> <urn:p> \"broken " + g + " .\n")}},
	} {
		if _, err := c.ConditionalBatch(ctx, kg.Gated{Gate: gate(), Drop: []rdf.IRI{drop}}, bad); status(err) != http.StatusBadRequest {
			t.Errorf("%s: %v, want 400", name, err)
		}
	}
	if s := state(); s != "drop" {
		t.Fatalf("after refused requests: %q, want only the graph to drop", s)
	}
	applied, err := c.ConditionalBatch(ctx, kg.Gated{Gate: gate(), Drop: []rdf.IRI{drop}}, recs)
	if err != nil || !slices.Equal(applied, []bool{true, true, false, true}) {
		t.Fatalf("four records: applied %v (%v), want [true true false true]", applied, err)
	}
	if s := state(); s != "o=a o=b o=d" {
		t.Fatalf("after four records: %q, want o=a o=b o=d, the graph dropped", s)
	}
	// Templates bound by Params, as an append's condition.
	tmpl := "ASK { GRAPH $g { <urn:s> <urn:p> $v } }"
	gi := kg.MustIRI(strings.Trim(g, "<>"))
	applied, err = c.ConditionalBatch(ctx, kg.Gated{Gate: gate()}, []kg.Conditional{
		{Ask: tmpl, Patch: add("e"), Params: kg.Params{"g": gi, "v": kg.String("z")}},
		{Ask: tmpl, Patch: add("f"), Params: kg.Params{"g": gi, "v": kg.String("d")}},
	})
	if err != nil || !slices.Equal(applied, []bool{false, true}) {
		t.Fatalf("templated records: applied %v (%v), want [false true]", applied, err)
	}
	if s := state(); s != "o=a o=b o=d o=f" {
		t.Fatalf("after templated records: %q, want o=a o=b o=d o=f", s)
	}
	// Update records: run as they are; one with an ack applied when its
	// update wrote the ack's quad, which then becomes its receipt.
	ack := func() rdf.IRI { return kg.MustIRI(ontology.StagingBase + uuid.NewString()) }
	acked := func(a rdf.IRI, cond, v string) string {
		return "INSERT { GRAPH " + g + " { <urn:s> <urn:p> \"" + v + "\" } GRAPH <" + a.String() + "> { <" + a.String() + "> <" + a.String() + "> <" + a.String() + "> } } WHERE { GRAPH " + g + " { <urn:s> <urn:p> \"" + cond + "\" } }"
	}
	held, refused, receipt := ack(), ack(), ack()
	applied, err = c.ConditionalBatch(ctx, kg.Gated{Gate: gate(), Receipt: receipt}, []kg.Conditional{
		{Update: acked(held, "f", "g"), Ack: held},
		{Update: acked(refused, "z", "h"), Ack: refused},
		{Update: "INSERT DATA { GRAPH " + g + " { <urn:s> <urn:p> \"i\" } }"},
		{Ask: has("g"), Patch: add("j")},
	})
	if err != nil || !slices.Equal(applied, []bool{true, false, true, true}) {
		t.Fatalf("update records: applied %v (%v), want [true false true true]", applied, err)
	}
	if s := state(); s != "o=a o=b o=d o=f o=g o=i o=j" {
		t.Fatalf("after update records: %q, want o=a o=b o=d o=f o=g o=i o=j", s)
	}
	res, err := c.Select(ctx, "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } VALUES ?g { <"+held.String()+"> <"+refused.String()+"> <"+receipt.String()+"> } }")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Solutions) != 1 || res.Solutions[0].String("g") != receipt.String() || res.Solutions[0].String("o") != held.String() || res.Solutions[0].String("p") != ontology.Applied {
		t.Errorf("ack and receipt graphs after update records: %v, want only the receipt of the applied one", res.Solutions)
	}
	// An update record the store cannot run fails the request, nothing
	// changed; the log mode takes none.
	if _, err := c.ConditionalBatch(ctx, kg.Gated{Gate: gate()}, []kg.Conditional{{Ask: "ASK {}", Patch: add("k")}, {Update: "INSERT DATA { GRAPH "}}); status(err) != http.StatusBadRequest {
		t.Errorf("an update it cannot read: %v, want 400", err)
	}
	log := kg.MustIRI(ontology.LogIRI("batch-"+uuid.NewString(), 0))
	if _, err := c.ConditionalPatch(ctx, log, -1, []kg.Conditional{{Offset: 0, Update: "INSERT DATA { GRAPH " + g + " { <urn:s> <urn:p> \"k\" } }"}}); status(err) != http.StatusBadRequest {
		t.Errorf("an update record in the log mode: %v, want 400", err)
	}
	if s := state(); s != "o=a o=b o=d o=f o=g o=i o=j" {
		t.Fatalf("after refused update records: %q, want o=a o=b o=d o=f o=g o=i o=j", s)
	}
}

// TestConditionalTemplates: the module evaluates an ASK template with
// each record's values given to the evaluation (or, for a template where
// that could answer otherwise, substituted into its algebra) on the
// template's algebra prepared once; whatever the path, each record holds
// exactly when the query endpoint's ASK of the template bound by the same
// values (kg.Bind: the text with the terms in it) does. The templates
// cover what an append's condition holds (GRAPH of a variable, FILTER,
// NOT EXISTS, OPTIONAL) and what takes the substitution (UNION, an
// OPTIONAL with its own filter, BIND), and the union default graph. (A
// template's parameters are named apart from its other variables: $n and
// ?n are one variable to SPARQL, but kg.Bind replaces only $n.)
func TestConditionalTemplates(t *testing.T) {
	fusekitest.RequireFuseki(t, "Trails' module for Fuseki (conditional-patch)")
	fusekitest.Parallel(t)
	c := newClient(t)
	ctx := context.Background()
	g := kg.MustIRI("urn:test:templates:" + uuid.NewString())
	other := kg.MustIRI("urn:test:templates:" + uuid.NewString())
	if err := c.Update(ctx, "INSERT DATA { GRAPH <"+g.String()+"> { <urn:s> <urn:p> \"a\", \"b\" ; <urn:n> 2 } GRAPH <"+other.String()+"> { <urn:s> <urn:p> \"c\" } }"); err != nil {
		t.Fatal(err)
	}
	templates := []string{
		`ASK { GRAPH $g { <urn:s> <urn:n> ?c } FILTER(?c = $n) FILTER NOT EXISTS { GRAPH $g { <urn:s> <urn:p> $v } } OPTIONAL { GRAPH $g { <urn:s> <urn:k> ?k } } FILTER(COALESCE(?k, 0) = 0) }`,
		`ASK { { GRAPH $g { <urn:s> <urn:p> $v } } UNION { GRAPH $g { <urn:s> <urn:n> $n } } }`,
		`ASK { GRAPH $g { <urn:s> <urn:n> ?c } OPTIONAL { GRAPH $g { <urn:s> <urn:p> ?o FILTER(?o = $v) } } FILTER(BOUND(?o) || ?c = $n) }`,
		`ASK { GRAPH $g { <urn:s> <urn:n> ?c } BIND(?c + 1 AS ?m) FILTER(?m = $n + 1) }`,
		`ASK { <urn:s> <urn:p> $v }`,
	}
	var recs []kg.Conditional
	var want []bool
	for _, tmpl := range templates {
		for _, gr := range []rdf.IRI{g, other} {
			for _, v := range []string{"a", "c", "z"} {
				for _, n := range []int{2, 3} {
					p := kg.Params{"g": gr, "v": kg.String(v), "n": kg.Int(n)}
					maps.DeleteFunc(p, func(name string, _ rdf.Term) bool { return !strings.Contains(tmpl, "$"+name) })
					bound, err := kg.Bind(tmpl, p)
					if err != nil {
						t.Fatal(err)
					}
					ok, err := c.Ask(ctx, bound)
					if err != nil {
						t.Fatalf("%s: %v", bound, err)
					}
					want = append(want, ok)
					recs = append(recs, kg.Conditional{Ask: tmpl, Params: p,
						Patch: []byte("A <urn:r> <urn:i> \"" + strconv.Itoa(len(recs)) + "\" <urn:test:templates:applied> .\n")})
				}
			}
		}
	}
	got, err := c.ConditionalBatch(ctx, kg.Gated{Gate: kg.MustIRI(ontology.StagingBase + uuid.NewString())}, recs)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for i := range recs {
		if got[i] != want[i] {
			b, _ := kg.Bind(recs[i].Ask, recs[i].Params)
			t.Errorf("record %d: the module says %v, the query endpoint %v: %s", i, got[i], want[i], b)
		}
		if want[i] {
			held++
		}
	}
	if held == 0 || held == len(recs) {
		t.Errorf("%d of %d held: the cases do not tell holding from not", held, len(recs))
	}
}
