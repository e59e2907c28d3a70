package prov

import (
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Merge is the record of one merge-back (design note 001): Principal merged the
// result of session Child into session Parent, where it became the turn
// with IRI Turn, at Time. Status is the child's result status, "completed"
// or "failed". Sessions are named by id.
type Merge struct {
	Child     string
	Parent    string
	Turn      string
	Status    string
	Principal string
	Time      time.Time
}

// AddMerge adds the PROV record of m to d, in the PROV graph, under the
// activity IRI act, which the caller mints:
//
//	act a prov:Activity, trails:Merge ; prov:used child ;
//	    trails:mergedInto parent ; trails:mergeStatus "completed" ;
//	    prov:wasAssociatedWith agent ; prov:startedAtTime t .
//	turn prov:wasGeneratedBy act .
//
// The turn itself, with its range reference and artifacts, is written by
// the caller in the parent's graph. A Turn that is not a valid IRI
// surfaces through d.Err.
func AddMerge(d *kg.Data, act rdf.IRI, m Merge) {
	g := kg.MustIRI(ontology.ProvGraph)
	addActivity(d, act, ontology.Merge, m.Principal, m.Time)
	d.Add(g, act, kg.MustIRI(ontology.ProvUsed), sessionIRI(m.Child))
	d.Add(g, act, kg.MustIRI(ontology.MergedInto), sessionIRI(m.Parent))
	d.Add(g, act, kg.MustIRI(ontology.MergeStatus), kg.String(m.Status))
	turn, err := kg.IRI(m.Turn)
	if err != nil {
		turn = rdf.IRI{} // the zero IRI: d records an invalid term
	}
	d.Add(g, turn, kg.MustIRI(ontology.ProvWasGeneratedBy), act)
}
