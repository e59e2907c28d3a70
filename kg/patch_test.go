package kg_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/uuid"
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
