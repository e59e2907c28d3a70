package session

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/appendhint"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Appends as conditional patches (issue 39). On a Fuseki that serves
// Trails' module (fuseki/module; the servers scripts/fuseki starts load
// it), a Store sends its plain appends (those with an append hint: no
// staged contents, no shared values) not as SPARQL Updates but to the
// module's conditional-patch endpoint (kg.Client.ConditionalBatch): each
// append an ASK, the condition its update would evaluate
// (appendhint.Ask), and an RDF Patch, the data its update would write
// when the condition holds (appendhint.Patch). Fuseki evaluates each
// ASK and applies each patch in one write transaction, so the outcome is
// the update's, for a fraction of its cost: the ASK is a template it
// parses once, the data needs no SPARQL parse, and the ack operations
// (ADD, DROP) are gone, the answer saying which appends applied.
//
// Every batch goes so: its other writes (creates, forks, merges, state
// changes, appends with shared or staged values) as update records, the
// SPARQL Update each would send, run as it is in the same transaction;
// for one with an ack graph the module reads whether its update wrote
// the ack's quad, writes its receipt and drops the graph, so that the
// answer says whether it applied; one without (state changes) learns it
// from its check, asked after the request (checks). A lone plain append
// goes so too; other lone writes stay SPARQL Update. The request carries
// a gate (fence.go): the module refuses it, changing nothing, once the
// gate is fenced. A batch's members write their receipts (the patch's
// receipt quad, or the module's for an update record), so that after a
// lost answer the batch is fenced and its receipts and checks asked, as
// for a SPARQL batch; a lone append's gate is its ack graph, and its
// check answers after the fence. The receipt graphs the Store drops go
// as the request's drop parameters.
//
// A server without the endpoint (404, 405: a Fuseki without the module,
// or another store) turns the path off for the Store, and the write goes
// as SPARQL; so does a request the server cannot read (400), which
// changes nothing.

// conditionalBatcher is what a Querier may offer to write conditional
// patches: *kg.Client does.
type conditionalBatcher interface {
	ConditionalBatch(ctx context.Context, g kg.Gated, recs []kg.Conditional) ([]bool, error)
}

var _ conditionalBatcher = (*kg.Client)(nil)

// patcher is whether a Store's appends go as conditional patches.
type patcher struct {
	off atomic.Bool // the server has no conditional-patch endpoint
}

// WithConditionalPatch turns the conditional patch path on (the
// default) or off. On, a Store whose client is a *kg.Client for Fuseki
// (or a wrapper that passes on its ConditionalBatch and Store methods)
// sends its group commits and its lone plain appends to the
// conditional-patch endpoint of Trails' module for Fuseki, when the
// server has it: same outcome as the SPARQL Update, each condition
// evaluated in the write transaction, a plain append's data applied as
// an RDF Patch. Off, every write is SPARQL Update.
func WithConditionalPatch(on bool) StoreOption {
	return func(st *Store) {
		st.patch = nil
		if on {
			st.patch = &patcher{}
		}
	}
}

// patcherOf returns the conditional patch client of st when its appends
// may go as conditional patches.
func (st *Store) patcherOf() (conditionalBatcher, bool) {
	if st.patch == nil || st.patch.off.Load() {
		return nil, false
	}
	p, ok := st.c.(profiled)
	if !ok || p.Store() != kg.Fuseki {
		return nil, false
	}
	cb, ok := st.c.(conditionalBatcher)
	return cb, ok
}

// conditional returns append w as a conditional patch; with receipt r
// not zero, its patch also writes its receipt into r (receiptOps).
func conditional(w write, r rdf.IRI) (kg.Conditional, bool) {
	if w.app == nil {
		return kg.Conditional{}, false
	}
	patch, err := appendhint.Patch(w.update, *w.app)
	if err != nil {
		return kg.Conditional{}, false
	}
	if r != (rdf.IRI{}) {
		g, a, p := termOrPanic(r), termOrPanic(w.ack), termOrPanic(kg.MustIRI(ontology.Applied))
		patch = append(patch, "A "+g+" "+p+" "+a+" "+g+" .\n"...)
	}
	ask, params := appendhint.Ask(w.update, *w.app)
	return kg.Conditional{Ask: ask, Params: params, Patch: patch}, true
}

// sendPatch sends recs with gate g, the receipt graphs the Store drops
// going with them. sent is false when nothing changed and the writes
// must go as SPARQL: the server has no endpoint (the path is then off),
// or could not read the request.
func (st *Store) sendPatch(ctx context.Context, cb conditionalBatcher, g kg.Gated, recs []kg.Conditional) (applied []bool, sent bool, err error) {
	_, g.Drop = st.takeReceipts()
	dropped := g.Drop
	applied, err = cb.ConditionalBatch(ctx, g, recs)
	if err != nil {
		st.keepReceipts(dropped)
	}
	var ke *kg.Error
	switch {
	case errors.As(err, &ke) && (ke.Status == http.StatusNotFound || ke.Status == http.StatusMethodNotAllowed):
		st.patch.off.Store(true)
		return nil, false, nil
	case errors.Is(err, kg.ErrBadRequest):
		return nil, false, nil
	}
	return applied, true, err
}

// sendPatchGroup sends group as one conditional patch request: each
// plain append as an ASK and a patch (conditional), every other write as
// its SPARQL Update, run as it is, whose ack graph the module reads and
// drops; and gives each its outcome: from the answer for a member with
// an ack, from the members' checks (checks) for the others. It returns
// false, having sent nothing that changed the store and given no
// outcome, when group must go as SPARQL.
func (st *Store) sendPatchGroup(ctx context.Context, group []*pending) bool {
	cb, ok := st.patcherOf()
	if !ok {
		return false
	}
	receipt, _ := st.ackGraph()
	recs := make([]kg.Conditional, len(group))
	for i, p := range group {
		if recs[i], ok = conditional(p.w, receipt); !ok {
			recs[i] = kg.Conditional{Update: p.w.update, Ack: p.w.ack}
		}
	}
	gate, _ := st.gateGraph()
	applied, sent, err := st.sendPatch(batchContext(ctx, group), cb, kg.Gated{Gate: gate, Receipt: receipt}, recs)
	if !sent {
		return false
	}
	st.next()
	if err != nil {
		st.outcomes(ctx, group, receipt, gate, true, err)
		return true
	}
	st.keepReceipts([]rdf.IRI{receipt})
	var ask []*pending // members without an ack: their checks tell
	for i, p := range group {
		switch {
		case p.w.ack != (rdf.IRI{}):
			p.ok = applied[i] // not applied: its condition did not hold
		case p.w.check == "":
			p.ok = true // answered: the caller asks the store itself
		default:
			ask = append(ask, p)
			continue
		}
		close(p.done)
	}
	if len(ask) > 0 {
		ok, err := st.checks(ctx, ask, rdf.IRI{})
		for i, p := range ask {
			if err != nil {
				p.err = err
			} else {
				p.ok = ok[i]
			}
			close(p.done)
		}
	}
	return true
}

// sendPatchAlone sends w, an append, as a conditional patch request of
// its own, its ack graph its gate, and, with release, lets the next
// writes go once it has been answered. sent is false, with nothing sent
// that changed the store, when w must go as SPARQL.
func (st *Store) sendPatchAlone(ctx context.Context, w write, release bool) (ok, sent bool, err error) {
	cb, can := st.patcherOf()
	if !can {
		return false, false, nil
	}
	rec, can := conditional(w, rdf.IRI{})
	if !can {
		return false, false, nil
	}
	telemetry.Committed(ctx)
	applied, sent, err := st.sendPatch(ctx, cb, kg.Gated{Gate: w.ack}, []kg.Conditional{rec})
	if !sent {
		return false, false, nil
	}
	if release {
		st.next()
	}
	if err == nil {
		return applied[0], true, nil
	}
	if !unsettled(err, false) {
		var ke *kg.Error
		if errors.As(err, &ke) && ke.Status >= 500 {
			return false, true, nil // refused and rolled back: the caller reads the state again
		}
		return false, true, err
	}
	ok, err = st.settle(ctx, w.ack, w, err)
	return ok, true, err
}
