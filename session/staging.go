package session

import (
	"context"
	"fmt"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/staged"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// maxInlineBytes is the longest content a write may put into its SPARQL
// Update as a literal when the Querier has no Graph Store (graphStore):
// the limit Trails had before staging.
const maxInlineBytes = 1 << 20

// graphStore is what staging needs of the transport besides Querier:
// *kg.Client has it. A Querier that wraps a client and lacks it persists
// turns of at most maxInlineBytes.
type graphStore interface {
	PutGraph(ctx context.Context, g rdf.IRI, mediaType string, data []byte) error
}

var _ graphStore = (*kg.Client)(nil)

// staging carries the contents of one write that are too long for the
// SPARQL parser (over staged.Above bytes) around it (package staged):
// Persist sends them ahead into a staging graph, and the write's one
// conditional update takes them from there and drops the staging graph in
// the same request, whether or not its condition held. A copy (Detach)
// binds them from the original turns in the store instead, and sends
// nothing. The nil *staging puts every content into the update as a
// literal.
type staging struct {
	set  staged.Set
	copy bool // bind from the original turns (Detach)
}

// newStaging returns the staging of a write of st, nil (every content
// inline) when st's Querier has no Graph Store (checkStaging refused what
// it cannot take).
func (st *Store) newStaging() *staging {
	if _, ok := st.c.(graphStore); !ok {
		return nil
	}
	return &staging{set: staged.Set{Whole: staged.Whole(st.c)}}
}

// newCopy returns the staging of a Detach: long contents are bound from
// the turns copied (Turn.ID), checked by their SHA-256.
func newCopy() *staging { return &staging{copy: true} }

// content adds the triple (ti trails:content t.Content) to graph g: into d
// as a literal when the content is short (or sg is nil), else through sg.
func (sg *staging) content(d *kg.Data, g, ti rdf.IRI, t Turn) {
	sg.literal(d, g, ti, iri(ontology.Content), kg.String(t.Content), t.ID)
}

// literal adds the triple (s p o) to graph g: into d when o is at most
// staged.Above bytes long (or sg is nil), else through sg: sent ahead,
// or for a copy (Detach) bound from resource from, which holds the same
// value under p in the store (from not an IRI: into d after all).
func (sg *staging) literal(d *kg.Data, g, s, p rdf.IRI, o rdf.Literal, from string) {
	if sg == nil || len(o.String()) <= staged.Above {
		d.Add(g, s, p, o)
		return
	}
	if !sg.copy {
		sg.set.Add(g, s, p, o)
		return
	}
	f, err := kg.IRI(from)
	if err != nil {
		d.Add(g, s, p, o)
		return
	}
	sg.set.Copy(g, s, p, f, o.String())
}

// withStaged is withData for a template with a "#STAGED" comment in its
// WHERE clause: it binds tmpl with sg's contents, parameters p and the
// quads of d, and ends it with the removal of sg's staging graph.
func withStaged(name, tmpl string, sg *staging, d *kg.Data, p kg.Params) (string, error) {
	return withStagedTables(name, tmpl, sg, d, p, nil)
}

// withStagedTables is withStaged for a template with VALUES tables too
// (withTables).
func withStagedTables(name, tmpl string, sg *staging, d *kg.Data, p kg.Params, tables map[string]kg.Table) (string, error) {
	if sg == nil {
		return withTables(name, tmpl, d, p, tables)
	}
	tmpl, err := sg.set.Bind(tmpl)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	u, err := withTables(name, tmpl, d, p, tables)
	if err != nil {
		return "", err
	}
	return u + sg.set.Drop(), nil
}

// empty reports whether sg stages nothing: no pattern in the update's
// WHERE clause, no graph to send or drop.
func (sg *staging) empty() bool { return sg == nil || sg.set.Empty() }

// send PUTs the staged contents into the staging graph, if any.
func (sg *staging) send(ctx context.Context, c Querier) error {
	if sg == nil || !sg.set.Sends() {
		return nil
	}
	gs, ok := c.(graphStore)
	if !ok {
		return fmt.Errorf("%w: no Graph Store to stage contents through", ErrInvalid) // checkStaging refused it before
	}
	return sg.set.Send(ctx, gs)
}

// drop removes the staging graph after a write whose update failed.
func (sg *staging) drop(ctx context.Context, c Querier) {
	if sg != nil {
		sg.set.Remove(ctx, c)
	}
}

// checkStaging refuses, before anything is sent, turns that the store's
// Querier cannot take: contents over maxInlineBytes when it has no Graph
// Store (graphStore) to stage them through.
func (st *Store) checkStaging(turns []Turn) error {
	if _, ok := st.c.(graphStore); ok {
		return nil
	}
	for _, t := range turns {
		if len(t.Content) > maxInlineBytes {
			return fmt.Errorf("%w: turn %d: %d bytes of content; contents over %d bytes need a Querier with PutGraph (as *kg.Client has), to send them through the Graph Store Protocol", ErrInvalid, t.Index, len(t.Content), maxInlineBytes)
		}
	}
	return nil
}
