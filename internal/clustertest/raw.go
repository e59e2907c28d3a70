package clustertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"testing"

	"github.com/knakk/rdf"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/rdfio"
)

// The writes below are a test's own, behind the library's back (fixtures,
// simulated damage): on the kafka profile they go through the log of c's
// replicated store, as records like the library's, so that every replica
// takes them and the replicas stay alike; elsewhere they go to c.

// Update sends update u to c's dataset (see Querier). On replica groups
// (Groups) an update that names no session (one that edits every
// session's graph, say) goes to every group's log, and one that names
// sessions of two groups, which the Sharded refuses, to the log of the
// group of the first it names (the graph an INSERT DATA or a DELETE
// names first): an insider edits every replica that holds the graphs.
func Update(ctx context.Context, tb testing.TB, c *kg.Client, u string, opts ...kg.UpdateOption) error {
	tb.Helper()
	q := Querier(tb, c)
	if !fusekitest.OnCluster() || Groups() == 1 {
		return q.Update(ctx, u, opts...)
	}
	r := rigOf(tb, c)
	first := sessionIRI.FindStringSubmatch(u)
	if first == nil {
		return r.toGroups(ctx, -1, func(g *cluster.Client) error { return g.Update(ctx, u, opts...) })
	}
	err := q.Update(ctx, u, opts...)
	if !errors.Is(err, cluster.ErrCrossGroup) {
		return err
	}
	sh := q.(*auditWaiter).Sharded
	g, err := sh.Group(ctx, first[1])
	if err != nil || g < 0 {
		return fmt.Errorf("clustertest: the group of session %s, which the update names first: %d, %v", first[1], g, err)
	}
	return r.toGroups(ctx, g, func(c *cluster.Client) error { return c.Update(ctx, u, opts...) })
}

// sessionIRI matches the IRI of a session, or of a resource under it, in
// an update's text; its submatch is the session's id.
var sessionIRI = regexp.MustCompile(`<` + regexp.QuoteMeta(ontology.SessionBase) + `([^/>#]+)`)

// rigOf returns the replicated store of c's dataset, making it as
// Querier does.
func rigOf(tb testing.TB, c *kg.Client) *rig {
	tb.Helper()
	Querier(tb, c)
	mu.Lock()
	defer mu.Unlock()
	return rigs[c.Endpoint()]
}

// PutGraph replaces graph g of c's dataset with data of the given media
// type, as c.PutGraph does: with c's Graph Store, or on the kafka profile
// through the log. On replica groups a session's graph goes to the
// session's group, and any other graph to every group's log: a Sharded
// holds a staging graph back until the update that binds it, which the
// leftover of a writer a test plays never has.
func PutGraph(ctx context.Context, tb testing.TB, c *kg.Client, g rdf.IRI, mediaType string, data []byte) error {
	tb.Helper()
	if !fusekitest.OnCluster() {
		return c.PutGraph(ctx, g, mediaType, data)
	}
	q, ok := Querier(tb, c).(interface {
		PutGraph(context.Context, rdf.IRI, string, []byte) error
	})
	if !ok {
		return fmt.Errorf("clustertest: %T has no PutGraph", Querier(tb, c))
	}
	if Groups() == 1 || sessionIRI.MatchString("<"+g.String()+">") {
		return q.PutGraph(ctx, g, mediaType, data)
	}
	return rigOf(tb, c).toGroups(ctx, -1, func(gc *cluster.Client) error { return gc.PutGraph(ctx, g, mediaType, data) })
}

// LoadQuads adds the N-Quads nq to c's dataset: with c's Graph Store, or
// on the kafka profile as one INSERT DATA through the log. There every
// subject and graph must be an IRI (blank nodes made by the replicas
// would differ).
func LoadQuads(ctx context.Context, tb testing.TB, c *kg.Client, nq []byte) error {
	tb.Helper()
	if !fusekitest.OnCluster() {
		return c.LoadQuads(ctx, nq)
	}
	var d kg.Data
	dec := rdfio.NewDecoder(bytes.NewReader(nq), rdfio.NQuads)
	for {
		q, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		g, gok := q.G.(rdf.IRI)
		s, sok := q.S.(rdf.IRI)
		if !gok || !sok {
			return fmt.Errorf("clustertest: line %d: a blank node or the default graph; the log takes IRIs only", q.Line)
		}
		d.Add(g, s, q.P.(rdf.IRI), q.O)
	}
	if d.Len() == 0 {
		return nil
	}
	if l, ok := Querier(tb, c).(interface {
		LoadQuads(context.Context, []byte) error
	}); ok && Groups() > 1 {
		return l.LoadQuads(ctx, nq) // split by tree, a record per group
	}
	u, err := d.InsertData()
	if err != nil {
		return err
	}
	return Update(ctx, tb, c, u)
}

// DeleteGraph deletes graph g of c's dataset, as c.DeleteGraph does: with
// c's Graph Store, or on the kafka profile as DROP GRAPH through the log
// (an error when there is no such graph, as there).
func DeleteGraph(ctx context.Context, tb testing.TB, c *kg.Client, g rdf.IRI) error {
	tb.Helper()
	if !fusekitest.OnCluster() {
		return c.DeleteGraph(ctx, g)
	}
	t, err := kg.Term(g)
	if err != nil {
		return err
	}
	return Update(ctx, tb, c, "DROP GRAPH "+t)
}
