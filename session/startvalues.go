package session

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// The values a session starts with (Session.Initial), and how Detach and
// Import keep them.

// addInitial adds the values session s (graph g) starts with to d, through
// sg as a turn's long values go, and marks g as holding structured data,
// so that Load reads them.
func addInitial(d *kg.Data, sg *staging, g rdf.IRI, s *Session) {
	if len(s.Initial) == 0 {
		return
	}
	d.Add(g, g, iri(ontology.StructuredTurns), kg.Bool(true))
	eachValueTriple(g, s.Initial, func(sub, p rdf.IRI, o rdf.Term) {
		if lit, ok := o.(rdf.Literal); ok {
			sg.literal(d, g, sub, p, lit, "")
			return
		}
		d.Add(g, sub, p, o)
	})
}

// initialsOf returns the values the sessions of chain (self first) start
// with that apply to its history, root first (the order in which they
// apply): an ancestor's apply when every fork below it was made at or
// after its own fork point.
func initialsOf(chain []*link) []valueChange {
	lim := -1
	var keep []*link
	for k, l := range chain {
		if k == 0 || l.at <= lim {
			keep = append(keep, l)
		}
		if k == 0 || l.at < lim {
			lim = l.at
		}
	}
	var out []valueChange
	for _, l := range slices.Backward(keep) {
		out = append(out, l.initial...)
	}
	return out
}

// StartValue is one change of the values a session starts with, as
// stored: its own (AtIndex -1: at its fork point), or for a detached
// session a copy of an ancestor's, placed where it applied.
type StartValue struct {
	IRI        string          // its trails:ValueChange
	Key        string          // with its scope's prefix
	Value      json.RawMessage // nil: the key is removed
	AtIndex    int             // trails:atIndex, -1 when absent
	CopiedFrom string          // trails:copiedFrom, "" when absent
}

// startValueTriples calls add with the triples of the start values vs of
// the session at owner.
func startValueTriples(owner rdf.IRI, vs []StartValue, add func(s, p rdf.IRI, o rdf.Term)) {
	for _, v := range vs {
		e := kg.MustIRI(v.IRI)
		add(owner, iri(ontology.Changes), e)
		add(e, iri(ontology.RDFType), iri(ontology.ValueChange))
		add(e, iri(ontology.RDFType), iri(ontology.ProvEntity))
		add(e, iri(ontology.Key), kg.String(v.Key))
		add(e, iri(ontology.Scope), kg.String(scopeOf(v.Key)))
		if v.Value != nil {
			add(e, iri(ontology.Value), jsonLiteral(v.Value))
		} else {
			add(e, iri(ontology.Removed), kg.Bool(true))
		}
		if v.AtIndex >= 0 {
			add(e, iri(ontology.AtIndex), kg.Int(v.AtIndex))
		}
		if v.CopiedFrom != "" {
			add(e, iri(ontology.CopiedFrom), kg.MustIRI(v.CopiedFrom))
		}
	}
}

// StartValueTriples returns the triples Persist and Detach write for the
// start values vs of the session at IRI owner. Import compares them with
// its input.
func StartValueTriples(owner string, vs []StartValue) [][3]rdf.Term {
	var out [][3]rdf.Term
	startValueTriples(kg.MustIRI(owner), vs, func(s, p rdf.IRI, o rdf.Term) { out = append(out, [3]rdf.Term{s, p, o}) })
	return out
}

// ParseStartValues reads the start values of the session at IRI owner
// from triples about its trails:ValueChange resources (other triples are
// ignored), in IRI order. It returns ErrCorrupt for a change Load could
// not read.
func ParseStartValues(owner string, triples [][3]rdf.Term) ([]StartValue, error) {
	byIRI := map[string]*StartValue{}
	get := func(x string) *StartValue {
		if byIRI[x] == nil {
			byIRI[x] = &StartValue{IRI: x, AtIndex: -1}
		}
		return byIRI[x]
	}
	seen := map[string]map[string]bool{} // change → predicates met
	for _, tr := range triples {
		x, p := tr[0].String(), tr[1].String()
		if !strings.HasPrefix(x, owner+ontology.ValuePath) {
			continue
		}
		v := get(x)
		if seen[x] == nil {
			seen[x] = map[string]bool{}
		}
		if seen[x][p] && p != ontology.RDFType {
			return nil, fmt.Errorf("%w: %s has two <%s>", ErrCorrupt, x, p)
		}
		seen[x][p] = true
		lit, isLit := tr[2].(rdf.Literal)
		bad := fmt.Errorf("%w: %s: <%s> %s", ErrCorrupt, x, p, termsafe.Quote(tr[2].String()))
		switch p {
		case ontology.Key:
			if !isLit || lit.DataType.String() != ontology.XSDString {
				return nil, bad
			}
			v.Key = lit.String()
		case ontology.Value:
			if !isLit || lit.DataType.String() != ontology.RDFJSON {
				return nil, bad
			}
			v.Value = json.RawMessage(lit.String())
		case ontology.AtIndex:
			n, err := strconv.Atoi(tr[2].String())
			if !isLit || err != nil || n < 0 {
				return nil, bad
			}
			v.AtIndex = n
		case ontology.CopiedFrom:
			if _, ok := tr[2].(rdf.IRI); !ok {
				return nil, bad
			}
			v.CopiedFrom = tr[2].String()
		}
	}
	out := make([]StartValue, 0, len(byIRI))
	for _, x := range slices.Sorted(maps.Keys(byIRI)) {
		v := byIRI[x]
		if !seen[x][ontology.Key] || seen[x][ontology.Value] == seen[x][ontology.Removed] {
			return nil, fmt.Errorf("%w: %s needs a key and either a value or trails:removed", ErrCorrupt, x)
		}
		if err := checkDelta(map[string]json.RawMessage{v.Key: v.Value}, &Session{App: "-", Principal: "-"}); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, x, err)
		}
		out = append(out, *v)
	}
	return out, nil
}

// addDetachedStart adds to d, for fork s (graph g) that Detach makes a
// root, what keeps its state the same at every turn once its fork point
// is gone: its own start values get their trails:atIndex (its old fork
// point), and the start values of its ancestors that applied to its
// history are copied into it, each with the index it applied at.
func addDetachedStart(d *kg.Data, g rdf.IRI, s *Session) {
	var own, copies []valueChange
	for _, c := range s.initials {
		if strings.HasPrefix(c.iri, g.String()+ontology.ValuePath) {
			own = append(own, c)
		} else {
			copies = append(copies, c)
		}
	}
	next := 0
	for _, c := range own {
		next = max(next, changeNumber(c.iri)+1)
		if c.at < 0 {
			d.Add(g, kg.MustIRI(c.iri), iri(ontology.AtIndex), kg.Int(s.ForkedAt))
		}
	}
	if len(copies) == 0 {
		return
	}
	d.Add(g, g, iri(ontology.StructuredTurns), kg.Bool(true))
	vs := make([]StartValue, len(copies))
	for k, c := range copies {
		vs[k] = StartValue{IRI: ontology.ValueChangeIRI(g.String(), next+k), Key: c.key, Value: c.value, AtIndex: c.pos / 2, CopiedFrom: c.iri}
	}
	startValueTriples(g, vs, func(sub, p rdf.IRI, o rdf.Term) { d.Add(g, sub, p, o) })
}

// startOrder orders the start values of one session: by position; at one
// position the copies of its ancestors' (Detach numbered them root first)
// before its own.
func startOrder(a, b valueChange) int {
	if a.pos != b.pos {
		return cmp.Compare(a.pos, b.pos)
	}
	if a.copy != b.copy {
		if a.copy {
			return -1
		}
		return 1
	}
	return cmp.Compare(changeNumber(a.iri), changeNumber(b.iri))
}

// changeNumber returns k of a change IRI ending in ValuePath and k.
func changeNumber(iri string) int {
	_, k, _ := strings.Cut(iri[strings.LastIndex(iri, ontology.ValuePath)+1:], "/")
	n, _ := strconv.Atoi(k)
	return n
}
