package admin

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
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
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/rdfio"
	"github.com/trails-kg/trails/session"
)

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
// restored: the record of its deletion stays). Its links to other
// sessions' resources must be those the writers make (RuleLink, judged
// with the PROV records of the input and the store: a derivation, an
// archive's trails:rewoundFrom, a detach copy's trails:copiedFrom, a
// merge turn's trails:mergeOf, what generated a session or a turn; the
// export of a detached session lacks the sessions it derives from, and
// past a session that neither the input nor the store describes a copy's
// original and a copied merge turn's child are not judged). A turn with a
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
// session graph whole in one batch (a graph holding a literal of over 1
// MiB alone, its long literals sent ahead through a staging graph as
// Persist sends them, session.MaxTurnBytes), the session graphs first, then the PROV
// quads, those about one subject in one batch. progress, if not nil, is
// called after each batch with the quads written so far and the total to
// write. Between batches Import stops when ctx is done, returning its
// error with the stats of the batches written (a batch under way when ctx
// ends may or may not be written). Import holds the whole input in memory.
// The checks and the writes are not one transaction: a session another
// writer creates meanwhile is not detected. If a batch fails, the batches
// before it stay written; importing the same input again completes the
// import. Last, one update per session that holds them sets the shared
// values (app: and user: keys) its turns change, as Persist does; it is
// sent for unchanged sessions too, so a re-run also completes an import
// cut at that step, and a value changed later is never undone.
//
// With WithSigning, the head of each session graph a batch wrote is
// signed and added to the witness once the batch is stored
// (ImportStats.Signed counts them); a statement that fails does not stop
// the import.
//
// It returns an *ImportError wrapping ErrInvalid for an input that does
// not parse or breaks a rule (with ErrForkCycle, ErrForkDepth or
// ErrParentMissing or ErrNotForkable as well for those), or wrapping ErrConflict for
// sessions stored with different content (naming them), fork labels or
// turns stored elsewhere, a trails:Deletion of a stored session, and
// stored activities the input adds to; ErrInvalid for the JSONL format (export only); the
// error of r; the error of ctx; or a store error wrapping the kg error;
// and, joined with any of these or alone, errors matching
// session.ErrNotWitnessed for sessions written whose statements did not
// reach the witness (WithSigning).
func (ds *Dataset) Import(ctx context.Context, r io.Reader, f Format, progress func(done, total int)) (_ ImportStats, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Import", "")
	defer func() { call.End(err) }()
	stats, err := ds.importRDF(ctx, r, f, progress)
	if err != nil {
		return stats, fmt.Errorf("import: %w", err)
	}
	return stats, nil
}

func (ds *Dataset) importRDF(ctx context.Context, r io.Reader, f Format, progress func(done, total int)) (ImportStats, error) {
	var stats ImportStats
	var trig bool
	switch f {
	case NQuads:
	case TriG:
		trig = true
	case JSONL:
		return stats, fmt.Errorf("%w: %s is an export format only", session.ErrInvalid, f)
	default:
		return stats, fmt.Errorf("%w: format %q", session.ErrInvalid, f)
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
	if err := ds.unstored(ctx, in); err != nil {
		return stats, err
	}
	stored, provStored, err := ds.checkStored(ctx, in)
	if err != nil {
		return stats, err
	}
	if err := ds.checkTurns(ctx, in, stored); err != nil {
		return stats, err
	}
	if err := ds.checkLinks(ctx, in, stored); err != nil {
		return stats, err
	}
	for _, s := range in.order {
		if s.stored {
			stats.Unchanged++
		}
	}

	t, ok := ds.c.(treeRouted)
	batches, total := planImport(in, provStored, ok && t.RoutesByTree())
	stats.Planned = len(batches)
	var buf bytes.Buffer
	var signErr error // statements not witnessed, of batches stored
	for _, b := range batches {
		if err := ctx.Err(); err != nil {
			return stats, errors.Join(err, signErr)
		}
		if b.staged {
			err = ds.importStaged(ctx, b.runs[0])
		} else {
			buf.Reset()
			buf.Grow(b.size)
			for _, run := range b.runs {
				for _, l := range run {
					buf.WriteString(l)
				}
			}
			err = ds.c.LoadQuads(ctx, buf.Bytes())
		}
		if err != nil {
			return stats, errors.Join(err, signErr)
		}
		stats.Quads += b.quads
		stats.Sessions += len(b.sessions)
		stats.Batches++
		if ds.sign != nil && len(b.sessions) > 0 {
			// The batch is stored: sign its sessions' heads now, so that
			// an import stopped later leaves none it wrote unsigned.
			n, err := ds.signWritten(ctx, b.sessions, nil)
			stats.Signed += n
			signErr = errors.Join(signErr, err)
		}
		if progress != nil {
			progress(stats.Quads, total)
		}
	}
	return stats, errors.Join(ds.shareValues(ctx, in), signErr)
}

// shareValues sets the shared values (app: and user: keys, in
// ontology.ValuesGraph) from the changes of the sessions in imported, as
// Persist does when it stores them: they are derived data, which an export
// does not carry. Each key keeps the change of the latest turn by creation
// time, so an import run again changes nothing. Sessions the store held
// already are included: an import cut after its last batch and before
// this step leaves them stored, and its re-run, which finds them
// unchanged, must still set their values.
func (ds *Dataset) shareValues(ctx context.Context, in *importInput) error {
	// The changes of every session in order of time (a session's start
	// values at its creation, each turn's at its own), not session by
	// session in the input's order: a fork's later change must win over
	// its parent's start value whichever session the input lists first.
	type event struct {
		at      time.Time
		s       *importSession
		created time.Time
		turns   []session.Turn
	}
	var events []event
	for _, s := range in.order {
		if s.hdr == nil {
			continue
		}
		var created time.Time
		if v := s.fields[sfCreated]; v.o != nil {
			created, _ = timeValue(v.o) // checked before
		}
		events = append(events, event{at: created, s: s, created: created})
		for _, t := range s.read {
			if sharesValue(t) {
				events = append(events, event{at: t.Created, s: s, created: created, turns: []session.Turn{t}})
			}
		}
	}
	slices.SortStableFunc(events, func(a, b event) int { return a.at.Compare(b.at) })
	for _, e := range events {
		var u string
		if ds.replicated() {
			// Every replica applies the update: the time is this writer's.
			u = session.SharedValuesUpdateAt(e.s.hdr, e.created, e.turns, ds.now())
		} else {
			u = session.SharedValuesUpdate(e.s.hdr, e.created, e.turns)
		}
		if u != "" {
			if err := ds.c.Update(ctx, u, kg.Idempotent()); err != nil {
				return fmt.Errorf("import: the shared values of session %s: %w", e.s.id, err)
			}
		}
	}
	return nil
}

// importBatch is what one request of an import writes.
type importBatch struct {
	runs     [][]string // runs of N-Quads lines
	quads    int
	size     int
	sessions map[string]bool // the ids of the session graphs it writes
	staged   bool            // one session graph with a line too long for LoadQuads: importStaged
}

// planImport cuts what in holds and the store lacks into batches: the
// session graphs not stored, each whole, then the PROV quads the store
// lacks (provStored: stored, by index), sorted, those of one subject
// together. It returns them with the number of quads they hold. With
// byTree (a store that routes each request by the session tree it names,
// cluster.Sharded), the PROV quads whose subject is a session come before
// the activities': a session with no graph (a deleted fork) is linked
// there to the tree it came from (prov:wasDerivedFrom), so that it lands
// in that tree's replica group, not in the group an activity naming it
// alone would take, where a later batch naming it and its parent would
// find it (refused as spanning two groups).
func planImport(in *importInput, provStored map[int]bool, byTree bool) ([]importBatch, int) {
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
		if needsStaging(g.lines) {
			flush()
			out = append(out, importBatch{runs: [][]string{g.lines}, quads: len(g.lines), size: g.size, sessions: map[string]bool{s.id: true}, staged: true})
			total += len(g.lines)
			continue
		}
		if full(len(g.lines), g.size) {
			flush()
		}
		cur.runs = append(cur.runs, g.lines)
		cur.quads += len(g.lines)
		cur.size += g.size
		if cur.sessions == nil {
			cur.sessions = map[string]bool{}
		}
		cur.sessions[s.id] = true
		total += len(g.lines)
	}
	var prov []string
	for i, q := range in.prov.quads {
		if !provStored[i] {
			prov = append(prov, in.prov.graph.lines[q.li])
		}
	}
	slices.Sort(prov) // a subject's lines, which all start with it, come together
	if byTree {
		// Sessions' own lines first (a deleted fork's prov:wasDerivedFrom
		// its parent), then the activities': an activity naming only a
		// deleted session then finds it in its tree's group, not in the
		// group the activity alone would take.
		var own, rest []string
		for _, l := range prov {
			if strings.HasPrefix(l, "<"+ontology.SessionBase) {
				own = append(own, l)
			} else {
				rest = append(rest, l)
			}
		}
		prov = append(own, rest...)
	}
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
		return nil, &ImportError{Line: 1 + bytes.Count(data[:i], []byte{'\n'}), Rule: RuleSyntax, Err: fmt.Errorf("%w: not UTF-8", session.ErrInvalid)}
	}
	if line, ok := jsonLines(data); ok {
		return nil, &ImportError{Line: line, Rule: RuleSyntax, Err: fmt.Errorf("%w: this is JSONL (a JSON object per line), which is an export format only: import an nquads or trig export", session.ErrInvalid)}
	}
	in := newImportInput()
	byIRI := make(map[rdf.Term]*importGraph)
	seen := make(map[string]struct{})
	var tw terms
	syntax := func(line int, err error) error {
		return &ImportError{Line: line, Rule: RuleSyntax, Err: fmt.Errorf("%w: %w", session.ErrInvalid, err)}
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
				return &ImportError{Line: q.Line, Rule: RuleGraph, Err: fmt.Errorf("%w: %v", session.ErrInvalid, err)}
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
			// A term Trails does not write (a time outside years 0000
			// to 9999, say): name the field it stands in.
			return syntax(q.Line, fmt.Errorf("<%s>: %w", q.P, err))
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
		return nil, &ImportError{Line: se.Line, Rule: RuleSyntax, Err: fmt.Errorf("%w: %s", session.ErrInvalid, se.Msg)}
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
func (ds *Dataset) unstored(ctx context.Context, in *importInput) error {
	var rows [][]rdf.Term
	for _, s := range in.order {
		rows = append(rows, []rdf.Term{s.graph.iri})
	}
	if len(rows) == 0 {
		return nil
	}
	stored := make(map[string]bool)
	err := ds.selectTable(ctx, "export-stored-graphs", qStoredGraphs, "graphs", kg.Table{Vars: []string{"g"}, Rows: rows}, nil, func(r kg.Solution) error {
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
		same, err := ds.sameGraph(ctx, s.graph)
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
			session.ErrConflict, n, strings.Join(conflicts, ", "), more)}
	}
	return nil
}

// sameGraph reports whether the store holds exactly the triples of g,
// literals compared by value.
func (ds *Dataset) sameGraph(ctx context.Context, g *importGraph) (bool, error) {
	nt, err := ds.c.GetGraph(ctx, g.iri)
	if errors.Is(err, kg.ErrNotFound) {
		return len(g.lines) == 0, nil
	}
	if err != nil {
		return false, err
	}
	stored, err := tripleKeys(nt)
	if err != nil {
		return false, fmt.Errorf("%w: graph <%s>: %v", session.ErrCorrupt, g.iri, err)
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

// sharesValue reports whether turn t changes an app: or user: key.
func sharesValue(t session.Turn) bool {
	if t.Structure == nil {
		return false
	}
	for k := range t.Structure.Delta {
		if strings.HasPrefix(k, "app:") || strings.HasPrefix(k, "user:") {
			return true
		}
	}
	return false
}
