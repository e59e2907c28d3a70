package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// addSession adds the metadata of s, created at t, to its graph in d.
func addSession(d *kg.Data, s *Session, t time.Time) {
	g := sessionIRI(s.ID)
	d.Add(g, g, iri(ontology.RDFType), iri(ontology.Session))
	d.Add(g, g, iri(ontology.RDFType), iri(ontology.ProvEntity)) // for PROV tools, which do no inference
	d.Add(g, g, iri(ontology.DCTIdentifier), kg.String(s.ID))
	d.Add(g, g, iri(ontology.Branch), kg.String(s.Branch))
	d.Add(g, g, iri(ontology.Kind), kg.String(string(s.kindOrDefault()))) // limits.go
	d.Add(g, g, iri(ontology.Created), kg.DateTime(t))
	agent := prov.AddAgent(d, g, s.Principal)
	d.Add(g, g, iri(ontology.Principal), agent)
	if s.ParentID != "" {
		p := sessionIRI(s.ParentID)
		d.Add(g, g, iri(ontology.ParentSession), p)
		d.Add(g, g, iri(ontology.ProvWasDerivedFrom), p)
		d.Add(g, g, iri(ontology.ForkedAtIndex), kg.Int(s.ForkedAt))
	}
}

// addTurn adds turn t with its chain digest (chain.go) to the graph of
// session g in d, at the IRI its ID gives when that is one of g's (a turn
// written after a rewind), else at TurnIRI(g, t.Index).
func addTurn(d *kg.Data, g rdf.IRI, t Turn, digest string) rdf.IRI {
	ti := kg.MustIRI(ownTurnIRI(g.String(), t)) // rewind.go
	d.Add(g, ti, iri(ontology.RDFType), iri(ontology.Turn))
	d.Add(g, ti, iri(ontology.RDFType), iri(ontology.ProvEntity))
	d.Add(g, ti, iri(ontology.TurnSession), g)
	d.Add(g, ti, iri(ontology.Index), kg.Int(t.Index))
	d.Add(g, ti, iri(ontology.Role), kg.String(t.Role))
	d.Add(g, ti, iri(ontology.Content), kg.String(t.Content))
	d.Add(g, ti, iri(ontology.Branch), kg.String(t.Branch))
	d.Add(g, ti, iri(ontology.Created), kg.DateTime(t.Created))
	d.Add(g, ti, iri(ontology.Digest), kg.String(digest))
	return ti
}

// addHead adds a session's turn count and head digest to its graph in d.
func addHead(d *kg.Data, g rdf.IRI, own int, head string) {
	d.Add(g, g, iri(ontology.OwnTurns), kg.Int(own))
	d.Add(g, g, iri(ontology.HeadDigest), kg.String(head))
}

// withData binds the parameters of an update template, then puts the quads
// of d where its "#DATA" comment stands.
func withData(name, tmpl string, d *kg.Data, p kg.Params) (string, error) {
	return withTables(name, tmpl, d, p, nil)
}

// withTables is withData for a template with VALUES tables too
// (kg.BindData).
func withTables(name, tmpl string, d *kg.Data, p kg.Params, tables map[string]kg.Table) (string, error) {
	if err := d.Err(); err != nil {
		return "", err
	}
	if !strings.Contains(tmpl, "#DATA") {
		panic(name + ": no #DATA marker")
	}
	u, err := kg.BindData(tmpl, d, p, tables)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return u, nil
}
