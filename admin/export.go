package admin

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/rdfio"
	"github.com/trails-kg/trails/session"
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
	return "", fmt.Errorf("%w: format %q: want nquads, trig (turtle) or jsonl", session.ErrInvalid, s)
}

// ExportStats says what an Export wrote.
type ExportStats struct {
	Sessions int // sessions written (session graphs, or sessions in JSONL)
	Turns    int // turns written: stored turns (a fork's own) in N-Quads and TriG; JSONL lines, one per turn of each effective history, inherited turns included
	Quads    int // quads written (0 for JSONL)
}

// ImportStats says what an Import wrote.
type ImportStats struct {
	Sessions  int // session graphs written
	Unchanged int // sessions of the input the store held already as they are in it: skipped
	Quads     int // quads sent to the store
	Batches   int // batches written, each one transaction
	Planned   int // batches the import had to write: more than Batches when it stopped early
	Signed    int // head statements added to the witness (WithSigning)
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
// and, only for a structured turn (session.Structure), the fields it has:
//
//	author, invocation_id, model, finish_reason   strings
//	usage        {input_tokens, output_tokens, cached_input_tokens, reasoning_tokens, total_tokens}
//	metadata     an object: each key with its JSON value
//	raw          {format, data}, data in base64
//	parts        an array, in order, of {kind, text, call_id, tool_name,
//	             arguments, result, is_error, mime_type, data, uri}: kind one
//	             of text, reasoning, tool_call, tool_result, data; arguments
//	             and result JSON values, data in base64; absent fields left out
//	state_delta  an object: each key the turn sets with its JSON value
//	state_removed an array of the keys the turn removes
//
// The session's app and start values are not in the lines (N-Quads and
// TriG carry them).
//
// JSON values are embedded as JSON (compacted, as encoding/json writes
// them); N-Quads and TriG keep their bytes exactly.
//
// On error, w may hold part of the export.
//
// It returns ErrInvalid for an unknown format or a bad id, ErrNotFound when
// an id is not stored, ErrCorrupt when stored data cannot be exported (a
// blank node in a Trails graph), for JSONL the errors of Load (a missing
// ancestor, ...), the error of w, or a store error wrapping the kg error.
func (ds *Dataset) Export(ctx context.Context, w io.Writer, f Format, ids ...string) (_ ExportStats, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Export", oneSession(ids))
	defer func() { call.End(err) }()
	stats, err := ds.export(ctx, w, f, ids)
	if err != nil {
		return stats, fmt.Errorf("export: %w", err)
	}
	return stats, nil
}

func (ds *Dataset) export(ctx context.Context, w io.Writer, f Format, ids []string) (ExportStats, error) {
	var stats ExportStats
	switch f {
	case NQuads, TriG, JSONL:
	default:
		return stats, fmt.Errorf("%w: format %q", session.ErrInvalid, f)
	}
	for _, id := range ids {
		if err := session.CheckID(id); err != nil {
			return stats, err
		}
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	gw := newGraphWriter(bw, f, &stats)
	var err error
	switch {
	case f == JSONL:
		err = ds.exportJSONL(ctx, bw, ids, &stats)
	case len(ids) == 0 && f == NQuads:
		err = ds.exportDump(ctx, gw)
	case len(ids) == 0:
		var ms []member
		if ms, err = ds.allMembers(ctx); err == nil {
			err = ds.exportGraphs(ctx, gw, ms, true)
		}
	default:
		var ms []member
		if ms, err = ds.treeMembers(ctx, ids); err == nil {
			err = ds.exportGraphs(ctx, gw, ms, false)
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
func (ds *Dataset) treeMembers(ctx context.Context, ids []string) ([]member, error) {
	var ms []member
	seen := make(map[string]bool)
	for _, id := range ids {
		q, err := bind("export-tree", qExportTree, kg.Params{"self": sessionIRI(id)})
		if err != nil {
			return nil, err
		}
		res, err := ds.c.Select(ctx, q)
		if err != nil {
			return nil, err
		}
		found := false
		for _, row := range res.Solutions {
			if _, ok := row["exists"]; !ok {
				continue // an ancestor whose graph is gone
			}
			sid := ontology.SessionID(row.String("s"))
			if sid == id {
				found = true
			}
			if seen[sid] {
				continue
			}
			seen[sid] = true
			m := member{id: sid}
			if p := row.String("parent"); p != "" {
				m.parent = ontology.SessionID(p)
			}
			if _, ok := row["created"]; ok {
				if m.created, err = row.Time("created"); err != nil {
					return nil, fmt.Errorf("%w: session %s: %v", session.ErrCorrupt, sid, err)
				}
			}
			m.own, _ = row.Int("own") // a batch size only: 0 when absent or not a number
			ms = append(ms, m)
		}
		if !found {
			return nil, fmt.Errorf("%s: %w", id, session.ErrNotFound)
		}
	}
	exportOrder(ms)
	return ms, nil
}

// exportJSONL writes the effective history of each session of ids and
// their trees (all sessions without ids), one turn per line.
func (ds *Dataset) exportJSONL(ctx context.Context, w *bufio.Writer, ids []string, stats *ExportStats) error {
	var ms []member
	if len(ids) == 0 {
		infos, err := ds.st.List(ctx)
		if err != nil {
			return err
		}
		for _, in := range infos {
			ms = append(ms, member{id: in.ID, parent: in.ParentID, created: in.Created})
		}
		exportOrder(ms)
	} else {
		var err error
		if ms, err = ds.treeMembers(ctx, ids); err != nil {
			return err
		}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, m := range ms {
		s, err := ds.st.Load(ctx, m.id)
		if err != nil {
			return err
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
			if t.Structured() {
				line.StructureJSON = NewStructureJSON(t.Structure)
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
	*StructureJSON
}

// allMembers returns every session graph of the store, in export order.
func (ds *Dataset) allMembers(ctx context.Context) ([]member, error) {
	res, err := ds.c.Select(ctx, qExportGraphs)
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
			m.parent = ontology.SessionID(p)
		}
		if _, ok := row["created"]; ok {
			if m.created, err = row.Time("created"); err != nil {
				return nil, fmt.Errorf("%w: session %s: %v", session.ErrCorrupt, id, err)
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
func (ds *Dataset) exportGraphs(ctx context.Context, out *graphWriter, ms []member, allProv bool) error {
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
			res, err := ds.c.Select(pctx, q)
			provRecords <- answer{res, err}
		}()
	}
	for i := 0; i < len(ms); {
		j, turns := i+1, ms[i].own
		for j < len(ms) && j-i < exportBatch && turns+ms[j].own <= exportBatchTurns {
			turns += ms[j].own
			j++
		}
		if err := ds.exportBatch(ctx, out, rows[i:j]); err != nil {
			return err
		}
		i = j
	}
	if allProv {
		return ds.exportGraph(ctx, out, prov)
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
			return fmt.Errorf("%w: PROV graph: %v", session.ErrCorrupt, err)
		}
		ts = append(ts, t)
	}
	return out.graph(prov, ts)
}

// exportBatch writes the session graphs of rows (one IRI each) as the store
// holds them, in the order given (nothing for a graph that is gone), read
// with one query.
func (ds *Dataset) exportBatch(ctx context.Context, out *graphWriter, rows [][]rdf.Term) error {
	q, err := kg.BindTables(qExportQuads, nil, map[string]kg.Table{"graphs": {Vars: []string{"g"}, Rows: rows}})
	if err != nil {
		return fmt.Errorf("export-quads: %w", err)
	}
	byGraph := make(map[string][]triple, len(rows))
	var tw terms
	err = eachRow(ctx, ds.c, q, func(row kg.Solution) error {
		t, err := tw.triple(rdfio.Quad{S: row["s"], P: row["p"], O: row["o"]})
		if err != nil {
			return fmt.Errorf("%w: graph <%s>: %v", session.ErrCorrupt, row.String("g"), err)
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
func (ds *Dataset) exportGraph(ctx context.Context, out *graphWriter, g rdf.IRI) error {
	nt, err := ds.c.GetGraph(ctx, g)
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
		return fmt.Errorf("%w: graph <%s>: %v", session.ErrCorrupt, g, err)
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
func (ds *Dataset) exportDump(ctx context.Context, out *graphWriter) error {
	pr, pw := io.Pipe()
	dumped := make(chan error, 1)
	go func() {
		err := ds.c.Dump(ctx, pw)
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
		return fmt.Errorf("%w: line %d of the dump: %s", session.ErrCorrupt, se.Line, se.Msg)
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
				return fmt.Errorf("%w: graph <%s>: %v", session.ErrCorrupt, g, err)
			}
		}
		gw.count(g.String(), q.P, q.O)
		if err := gw.enc.Encode(q); err != nil {
			if errors.Is(err, kg.ErrInvalidTerm) {
				return fmt.Errorf("%w: graph <%s>: %v", session.ErrCorrupt, g, err)
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
	if id, ok := strings.CutPrefix(g, ontology.SessionBase); ok && session.CheckID(id) == nil {
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
