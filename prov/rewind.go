package prov

import (
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Rewind is the record of one rewind (design note 004): Principal rewound Session
// to index To at Time, moving its abandoned turns into the new session
// Archive (a fork of Session at To) and re-parenting to Archive the forks
// of Session made beyond To (Reparented). Sessions are named by id.
type Rewind struct {
	Session    string
	Archive    string
	To         int
	Reparented []string
	Principal  string
	Time       time.Time
	Reason     string // why, in words; written when not empty
}

// RewindActivity returns the IRI of the Rewind activity that generated the
// archive session archive. A rewind makes one archive, so the IRI is
// derived from the archive's id.
func RewindActivity(archive string) rdf.IRI {
	return kg.MustIRI(ontology.ActivityIRI("rewind", archive))
}

// AddRewind adds the PROV record of r to d, in the PROV graph:
//
//	act a prov:Activity, trails:Rewind ; prov:used session ;
//	    prov:generated archive ; trails:rewoundTo n ;
//	    trails:reparented fork … ;
//	    prov:wasAssociatedWith agent ; prov:startedAtTime t ;
//	    trails:reason "…" .
//
// (prov:generated is written as such: the store does no inference.) The
// archive's own trails:Fork record is AddFork's. It returns the activity's
// IRI. A principal or reason that is not UTF-8 surfaces through d.Err.
func AddRewind(d *kg.Data, r Rewind) rdf.IRI {
	g := kg.MustIRI(ontology.ProvGraph)
	act := RewindActivity(r.Archive)
	addActivity(d, act, ontology.Rewind, r.Principal, r.Time)
	d.Add(g, act, kg.MustIRI(ontology.ProvUsed), sessionIRI(r.Session))
	d.Add(g, act, kg.MustIRI(ontology.ProvGenerated), sessionIRI(r.Archive))
	d.Add(g, act, kg.MustIRI(ontology.RewoundTo), kg.Int(r.To))
	for _, c := range r.Reparented {
		d.Add(g, act, kg.MustIRI(ontology.Reparented), sessionIRI(c))
	}
	if r.Reason != "" {
		d.Add(g, act, kg.MustIRI(ontology.Reason), kg.String(r.Reason))
	}
	return act
}
