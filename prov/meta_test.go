package prov_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// TestForkMetadataRoundTrip writes fork records with and without metadata
// and reads them back with ForkRecord: the defaults are not written and
// are read back filled in.
func TestForkMetadataRoundTrip(t *testing.T) {
	c := fusekitest.New(t)
	ctx := context.Background()
	r := prov.NewReader(c)
	when := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	parent := newID(t)
	full := prov.Fork{
		Child: newID(t), Parent: parent, At: 3, Principal: "agent-7", Time: when,
		Type: "auto-edit", CreatedBy: "system", Reason: "a \"better\" plan",
		NextSteps: "Implement feature X", ContextSummary: "line one\nline two",
		Anchor: ontology.AnchorIRI(ontology.SessionIRI(parent), "task start"),
	}
	turn := prov.Fork{Child: newID(t), Parent: parent, At: 1, Principal: "agent-7", Time: when,
		Turn: ontology.TurnIRI(ontology.SessionIRI(parent), 1)}
	plain := prov.Fork{Child: newID(t), Parent: parent, At: 2, Principal: "agent-7", Time: when,
		Type: prov.DefaultForkType, CreatedBy: prov.DefaultCreatedBy}
	var d kg.Data
	for _, f := range []prov.Fork{full, turn, plain} {
		prov.AddFork(&d, f)
	}
	update(t, c, &d)

	turn.Type, turn.CreatedBy = prov.DefaultForkType, prov.DefaultCreatedBy
	for _, want := range []prov.Fork{full, turn, plain} {
		got, err := r.ForkRecord(ctx, want.Child)
		if err != nil {
			t.Fatal(err)
		}
		if got.Fork != want {
			t.Errorf("got %+v, want %+v", got.Fork, want)
		}
	}
	// The defaults are not written: a plain record is as small as before.
	q, err := kg.Bind(`SELECT (COUNT(*) AS ?n) WHERE { GRAPH $g { $act ?p ?o } }`,
		kg.Params{"g": iri(ontology.ProvGraph), "act": prov.ForkActivity(plain.Child)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Select(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.Solutions[0].Int("n"); n != 6 {
		t.Errorf("a record without metadata: got %d triples on the activity, want 6 (two types, time, agent, parent, fork point)", n)
	}

	if _, err := r.ForkRecord(ctx, newID(t)); !errors.Is(err, prov.ErrNotFound) {
		t.Errorf("unknown session: got %v, want ErrNotFound", err)
	}
	if _, err := r.ForkRecord(ctx, ""); !errors.Is(err, prov.ErrInvalid) {
		t.Errorf("empty id: got %v, want ErrInvalid", err)
	}
	var bad kg.Data
	prov.AddFork(&bad, prov.Fork{Child: newID(t), Parent: parent, Principal: "p", Time: when, Anchor: "not an IRI"})
	if bad.Err() == nil {
		t.Error("an anchor that is not an IRI: got no error from the data")
	}
}
