package appendhint

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// An append as a conditional patch (kg.Conditional): the ASK that holds
// exactly when its update would apply, and the RDF Patch of what it then
// does. A replica's applier sends appends so (cluster's decided path),
// and so does a Store's group commit on a Fuseki with Trails' module
// (session).

// Ask returns the ASK that holds exactly when the append h describes,
// whose update is text, would apply: the update's condition (its WHERE
// clause), the session holding one count and one head digest, the
// hint's, and the write's gate open (not fenced, its ack graph empty).
// When the condition is append.ru's bound by the hint's values (Where),
// the ASK is a template (AskTemplate) and params its values, the same
// for every such append, so that the store parses it once; else params
// is nil and the ASK is the text's own condition.
func Ask(text string, h Hint) (ask string, params kg.Params) {
	cond := Span(text, h.Cond)
	p := Params(h)
	if bound, err := kg.Bind(Where, p); err == nil && bound == cond {
		p["trailsAck"] = kg.MustIRI(h.Ack)
		return AskTemplate, p
	}
	s, ack := termOf(kg.MustIRI(h.Session)), termOf(kg.MustIRI(h.Ack))
	n, d := termOf(kg.Int(h.Own)), termOf(kg.String(h.Head))
	return askWith(cond, s, n, d, ack), nil
}

// AskTemplate is Ask's template: append.ru's condition, its parameters
// and the ack graph ($trailsAck) unbound.
var AskTemplate = askWith(Where, "$s", "$own", "$head", "$trailsAck")

// askWith returns the ASK of Ask: condition cond, for session s holding
// count n and head digest d, with ack graph ack (terms or variables).
func askWith(cond, s, n, d, ack string) string {
	own, head := termOf(kg.MustIRI(ontology.OwnTurns)), termOf(kg.MustIRI(ontology.HeadDigest))
	return "PREFIX trails: <" + ontology.NS + ">\nASK {\n{\n" + cond + "\n}\n" +
		"GRAPH " + s + " { " + s + " " + own + " " + n + " ; " + head + " " + d + " }\n" +
		"FILTER NOT EXISTS { GRAPH " + s + " { " + s + " " + own + " ?zn } FILTER(!sameTerm(?zn, " + n + ")) }\n" +
		"FILTER NOT EXISTS { GRAPH " + s + " { " + s + " " + head + " ?zh } FILTER(!sameTerm(?zh, " + d + ")) }\n" +
		"FILTER NOT EXISTS { GRAPH " + termOf(kg.MustIRI(ontology.FencesGraph)) + " { " + ack + " " + termOf(kg.MustIRI(ontology.FencedAt)) + " ?zf } }\n" +
		"FILTER NOT EXISTS { GRAPH " + ack + " { ?za ?zb ?zc } }\n}"
}

// Continues reports whether append h continues append l of the same
// session: it expects the count, head digest and chain digest l writes,
// and l's rewinds and fork fields. Applied right after l, h's condition
// then holds but for what l's application does not decide: its gate,
// and that no other turn stands at the index of l's last
// (ContinuesTemplate). An append changes nothing else its condition
// reads.
func Continues(l, h Hint) bool {
	return h.Session == l.Session && h.Own == l.NewOwn && h.Head == l.NewHead && h.Prev == l.Last &&
		h.Gen == l.Gen && h.ForkOf == l.ForkOf && h.ForkAt == l.ForkAt
}

// ContinuesTemplate is the ASK of an append that continues the append
// applied just before it (Continues): the turn at index $pi (the
// previous append's last) carries chain digest $prev alone, and the
// write's gate ($trailsAck) is open. ContinuesParams gives its values.
var ContinuesTemplate = "PREFIX trails: <" + ontology.NS + ">\nASK {\n" +
	"FILTER NOT EXISTS { GRAPH $s { ?zt trails:index $pi ; trails:digest ?zd } FILTER(?zd != $prev) }\n" +
	"FILTER NOT EXISTS { GRAPH " + termOf(kg.MustIRI(ontology.FencesGraph)) + " { $trailsAck " + termOf(kg.MustIRI(ontology.FencedAt)) + " ?zf } }\n" +
	"FILTER NOT EXISTS { GRAPH $trailsAck { ?za ?zb ?zc } }\n}"

// ContinuesParams returns ContinuesTemplate's values for append h.
func ContinuesParams(h Hint) kg.Params {
	return kg.Params{"s": kg.MustIRI(h.Session), "pi": kg.Int(h.ForkAt + h.Own - 1), "prev": kg.String(h.Prev), "trailsAck": kg.MustIRI(h.Ack)}
}

// Patch returns the RDF Patch of the append h describes, whose update
// is text, when its condition holds: the session's count and head
// digest removed (the hint's), the text's data added. An error means
// that the data is not the quad pattern text kg.Data writes.
func Patch(text string, h Hint) ([]byte, error) {
	var b bytes.Buffer
	ownTurns, headDigest := termOf(kg.MustIRI(ontology.OwnTurns)), termOf(kg.MustIRI(ontology.HeadDigest))
	s := termOf(kg.MustIRI(h.Session))
	fmt.Fprintf(&b, "D %s %s %s %s .\nD %s %s %s %s .\n", s, ownTurns, termOf(kg.Int(h.Own)), s, s, headDigest, termOf(kg.String(h.Head)), s)
	g := ""
	for line := range strings.Lines(Span(text, h.Data)) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "GRAPH ") && strings.HasSuffix(line, " {") && g == "":
			g = strings.TrimSuffix(strings.TrimPrefix(line, "GRAPH "), " {")
		case line == "}" && g != "":
			g = ""
		case strings.HasSuffix(line, " .") && g != "":
			b.WriteString("A ")
			b.WriteString(strings.TrimSuffix(line, " ."))
			b.WriteByte(' ')
			b.WriteString(g)
			b.WriteString(" .\n")
		default:
			return nil, fmt.Errorf("append hint of %s: the data's line %q", h.Session, line)
		}
	}
	if g != "" {
		return nil, fmt.Errorf("append hint of %s: a graph block not closed", h.Session)
	}
	return b.Bytes(), nil
}

// termOf serializes a term the package builds itself (never fails).
func termOf(t rdf.Term) string {
	s, err := kg.Term(t)
	if err != nil {
		panic("appendhint: " + err.Error())
	}
	return s
}
