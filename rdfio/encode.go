package rdfio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Prefix is a prefix a TriG Encoder declares and writes IRIs with: Name
// (letters, digits, '_' and '-', or "") stands for the namespace NS.
type Prefix struct {
	Name, NS string
}

// An Encoder writes quads as N-Quads or TriG.
//
// N-Quads come one quad per line, every control character escaped. TriG
// comes as the Encoder's prefixes, then a GRAPH block for each run of
// quads in one graph, a paragraph for each run of quads about one subject,
// predicates after ';' and objects after ','; rdf:type is written "a",
// an IRI that one of the prefixes covers with a plain local name (ASCII
// letters, digits, '_' and '-') as a prefixed name, an xsd:integer in
// canonical form bare, and a datatype by its prefixed name when it has
// one. The order of the quads is the caller's: an Encoder sorts nothing.
// TriG has no place for quads of the default graph.
//
// Output is buffered: Close writes what is pending. An Encoder is not safe
// for concurrent use.
type Encoder struct {
	w        *bufio.Writer
	trig     bool
	prefixes []Prefix
	begun    bool   // TriG: the prefixes are written
	g, s, p  string // TriG: the last quad's graph, subject and predicate, serialized; g is "" outside a block
	terms    Terms
	err      error
}

// NewEncoder returns an Encoder that writes format f (NQuads or TriG) to
// w. A TriG Encoder declares prefixes, in order, and uses them; an N-Quads
// one ignores them.
func NewEncoder(w io.Writer, f Format, prefixes ...Prefix) *Encoder {
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 64<<10)
	}
	e := &Encoder{w: bw, trig: f == TriG, prefixes: prefixes}
	if f != NQuads && f != TriG {
		e.err = fmt.Errorf("rdfio: unknown format %v", f)
	}
	return e
}

// ErrDefaultGraph is the error of a TriG Encoder given a quad of the
// default graph.
var ErrDefaultGraph = errors.New("rdfio: TriG is written without a default graph")

// Encode writes q. It returns an error wrapping kg.ErrInvalidTerm for a
// term that cannot be written (an invalid IRI, a literal that is not valid
// UTF-8, a blank node label a Decoder would not read back, a predicate
// that is not an IRI), ErrDefaultGraph for a quad without a graph in TriG,
// or the error of the writer, which stays: every later call returns it.
func (e *Encoder) Encode(q Quad) error {
	if e.err != nil {
		return e.err
	}
	if _, ok := q.P.(rdf.IRI); !ok {
		return fmt.Errorf("%w: a %T as a predicate", kg.ErrInvalidTerm, q.P)
	}
	if _, ok := q.S.(rdf.Literal); ok {
		return fmt.Errorf("%w: a literal as a subject", kg.ErrInvalidTerm)
	}
	if _, ok := q.G.(rdf.Literal); ok {
		return fmt.Errorf("%w: a literal as a graph name", kg.ErrInvalidTerm)
	}
	ss, err := e.terms.Term(q.S)
	if err != nil {
		return err
	}
	ps, err := e.terms.Term(q.P)
	if err != nil {
		return err
	}
	os, err := e.terms.Term(q.O)
	if err != nil {
		return err
	}
	var gs string
	if q.G != nil {
		if gs, err = e.terms.Term(q.G); err != nil {
			return err
		}
	}
	if e.trig {
		if q.G == nil {
			return ErrDefaultGraph
		}
		e.trigQuad(q, gs, ss, ps, os)
	} else {
		e.w.WriteString(ss)
		e.w.WriteByte(' ')
		e.w.WriteString(ps)
		e.w.WriteByte(' ')
		e.w.WriteString(os)
		if gs != "" {
			e.w.WriteByte(' ')
			e.w.WriteString(gs)
		}
		e.w.WriteString(" .\n")
	}
	return e.flushed()
}

// flushed returns the error of the writer, once the buffer has met one
// (bufio.Writer keeps it).
func (e *Encoder) flushed() error {
	if _, err := e.w.Write(nil); err != nil {
		e.err = err
		return err
	}
	return nil
}

// Close writes what is pending (the end of a TriG block, or TriG's
// prefixes when no quad came) and flushes the buffer. It does not close
// the writer. It returns the error of the writer.
func (e *Encoder) Close() error {
	if e.err != nil {
		return e.err
	}
	if e.trig {
		e.begin()
		if e.g != "" {
			e.w.WriteString(" .\n}\n")
			e.g = ""
		}
	}
	if err := e.w.Flush(); err != nil {
		e.err = err
		return err
	}
	return nil
}

// begin writes TriG's prefixes, once.
func (e *Encoder) begin() {
	if e.begun {
		return
	}
	e.begun = true
	for _, p := range e.prefixes {
		fmt.Fprintf(e.w, "PREFIX %s: <%s>\n", p.Name, p.NS)
	}
}

// trigQuad writes q, its terms serialized, as TriG.
func (e *Encoder) trigQuad(q Quad, gs, ss, ps, os string) {
	e.begin()
	switch {
	case gs != e.g:
		if e.g != "" {
			e.w.WriteString(" .\n}\n")
		}
		e.w.WriteString("\nGRAPH ")
		e.w.WriteString(e.name(q.G, gs))
		e.w.WriteString(" {\n    ")
	case ss != e.s:
		e.w.WriteString(" .\n\n    ")
	case ps != e.p:
		e.w.WriteString(" ;\n        ")
		e.p = ps
		e.writePredicate(q.P, ps)
		e.w.WriteString(e.object(q.O, os))
		return
	default:
		e.w.WriteString(", ")
		e.w.WriteString(e.object(q.O, os))
		return
	}
	e.g, e.s, e.p = gs, ss, ps
	e.w.WriteString(e.name(q.S, ss))
	e.w.WriteByte(' ')
	e.writePredicate(q.P, ps)
	e.w.WriteString(e.object(q.O, os))
}

// writePredicate writes the predicate p (ps serialized) and a space.
func (e *Encoder) writePredicate(p rdf.Term, ps string) {
	if p.String() == ontology.RDFType {
		e.w.WriteString("a")
	} else {
		e.w.WriteString(e.name(p, ps))
	}
	e.w.WriteByte(' ')
}

// name returns t as a prefixed name when one of the prefixes covers it
// with a plain local name, else nt (its N-Triples form).
func (e *Encoder) name(t rdf.Term, nt string) string {
	iri, ok := t.(rdf.IRI)
	if !ok {
		return nt
	}
	for _, p := range e.prefixes {
		if local, ok := strings.CutPrefix(iri.String(), p.NS); ok && plainLocal(local) {
			return p.Name + ":" + local
		}
	}
	return nt
}

// plainLocal reports whether s can stand as a local name without escapes:
// ASCII letters, digits, '_' and '-', not starting with '-'.
func plainLocal(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// object returns the TriG form of the object o (os serialized): canonical
// integers bare, other typed literals with a prefixed datatype when
// possible.
func (e *Encoder) object(o rdf.Term, os string) string {
	l, ok := o.(rdf.Literal)
	if !ok {
		return e.name(o, os)
	}
	dt := l.DataType.String()
	if l.Lang() != "" || dt == ontology.XSDString {
		return os
	}
	if dt == ontology.XSDInteger && canonicalInt(l.String()) {
		return l.String()
	}
	q, err := kg.Term(kg.String(l.String()))
	if err != nil {
		return os // cannot happen: os was written from the same value
	}
	dts, err := e.terms.Term(l.DataType)
	if err != nil {
		return os
	}
	return q + "^^" + e.name(l.DataType, dts)
}

// canonicalInt reports whether s is an integer in canonical form: an
// optional '-' and digits without leading zeros.
func canonicalInt(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Terms writes terms in their N-Triples form, remembering the IRIs it has
// written (a dataset repeats few: predicates, graphs, subjects). The zero
// value is ready to use. A Terms is not safe for concurrent use.
type Terms struct{ iris map[rdf.IRI]string }

// Term returns the N-Triples form of t: kg.Term's for IRIs and literals
// (every control character escaped), "_:label" for a blank node. It
// returns an error wrapping kg.ErrInvalidTerm for an invalid IRI, a
// literal that is not valid UTF-8, or a blank node label a Decoder would
// not read back.
func (ts *Terms) Term(t rdf.Term) (string, error) {
	switch t := t.(type) {
	case rdf.IRI:
		if s, ok := ts.iris[t]; ok {
			return s, nil
		}
		s, err := kg.Term(t)
		if err != nil {
			return "", err
		}
		if ts.iris == nil || len(ts.iris) >= 4096 {
			ts.iris = make(map[rdf.IRI]string)
		}
		ts.iris[t] = s
		return s, nil
	case rdf.Blank:
		label := t.String()
		if !blankLabel(label) {
			return "", fmt.Errorf("%w: blank node label %q", kg.ErrInvalidTerm, label)
		}
		return "_:" + label, nil
	}
	return kg.Term(t)
}

// blankLabel reports whether a Decoder reads "_:"+s back as a blank node
// labelled s.
func blankLabel(s string) bool {
	if s == "" || s[len(s)-1] == '.' {
		return false
	}
	for _, r := range s {
		if !isNameRune(r) && r != '.' {
			return false
		}
	}
	return utf8.ValidString(s)
}
