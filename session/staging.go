package session

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

// stageAbove is the longest content a write puts into its SPARQL Update
// as a literal. Jena's SPARQL parser takes time that grows faster than a
// literal's length (about 3 s for 1 MiB), its N-Triples parser linear
// time; below 64 KiB a literal costs the parser a few milliseconds, less
// than the Graph Store request staging costs.
const stageAbove = 64 << 10

// maxInlineBytes is the longest content a write may put into its SPARQL
// Update as a literal when the Querier has no Graph Store (graphStore):
// the limit Trails had before staging.
const maxInlineBytes = 1 << 20

// graphStore is what staging needs of the transport besides Querier:
// *kg.Client has it. A Querier that wraps a client and lacks these methods
// persists turns of at most maxInlineBytes.
type graphStore interface {
	PutGraph(ctx context.Context, g rdf.IRI, mediaType string, data []byte) error
	DeleteGraph(ctx context.Context, g rdf.IRI) error
}

var _ graphStore = (*kg.Client)(nil)

// staging carries the long contents of one write around the SPARQL
// parser: each is sent ahead (send) through the Graph Store Protocol as
// {graph}/{n}/{k} trails:stagedContent "..." (chunks k of at most
// stageChunk bytes) into a staging graph of its own, which no query of
// Trails reads as session data, and the write's one conditional update
// (bind) takes it from there as a variable: its WHERE binds ?stagedN to
// the concatenated chunks from the staging graph, its INSERT template writes
// ?stagedN as the turn's trails:content, and a DROP SILENT GRAPH after it,
// in the same request and so the same transaction, removes the staging
// graph whether or not the condition held. A copy (Detach) binds ?stagedN
// from the original turn in the store instead, and sends nothing.
//
// The nil *staging puts every content into the update as a literal. A
// staging is not safe for concurrent use.
type staging struct {
	graph  rdf.IRI
	nt     strings.Builder // the N-Triples send PUTs
	insert strings.Builder // INSERT template triples taking the variables
	where  strings.Builder // WHERE patterns binding them
	n      int             // variables so far
	copy   bool            // bind from the original turns (Detach), send nothing
	err    error
}

// newStaging returns the staging of a write of st, nil (every content
// inline) when st's Querier has no Graph Store (checkStaging refused what
// it cannot take). Its staging graph gets its IRI when the first content
// is staged: ontology.StagingBase and a version 7 uuid, so that a sweep
// can tell its age.
func (st *Store) newStaging() *staging {
	if _, ok := st.c.(graphStore); !ok {
		return nil
	}
	return &staging{}
}

// newCopy returns the staging of a Detach: long contents are bound from
// the turns copied (Turn.ID), checked by their SHA-256.
func newCopy() *staging { return &staging{copy: true} }

// content adds the triple (ti trails:content t.Content) to graph g: into d
// as a literal when the content is short (or sg is nil), else through sg.
func (sg *staging) content(d *kg.Data, g, ti rdf.IRI, t Turn) {
	if sg == nil || len(t.Content) <= stageAbove {
		d.Add(g, ti, iri(ontology.Content), kg.String(t.Content))
		return
	}
	v := "?staged" + strconv.Itoa(sg.n)
	sg.n++
	sg.insert.WriteString("GRAPH " + term(&sg.err, g) + " { " + term(&sg.err, ti) + " " + term(&sg.err, iri(ontology.Content)) + " " + v + " }\n")
	if sg.copy {
		sum := sha256.Sum256([]byte(t.Content))
		orig, err := kg.IRI(t.ID)
		if err != nil && sg.err == nil {
			sg.err = err
		}
		sg.where.WriteString("{ " + term(&sg.err, orig) + " " + term(&sg.err, iri(ontology.Content)) + " " + v +
			" FILTER(SHA256(" + v + ") = " + term(&sg.err, kg.String(hex.EncodeToString(sum[:]))) + ") }\n")
		return
	}
	if sg.graph == (rdf.IRI{}) {
		sg.graph = kg.MustIRI(ontology.StagingBase + uuid.Must(uuid.NewV7()).String())
	}
	pred := term(&sg.err, iri(ontology.StagedContent))
	chunks := chunk(t.Content, stageChunk)
	sg.where.WriteString("{ GRAPH " + term(&sg.err, sg.graph) + " {")
	vars := make([]string, len(chunks))
	for k, c := range chunks {
		subj := term(&sg.err, kg.MustIRI(sg.graph.String()+"/"+strconv.Itoa(sg.n-1)+"/"+strconv.Itoa(k)))
		vars[k] = v + "_" + strconv.Itoa(k)
		sg.where.WriteString(" " + subj + " " + pred + " " + vars[k] + " .")
		sg.nt.WriteString(subj + " " + pred + " " + term(&sg.err, kg.String(c)) + " .\n")
	}
	sg.where.WriteString(" } BIND(")
	if len(vars) == 1 {
		sg.where.WriteString(vars[0])
	} else {
		sg.where.WriteString("CONCAT(" + strings.Join(vars, ", ") + ")")
	}
	sg.where.WriteString(" AS " + v + ") }\n")
}

// stageChunk is the most content one staged literal holds: Oxigraph's
// N-Triples parser takes no token over 16 MiB, and escaping may make a
// literal six times as long as its content (a control character becomes
// \u0000). A longer content is staged in chunks, which the update
// concatenates (CONCAT).
const stageChunk = 1 << 20

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

// term serializes t for a query, keeping the first error in *err.
func term(err *error, t rdf.Term) string {
	s, e := kg.Term(t)
	if e != nil && *err == nil {
		*err = e
	}
	return s
}

// sends reports whether sg has contents to send ahead.
func (sg *staging) sends() bool { return sg != nil && sg.nt.Len() > 0 }

// bind returns update template tmpl with what sg took from the write's
// data: its INSERT triples before the "#DATA" comment and its WHERE
// patterns where the "#STAGED" comment stands (the template's own text,
// before any value is bound into it, so no value can pose as a marker).
// Bind the result with withData, then end it with sg.drop.
func (sg *staging) bind(name, tmpl string) string {
	if sg == nil || sg.n == 0 {
		return tmpl
	}
	if !strings.Contains(tmpl, "#STAGED") || !strings.Contains(tmpl, "#DATA") {
		panic(name + ": no #STAGED or #DATA marker")
	}
	tmpl = strings.Replace(tmpl, "#DATA", sg.insert.String()+"#DATA", 1)
	return strings.Replace(tmpl, "#STAGED", sg.where.String(), 1)
}

// withStaged is withData for a template with a "#STAGED" comment: it
// binds template tmpl with sg's contents (bind), parameters p and the
// quads of d, and ends it with the removal of sg's staging graph (finish).
func withStaged(name, tmpl string, sg *staging, d *kg.Data, p kg.Params) (string, error) {
	u, err := withData(name, sg.bind(name, tmpl), d, p)
	if err != nil {
		return "", err
	}
	return sg.finish(u)
}

// finish ends update u (bound from sg.bind's template) with the removal
// of the staging graph, in the same request: one transaction, which
// leaves no staging graph whether its conditional insert applied or not.
func (sg *staging) finish(u string) (string, error) {
	if sg != nil && sg.err != nil {
		return "", sg.err
	}
	if !sg.sends() {
		return u, nil
	}
	return u + " ;\nDROP SILENT GRAPH " + term(&sg.err, sg.graph) + "\n", sg.err
}

// checkStaging refuses, before anything is sent, turns that the store's
// Querier cannot take: contents over maxInlineBytes when it has no Graph
// Store (graphStore) to stage them through.
func (st *Store) checkStaging(turns []Turn) error {
	if _, ok := st.c.(graphStore); ok {
		return nil
	}
	for _, t := range turns {
		if len(t.Content) > maxInlineBytes {
			return fmt.Errorf("%w: turn %d: %d bytes of content; contents over %d bytes need a Querier with PutGraph and DeleteGraph (as *kg.Client has), to send them through the Graph Store Protocol", ErrInvalid, t.Index, len(t.Content), maxInlineBytes)
		}
	}
	return nil
}

// send PUTs the staged contents into the staging graph, if any.
func (sg *staging) send(ctx context.Context, c Querier) error {
	if !sg.sends() {
		return nil
	}
	gs, ok := c.(graphStore)
	if !ok {
		return fmt.Errorf("%w: no Graph Store to stage contents through", ErrInvalid) // checkStaging refused it before
	}
	if err := gs.PutGraph(ctx, sg.graph, kg.NTriples, []byte(sg.nt.String())); err != nil {
		return fmt.Errorf("stage %s: %w", sg.graph, err)
	}
	return nil
}

// dropTimeout bounds the clean-up after a failed write.
const dropTimeout = 30 * time.Second

// drop removes the staging graph after a write whose update failed (its
// request may or may not have run; when it ran, the graph is gone
// already), even when ctx is done, and within dropTimeout. What it cannot
// remove (the store is down) stays until a sweep: no query of Trails
// reads it as session data.
func (sg *staging) drop(ctx context.Context, c Querier) {
	if !sg.sends() {
		return
	}
	gs, ok := c.(graphStore)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropTimeout)
	defer cancel()
	_ = gs.DeleteGraph(ctx, sg.graph) // kg.ErrNotFound: gone already; else left to the sweep
}
