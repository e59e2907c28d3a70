package kg_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

func TestGraphStore(t *testing.T) {
	fusekitest.Parallel(t)
	c := newClient(t)
	ctx := context.Background()
	g := kg.MustIRI("urn:test:gsp:" + uuid.NewString())
	nt := []byte("<urn:s> <urn:p> \"tab\\there \\\"q\\\" \\u0000 😀\" .\n<urn:s> <urn:q> <urn:o> .\n")
	if err := c.PutGraph(ctx, g, kg.NTriples, nt); err != nil {
		t.Fatalf("put: %v", err)
	}
	got, err := c.GetGraph(ctx, g)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	triples, err := rdf.NewTripleDecoder(bytes.NewReader(got), rdf.NTriples).DecodeAll()
	if err != nil {
		t.Fatalf("decode %q: %v", got, err)
	}
	if len(triples) != 2 {
		t.Fatalf("got %d triples, want 2: %s", len(triples), got)
	}
	var dump bytes.Buffer
	if err := c.Dump(ctx, &dump); err != nil {
		t.Fatalf("dump: %v", err)
	}
	if !strings.Contains(dump.String(), "<urn:s> <urn:q> <urn:o> <"+g.String()+"> .") {
		t.Fatalf("dump lacks the graph's quad:\n%s", dump.String())
	}
	g2 := kg.MustIRI(g.String() + ":quads")
	nq := []byte("<urn:s> <urn:p> \"from n-quads\" <" + g2.String() + "> .\n")
	for range 2 { // twice: adding present quads changes nothing
		if err := c.LoadQuads(ctx, nq); err != nil {
			t.Fatalf("load quads: %v", err)
		}
	}
	q, _ := kg.Bind("SELECT ?o { GRAPH $g { ?s ?p ?o } }", kg.Params{"g": g2})
	if res, err := c.Select(ctx, q); err != nil || len(res.Solutions) != 1 || res.Solutions[0].String("o") != "from n-quads" {
		t.Fatalf("after load quads: got %v, %v; want one solution", res, err)
	}
	if err := c.DeleteGraph(ctx, g2); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteGraph(ctx, g); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := c.GetGraph(ctx, g); !errors.Is(err, kg.ErrNotFound) {
		t.Fatalf("get after delete: got %v, want ErrNotFound", err)
	}
	if err := c.PutGraph(ctx, g, kg.NTriples, []byte("not n-triples")); !errors.Is(err, kg.ErrBadRequest) {
		t.Fatalf("put garbage: got %v, want ErrBadRequest", err)
	}
}

// TestLargeUpdateIsNotFormEncoded sends an update bigger than Fuseki's cap
// on form-encoded requests (25 MiB), which only an
// application/sparql-update body can carry.
func TestLargeUpdateIsNotFormEncoded(t *testing.T) {
	fusekitest.Parallel(t)
	// A generous limit: this tests the request's form, not the store's
	// speed, and CI machines may be busy.
	c := fusekitest.Client(t, kg.Config{Endpoint: fusekitest.Endpoint(t), Timeout: 5 * time.Minute})
	ctx := context.Background()
	g := kg.MustIRI("urn:test:large:" + uuid.NewString())
	content := strings.Repeat("lorem \"ipsum\"\n", 90) // ~1.3 KB, like a long turn
	const n = 20000
	var d kg.Data
	for i := range n {
		d.Add(g, kg.MustIRI(fmt.Sprintf("urn:test:big:%d", i)), kg.MustIRI("urn:test:p"), kg.String(content))
	}
	u, err := d.InsertData()
	if err != nil {
		t.Fatal(err)
	}
	if len(u) <= 25<<20 {
		t.Fatalf("update is %d bytes, want more than 25 MiB", len(u))
	}
	if err := c.Update(ctx, u); err != nil {
		t.Fatalf("update of %d bytes: %v", len(u), err)
	}
	q, _ := kg.Bind("SELECT (COUNT(*) AS ?n) (SUM(STRLEN(?v)) AS ?len) { GRAPH $g { ?s ?p ?v } }", kg.Params{"g": g})
	res, err := c.Select(ctx, q)
	if err != nil || len(res.Solutions) != 1 {
		t.Fatalf("query: %v %v", res, err)
	}
	if got, _ := res.Solutions[0].Int("n"); got != n {
		t.Fatalf("got %d triples, want %d", got, n)
	}
	if got, _ := res.Solutions[0].Int("len"); got != n*len(content) {
		t.Fatalf("got %d characters, want %d", got, n*len(content))
	}
	if err := c.DeleteGraph(ctx, g); err != nil {
		t.Fatal(err)
	}
}
