package session

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// structureRows gathers the rows of structure.rq and structure-of.rq into
// the Structure of turns, found by ID. Each row is about turn ?t and
// binds, besides ?t, one of:
//   - ?p ?o: a field of the turn itself;
//   - ?inv ?p ?o: a triple of its model invocation;
//   - ?x ?k ?p ?o: a triple of its part ?x at index ?k;
//   - ?c with ?key, ?value, ?removed (each when stored): a state change.
//
// Predicates it does not know are ignored; a turn gets a Structure only
// from a value it keeps. Rows may come twice (a store's union default
// graph returns a triple once per graph holding it): reading one again
// changes nothing.
type structureRows struct {
	turns []Turn
	byID  map[string]int
	parts map[int]map[int]*Part // turn position → part index → part
	// changes: turn position → change IRI → the change's key and value
	changes map[int]map[string]*deltaRow
}

func (r *structureRows) start() {
	r.parts, r.changes = nil, nil
	for i := range r.turns {
		r.turns[i].Structure = nil
	}
}

// add reads one row.
func (r *structureRows) add(row kg.Solution) error {
	i, ok := r.byID[row.String("t")]
	if !ok {
		return nil // a turn of the spans Load did not keep
	}
	t := &r.turns[i]
	if c, ok := row["c"]; ok {
		for _, f := range [...]struct{ col, p string }{{"key", ontology.Key}, {"value", ontology.Value}, {"removed", ontology.Removed}} {
			if o, ok := row[f.col]; ok {
				if err := r.addChange(i, c.String(), stored{t, f.p, o}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	v := stored{t, row.String("p"), row["o"]}
	if _, ok := row["x"]; ok {
		return r.addPart(i, row, v)
	}
	if _, ok := row["inv"]; ok {
		return r.addInvocation(v)
	}
	return r.addField(v)
}

// stored is one stored value of turn t's structured fields: object o of
// predicate p.
type stored struct {
	t *Turn
	p string
	o rdf.Term
}

func (v stored) bad(what string) error {
	return fmt.Errorf("%w: turn %d (%s): %s %s", ErrCorrupt, v.t.Index, v.t.ID, what, termsafe.Quote(v.o.String()))
}

// text returns the value, a literal of datatype dt.
func (v stored) text(dt string) (string, error) {
	lit, ok := v.o.(rdf.Literal)
	if !ok || lit.DataType.String() != dt {
		return "", v.bad("<" + v.p + "> is not a <" + dt + ">:")
	}
	return lit.String(), nil
}

// bytes returns the value, an xsd:base64Binary literal, decoded.
func (v stored) bytes() ([]byte, error) {
	s, err := v.text(ontology.XSDBase64Binary)
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, v.bad("bad base64 in <" + v.p + ">:")
	}
	return b, nil
}

// json returns the value, an rdf:JSON literal.
func (v stored) json() (json.RawMessage, error) {
	s, err := v.text(ontology.RDFJSON)
	return json.RawMessage(s), err
}

// structure returns t's Structure, made when absent.
func structure(t *Turn) *Structure {
	if t.Structure == nil {
		t.Structure = &Structure{}
	}
	return t.Structure
}

// addField reads a field of the turn itself.
func (r *structureRows) addField(v stored) error {
	var err error
	switch v.p {
	case ontology.Author:
		structure(v.t).Author, err = v.text(ontology.XSDString)
	case ontology.InvocationID:
		structure(v.t).InvocationID, err = v.text(ontology.XSDString)
	case ontology.EventID:
		structure(v.t).EventID, err = v.text(ontology.XSDString)
	case ontology.Metadata:
		var s string
		if s, err = v.text(ontology.RDFJSON); err == nil {
			if structure(v.t).Metadata, err = parseMetadata(s); err != nil {
				err = fmt.Errorf("%w: turn %d: %v", ErrCorrupt, v.t.Index, err)
			}
		}
	case ontology.RawFormat:
		raw(structure(v.t)).Format, err = v.text(ontology.XSDString)
	case ontology.Raw:
		raw(structure(v.t)).Data, err = v.bytes()
	}
	return err
}

// addInvocation reads a triple of the turn's model invocation.
func (r *structureRows) addInvocation(v stored) error {
	var err error
	switch v.p {
	case ontology.Model:
		structure(v.t).Model, err = v.text(ontology.XSDString)
	case ontology.FinishReason:
		structure(v.t).FinishReason, err = v.text(ontology.XSDString)
	case ontology.InputTokens, ontology.OutputTokens, ontology.CachedInputTokens, ontology.ReasoningTokens, ontology.TotalTokens:
		n, err := kg.Solution{"o": v.o}.Int("o")
		if err != nil || n < 0 {
			return v.bad("token count")
		}
		x := structure(v.t)
		if x.Usage == nil {
			x.Usage = &Usage{}
		}
		*x.Usage.count(v.p) = int64(n)
	}
	return err
}

// raw returns x's raw copy, made when absent.
func raw(x *Structure) *Raw {
	if x.Raw == nil {
		x.Raw = &Raw{}
	}
	return x.Raw
}

// partPredicates are the predicates of a part that Load reads.
var partPredicates = map[string]bool{
	ontology.RDFType: true, ontology.Text: true, ontology.ToolCallID: true, ontology.ToolName: true,
	ontology.Arguments: true, ontology.Result: true, ontology.IsError: true, ontology.MIMEType: true,
	ontology.Data: true, ontology.DataIRI: true,
}

// addPart reads a triple of a part (row's ?k) of turn t at position i.
func (r *structureRows) addPart(i int, row kg.Solution, v stored) error {
	if !partPredicates[v.p] {
		return nil
	}
	t := v.t
	k, err := row.Int("k")
	if err != nil || k < 0 || k > maxIndex {
		return fmt.Errorf("%w: turn %d (%s): part index %s", ErrCorrupt, t.Index, t.ID, termsafe.Quote(row.String("k")))
	}
	structure(t)
	part := entry(&r.parts, i, k)
	switch v.p {
	case ontology.RDFType:
		for kind, c := range partClasses {
			if v.o.String() == c {
				if part.Kind != "" && part.Kind != kind {
					return fmt.Errorf("%w: turn %d (%s): part %d has two kinds", ErrCorrupt, t.Index, t.ID, k)
				}
				part.Kind = kind
			}
		}
	case ontology.Text:
		part.Text, err = v.text(ontology.XSDString)
	case ontology.ToolCallID:
		part.CallID, err = v.text(ontology.XSDString)
	case ontology.ToolName:
		part.ToolName, err = v.text(ontology.XSDString)
	case ontology.Arguments:
		part.Arguments, err = v.json()
	case ontology.Result:
		part.Result, err = v.json()
	case ontology.IsError:
		var s string
		if s, err = v.text(ontology.XSDBoolean); err == nil {
			part.IsError = s == "true" || s == "1"
		}
	case ontology.MIMEType:
		part.MIMEType, err = v.text(ontology.XSDString)
	case ontology.Data:
		part.Data, err = v.bytes()
	case ontology.DataIRI:
		if _, ok := v.o.(rdf.IRI); !ok {
			return fmt.Errorf("%w: turn %d (%s): part %d: trails:dataIri is not an IRI", ErrCorrupt, t.Index, t.ID, k)
		}
		part.URI = v.o.String()
	}
	return err
}

// done puts the parts in order on their turns: each turn's part indices
// must be 0..n-1, each part of a known kind.
func (r *structureRows) done() error {
	if err := r.doneChanges(); err != nil {
		return err
	}
	for i, byIndex := range r.parts {
		t := &r.turns[i]
		t.Structure.Parts = make([]Part, len(byIndex))
		for k, p := range byIndex {
			if k >= len(byIndex) {
				return fmt.Errorf("%w: turn %d (%s): parts numbered beyond %d", ErrCorrupt, t.Index, t.ID, len(byIndex)-1)
			}
			if p.Kind == "" {
				return fmt.Errorf("%w: turn %d (%s): part %d has no kind", ErrCorrupt, t.Index, t.ID, k)
			}
			if len(p.Data) == 0 {
				p.Data = nil // as Persist takes it: no bytes
			}
			t.Structure.Parts[k] = *p
		}
	}
	for i := range r.turns {
		if r.turns[i].Structure == nil {
			continue
		}
		if raw := r.turns[i].Structure.Raw; raw != nil && raw.Format == "" {
			return fmt.Errorf("%w: turn %d: a trails:raw without its trails:rawFormat", ErrCorrupt, r.turns[i].Index)
		} else if raw != nil && len(raw.Data) == 0 {
			raw.Data = nil
		}
	}
	return nil
}

// entry returns the value at (a, b) of the two-level map *m, made (with
// the maps holding it) when missing: the row readers gather the fields of
// a part or a state change, which arrive row by row, this way.
func entry[A, B comparable, V any](m *map[A]map[B]*V, a A, b B) *V {
	if *m == nil {
		*m = make(map[A]map[B]*V)
	}
	inner := (*m)[a]
	if inner == nil {
		inner = make(map[B]*V)
		(*m)[a] = inner
	}
	v := inner[b]
	if v == nil {
		v = new(V)
		inner[b] = v
	}
	return v
}
