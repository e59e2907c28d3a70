// Package staged carries the long literals of a SPARQL Update around the
// store's SPARQL parser, which takes time that grows faster than a
// literal's length (Jena: about 3 s for 1 MiB). Each literal is sent ahead
// through the Graph Store Protocol, whose N-Triples parser takes linear
// time, into a staging graph of its own, as chunks
// {staging graph}/{n}/{k} trails:stagedContent "..." that no query of
// Trails reads as data; the update binds the chunks in its WHERE clause,
// joins them (CONCAT) into a variable, writes the variable where the
// literal belongs and drops the staging graph in the same request, so
// that whether its condition holds or not, no staging graph stays.
package staged

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Above is the longest literal an update carries as it is: below it a
// literal costs Jena's SPARQL parser a few milliseconds, less than the
// Graph Store request staging costs.
const Above = 64 << 10

// Chunk is the most content one staged literal holds: Oxigraph's
// N-Triples parser takes no token over 16 MiB, and escaping may make a
// literal six times as long as its content (a control character becomes
// \u0000). A longer literal is staged in chunks, which the update joins.
const Chunk = 1 << 20

// Set is the staged literals of one update. The zero Set stages nothing
// until Add is called; it is not safe for concurrent use.
type Set struct {
	// Whole stages each literal whole, not in chunks: for a store whose
	// N-Triples parser takes a token of any length (Fuseki, see Whole).
	// The update then writes the staged literal itself, which the store
	// keeps once, rather than a joined copy of the chunks: on Fuseki a 16
	// MiB turn is written once, not twice.
	Whole bool

	graph  rdf.IRI
	nt     strings.Builder // the N-Triples to PUT into the staging graph
	insert strings.Builder // INSERT template triples taking the variables
	where  strings.Builder // WHERE patterns binding them
	n      int             // variables so far
	err    error
}

// Add stages the triple (s p o) of graph g, o a literal over Above bytes
// (any datatype or language). Unless st.Whole, o goes in chunks of at
// most Chunk bytes, which the update joins and gives o's datatype or
// language again.
func (st *Set) Add(g, s, p rdf.IRI, o rdf.Literal) {
	if st.graph == (rdf.IRI{}) {
		st.graph = kg.MustIRI(ontology.StagingBase + uuid.Must(uuid.NewV7()).String())
	}
	v := st.variable(g, s, p)
	pred := st.term(kg.MustIRI(ontology.StagedContent))
	subj := func(k int) string {
		return st.term(kg.MustIRI(st.graph.String() + "/" + strconv.Itoa(st.n-1) + "/" + strconv.Itoa(k)))
	}
	st.where.WriteString("{ GRAPH " + st.term(st.graph) + " {")
	if st.Whole {
		st.where.WriteString(" " + subj(0) + " " + pred + " " + v + " . } }\n")
		st.nt.WriteString(subj(0) + " " + pred + " " + st.term(o) + " .\n")
		return
	}
	chunks := chunk(o.String(), Chunk)
	vars := make([]string, len(chunks))
	for k, c := range chunks {
		vars[k] = v + "_" + strconv.Itoa(k)
		st.where.WriteString(" " + subj(k) + " " + pred + " " + vars[k] + " .")
		st.nt.WriteString(subj(k) + " " + pred + " " + st.term(kg.String(c)) + " .\n")
	}
	joined := "CONCAT(" + strings.Join(vars, ", ") + ")" // of xsd:strings: an xsd:string
	switch dt := o.DataType.String(); {
	case o.Lang() != "":
		joined = "STRLANG(" + joined + ", " + st.term(kg.String(o.Lang())) + ")"
	case dt != "" && dt != ontology.XSDString:
		joined = "STRDT(" + joined + ", " + st.term(o.DataType) + ")"
	}
	st.where.WriteString(" } BIND(" + joined + " AS " + v + ") }\n")
}

// Whole reports whether the store of client c takes a literal of any
// length in N-Triples (Set.Whole): Fuseki does; Oxigraph takes no token
// over 16 MiB, and a store kg does not know is given chunks.
func Whole(c any) bool {
	s, ok := c.(interface{ Store() kg.Store })
	return ok && s.Store() == kg.Fuseki
}

// Copy writes (s p ?v) into graph g, ?v bound in the store to the object
// of (from p ?v) in any graph, if its SHA-256 is that of value: a copy
// made inside the store, which sends nothing ahead.
func (st *Set) Copy(g, s, p, from rdf.IRI, value string) {
	v := st.variable(g, s, p)
	sum := sha256.Sum256([]byte(value))
	st.where.WriteString("{ " + st.term(from) + " " + st.term(p) + " " + v +
		" FILTER(SHA256(STR(" + v + ")) = " + st.term(kg.String(hex.EncodeToString(sum[:]))) + ") }\n")
}

// variable adds (s p ?stagedN) in graph g to the INSERT template and
// returns the variable.
func (st *Set) variable(g, s, p rdf.IRI) string {
	v := "?staged" + strconv.Itoa(st.n)
	st.n++
	st.insert.WriteString("GRAPH " + st.term(g) + " { " + st.term(s) + " " + st.term(p) + " " + v + " }\n")
	return v
}

// term serializes t for a query, keeping the first error.
func (st *Set) term(t rdf.Term) string {
	s, err := kg.Term(t)
	if err != nil && st.err == nil {
		st.err = err
	}
	return s
}

// Empty reports whether st holds nothing: Bind leaves a template as it
// is and Drop returns "".
func (st *Set) Empty() bool { return st == nil || st.n == 0 && st.nt.Len() == 0 }

// Sends reports whether st has literals to send ahead (Send).
func (st *Set) Sends() bool { return st != nil && st.nt.Len() > 0 }

// Bind returns update template tmpl with st's triples before its "#DATA"
// comment (inside an INSERT block) and st's patterns where its "#STAGED"
// comment stands (inside the WHERE clause). It works on the template's
// own text, before any value is bound into it, so no value can pose as a
// marker; bind the result with kg.BindData, then append Drop. A template
// without the markers is an error once st holds anything.
func (st *Set) Bind(tmpl string) (string, error) {
	if st == nil || st.n == 0 {
		return tmpl, nil
	}
	if st.err != nil {
		return "", st.err
	}
	if !strings.Contains(tmpl, "#STAGED") || !strings.Contains(tmpl, "#DATA") {
		return "", fmt.Errorf(`staged: the update template has no "#STAGED" or "#DATA" comment`)
	}
	tmpl = strings.Replace(tmpl, "#DATA", st.insert.String()+"#DATA", 1)
	return strings.Replace(tmpl, "#STAGED", st.where.String(), 1), nil
}

// Drop returns what ends the update: the removal of the staging graph, in
// the same request (one transaction), or "" when nothing is sent.
func (st *Set) Drop() string {
	if !st.Sends() {
		return ""
	}
	return " ;\nDROP SILENT GRAPH " + st.term(st.graph) + "\n"
}

// Putter is what Send needs of the transport: *kg.Client has it.
type Putter interface {
	PutGraph(ctx context.Context, g rdf.IRI, mediaType string, data []byte) error
}

// Updater is what Remove needs of the transport: *kg.Client has it.
type Updater interface {
	Update(ctx context.Context, update string, opts ...kg.UpdateOption) error
}

// Send PUTs the staged literals into the staging graph, if any.
func (st *Set) Send(ctx context.Context, c Putter) error {
	if !st.Sends() {
		return nil
	}
	if st.err != nil {
		return st.err
	}
	if err := c.PutGraph(ctx, st.graph, kg.NTriples, []byte(st.nt.String())); err != nil {
		return fmt.Errorf("stage %s: %w", st.graph, err)
	}
	return nil
}

// removeTimeout bounds Remove.
const removeTimeout = 30 * time.Second

// Remove drops the staging graph after an update that failed (the store
// may or may not have run it; if it did, the graph is gone already), even
// when ctx is done, within 30 seconds. What it cannot remove (the store is
// down) stays until a sweep (admin.Dataset.SweepStaging): no query of
// Trails reads it as data.
func (st *Set) Remove(ctx context.Context, c Updater) {
	if !st.Sends() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	_ = c.Update(ctx, strings.TrimPrefix(st.Drop(), " ;\n"), kg.Idempotent()) // else left to the sweep
}

// chunk cuts s into pieces of at most n bytes (n >= 4), each valid UTF-8
// when s is: it cuts only before the first byte of a character.
func chunk(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return append(out, s)
}
