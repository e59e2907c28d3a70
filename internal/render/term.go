package render

import (
	"strconv"
	"strings"
	"time"

	"github.com/knakk/rdf"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/ontology"
)

// The cells of an audit query's rows (prov.Queries): RDF terms as JSON
// values and as table cells.

const (
	idBase      = "https://w3id.org/trails/id/"
	xsdInteger  = "http://www.w3.org/2001/XMLSchema#integer"
	xsdBoolean  = "http://www.w3.org/2001/XMLSchema#boolean"
	xsdDateTime = "http://www.w3.org/2001/XMLSchema#dateTime"
)

// TermJSON returns t as a JSON value: integers and booleans typed, the
// rest as strings (IRIs whole).
func TermJSON(t rdf.Term) any {
	if l, ok := t.(rdf.Literal); ok {
		switch l.DataType.String() {
		case xsdInteger:
			if n, err := strconv.Atoi(l.String()); err == nil {
				return n
			}
		case xsdBoolean:
			return l.String() == "true"
		}
	}
	return t.String()
}

// Cell returns t for a table: Trails' own IRIs without their common base
// (session/ID, activity/deletion/ID, ...), a time in one width whatever
// its fraction of a second, other values on one line (OneLine); "-" for
// nil or an empty value. Every value is escaped (termsafe.String). It is
// the zero Form's Cell.
func Cell(t rdf.Term) string { return Form{}.Cell(t) }

// Cell returns t for a table as Cell does; with f.PlainCells, the term's
// text as stored, Trails' own IRIs without their common base, line
// breaks shown as ⏎, escaped and cut to 60 characters (Clip).
func (f Form) Cell(t rdf.Term) string {
	if t == nil {
		return "-"
	}
	if f.PlainCells {
		s := t.String()
		if _, ok := t.(rdf.IRI); ok {
			s = strings.TrimPrefix(strings.TrimPrefix(s, ontology.SessionBase), idBase)
		}
		if s == "" {
			return "-"
		}
		return Clip(strings.ReplaceAll(s, "\n", "⏎"), 60)
	}
	if iri, ok := t.(rdf.IRI); ok {
		return termsafe.String(strings.TrimPrefix(strings.TrimPrefix(iri.String(), ontology.SessionBase), idBase))
	}
	if l, ok := t.(rdf.Literal); ok && l.DataType.String() == xsdDateTime {
		// One width for every time, whatever its fraction of a second.
		if tm, err := time.Parse(time.RFC3339Nano, l.String()); err == nil {
			return tm.UTC().Format("2006-01-02T15:04:05.000Z")
		}
	}
	if v := OneLine(t.String()); v != "" {
		return v
	}
	return "-"
}

// OneLine shortens a value for a table cell: line breaks shown as ⏎,
// other control and bidi characters escaped, at most 60 characters.
func OneLine(s string) string {
	s = termsafe.String(strings.ReplaceAll(s, "\n", "⏎"))
	if r := []rune(s); len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return s
}
