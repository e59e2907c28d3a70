package prov

import (
	"context"
	"fmt"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Default values of the fork metadata, which AddFork leaves out and readers
// fill in.
const (
	// DefaultForkType is the Type of a fork recorded without one.
	DefaultForkType = "explicit"
	// DefaultCreatedBy is the CreatedBy of a fork recorded without one.
	DefaultCreatedBy = "user"
)

// addForkMetadata adds the optional metadata of f to its activity act:
//
//	act trails:forkType "auto-edit" ; trails:createdBy "system" ;
//	    trails:reason "…" ; trails:nextSteps "…" ; trails:contextSummary "…" ;
//	    trails:fromAnchor anchor ; trails:beforeTurn turn .
//
// each only when set (and the first two only when not the default). An
// Anchor or Turn that is not a valid IRI surfaces through d.Err.
func addForkMetadata(d *kg.Data, act rdf.IRI, f Fork) {
	g := kg.MustIRI(ontology.ProvGraph)
	text := func(p, v, def string) {
		if v != "" && v != def {
			d.Add(g, act, kg.MustIRI(p), kg.String(v))
		}
	}
	text(ontology.ForkType, f.Type, DefaultForkType)
	text(ontology.CreatedBy, f.CreatedBy, DefaultCreatedBy)
	text(ontology.Reason, f.Reason, "")
	text(ontology.NextSteps, f.NextSteps, "")
	text(ontology.ContextSummary, f.ContextSummary, "")
	link := func(p, v string) {
		if v == "" {
			return
		}
		o, err := kg.IRI(v)
		if err != nil {
			o = rdf.IRI{} // the zero IRI: d records an invalid term
		}
		d.Add(g, act, kg.MustIRI(p), o)
	}
	link(ontology.FromAnchor, f.Anchor)
	link(ontology.BeforeTurn, f.Turn)
}

// ForkRecord returns the record of the fork that generated the session with
// the given id, with its metadata: Type and CreatedBy are filled in with
// DefaultForkType and DefaultCreatedBy when none was recorded. The record
// outlives the fork, so it is found for a deleted or detached fork too.
//
// It returns an error matching ErrInvalid for an empty id, ErrNotFound when
// no fork generated the session (a root, or an unknown id),
// ErrInconsistent when the session has several fork records or records
// Trails does not write, or a *kg.Error from the store.
func (r *Reader) ForkRecord(ctx context.Context, sessionID string) (ForkRecord, error) {
	s, err := sessionTerm(sessionID)
	if err != nil {
		return ForkRecord{}, fmt.Errorf("fork record of %s: %w", sessionID, err)
	}
	res, err := r.query(ctx, "fork", kg.Params{"session": s})
	if err != nil {
		return ForkRecord{}, fmt.Errorf("fork record of %s: %w", sessionID, err)
	}
	switch len(res.Solutions) {
	case 0:
		return ForkRecord{}, fmt.Errorf("fork record of %s: %w", sessionID, ErrNotFound)
	case 1:
	default:
		return ForkRecord{}, fmt.Errorf("fork record of %s: %w: %d records (several parents, agents or values)", sessionID, ErrInconsistent, len(res.Solutions))
	}
	recs, err := forkRecords(res)
	if err != nil {
		return ForkRecord{}, fmt.Errorf("fork record of %s: %w", sessionID, err)
	}
	f, row := recs[0], res.Solutions[0]
	f.Type, f.CreatedBy = row.String("type"), row.String("createdBy")
	f.Reason, f.NextSteps, f.ContextSummary = row.String("reason"), row.String("nextSteps"), row.String("contextSummary")
	f.Anchor, f.Turn = row.String("anchor"), row.String("turn")
	f.AcrossPrincipals = row.String("acrossPrincipals") == "true"
	return f, nil
}
