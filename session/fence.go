package session

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Fences (issue 22, A5): a write whose answer is lost (its attempt timed
// out, the connection was cut, the caller gave up) may still be on its
// way: queued behind the store's single writer, or delayed in the
// network. Asking the store then whether it applied is not enough: the
// question may be answered before the write commits, and the writer would
// report a refusal (or write again) for a write that lands after.
//
// So each request that may lose its answer carries a gate: a graph IRI of
// its own (under ontology.StagingBase and a uuid, as the ack graphs), and
// last operations (gateOps) that fail the whole request, which the store
// then rolls back, when the fences graph (ontology.FencesGraph) names
// that gate. When the answer is lost, the writer first fences the gate (an
// INSERT DATA into the fences graph, sent even if the caller's context has
// ended) and only once the fence is acknowledged asks whether the write
// applied: the store runs one write transaction at a time, so the request
// either committed before the fence, and the question sees it, or it
// fails when it arrives. If the fence cannot be sent, the outcome stays
// unknown and the writer returns the store error, never a refusal.
//
// A fence costs one request, and only after a lost answer; the gate costs
// three operations in the request, no round trip. Gates are used on
// Fuseki and Oxigraph, whose profiles the kg client tells (see acked for
// what each store refuses); elsewhere a lost answer is a store error.

// fenceTimeout bounds the fence and the question after it, which do not
// end with the caller's context.
const fenceTimeout = 10 * time.Second

// gateGraph returns a new gate graph IRI, and whether the store is one
// on which gateOps fail a fenced request (Fuseki and Oxigraph).
func (st *Store) gateGraph() (rdf.IRI, bool) {
	return st.ackGraph()
}

// gateOps returns the operations that end a request with gate g: they
// write g only if g is not fenced, then fail the request when g does not
// exist (acked), and drop it. No PREFIX (see share-value.ru).
func gateOps(g rdf.IRI) string {
	t, _ := kg.Term(g)
	f, _ := kg.Term(kg.MustIRI(ontology.FencesGraph))
	at, _ := kg.Term(kg.MustIRI(ontology.FencedAt))
	return " ;\nINSERT { GRAPH " + t + " { " + t + " " + t + " " + t + " } } WHERE { FILTER NOT EXISTS { GRAPH " + f + " { " + t + " " + at + " ?fencedAt } } }" +
		acked(g)
}

// fence makes sure that the request carrying gate g can no longer apply:
// once it returns nil, that request has either committed or will fail.
// It is sent even when ctx has ended, for at most fenceTimeout.
func (st *Store) fence(ctx context.Context, g rdf.IRI) error {
	var d kg.Data
	d.Add(kg.MustIRI(ontology.FencesGraph), g, iri(ontology.FencedAt), kg.DateTime(time.Now().UTC()))
	u, err := d.InsertData()
	if err != nil {
		return err
	}
	err = st.c.Update(named(ctx, "fence"), u, kg.Idempotent())
	telemetry.Fenced(ctx, err)
	if err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	return nil
}

// settleContext returns the context of a fence and the question after
// it: ctx's values without its end, for at most fenceTimeout.
func settleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), fenceTimeout)
}

// unsettled reports whether the failure err of an update leaves its
// outcome unknown: no answer came (a timeout, a cut connection, the
// caller's context ended), or an answer a proxy may give while the store
// still holds the request (502, 503, 504), or, for an update kg may have
// sent more than once (retried), any server error, which may follow an
// attempt whose answer was lost. An answer of the store itself (4xx; 500
// to an update sent once) is not: the store did not apply the request.
func unsettled(err error, retried bool) bool {
	var ke *kg.Error
	if !errors.As(err, &ke) {
		return true
	}
	switch {
	case ke.Status == 0:
		return true
	case ke.Status == http.StatusBadGateway || ke.Status == http.StatusServiceUnavailable || ke.Status == http.StatusGatewayTimeout:
		return true
	case ke.Status >= 500:
		return retried
	}
	return false
}

// send sends u, an update safe to repeat, with a gate. It returns nil
// when the store answered (the caller's question then says whether u's
// condition held). When the answer was lost and the request is fenced,
// lost is that failure: the caller's question now tells whether u
// applied, and when it did not, lost is the error to return. Otherwise
// err is the failure, and u may or may not have applied.
func (st *Store) send(ctx context.Context, u string) (lost, err error) {
	g, gates := st.gateGraph()
	if !gates {
		return nil, st.c.Update(ctx, u, kg.Idempotent())
	}
	err = st.c.Update(ctx, u+gateOps(g), kg.Idempotent())
	if err == nil || !unsettled(err, true) {
		return nil, err
	}
	fctx, cancel := settleContext(ctx)
	defer cancel()
	if ferr := st.fence(fctx, g); ferr != nil {
		return nil, err
	}
	return err, nil
}
