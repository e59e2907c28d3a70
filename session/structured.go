package session

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// How structured turns are stored (trails.ttl has the vocabulary): the
// turn-level fields on the turn; model, finish reason and usage on a
// trails:ModelInvocation at the turn's IRI + "/invocation" that the turn
// prov:wasGeneratedBy; part k at the turn's IRI + "/part/" + k; a tool
// call part's trails:ToolCall activity at the part's IRI + "/call". All of
// it in the graph of the session that writes the turn, next to the turn,
// so that Rewind and Detach, which move or copy a turn's graph triples,
// find it there, and Load finds it through that graph's index
// (structure.rq) without probing every turn. The session is marked
// trails:structuredTurns, so that Load reads these fields (one more
// request for the whole chain, sent while the turns are read) only for a
// chain that holds some.

// The queries of structured fields, read once.
var (
	qStructure   = query("structure.rq")
	qStructureOf = query("structure-of.rq")
)

// Literal datatypes of structured fields.
var (
	dtJSON   = iri(ontology.RDFJSON)
	dtBase64 = iri(ontology.XSDBase64Binary)
)

func jsonLiteral(b []byte) rdf.Literal { return rdf.NewTypedLiteral(string(b), dtJSON) }

func bytesLiteral(b []byte) rdf.Literal {
	return rdf.NewTypedLiteral(base64.StdEncoding.EncodeToString(b), dtBase64)
}

// partClasses maps each part kind to its class.
var partClasses = map[PartKind]string{
	PartText:       ontology.TextPart,
	PartReasoning:  ontology.ReasoningPart,
	PartToolCall:   ontology.ToolCallPart,
	PartToolResult: ontology.ToolResultPart,
	PartData:       ontology.DataPart,
}

// addStructure adds the structured fields of turn t, stored at ti in the
// graph of session g, to d, and marks g as holding structured turns.
// Nothing for a turn without any. A long value (a tool's result, a file's
// bytes) goes through sg as a long content does: sent ahead, or for a copy
// (Detach) bound from the same resource of the original turn, t.ID.
func addStructure(d *kg.Data, sg *staging, g, ti rdf.IRI, t Turn) {
	if !t.Structured() {
		return
	}
	d.Add(g, g, iri(ontology.StructuredTurns), kg.Bool(true))
	eachStructureTriple(ti, t, func(s, p rdf.IRI, o rdf.Term) {
		if lit, ok := o.(rdf.Literal); ok {
			sg.literal(d, g, s, p, lit, t.ID+strings.TrimPrefix(s.String(), ti.String()))
			return
		}
		d.Add(g, s, p, o)
	})
}

// StructureTriples returns the triples Persist writes for the structured
// fields of turn t stored at IRI turn, as (subject, predicate, object):
// all but the session's trails:structuredTurns mark and the links of
// tool results to their calls. Import compares them with its input, so
// that it stores only what Persist would. None for a plain turn.
func StructureTriples(turn string, t Turn) [][3]rdf.Term {
	if !t.Structured() {
		return nil
	}
	var out [][3]rdf.Term
	eachStructureTriple(kg.MustIRI(turn), t, func(s, p rdf.IRI, o rdf.Term) { out = append(out, [3]rdf.Term{s, p, o}) })
	return out
}

// eachStructureTriple calls add with each triple of the structured fields
// of turn t (structured) stored at ti.
func eachStructureTriple(ti rdf.IRI, t Turn, add func(s, p rdf.IRI, o rdf.Term)) {
	x := t.Structure
	str := func(s rdf.IRI, p, v string) {
		if v != "" {
			add(s, iri(p), kg.String(v))
		}
	}
	str(ti, ontology.Author, x.Author)
	str(ti, ontology.InvocationID, x.InvocationID)
	str(ti, ontology.EventID, x.EventID)
	if len(x.Metadata) > 0 {
		add(ti, iri(ontology.Metadata), jsonLiteral([]byte(metadataJSON(x.Metadata))))
	}
	if r := x.Raw; r != nil {
		add(ti, iri(ontology.RawFormat), kg.String(r.Format))
		add(ti, iri(ontology.Raw), bytesLiteral(r.Data))
	}
	if x.hasInvocation() {
		inv := kg.MustIRI(ontology.InvocationIRI(ti.String()))
		add(ti, iri(ontology.ProvWasGeneratedBy), inv)
		add(inv, iri(ontology.RDFType), iri(ontology.ModelInvocation))
		add(inv, iri(ontology.RDFType), iri(ontology.ProvActivity))
		str(inv, ontology.Model, x.Model)
		str(inv, ontology.FinishReason, x.FinishReason)
		if u := x.Usage; u != nil {
			for _, c := range []struct {
				p string
				n int64
			}{{ontology.InputTokens, u.Input}, {ontology.OutputTokens, u.Output}, {ontology.CachedInputTokens, u.Cached},
				{ontology.ReasoningTokens, u.Reasoning}, {ontology.TotalTokens, u.Total}} {
				add(inv, iri(c.p), kg.Int(int(c.n)))
			}
		}
	}
	eachValueTriple(ti, x.Delta, add)
	for k, p := range x.Parts {
		pi := kg.MustIRI(ontology.PartIRI(ti.String(), k))
		add(pi, iri(ontology.RDFType), iri(ontology.Part))
		add(pi, iri(ontology.RDFType), iri(ontology.ProvEntity))
		add(pi, iri(ontology.RDFType), iri(partClasses[p.Kind]))
		add(pi, iri(ontology.PartOf), ti)
		add(pi, iri(ontology.PartIndex), kg.Int(k))
		switch p.Kind {
		case PartText, PartReasoning:
			add(pi, iri(ontology.Text), kg.String(p.Text))
		case PartToolCall, PartToolResult:
			str(pi, ontology.ToolCallID, p.CallID)
			str(pi, ontology.ToolName, p.ToolName)
			if p.Kind == PartToolResult {
				add(pi, iri(ontology.Result), jsonLiteral(p.Result))
				if p.IsError {
					add(pi, iri(ontology.IsError), kg.Bool(true))
				}
				break
			}
			add(pi, iri(ontology.Arguments), jsonLiteral(p.Arguments))
			call := kg.MustIRI(ontology.ToolCallIRI(ti.String(), k))
			add(call, iri(ontology.RDFType), iri(ontology.ToolCall))
			add(call, iri(ontology.RDFType), iri(ontology.ProvActivity))
			add(call, iri(ontology.ProvUsed), pi)
			str(call, ontology.ToolCallID, p.CallID)
			str(call, ontology.ToolName, p.ToolName)
		case PartData:
			str(pi, ontology.MIMEType, p.MIMEType)
			if p.URI != "" {
				add(pi, iri(ontology.DataIRI), kg.MustIRI(p.URI))
			} else {
				add(pi, iri(ontology.Data), bytesLiteral(p.Data))
			}
		}
	}
}

// linkResults adds to d, for each turn of turns from index lo on that holds
// a tool result, that the turn prov:wasGeneratedBy the trails:ToolCall it
// answers: the latest tool call part before it (or earlier in the same
// turn) with the same call id, wherever in the effective history turns
// that is. A result whose call id is empty or not found gets no link.
// Each turn's ID must be its IRI (Persist stamps it first).
func linkResults(d *kg.Data, g rdf.IRI, turns []Turn, lo int) {
	for i := lo; i < len(turns); i++ {
		t := turns[i]
		if !t.Structured() {
			continue
		}
		for k, p := range t.Structure.Parts {
			if p.Kind != PartToolResult || p.CallID == "" {
				continue
			}
			if call := findCall(turns[:i+1], k, p.CallID); call != "" {
				d.Add(g, kg.MustIRI(t.ID), iri(ontology.ProvWasGeneratedBy), kg.MustIRI(call))
			}
		}
	}
}

// callsFound reports whether every tool result of turns[lo:] with a call
// id answers a call findCall finds in turns: false when its call lies
// outside turns (before a tail), where linkResults cannot link it.
func callsFound(turns []Turn, lo int) bool {
	for i := lo; i < len(turns); i++ {
		t := turns[i]
		if !t.Structured() {
			continue
		}
		for k, p := range t.Structure.Parts {
			if p.Kind == PartToolResult && p.CallID != "" && findCall(turns[:i+1], k, p.CallID) == "" {
				return false
			}
		}
	}
	return true
}

// findCall returns the IRI of the trails:ToolCall with call id id in
// turns, searched from the last turn's part before part k backwards; "" if
// none.
func findCall(turns []Turn, k int, id string) string {
	for i := len(turns) - 1; i >= 0; i-- {
		var parts []Part
		if turns[i].Structure != nil {
			parts = turns[i].Structure.Parts
		}
		if i == len(turns)-1 {
			parts = parts[:k]
		}
		for j := len(parts) - 1; j >= 0; j-- {
			if p := parts[j]; p.Kind == PartToolCall && p.CallID == id && turns[i].ID != "" {
				return ontology.ToolCallIRI(turns[i].ID, j)
			}
		}
	}
	return ""
}

// readStructure reads the structured fields of turns (their IDs set), the
// turns of spans, in one query, and sets them. For a tail (tail set) of at
// most maxTailRows turns it names the turns (structure-of.rq), so that the
// query costs the tail; otherwise it reads what the graphs of the spans'
// sessions hold (structure.rq), which costs the structure stored there.
func (st *Store) readStructure(ctx context.Context, spans []span, turns []Turn, tail bool) error {
	if len(spans) == 0 || len(turns) == 0 {
		return nil
	}
	if tail && len(turns) <= maxTailRows {
		return ReadStructures(ctx, st.c, turns)
	}
	q, err := structureQuery(spans)
	if err != nil {
		return err
	}
	return readStructureQuery(ctx, st.c, q, turns, spans)
}

// stillStored checks the rows of structure.rq that say which sessions of
// spans were stored when it ran (?present, ?gen): each, in the generation
// (rewind count) the chain read. Else the session was deleted or rewound
// between the requests of a load: ErrCorrupt, which makes Load read the
// chain again (loadWindow) rather than return turns without structure.
func stillStored(rows func(func(kg.Solution)), spans []span) error {
	gen := map[string]int{}
	rows(func(row kg.Solution) {
		if _, ok := row["present"]; ok {
			g, _ := row.Int("gen") // absent: 0
			gen[row.String("s")] = g
		}
	})
	for _, sp := range spans {
		g, ok := gen[sp.l.iri]
		if !ok || g != sp.l.rewinds {
			return fmt.Errorf("%w: session %s changed while it was read", ErrCorrupt, ontology.SessionID(sp.l.iri))
		}
	}
	return nil
}

// structureQuery returns structure.rq bound to spans.
func structureQuery(spans []span) (string, error) {
	rows := make([][]rdf.Term, len(spans))
	for k, sp := range spans {
		rows[k] = []rdf.Term{kg.MustIRI(sp.l.iri), kg.Int(sp.lo), kg.Int(sp.hi)}
	}
	return kg.BindTables(qStructure, nil, map[string]kg.Table{"ranges": {Vars: []string{"s", "lo", "hi"}, Rows: rows}})
}

// structureAhead is a structure query (structure.rq) that runs while Load
// reads the turns, its rows kept until they are known: the two requests
// are independent, so a Load of a structured chain waits for the longer
// of them, not for both.
type structureAhead struct {
	spans  []span
	rows   []kg.Solution
	done   chan error // the query's outcome, sent once
	ended  bool       // done has been received
	cancel context.CancelFunc
}

// readStructureAhead starts the structure query of spans. The caller must
// call stop once it no longer needs the rows (after apply too).
func (st *Store) readStructureAhead(ctx context.Context, spans []span) *structureAhead {
	ctx, cancel := context.WithCancel(ctx)
	a := &structureAhead{spans: spans, done: make(chan error, 1), cancel: cancel}
	q, err := structureQuery(spans)
	if err != nil {
		a.done <- err
		return a
	}
	go func() {
		a.done <- readRows(ctx, st.c, q, func() { a.rows = a.rows[:0] }, func(row kg.Solution) error {
			a.rows = append(a.rows, row)
			return nil
		})
	}()
	return a
}

// apply waits for the query and sets the fields it read on turns (their
// IDs set).
func (a *structureAhead) apply(turns []Turn) error {
	err := <-a.done
	a.ended = true
	if err != nil {
		return err
	}
	byID := make(map[string]int, len(turns))
	for i, t := range turns {
		byID[t.ID] = i
	}
	if err := stillStored(func(f func(kg.Solution)) {
		for _, r := range a.rows {
			f(r)
		}
	}, a.spans); err != nil {
		return err
	}
	sr := structureRows{turns: turns, byID: byID}
	sr.start()
	for _, row := range a.rows {
		if err := sr.add(row); err != nil {
			return err
		}
	}
	return sr.done()
}

// stop cancels the query if it still runs and waits for it to end.
func (a *structureAhead) stop() {
	a.cancel()
	if !a.ended {
		<-a.done
		a.ended = true
	}
}

// spansFrom returns spans cut to the indices at or above from (the first
// index a tail holds), leaving out the spans wholly below it, so that a
// tail reads the structure of its own turns only.
func spansFrom(spans []span, from int) []span {
	if from <= 0 {
		return spans
	}
	out := make([]span, 0, len(spans))
	for _, sp := range spans {
		sp.lo = max(sp.lo, from)
		if sp.hi >= 0 && sp.hi <= sp.lo {
			continue
		}
		out = append(out, sp)
	}
	return out
}

// ReadStructures sets the structured fields (Turn.Structure) of turns,
// each named by its ID (its IRI in the store), as stored, in one query,
// whatever their principal: it takes the client, as the operators' Check
// (package admin) does, not a Store. A turn stored without structured
// fields gets none. It returns ErrCorrupt for a structured field it
// cannot read, or a store error wrapping the kg error.
func ReadStructures(ctx context.Context, c Querier, turns []Turn) (err error) {
	ctx, call := telemetry.Start(ctx, "session.ReadStructures", "")
	defer func() { call.End(err) }()
	if len(turns) == 0 {
		return nil
	}
	rows := make([][]rdf.Term, len(turns))
	for i, t := range turns {
		rows[i] = []rdf.Term{kg.MustIRI(t.ID)}
	}
	q, err := kg.BindTables(qStructureOf, nil, map[string]kg.Table{"turns": {Vars: []string{"t"}, Rows: rows}})
	if err != nil {
		return err
	}
	return readStructureQuery(ctx, c, q, turns, nil)
}

// readStructureQuery runs q, a structure query (structure.rq), and sets
// the fields it reads on turns, found by ID.
func readStructureQuery(ctx context.Context, c Querier, q string, turns []Turn, spans []span) error {
	byID := make(map[string]int, len(turns))
	for i, t := range turns {
		byID[t.ID] = i
	}
	sr := structureRows{turns: turns, byID: byID}
	var present []kg.Solution
	start := func() { sr.start(); present = present[:0] }
	add := func(row kg.Solution) error {
		if _, ok := row["present"]; ok {
			present = append(present, row)
			return nil
		}
		return sr.add(row)
	}
	if err := readRows(ctx, c, q, start, add); err != nil {
		return err
	}
	if err := stillStored(func(f func(kg.Solution)) {
		for _, r := range present {
			f(r)
		}
	}, spans); err != nil {
		return err
	}
	return sr.done()
}

// anyStructured reports whether a session of chain holds structured turns.
func anyStructured(chain []*link) bool {
	return slices.ContainsFunc(chain, func(l *link) bool { return l.structured })
}

// ParseStructure reads the structured fields of the turn stored at IRI
// turn from triples about it, its model invocation and its parts (other
// triples are ignored), as Load does. It returns ErrCorrupt for a value
// Load could not read.
func ParseStructure(turn string, triples [][3]rdf.Term) (*Structure, error) {
	turns := []Turn{{ID: turn}}
	sr := structureRows{turns: turns, byID: map[string]int{turn: 0}}
	inv := ontology.InvocationIRI(turn)
	for _, tr := range triples {
		row := kg.Solution{"t": kg.MustIRI(turn), "p": tr[1], "o": tr[2]}
		switch sub, p := tr[0].String(), tr[1].String(); {
		case sub == turn:
		case sub == inv:
			row["inv"] = tr[0]
		case strings.HasPrefix(sub, turn+ontology.ValuePath):
			col, ok := map[string]string{ontology.Key: "key", ontology.Value: "value", ontology.Removed: "removed"}[p]
			if !ok {
				continue
			}
			row = kg.Solution{"t": row["t"], "c": tr[0], col: tr[2]}
		default:
			rest, ok := strings.CutPrefix(sub, turn+ontology.PartPath)
			k, err := strconv.Atoi(rest)
			if !ok || err != nil || strconv.Itoa(k) != rest {
				continue // a tool call, or not about this turn
			}
			row["x"], row["k"] = tr[0], kg.Int(k)
		}
		if err := sr.add(row); err != nil {
			return nil, err
		}
	}
	if err := sr.done(); err != nil {
		return nil, err
	}
	return turns[0].Structure, nil
}

// count returns the field of u that predicate p (a token count) stores.
func (u *Usage) count(p string) *int64 {
	switch p {
	case ontology.InputTokens:
		return &u.Input
	case ontology.OutputTokens:
		return &u.Output
	case ontology.CachedInputTokens:
		return &u.Cached
	case ontology.ReasoningTokens:
		return &u.Reasoning
	}
	return &u.Total
}
