package kg_test

import (
	"slices"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

// TestReferencesOf: the references options name, in order, whatever
// options come between them.
func TestReferencesOf(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []kg.UpdateOption
		want []string
	}{
		{"none", nil, nil},
		{"idempotent only", []kg.UpdateOption{kg.Idempotent()}, nil},
		{"one", []kg.UpdateOption{kg.References("a")}, []string{"a"}},
		{"several options", []kg.UpdateOption{kg.References("a"), kg.Idempotent(), kg.References("b", "c")}, []string{"a", "b", "c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := kg.ReferencesOf(c.opts...); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestUpdateReferencesIgnored: a Client applies an update with
// references as it applies it without them.
func TestUpdateReferencesIgnored(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	c := fusekitest.Empty(t)
	params := kg.Params{
		"g": kg.MustIRI("urn:trails-test:g"), "s": kg.MustIRI("urn:trails-test:s"),
		"p": kg.MustIRI("urn:trails-test:p"), "o": kg.MustIRI("https://w3id.org/trails/id/session/b/turn/0"),
	}
	u, err := kg.Bind("INSERT DATA { GRAPH $g { $s $p $o } }", params)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, u, kg.References("b"), kg.Idempotent()); err != nil {
		t.Fatalf("update with a reference: %v", err)
	}
	q, err := kg.Bind("ASK { GRAPH $g { $s $p $o } }", params)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := c.Ask(ctx, q)
	if err != nil || !ok {
		t.Errorf("the triple stored: got %v, %v, want true", ok, err)
	}
}
