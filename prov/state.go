package prov

import (
	"time"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// StateChange is the record of one change of a session's lifecycle state:
// Principal moved Session from state From to state To at Time, for Reason
// (free text, "" when none was given). States are the strings the session
// package stores: "active", "suspended", "completed", "failed", "expired".
type StateChange struct {
	Session   string
	From, To  string
	Principal string
	Time      time.Time
	Reason    string
}

// NewStateChangeActivity returns a fresh IRI for a StateChange activity:
// https://w3id.org/trails/id/activity/state/{uuid v7}. A session changes
// state many times, so each change gets an IRI of its own, minted before
// the update that writes it (the writer then asks whether that IRI is
// stored to learn whether its conditional update applied).
func NewStateChangeActivity() rdf.IRI {
	return kg.MustIRI(ontology.ActivityIRI("state", uuid.Must(uuid.NewV7()).String()))
}

// AddStateChange adds the PROV record of c to d, in the PROV graph, under
// the activity IRI act:
//
//	act a prov:Activity, trails:StateChange ; prov:used session ;
//	    trails:fromState "active" ; trails:toState "completed" ;
//	    prov:wasAssociatedWith agent ; prov:startedAtTime t ;
//	    trails:reason "…" .
//	agent a prov:Agent ; dcterms:identifier "principal" .
//
// with trails:reason only when c.Reason is not empty. Invalid values (a
// reason that is not UTF-8) surface through d.Err.
func AddStateChange(d *kg.Data, act rdf.IRI, c StateChange) {
	g := kg.MustIRI(ontology.ProvGraph)
	addActivity(d, act, ontology.StateChange, c.Principal, c.Time)
	d.Add(g, act, kg.MustIRI(ontology.ProvUsed), sessionIRI(c.Session))
	d.Add(g, act, kg.MustIRI(ontology.FromState), kg.String(c.From))
	d.Add(g, act, kg.MustIRI(ontology.ToState), kg.String(c.To))
	if c.Reason != "" {
		d.Add(g, act, kg.MustIRI(ontology.Reason), kg.String(c.Reason))
	}
}
