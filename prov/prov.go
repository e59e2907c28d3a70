// Package prov writes and reads the PROV-O records of Trails: one
// prov:Activity for every fork (typed trails:Fork), detach (trails:Detach)
// and deletion (trails:Deletion), kept in the PROV graph so that they outlive
// the sessions they describe. Its queries (queries/*.rq) answer auditors'
// questions in plain SPARQL and run unchanged in any SPARQL tool.
//
// Comments that cite a "design note 00N" mean the design notes 000-004
// its records come from; they are not in this repository (see
// the README, "Features and the design notes they come from").
package prov

import (
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Fork is the record of one fork: Principal forked Parent at index At,
// generating Child, at Time. Sessions are named by id.
type Fork struct {
	Child     string
	Parent    string
	At        int
	Principal string
	Time      time.Time
	// AcrossPrincipals says that Principal forked another principal's
	// session with explicit permission (session.AcrossPrincipals).
	AcrossPrincipals bool

	// Type is how the fork came about: "explicit", "auto-edit" or
	// "auto-regenerate". AddFork writes it only when it is neither ""
	// nor "explicit"; Reader.ForkRecord returns "explicit" when none is
	// stored (ForksOf and ForksBy leave the metadata fields empty).
	Type string
	// CreatedBy says on whose initiative the fork was made: "user" or
	// "system". AddFork writes it only when it is neither "" nor "user";
	// Reader.ForkRecord returns "user" when none is stored.
	CreatedBy string
	// Reason, NextSteps and ContextSummary are free text, written when not
	// empty: why the fork was made, and the intention it starts with.
	Reason, NextSteps, ContextSummary string
	// Anchor is the IRI of the anchor the fork was made at, Turn the IRI of
	// the turn it was made before; "" when the fork was made at an index.
	Anchor, Turn string
}

// Detach is the record of one detach: Principal materialized the prefix
// Session had inherited from Parent (Copied turns) and cut the link, at Time.
type Detach struct {
	Session   string
	Parent    string
	Copied    int
	Principal string
	Time      time.Time
}

// Deletion is the record of one deletion: Principal deleted Session at Time.
type Deletion struct {
	Session   string
	Principal string
	Time      time.Time
}

// ForkActivity returns the IRI of the Fork activity that generated the
// session child. A fork has one, so the IRI is derived from the child's id:
// writing the record twice writes the same triples.
func ForkActivity(child string) rdf.IRI {
	return kg.MustIRI(ontology.ActivityIRI("fork", child))
}

// AddFork adds the PROV record of f to d, in the PROV graph:
//
//	child prov:wasGeneratedBy act ; prov:wasDerivedFrom parent .
//	act a prov:Activity, trails:Fork ; prov:used parent ;
//	    prov:wasAssociatedWith agent ; prov:startedAtTime t ; trails:forkPoint n .
//	agent a prov:Agent ; dcterms:identifier "principal" .
//
// and, when f has them, the metadata of the fork on act: trails:forkType,
// trails:createdBy, trails:reason, trails:nextSteps, trails:contextSummary,
// trails:fromAnchor and trails:beforeTurn (see addForkMetadata).
//
// It returns the activity's IRI. Invalid values (a principal that is not
// UTF-8) surface through d.Err.
func AddFork(d *kg.Data, f Fork) rdf.IRI {
	g := kg.MustIRI(ontology.ProvGraph)
	act := ForkActivity(f.Child)
	child, parent := sessionIRI(f.Child), sessionIRI(f.Parent)
	d.Add(g, child, kg.MustIRI(ontology.ProvWasGeneratedBy), act)
	d.Add(g, child, kg.MustIRI(ontology.ProvWasDerivedFrom), parent)
	addActivity(d, act, ontology.Fork, f.Principal, f.Time)
	d.Add(g, act, kg.MustIRI(ontology.ProvUsed), parent)
	d.Add(g, act, kg.MustIRI(ontology.ForkPoint), kg.Int(f.At))
	if f.AcrossPrincipals {
		d.Add(g, act, kg.MustIRI(ontology.AcrossPrincipals), kg.Bool(true))
	}
	addForkMetadata(d, act, f)
	return act
}

// AddDetach adds the PROV record of x to d, in the PROV graph, under the
// activity IRI act, which the caller mints:
//
//	act a prov:Activity, trails:Detach ; prov:used parent, session ;
//	    trails:detached session ;
//	    prov:wasAssociatedWith agent ; prov:startedAtTime t .
//
// The caller links each copied turn to act (prov:wasGeneratedBy) next to
// the turn itself.
func AddDetach(d *kg.Data, act rdf.IRI, x Detach) {
	g := kg.MustIRI(ontology.ProvGraph)
	addActivity(d, act, ontology.Detach, x.Principal, x.Time)
	d.Add(g, act, kg.MustIRI(ontology.ProvUsed), sessionIRI(x.Parent))
	d.Add(g, act, kg.MustIRI(ontology.ProvUsed), sessionIRI(x.Session))
	d.Add(g, act, kg.MustIRI(ontology.Detached), sessionIRI(x.Session))
}

// AddDeletion adds the PROV record of x to d, in the PROV graph:
//
//	act a prov:Activity, trails:Deletion ; prov:invalidated session ;
//	    prov:wasAssociatedWith agent ; prov:startedAtTime t .
//	session a prov:Entity .
//
// The last triple keeps the deleted session an entity for PROV tools, which
// read the types in the data (they do no inference): the session's graph,
// where it was typed, is gone, and the PROV records about it stay.
func AddDeletion(d *kg.Data, act rdf.IRI, x Deletion) {
	g := kg.MustIRI(ontology.ProvGraph)
	addActivity(d, act, ontology.Deletion, x.Principal, x.Time)
	s := sessionIRI(x.Session)
	d.Add(g, act, kg.MustIRI(ontology.ProvInvalidated), s)
	d.Add(g, s, kg.MustIRI(ontology.RDFType), kg.MustIRI(ontology.ProvEntity))
}

// addActivity writes what every activity has: its types, its agent and
// its start time.
func addActivity(d *kg.Data, act rdf.IRI, kind, principal string, t time.Time) {
	g := kg.MustIRI(ontology.ProvGraph)
	typ := kg.MustIRI(ontology.RDFType)
	d.Add(g, act, typ, kg.MustIRI(ontology.ProvActivity))
	d.Add(g, act, typ, kg.MustIRI(kind))
	d.Add(g, act, kg.MustIRI(ontology.ProvStartedAtTime), kg.DateTime(t))
	agent := AddAgent(d, g, principal)
	d.Add(g, act, kg.MustIRI(ontology.ProvWasAssociatedWith), agent)
}

// AddAgent adds the description of the agent acting as principal to graph
// g of d and returns its IRI:
//
//	agent a prov:Agent ; dcterms:identifier "principal" .
func AddAgent(d *kg.Data, g rdf.IRI, principal string) rdf.IRI {
	agent := kg.MustIRI(ontology.AgentIRI(principal)) // percent-encoded: always valid
	d.Add(g, agent, kg.MustIRI(ontology.RDFType), kg.MustIRI(ontology.ProvAgent))
	d.Add(g, agent, kg.MustIRI(ontology.DCTIdentifier), kg.String(principal))
	return agent
}

// sessionIRI returns the IRI of session id; ids are percent-encoded, so
// the IRI is always valid.
func sessionIRI(id string) rdf.IRI { return kg.MustIRI(ontology.SessionIRI(id)) }
