package clustertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/knakk/rdf"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/rdfio"
)

// The writes below are a test's own, behind the library's back (fixtures,
// simulated damage): on the kafka profile they go through the log of c's
// replicated store, as records like the library's, so that every replica
// takes them and the replicas stay alike; elsewhere they go to c.

// Update sends update u to c's dataset (see Querier).
func Update(ctx context.Context, tb testing.TB, c *kg.Client, u string, opts ...kg.UpdateOption) error {
	tb.Helper()
	return Querier(tb, c).Update(ctx, u, opts...)
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
