package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The baselines and the bulk filler write the triples Persist writes, in
// the same shape as session writes: a root session's metadata, seven
// triples per turn, and the session's turn count and head digest. They are
// built here from the vocabulary's constants, since package session keeps
// its writers to itself.

// adder is what kg.Data and quadWriter have in common.
type adder interface {
	Add(g, s, p rdf.IRI, o rdf.Term)
}

var _ adder = (*kg.Data)(nil)
var _ adder = (*quadWriter)(nil)

func iri(s string) rdf.IRI { return kg.MustIRI(s) }

var (
	pType      = iri(ontology.RDFType)
	pID        = iri(ontology.DCTIdentifier)
	pBranch    = iri(ontology.Branch)
	pCreated   = iri(ontology.Created)
	pPrincipal = iri(ontology.Principal)
	pSession   = iri(ontology.TurnSession)
	pIndex     = iri(ontology.Index)
	pRole      = iri(ontology.Role)
	pContent   = iri(ontology.Content)
	pOwn       = iri(ontology.OwnTurns)
	pHead      = iri(ontology.HeadDigest)
	pDigest    = iri(ontology.Digest)
	pDerived   = iri(ontology.ProvWasDerivedFrom)
	pKind      = iri(ontology.Kind)
	pParent    = iri(ontology.ParentSession)
	pForkedAt  = iri(ontology.ForkedAtIndex)
	cSession   = iri(ontology.Session)
	cTurn      = iri(ontology.Turn)
	cEntity    = iri(ontology.ProvEntity)
	cAgent     = iri(ontology.ProvAgent)
)

func sessionIRI(id string) rdf.IRI { return iri(ontology.SessionIRI(id)) }

// addRootSession adds what Persist writes for a new root session besides
// its turns: types (trails:Session, prov:Entity), id, branch, creation
// time, principal and its agent (9 triples).
func addRootSession(a adder, id, principal string, created time.Time) rdf.IRI {
	g := sessionIRI(id)
	a.Add(g, g, pType, cSession)
	a.Add(g, g, pType, cEntity)
	a.Add(g, g, pID, kg.String(id))
	a.Add(g, g, pBranch, kg.String(session.MainBranch))
	a.Add(g, g, pCreated, kg.DateTime(created))
	agent := iri(ontology.AgentIRI(principal))
	a.Add(g, agent, pType, cAgent)
	a.Add(g, agent, pID, kg.String(principal))
	a.Add(g, g, pPrincipal, agent)
	return g
}

// addTurn adds the nine triples of a turn (session.addTurn),
// digest its chain digest, to the graph of session g.
func addTurn(a adder, g rdf.IRI, t session.Turn, digest string) {
	ti := iri(ontology.TurnIRI(g.String(), t.Index))
	a.Add(g, ti, pType, cTurn)
	a.Add(g, ti, pType, cEntity)
	a.Add(g, ti, pSession, g)
	a.Add(g, ti, pIndex, kg.Int(t.Index))
	a.Add(g, ti, pRole, kg.String(t.Role))
	a.Add(g, ti, pContent, kg.String(t.Content))
	a.Add(g, ti, pBranch, kg.String(t.Branch))
	a.Add(g, ti, pCreated, kg.DateTime(t.Created))
	a.Add(g, ti, pDigest, kg.String(digest))
}

// addHead adds a session's turn count and head digest (2 triples).
func addHead(a adder, g rdf.IRI, own int, head string) {
	a.Add(g, g, pOwn, kg.Int(own))
	a.Add(g, g, pHead, kg.String(head))
}

// runningDigest is a digest of the same form as Trails' head digest
// ("sha256:" and 64 hex digits) that a baseline extends turn by turn, so it
// costs the new turns only. It is not Trails' head digest; nothing reads
// it. chain is Trails' chain digest of the last turn added
// (session.TurnDigest), which the turns carry as Persist's do.
type runningDigest struct {
	h     hash.Hash
	chain string
}

func newRunningDigest() *runningDigest { return &runningDigest{h: sha256.New()} }

func (d *runningDigest) add(t session.Turn) string {
	fmt.Fprintf(d.h, "%d:%s:%d:", t.Index, t.Role, len(t.Content))
	d.h.Write([]byte(t.Content))
	d.chain = session.TurnDigest(d.chain, t)
	return "sha256:" + hex.EncodeToString(d.h.Sum(nil))
}

// quadWriter renders quads as N-Quads, with the terms kg serializes (every
// control character escaped), for kg.Client.LoadQuads. The first invalid
// term is kept in err. Not safe for concurrent use.
type quadWriter struct {
	buf   bytes.Buffer
	n     int
	err   error
	cache map[rdf.IRI]string // serialized graphs, subjects' sessions, predicates
}

func (w *quadWriter) term(t rdf.Term) string {
	if i, ok := t.(rdf.IRI); ok && w.cache != nil {
		if s, ok := w.cache[i]; ok {
			return s
		}
	}
	s, err := kg.Term(t)
	if err != nil && w.err == nil {
		w.err = err
	}
	return s
}

// Add appends the quad (s, p, o, g).
func (w *quadWriter) Add(g, s, p rdf.IRI, o rdf.Term) {
	if w.cache == nil {
		w.cache = make(map[rdf.IRI]string)
	}
	for _, i := range []rdf.IRI{g, p} {
		if _, ok := w.cache[i]; !ok {
			if len(w.cache) > 4096 {
				clear(w.cache)
			}
			w.cache[i] = w.term(i)
		}
	}
	w.buf.WriteString(w.term(s))
	w.buf.WriteByte(' ')
	w.buf.WriteString(w.cache[p])
	w.buf.WriteByte(' ')
	w.buf.WriteString(w.term(o))
	w.buf.WriteByte(' ')
	w.buf.WriteString(w.cache[g])
	w.buf.WriteString(" .\n")
	w.n++
}

// reset empties the writer for the next batch.
func (w *quadWriter) reset() {
	w.buf.Reset()
	w.n = 0
}
