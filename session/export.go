package session

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/rdfio"
)

// Format is a serialization of Export and Import.
type Format string

// The formats of Export and Import.
const (
	// NQuads is N-Quads: every quad with its graph, one per line, every
	// control character escaped. The backup format.
	NQuads Format = "nquads"
	// TriG is the same quads as TriG (Turtle with GRAPH blocks), for people
	// to read: prefixed names, one subject per paragraph.
	TriG Format = "trig"
	// JSONL is one JSON object per line per turn: each exported session's
	// effective history, for feeding conversations elsewhere. Export only.
	JSONL Format = "jsonl"
)

// ParseFormat returns the Format named s: "nquads" (or "nq"), "trig" (or
// "turtle", its name in trails-admin), "jsonl". It returns ErrInvalid for
// any other name.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "nquads", "nq", "n-quads":
		return NQuads, nil
	case "trig", "turtle", "ttl":
		return TriG, nil
	case "jsonl", "json-lines":
		return JSONL, nil
	}
	return "", fmt.Errorf("%w: format %q: want nquads, trig (turtle) or jsonl", ErrInvalid, s)
}

// ExportStats says what an Export wrote.
type ExportStats struct {
	Sessions int // sessions written (session graphs, or sessions in JSONL)
	Turns    int // turns written: stored turn resources, or JSONL lines
	Quads    int // quads written (0 for JSONL)
}

// ImportStats says what an Import wrote.
type ImportStats struct {
	Sessions  int // session graphs written
	Unchanged int // sessions of the input the store held already as they are in it: skipped
	Quads     int // quads sent to the store
	Batches   int // batches written, each one transaction
	Planned   int // batches the import had to write: more than Batches when it stopped early
}

// The queries of export and import, read once.
var (
	qExportTree   = query("export-tree.rq")
	qExportGraphs = query("export-graphs.rq")
	qExportQuads  = query("export-quads.rq")
	qExportProv   = query("export-prov.rq")
	qStoredGraphs = query("export-stored-graphs.rq")
)

// Namespaces of the terms an export names, derived from the ontology
// constants so that each IRI is spelled in one place.
var (
	xsdNS = strings.TrimSuffix(ontology.XSDString, "string")
	rdfNS = strings.TrimSuffix(ontology.RDFType, "type")
	dctNS = strings.TrimSuffix(ontology.DCTIdentifier, "identifier")
)

// Export writes sessions to w in format f.
//
// With no ids it writes the whole dataset: every session graph and the PROV
// graph, not the ontology graph (the store has its own) and no graph that
// is not Trails'. With ids it writes, for each, the session, its ancestors
// (needed to load it), all its descendants (forks of forks ...), and the
// PROV records about them: the quads of the PROV graph whose subject or
// object is one of those sessions, every quad of the activities those link
// them to, and the description of those activities' agents. An ancestor whose
// graph is gone is left out, so the export holds what the store holds.
//
// NQuads and TriG hold the same quads, every control character escaped, and
// Import reads both back. Sessions come in a stable order: trees by their
// root's creation, within a tree the root first, then by creation; each
// session graph's triples together, sorted (the session first, then its
// turns by index), then the PROV graph. This takes one request per session.
// The exception is the whole dataset in NQuads, the backup: it streams the
// store's dump (one request, constant memory) in the store's order.
// Exporting an unchanged store twice gives the same bytes.
//
// JSONL writes, in the same order, each session's effective history (what
// Load returns), one JSON object per turn in index order, with these
// fields, a stable public format:
//
//	session      the session's id
//	parent       its parent's id, "" for a root
//	branch       the session's branch label
//	principal    the session's principal
//	index        the turn's index in the effective history, from 0
//	role         the turn's role
//	content      the turn's content
//	turn_branch  the branch label of the session that wrote the turn
//	created      when the turn was created, RFC 3339 with fractional seconds, UTC
//
// On error, w may hold part of the export.
//
// It returns ErrInvalid for an unknown format or a bad id, ErrNotFound when
// an id is not stored, ErrCorrupt when stored data cannot be exported (a
// blank node in a Trails graph), for JSONL the errors of Load (a missing
// ancestor, ...), the error of w, or a store error wrapping the kg error.
func (st *Store) Export(ctx context.Context, w io.Writer, f Format, ids ...string) (ExportStats, error) {
	if err := st.operator("export"); err != nil {
		return ExportStats{}, err
	}
	stats, err := st.export(ctx, w, f, ids)
	if err != nil {
		return stats, fmt.Errorf("export: %w", err)
	}
	return stats, nil
}

func (st *Store) export(ctx context.Context, w io.Writer, f Format, ids []string) (ExportStats, error) {
	var stats ExportStats
	switch f {
	case NQuads, TriG, JSONL:
	default:
		return stats, fmt.Errorf("%w: format %q", ErrInvalid, f)
	}
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return stats, err
		}
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	gw := newGraphWriter(bw, f, &stats)
	var err error
	switch {
	case f == JSONL:
		err = st.exportJSONL(ctx, bw, ids, &stats)
	case len(ids) == 0 && f == NQuads:
		err = st.exportDump(ctx, gw)
	case len(ids) == 0:
		var ms []member
		if ms, err = st.allMembers(ctx); err == nil {
			err = st.exportGraphs(ctx, gw, ms, true)
		}
	default:
		var ms []member
		if ms, err = st.treeMembers(ctx, ids); err == nil {
			err = st.exportGraphs(ctx, gw, ms, false)
		}
	}
	if err == nil && f != JSONL {
		err = gw.close()
	}
	if err != nil {
		bw.Flush()
		return stats, err
	}
	return stats, bw.Flush()
}

// member is one session an export takes, as ordering and batching need it.
type member struct {
	id      string
	parent  string // id, "" for a root
	created time.Time
	own     int // its trails:ownTurns, 0 when not stored
}

// exportOrder sorts sessions into trees ordered by their root's creation
// (then id); within a tree the root comes first, then the others by
// creation (then id). A session whose parent is not exported is the root
// of its tree.
func exportOrder(ms []member) {
	byID := make(map[string]member, len(ms))
	for _, m := range ms {
		byID[m.id] = m
	}
	top := make(map[string]member, len(ms))
	for _, m := range ms {
		t := m
		seen := map[string]bool{t.id: true}
		for {
			p, ok := byID[t.parent]
			if !ok || seen[p.id] {
				break
			}
			seen[p.id] = true
			t = p
		}
		top[m.id] = t
	}
	byTime := func(a, b member) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	}
	slices.SortFunc(ms, func(a, b member) int {
		ta, tb := top[a.id], top[b.id]
		if c := byTime(ta, tb); c != 0 {
			return c
		}
		if ra, rb := a.id == ta.id, b.id == tb.id; ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return byTime(a, b)
	})
}

// treeMembers returns the sessions an export of ids takes, in export
// order: each id, its stored ancestors and its descendants.
func (st *Store) treeMembers(ctx context.Context, ids []string) ([]member, error) {
	var ms []member
	seen := make(map[string]bool)
	for _, id := range ids {
		q, err := bind("export-tree", qExportTree, kg.Params{"self": sessionIRI(id)})
		if err != nil {
			return nil, err
		}
		res, err := st.c.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		found := false
		for _, row := range res.Solutions {
			if _, ok := row["exists"]; !ok {
				continue // an ancestor whose graph is gone
			}
			sid := idOf(row.String("s"))
			if sid == id {
				found = true
			}
			if seen[sid] {
				continue
			}
			seen[sid] = true
			m := member{id: sid}
			if p := row.String("parent"); p != "" {
				m.parent = idOf(p)
			}
			if _, ok := row["created"]; ok {
				if m.created, err = row.Time("created"); err != nil {
					return nil, fmt.Errorf("%w: session %s: %v", ErrCorrupt, sid, err)
				}
			}
			m.own, _ = row.Int("own") // a batch size only: 0 when absent or not a number
			ms = append(ms, m)
		}
		if !found {
			return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
		}
	}
	exportOrder(ms)
	return ms, nil
}

// exportJSONL writes the effective history of each session of ids and
// their trees (all sessions without ids), one turn per line.
func (st *Store) exportJSONL(ctx context.Context, w *bufio.Writer, ids []string, stats *ExportStats) error {
	var ms []member
	if len(ids) == 0 {
		infos, err := st.List(ctx)
		if err != nil {
			return err
		}
		for _, in := range infos {
			ms = append(ms, member{id: in.ID, parent: in.ParentID, created: in.Created})
		}
		exportOrder(ms)
	} else {
		var err error
		if ms, err = st.treeMembers(ctx, ids); err != nil {
			return err
		}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, m := range ms {
		s, _, err := st.load(ctx, m.id, -1)
		if err != nil {
			return fmt.Errorf("load %s: %w", m.id, err)
		}
		for _, t := range s.Turns {
			line := jsonlTurn{
				Session:    s.ID,
				Parent:     s.ParentID,
				Branch:     s.Branch,
				Principal:  s.Principal,
				Index:      t.Index,
				Role:       t.Role,
				Content:    t.Content,
				TurnBranch: t.Branch,
				Created:    t.Created.UTC().Format(time.RFC3339Nano),
			}
			if err := enc.Encode(&line); err != nil {
				return err
			}
			stats.Turns++
		}
		stats.Sessions++
	}
	return nil
}

// jsonlTurn is one line of a JSONL export; the field names are a public
// format (see Export).
type jsonlTurn struct {
	Session    string `json:"session"`
	Parent     string `json:"parent"`
	Branch     string `json:"branch"`
	Principal  string `json:"principal"`
	Index      int    `json:"index"`
	Role       string `json:"role"`
	Content    string `json:"content"`
	TurnBranch string `json:"turn_branch"`
	Created    string `json:"created"`
}

// allMembers returns every session graph of the store, in export order.
func (st *Store) allMembers(ctx context.Context) ([]member, error) {
	res, err := st.c.Query(ctx, qExportGraphs)
	if err != nil {
		return nil, err
	}
	var ms []member
	seen := make(map[string]bool, len(res.Solutions))
	for _, row := range res.Solutions {
		k, id := graphKindOf(row.String("g"))
		if k != sessionGraph || seen[id] {
			continue // not a session's, or a second row of one (two turn counts, say)
		}
		seen[id] = true
		m := member{id: id}
		if p := row.String("parent"); p != "" {
			m.parent = idOf(p)
		}
		if _, ok := row["created"]; ok {
			if m.created, err = row.Time("created"); err != nil {
				return nil, fmt.Errorf("%w: session %s: %v", ErrCorrupt, id, err)
			}
		}
		m.own, _ = row.Int("own")
		ms = append(ms, m)
	}
	exportOrder(ms)
	return ms, nil
}

// Batches of an export's graph reads: one query reads the graphs of up to
// exportBatch sessions, closing early once they hold exportBatchTurns turns
// (a session with more goes alone).
const (
	exportBatch      = 500
	exportBatchTurns = 20000
)

// exportGraphs writes the graphs of the sessions ms, read in batches of
// sessions (one query each, not one request per session), then the PROV
// graph: all of it with allProv, else the records about ms, which one
// query reads meanwhile.
func (st *Store) exportGraphs(ctx context.Context, out *graphWriter, ms []member, allProv bool) error {
	rows := make([][]rdf.Term, 0, len(ms))
	for _, m := range ms {
		rows = append(rows, []rdf.Term{sessionIRI(m.id)})
	}
	// The records about ms are asked for first and read while the
	// session graphs are written: the query takes as long as several
	// batches of graphs.
	prov := kg.MustIRI(ontology.ProvGraph)
	type answer struct {
		res *kg.Results
		err error
	}
	provRecords := make(chan answer, 1)
	if !allProv && len(rows) > 0 {
		q, err := kg.BindTables(qExportProv, kg.Params{"prov": prov},
			map[string]kg.Table{"sessions": {Vars: []string{"x"}, Rows: rows}})
		if err != nil {
			return fmt.Errorf("export-prov: %w", err)
		}
		pctx, cancel := context.WithCancel(ctx)
		defer cancel() // an export that fails stops the query
		go func() {
			res, err := st.c.Select(pctx, q)
			provRecords <- answer{res, err}
		}()
	}
	for i := 0; i < len(ms); {
		j, turns := i+1, ms[i].own
		for j < len(ms) && j-i < exportBatch && turns+ms[j].own <= exportBatchTurns {
			turns += ms[j].own
			j++
		}
		if err := st.exportBatch(ctx, out, rows[i:j]); err != nil {
			return err
		}
		i = j
	}
	if allProv {
		return st.exportGraph(ctx, out, prov)
	}
	if len(rows) == 0 {
		return nil
	}
	a := <-provRecords
	if a.err != nil {
		return a.err
	}
	ts := make([]triple, 0, len(a.res.Solutions))
	var tw terms
	for _, row := range a.res.Solutions {
		t, err := tw.triple(rdfio.Quad{S: row["s"], P: row["p"], O: row["o"]})
		if err != nil {
			return fmt.Errorf("%w: PROV graph: %v", ErrCorrupt, err)
		}
		ts = append(ts, t)
	}
	return out.graph(prov, ts)
}

// exportBatch writes the session graphs of rows (one IRI each) as the store
// holds them, in the order given (nothing for a graph that is gone), read
// with one query.
func (st *Store) exportBatch(ctx context.Context, out *graphWriter, rows [][]rdf.Term) error {
	q, err := kg.BindTables(qExportQuads, nil, map[string]kg.Table{"graphs": {Vars: []string{"g"}, Rows: rows}})
	if err != nil {
		return fmt.Errorf("export-quads: %w", err)
	}
	byGraph := make(map[string][]triple, len(rows))
	var tw terms
	err = st.c.SelectRows(ctx, q, func([]string) error {
		clear(byGraph) // a repeated request starts again
		return nil
	}, func(row kg.Solution) error {
		t, err := tw.triple(rdfio.Quad{S: row["s"], P: row["p"], O: row["o"]})
		if err != nil {
			return fmt.Errorf("%w: graph <%s>: %v", ErrCorrupt, row.String("g"), err)
		}
		g := row.String("g")
		byGraph[g] = append(byGraph[g], t)
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range rows {
		g := r[0].(rdf.IRI)
		if err := out.graph(g, byGraph[g.String()]); err != nil {
			return err
		}
	}
	return nil
}

// exportGraph writes graph g as the store holds it (nothing if it is gone).
func (st *Store) exportGraph(ctx context.Context, out *graphWriter, g rdf.IRI) error {
	nt, err := st.c.GetGraph(ctx, g)
	if errors.Is(err, kg.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	var ts []triple
	var tw terms
	err = decodeAll(nt, rdfio.NQuads, func(q rdfio.Quad) error {
		if q.G != nil {
			return fmt.Errorf("line %d: a quad in a graph's N-Triples", q.Line)
		}
		t, err := tw.triple(q)
		ts = append(ts, t)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: graph <%s>: %v", ErrCorrupt, g, err)
	}
	return out.graph(g, ts)
}

// decodeAll hands each quad of doc, in format f, to emit, stopping at the
// first error: emit's, or an *rdfio.SyntaxError.
func decodeAll(doc []byte, f rdfio.Format, emit func(rdfio.Quad) error) error {
	dec := rdfio.NewDecoder(bytes.NewReader(doc), f)
	for {
		q, err := dec.Decode()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := emit(q); err != nil {
			return err
		}
	}
}

// exportDump streams the whole dataset (kg Dump) and writes the quads of its
// session graphs and PROV graph as N-Quads, each re-serialized, in the
// order of the dump, with constant memory.
func (st *Store) exportDump(ctx context.Context, out *graphWriter) error {
	pr, pw := io.Pipe()
	dumped := make(chan error, 1)
	go func() {
		err := st.c.Dump(ctx, pw)
		pw.CloseWithError(err) // nil: the reader sees io.EOF
		dumped <- err
	}()
	err := out.dump(rdfio.NewDecoder(pr, rdfio.NQuads))
	pr.CloseWithError(errDumpStopped) // stops the dump if it goes on
	dumpErr := <-dumped
	var se *rdfio.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return fmt.Errorf("%w: line %d of the dump: %s", ErrCorrupt, se.Line, se.Msg)
	case errors.Is(err, errDumpRead) && dumpErr != nil:
		return dumpErr
	}
	return err // ErrCorrupt, or the error of w: not the store's fault
}

// errDumpStopped is what an export that stopped reading its dump tells the
// dump's writer.
var errDumpStopped = errors.New("export stopped")

// errDumpRead marks an error of reading the dump rather than of writing
// the export.
var errDumpRead = errors.New("reading the dump")

// dump writes the quads of Trails' graphs that dec reads.
func (gw *graphWriter) dump(dec *rdfio.Decoder) error {
	for {
		q, err := dec.Decode()
		var se *rdfio.SyntaxError
		switch {
		case err == io.EOF:
			return nil
		case errors.As(err, &se):
			return err
		case err != nil:
			return fmt.Errorf("%w: %w", errDumpRead, err)
		}
		g, ok := q.G.(rdf.IRI)
		if !ok {
			continue // the stored default graph, hidden by the union default graph
		}
		if k := gw.kind(g.String()); k != sessionGraph && k != provGraph {
			continue
		}
		for _, t := range []rdf.Term{q.S, q.P, q.O} {
			if err := trailsTerm(t); err != nil {
				return fmt.Errorf("%w: graph <%s>: %v", ErrCorrupt, g, err)
			}
		}
		gw.count(g.String(), q.P, q.O)
		if err := gw.enc.Encode(q); err != nil {
			if errors.Is(err, kg.ErrInvalidTerm) {
				return fmt.Errorf("%w: graph <%s>: %v", ErrCorrupt, g, err)
			}
			return err
		}
	}
}

// graphKind classifies a graph IRI.
type graphKind int

const (
	foreignGraph graphKind = iota
	sessionGraph
	provGraph
	ontologyGraph
)

// graphKindOf says which of Trails' graphs g is, and for a session graph
// the session's id. A session graph's IRI is SessionBase and a canonical
// UUID.
func graphKindOf(g string) (graphKind, string) {
	switch g {
	case ontology.ProvGraph:
		return provGraph, ""
	case ontology.OntologyGraph:
		return ontologyGraph, ""
	}
	if id, ok := strings.CutPrefix(g, ontology.SessionBase); ok && checkID(id) == nil {
		return sessionGraph, id
	}
	return foreignGraph, ""
}

// triple is one triple to write, with the N-Triples form of each term.
type triple struct {
	s, p, o    rdf.Term
	ss, ps, os string
}

// terms writes the terms of Trails' graphs in their N-Triples form
// (rdfio.Terms), refusing what Trails never writes (trailsTerm). It is
// not safe for concurrent use.
type terms struct{ rdfio.Terms }

// triple serializes the terms of q: blank nodes and invalid terms fail.
func (ts *terms) triple(q rdfio.Quad) (triple, error) {
	t := triple{s: q.S, p: q.P, o: q.O}
	var err error
	if t.ss, err = ts.term(q.S); err != nil {
		return t, err
	}
	if t.ps, err = ts.term(q.P); err != nil {
		return t, err
	}
	if t.os, err = ts.term(q.O); err != nil {
		return t, err
	}
	return t, nil
}

// term is rdfio's Term, refusing what trailsTerm refuses.
func (ts *terms) term(t rdf.Term) (string, error) {
	if err := trailsTerm(t); err != nil {
		return "", err
	}
	return ts.Terms.Term(t)
}

// trailsTerm refuses the terms Trails never writes, with a message that
// names them: a blank node, and a language-less rdf:langString.
func trailsTerm(t rdf.Term) error {
	switch t := t.(type) {
	case rdf.Blank:
		return fmt.Errorf("blank node _:%s (Trails writes none)", t.String())
	case rdf.Literal:
		if t.Lang() == "" && t.DataType.String() == rdfNS+"langString" {
			return fmt.Errorf("%w: rdf:langString literal %q without a language tag", kg.ErrInvalidTerm, t.String())
		}
	}
	return nil
}

// graphWriter writes graphs in one format and counts what it writes.
type graphWriter struct {
	enc      *rdfio.Encoder
	stats    *ExportStats
	sessions map[string]bool // the session graphs written to
	kinds    map[string]graphKind
}

func newGraphWriter(w io.Writer, f Format, stats *ExportStats) *graphWriter {
	rf := rdfio.NQuads
	if f == TriG {
		rf = rdfio.TriG
	}
	return &graphWriter{
		enc:   rdfio.NewEncoder(w, rf, trigPrefixes...),
		stats: stats, sessions: make(map[string]bool), kinds: make(map[string]graphKind),
	}
}

// kind is graphKindOf(g), remembered.
func (gw *graphWriter) kind(g string) graphKind {
	k, ok := gw.kinds[g]
	if !ok {
		if len(gw.kinds) >= 4096 {
			clear(gw.kinds)
		}
		k, _ = graphKindOf(g)
		gw.kinds[g] = k
	}
	return k
}

// count counts a triple with predicate p and object o, written to graph g.
func (gw *graphWriter) count(g string, p, o rdf.Term) {
	gw.stats.Quads++
	if gw.kind(g) != sessionGraph {
		return
	}
	if !gw.sessions[g] {
		gw.sessions[g] = true
		gw.stats.Sessions++
	}
	if p.String() == ontology.RDFType && o == turnClass {
		gw.stats.Turns++
	}
}

var turnClass rdf.Term = kg.MustIRI(ontology.Turn)

// trigPrefixes are the prefixes a TriG export declares, in order.
var trigPrefixes = []rdfio.Prefix{
	{Name: "rdf", NS: rdfNS},
	{Name: "xsd", NS: xsdNS},
	{Name: "dcterms", NS: dctNS},
	{Name: "prov", NS: ontology.ProvNS},
	{Name: "trails", NS: ontology.NS},
	{Name: "session", NS: ontology.SessionBase},
	{Name: "agent", NS: ontology.AgentBase},
}

// graph sorts ts and writes them as graph g.
func (gw *graphWriter) graph(g rdf.IRI, ts []triple) error {
	if len(ts) == 0 {
		return nil
	}
	sortTriples(g.String(), ts)
	for _, t := range ts {
		gw.count(g.String(), t.p, t.o)
		if err := gw.enc.Encode(rdfio.Quad{S: t.s, P: t.p, O: t.o, G: g}); err != nil {
			return err
		}
	}
	return nil
}

// close writes what the encoder holds back: the end of a TriG block, or
// TriG's prefixes in an export of nothing.
func (gw *graphWriter) close() error { return gw.enc.Close() }

// sortTriples orders the triples of graph g: g itself first, then g's turns
// by index, then other subjects by IRI; within a subject rdf:type first,
// then by predicate and object.
func sortTriples(g string, ts []triple) {
	turnPrefix := g + ontology.TurnPath
	rank := func(s string) (int, int) {
		if s == g {
			return 0, 0
		}
		if rest, ok := strings.CutPrefix(s, turnPrefix); ok {
			if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
				return 1, n
			}
		}
		return 2, 0
	}
	slices.SortFunc(ts, func(a, b triple) int {
		if a.ss != b.ss {
			ra, na := rank(a.s.String())
			rb, nb := rank(b.s.String())
			if c := cmp.Compare(ra, rb); c != 0 {
				return c
			}
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			return strings.Compare(a.ss, b.ss)
		}
		ta, tb := a.p.String() == ontology.RDFType, b.p.String() == ontology.RDFType
		if ta != tb {
			if ta {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.ps, b.ps); c != 0 {
			return c
		}
		return strings.Compare(a.os, b.os)
	})
}

// Batches of an import: a batch closes once it holds importBatchQuads quads
// or importBatchBytes bytes; a session graph is never split across batches,
// nor are the PROV quads about one subject.
var (
	importBatchQuads = 50_000
	importBatchBytes = 16 << 20
)

// importGraph is one graph of an import's input.
type importGraph struct {
	iri   rdf.IRI
	kind  graphKind
	id    string   // session id, for a session graph
	lines []string // the quads as N-Quads lines, each once
	size  int      // bytes of lines
}

// Import reads NQuads or TriG from r (an Export, or any file in Trails'
// layout) and adds its quads to the store.
//
// Import checks everything before it writes anything, and applies the
// rules Persist and the other writers apply, and nothing else. The whole
// input must parse; blank nodes are refused, since Trails writes none
// (TriG's [] and collections as well), and so are invalid terms. Every quad
// must be in a session graph (whose IRI is a session IRI with a canonical
// UUID) or in the PROV graph. A quad in the graph of session S must be
// about S, its own turns or anchors, or the agent of its principal (only
// the archive of a rewind holds turns of the session it was rewound from,
// which no other graph may describe). A quad in the PROV graph must be
// about an activity the store does not describe yet (or one it holds
// exactly so), an agent, or what generated a session or a turn, and may
// name only the input's sessions and deleted ones; a trails:Deletion may
// invalidate only a session that neither the input nor the store holds.
// Each session must be whole and valid as Persist demands (an id, a
// principal, a branch label, a kind, its turns numbered from its fork
// point without gaps, each with a role and content within MaxTurnBytes,
// its turn count and head digest right), its parent must be in the input
// or the store, its fork point within its parent's history, its parent
// links free of cycles and at most MaxForkDepth long, and its fork label
// no other session's (a session a trails:Deletion invalidated may be
// restored: the record of its deletion stays). A turn with a
// trails:digest must carry the one the hash chain gives (its predecessor
// in a stored parent read from the store); a turn without one is legacy
// data (written before the chain) and is taken as it is. A refused input
// gives an *ImportError naming the rule and the line at fault (of the
// faults the first check that finds any finds, the one at the lowest
// line).
//
// A session graph that the store already holds must hold exactly the
// input's triples (literals compared by value, as the store keeps them):
// such a session is skipped (ImportStats.Unchanged), any difference is a
// conflict and nothing is written. PROV quads the store holds are skipped,
// so importing the same input twice writes nothing the second time.
//
// Then it writes in batches, each one request (one transaction): each
// session graph whole in one batch, the session graphs first, then the PROV
// quads, those about one subject in one batch. progress, if not nil, is
// called after each batch with the quads written so far and the total to
// write. Between batches Import stops when ctx is done, returning its
// error with the stats of the batches written (a batch under way when ctx
// ends may or may not be written). Import holds the whole input in memory.
// The checks and the writes are not one transaction: a session another
// writer creates meanwhile is not detected. If a batch fails, the batches
// before it stay written; importing the same input again completes the
// import.
//
// It returns an *ImportError wrapping ErrInvalid for an input that does
// not parse or breaks a rule (with ErrForkCycle, ErrForkDepth or
// ErrParentMissing as well for those), or wrapping ErrConflict for
// sessions stored with different content (naming them), fork labels or
// turns stored elsewhere, a trails:Deletion of a stored session, and
// stored activities the input adds to; ErrInvalid for the JSONL format (export only); the
// error of r; the error of ctx; or a store error wrapping the kg error.
func (st *Store) Import(ctx context.Context, r io.Reader, f Format, progress func(done, total int)) (ImportStats, error) {
	if err := st.operator("import"); err != nil {
		return ImportStats{}, err
	}
	stats, err := st.importRDF(ctx, r, f, progress)
	if err != nil {
		return stats, fmt.Errorf("import: %w", err)
	}
	return stats, nil
}

func (st *Store) importRDF(ctx context.Context, r io.Reader, f Format, progress func(done, total int)) (ImportStats, error) {
	var stats ImportStats
	var trig bool
	switch f {
	case NQuads:
	case TriG:
		trig = true
	case JSONL:
		return stats, fmt.Errorf("%w: %s is an export format only", ErrInvalid, f)
	default:
		return stats, fmt.Errorf("%w: format %q", ErrInvalid, f)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return stats, err
	}
	in, err := readImport(data, trig)
	if err != nil {
		return stats, err
	}
	if err := in.check(); err != nil {
		return stats, err
	}
	if err := st.unstored(ctx, in); err != nil {
		return stats, err
	}
	stored, provStored, err := st.checkStored(ctx, in)
	if err != nil {
		return stats, err
	}
	if err := st.checkTurns(ctx, in, stored); err != nil {
		return stats, err
	}
	for _, s := range in.order {
		if s.stored {
			stats.Unchanged++
		}
	}

	batches, total := planImport(in, provStored)
	stats.Planned = len(batches)
	var buf bytes.Buffer
	for _, b := range batches {
		if err := ctx.Err(); err != nil {
			return stats, err
		}
		buf.Reset()
		buf.Grow(b.size)
		for _, run := range b.runs {
			for _, l := range run {
				buf.WriteString(l)
			}
		}
		if err := st.c.LoadQuads(ctx, buf.Bytes()); err != nil {
			return stats, err
		}
		stats.Quads += b.quads
		stats.Sessions += b.sessions
		stats.Batches++
		if progress != nil {
			progress(stats.Quads, total)
		}
	}
	return stats, nil
}

// importBatch is what one request of an import writes.
type importBatch struct {
	runs     [][]string // runs of N-Quads lines
	quads    int
	size     int
	sessions int
}

// planImport cuts what in holds and the store lacks into batches: the
// session graphs not stored, each whole, then the PROV quads the store
// lacks (provStored: stored, by index), sorted, those of one subject
// together. It returns them with the number of quads they hold.
func planImport(in *importInput, provStored map[int]bool) ([]importBatch, int) {
	var out []importBatch
	var cur importBatch
	total := 0
	flush := func() {
		if cur.quads > 0 {
			out = append(out, cur)
		}
		cur = importBatch{}
	}
	full := func(quads, size int) bool {
		return cur.quads > 0 && (cur.quads+quads > importBatchQuads || cur.size+size > importBatchBytes)
	}
	for _, s := range in.order {
		if s.stored {
			continue
		}
		g := s.graph
		if full(len(g.lines), g.size) {
			flush()
		}
		cur.runs = append(cur.runs, g.lines)
		cur.quads += len(g.lines)
		cur.size += g.size
		cur.sessions++
		total += len(g.lines)
	}
	var prov []string
	for i, q := range in.prov.quads {
		if !provStored[i] {
			prov = append(prov, in.prov.graph.lines[q.li])
		}
	}
	slices.Sort(prov) // a subject's lines, which all start with it, come together
	for i := 0; i < len(prov); {
		subj, _, _ := strings.Cut(prov[i], " ")
		j, size := i, 0
		key := subj + " "
		for ; j < len(prov) && strings.HasPrefix(prov[j], key); j++ {
			size += len(prov[j])
		}
		if full(j-i, size) {
			flush()
		}
		cur.runs = append(cur.runs, prov[i:j])
		cur.quads += j - i
		cur.size += size
		total += j - i
		i = j
	}
	flush()
	return out, total
}

// readImport parses an import's input, applying the rules that hold quad
// by quad, and returns what it holds: session graphs in input order, then
// the PROV graph.
func readImport(data []byte, trig bool) (*importInput, error) {
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return nil, &ImportError{Line: 1 + bytes.Count(data[:i], []byte{'\n'}), Rule: RuleSyntax, Err: fmt.Errorf("%w: not UTF-8", ErrInvalid)}
	}
	if line, ok := jsonLines(data); ok {
		return nil, &ImportError{Line: line, Rule: RuleSyntax, Err: fmt.Errorf("%w: this is JSONL (a JSON object per line), which is an export format only: import an nquads or trig export", ErrInvalid)}
	}
	in := newImportInput()
	byIRI := make(map[rdf.Term]*importGraph)
	seen := make(map[string]struct{})
	var tw terms
	syntax := func(line int, err error) error {
		return &ImportError{Line: line, Rule: RuleSyntax, Err: fmt.Errorf("%w: %v", ErrInvalid, err)}
	}
	f := rdfio.NQuads
	if trig {
		f = rdfio.TriG
	}
	err := decodeAll(data, f, func(q rdfio.Quad) error {
		g := byIRI[q.G]
		if g == nil {
			gi, err := importGraphOf(q)
			if err != nil {
				return &ImportError{Line: q.Line, Rule: RuleGraph, Err: fmt.Errorf("%w: %v", ErrInvalid, err)}
			}
			g = &importGraph{iri: gi}
			g.kind, g.id = graphKindOf(gi.String())
			byIRI[q.G] = g
			in.graphs = append(in.graphs, g)
			if g.kind == provGraph {
				in.prov.graph = g
			}
		}
		t, err := tw.triple(q)
		if err != nil {
			return syntax(q.Line, err)
		}
		gs, err := tw.term(g.iri)
		if err != nil {
			return syntax(q.Line, err)
		}
		l := nquadLine(t, gs)
		if _, dup := seen[l]; dup {
			return nil
		}
		seen[l] = struct{}{}
		if err := in.quad(g, q, t, len(g.lines)); err != nil {
			return err
		}
		g.lines = append(g.lines, l)
		g.size += len(l)
		return nil
	})
	var ie *ImportError
	var se *rdfio.SyntaxError
	switch {
	case errors.As(err, &ie):
		return nil, ie
	case errors.As(err, &se):
		return nil, &ImportError{Line: se.Line, Rule: RuleSyntax, Err: fmt.Errorf("%w: %s", ErrInvalid, se.Msg)}
	case err != nil:
		return nil, syntax(0, err)
	}
	slices.SortStableFunc(in.graphs, func(a, b *importGraph) int {
		return cmp.Compare(a.kind, b.kind) // sessions, then PROV
	})
	return in, nil
}

// jsonLines reports whether data looks like JSONL: its first characters
// that are not white space are '{' and '"', a JSON object's first key
// (TriG's default graph block, also '{', holds no literal there), and the
// line where it starts.
func jsonLines(data []byte) (int, bool) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' || !bytes.HasPrefix(bytes.TrimLeft(trimmed[1:], " \t\r\n"), []byte{'"'}) {
		return 0, false
	}
	return 1 + bytes.Count(data[:len(data)-len(trimmed)], []byte{'\n'}), true
}

// nquadLine returns t in graph gs (serialized) as an N-Quads line.
func nquadLine(t triple, gs string) string {
	var b strings.Builder
	b.Grow(len(t.ss) + len(t.ps) + len(t.os) + len(gs) + 6)
	b.WriteString(t.ss)
	b.WriteByte(' ')
	b.WriteString(t.ps)
	b.WriteByte(' ')
	b.WriteString(t.os)
	b.WriteByte(' ')
	b.WriteString(gs)
	b.WriteString(" .\n")
	return b.String()
}

// importGraphOf returns the graph of q, if it is one of Trails'.
func importGraphOf(q rdfio.Quad) (rdf.IRI, error) {
	switch g := q.G.(type) {
	case nil:
		return rdf.IRI{}, errors.New("a triple in the default graph; Trails' data lives in named graphs")
	case rdf.Blank:
		return rdf.IRI{}, fmt.Errorf("blank node _:%s as a graph name", g.String())
	case rdf.IRI:
		if k, _ := graphKindOf(g.String()); k == foreignGraph {
			return rdf.IRI{}, fmt.Errorf("graph <%s> is not one of Trails' graphs (a session graph <%s…> or <%s>)",
				g, ontology.SessionBase, ontology.ProvGraph)
		}
		return g, nil
	default:
		return rdf.IRI{}, fmt.Errorf("a %T as a graph name", g)
	}
}

// unstored marks the sessions of the input that the store holds with the
// same triples (importSession.stored), and fails with an *ImportError
// wrapping ErrConflict if it holds any with different ones.
func (st *Store) unstored(ctx context.Context, in *importInput) error {
	var rows [][]rdf.Term
	for _, s := range in.order {
		rows = append(rows, []rdf.Term{s.graph.iri})
	}
	if len(rows) == 0 {
		return nil
	}
	stored := make(map[string]bool)
	err := st.selectTable(ctx, "export-stored-graphs", qStoredGraphs, "graphs", kg.Table{Vars: []string{"g"}, Rows: rows}, nil, func(r kg.Solution) error {
		stored[r.String("g")] = true
		return nil
	})
	if err != nil {
		return err
	}
	var conflicts []string
	line := 0
	for _, s := range in.order {
		if !stored[s.iri] {
			continue
		}
		same, err := st.sameGraph(ctx, s.graph)
		if err != nil {
			return err
		}
		if !same {
			if len(conflicts) == 0 {
				line = s.line
			}
			conflicts = append(conflicts, s.id)
			continue
		}
		s.stored = true
	}
	if n := len(conflicts); n > 0 {
		more := ""
		if n > 10 {
			more = fmt.Sprintf(" and %d more", n-10)
			conflicts = conflicts[:10]
		}
		return &ImportError{Line: line, Rule: RuleStored, Err: fmt.Errorf("%w: %d sessions are stored with other content (%s%s); nothing was written",
			ErrConflict, n, strings.Join(conflicts, ", "), more)}
	}
	return nil
}

// sameGraph reports whether the store holds exactly the triples of g,
// literals compared by value.
func (st *Store) sameGraph(ctx context.Context, g *importGraph) (bool, error) {
	nt, err := st.c.GetGraph(ctx, g.iri)
	if errors.Is(err, kg.ErrNotFound) {
		return len(g.lines) == 0, nil
	}
	if err != nil {
		return false, err
	}
	stored, err := tripleKeys(nt)
	if err != nil {
		return false, fmt.Errorf("%w: graph <%s>: %v", ErrCorrupt, g.iri, err)
	}
	input, err := tripleKeys([]byte(strings.Join(g.lines, "")))
	if err != nil {
		return false, err
	}
	return maps.Equal(stored, input), nil
}

// tripleKeys returns the set of the triples of an N-Triples or N-Quads
// document (graphs ignored), each as the SHA-256 of its tripleKey.
func tripleKeys(doc []byte) (map[[sha256.Size]byte]struct{}, error) {
	keys := make(map[[sha256.Size]byte]struct{})
	var tw terms
	err := decodeAll(doc, rdfio.NQuads, func(q rdfio.Quad) error {
		t, err := tw.triple(q)
		if err != nil {
			return err
		}
		keys[sha256.Sum256([]byte(tripleKey(t)))] = struct{}{}
		return nil
	})
	return keys, err
}

// tripleKey is a triple with its object normalized to its value, as the
// store keeps it: TDB2 stores "05"^^xsd:integer as 5, and a dateTime's
// trailing zeros are lost.
func tripleKey(t triple) string {
	return t.ss + " " + t.ps + " " + normalObject(t)
}

func normalObject(t triple) string {
	l, ok := t.o.(rdf.Literal)
	if !ok {
		return t.os
	}
	if lang := l.Lang(); lang != "" {
		return strconv.Quote(l.String()) + "@" + strings.ToLower(lang)
	}
	v, dt := l.String(), l.DataType.String()
	local, _ := strings.CutPrefix(dt, xsdNS)
	switch local {
	case "integer", "long", "int", "short", "byte", "nonNegativeInteger", "positiveInteger",
		"nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte":
		if n, ok := new(big.Int).SetString(strings.TrimPrefix(v, "+"), 10); ok {
			v = n.String()
		}
	case "decimal":
		if r, ok := new(big.Rat).SetString(v); ok {
			v = r.RatString()
		}
	case "double", "float":
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			v = strconv.FormatFloat(x, 'g', -1, 64)
		}
	case "boolean":
		switch v {
		case "1":
			v = "true"
		case "0":
			v = "false"
		}
	case "dateTime":
		if tm, err := time.Parse(time.RFC3339Nano, v); err == nil {
			v = tm.UTC().Format(time.RFC3339Nano)
		}
	default:
		return t.os
	}
	return strconv.Quote(v) + "^^" + local
}
