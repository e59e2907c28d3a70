// Package rdfio reads and writes RDF datasets as N-Quads and TriG, one quad
// at a time: a Decoder turns a stream into quads (knakk/rdf terms, each with
// the line it came from), an Encoder turns quads into a stream. It is pure
// code, with no store behind it; Trails' export and import are built on it.
//
// The decoder is strict where knakk/rdf's N-Quads decoder is lenient (a bad
// escape is an error, not U+FFFD), and reads TriG, which knakk/rdf does not.
package rdfio

import (
	"fmt"

	"github.com/knakk/rdf"
)

// Format is a serialization of RDF datasets.
type Format int

// The formats rdfio reads and writes.
const (
	// NQuads is N-Quads: one statement per line, each with its graph
	// (N-Triples is N-Quads without graph names).
	NQuads Format = iota
	// TriG is TriG 1.1 (Turtle with GRAPH blocks), every triple inside a
	// named graph's block.
	TriG
)

// String returns "nquads" or "trig".
func (f Format) String() string {
	switch f {
	case NQuads:
		return "nquads"
	case TriG:
		return "trig"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Quad is one statement of a dataset. S is an rdf.IRI or rdf.Blank, P an
// rdf.IRI, O an rdf.IRI, rdf.Blank or rdf.Literal, and G the graph's name
// (an rdf.IRI or rdf.Blank), nil for the default graph. Line is the line
// of the input the statement starts on (of its object, in TriG, where one
// statement lists many), from 1; an Encoder ignores it.
type Quad struct {
	S, P, O, G rdf.Term
	Line       int
}

// SyntaxError is input a Decoder cannot read: where it stands and what is
// wrong.
type SyntaxError struct {
	Line int    // the line, from 1
	Col  int    // the byte of the line, from 1
	Msg  string // what is wrong
}

// Error returns "line N: " and the message.
func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }
