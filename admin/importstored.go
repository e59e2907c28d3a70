package admin

// This file holds the rules of Import that need the store: sessions
// stored with other content, parents, depth, branch labels, turns of
// archives and PROV records, each read in chunks of the input's sessions.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/rdfio"
	"github.com/trails-kg/trails/session"
)

// storedSession is what the store holds of a session an import names.
type storedSession struct {
	exists  bool
	rewinds int
	parent  string
	at      int
	own     int    // -1: unknown
	kind    string // trails:kind as stored ("" for a legacy session)
}

// checkStored applies the rules that need the store: sessions stored with
// other content (unstored, before), parents, depth,
// branch labels, turns of archives, and PROV records. It returns the
// store's sessions it read, for the chain check, and marks the PROV quads
// and activities stored.
func (ds *Dataset) checkStored(ctx context.Context, in *importInput) (map[string]storedSession, map[int]bool, error) {
	f := &in.faults
	// The sessions the input names but does not hold, and its own.
	names := make(map[string]bool)
	for _, s := range in.order {
		names[s.id] = true
		if s.hdr.ParentID != "" {
			names[s.hdr.ParentID] = true
		}
		for _, t := range s.turns {
			names[t.res.id] = true
		}
	}
	for _, r := range in.prov.refs {
		names[r.id] = true
	}
	for _, r := range in.prov.deletions {
		names[r.id] = true
	}
	stored, err := ds.importSessions(ctx, names)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range in.order {
		for iri, t := range s.turns {
			if t.res.id == s.id || in.sessions[t.res.id] != nil {
				continue
			}
			if o := stored[t.res.id]; o.exists && t.res.gen >= o.rewinds {
				f.addf(t.line, RuleResource, session.ErrInvalid, "turn <%s> in archive %s: session %s may still write it (it was rewound %d times)", iri, s.id, t.res.id, o.rewinds)
			}
		}
	}

	// The stored ancestors of the forks whose parent the input lacks.
	var starts []string
	for _, s := range in.order {
		p := s.hdr.ParentID
		if p == "" || in.sessions[p] != nil {
			continue
		}
		if !stored[p].exists {
			f.add(s.fields[sfParent].line, RuleFork, fmt.Errorf("%w: %w", session.ErrInvalid, &session.AncestorError{Session: s.id, Missing: p}))
			continue
		}
		starts = append(starts, p)
	}
	ancestors, err := ds.importAncestors(ctx, starts)
	if err != nil {
		return nil, nil, err
	}
	for id, a := range ancestors {
		if _, ok := stored[id]; !ok {
			stored[id] = a
		}
	}
	in.checkDepth(stored)
	in.checkForkable(stored)

	if err := ds.checkTaken(ctx, in); err != nil {
		return nil, nil, err
	}
	if err := ds.checkArchived(ctx, in); err != nil {
		return nil, nil, err
	}
	provStored, err := ds.checkProv(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range in.prov.deletions {
		if stored[d.id].exists && !provStored[d.quad] {
			f.addf(d.line, RuleProv, session.ErrConflict, "a trails:Deletion of session %s, which is stored", d.id)
		}
	}
	// A PROV record the store lacks may name a session the input does not
	// hold only if the store does not hold it either (a deleted session, or
	// one of another tree that a tree's export names): it describes
	// nothing stored.
	for _, r := range in.prov.refs {
		if in.sessions[r.id] == nil && stored[r.id].exists && !provStored[r.quad] {
			f.addf(r.line, RuleProv, session.ErrInvalid, "a PROV record about session %s, which is stored and not in the input", r.id)
		}
	}
	return stored, provStored, in.faults.err()
}

// checkForkable refuses a fork whose parent, in the input or in the
// store, is a worker (session.KindWorker): Persist never writes one
// (session.ErrNotForkable).
func (in *importInput) checkForkable(stored map[string]storedSession) {
	for _, s := range in.order {
		p := s.hdr.ParentID
		if p == "" {
			continue
		}
		kind := stored[p].kind
		if ps := in.sessions[p]; ps != nil {
			kind = string(ps.hdr.Kind)
		}
		if session.Kind(kind) == session.KindWorker {
			in.faults.add(s.fields[sfParent].line, RuleFork, fmt.Errorf("%w: %w: session %s is a fork of %s, a worker, and a worker is always a leaf", session.ErrInvalid, session.ErrNotForkable, s.id, p))
		}
	}
}

// checkDepth checks each fork's chain of parents through the input and
// the store: no cycle, at most MaxForkDepth ancestors, and a fork point
// within a stored parent's history.
func (in *importInput) checkDepth(stored map[string]storedSession) {
	parentOf := func(id string) (string, bool) {
		if s := in.sessions[id]; s != nil {
			return s.hdr.ParentID, true
		}
		ss, ok := stored[id]
		return ss.parent, ok && ss.exists
	}
	for _, s := range in.order {
		p := s.hdr.ParentID
		if p == "" {
			continue
		}
		line := s.fields[sfParent].line
		if ps, ok := stored[p]; in.sessions[p] == nil && ok && ps.exists && ps.own >= 0 && s.hdr.ForkedAt > ps.at+ps.own {
			in.faults.addf(s.fields[sfForkedAt].line, RuleFork, session.ErrInvalid, "session %s is forked at %d, beyond the %d turns of its parent %s", s.id, s.hdr.ForkedAt, ps.at+ps.own, p)
		}
		seen := map[string]bool{s.id: true}
		depth := 0
		for cur := p; cur != ""; {
			if seen[cur] {
				in.faults.add(line, RuleFork, fmt.Errorf("%w: %w: the parent links of %s lead back to %s", session.ErrInvalid, session.ErrForkCycle, s.id, cur))
				break
			}
			seen[cur] = true
			depth++
			if depth > session.MaxForkDepth {
				in.faults.add(line, RuleFork, fmt.Errorf("%w: %w: session %s has more than %d ancestors", session.ErrInvalid, session.ErrForkDepth, s.id, session.MaxForkDepth))
				break
			}
			next, ok := parentOf(cur)
			if !ok {
				break // a missing ancestor: the store's business (orphans)
			}
			cur = next
		}
	}
}

// sessionRows returns a VALUES table of the session IRIs of ids.
func sessionRows(ids map[string]bool) kg.Table {
	t := kg.Table{Vars: []string{"s"}}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		t.Rows = append(t.Rows, []rdf.Term{sessionIRI(id)})
	}
	return t
}

// importChunk is how many rows of a VALUES table one query of Import's
// checks carries.
const importChunk = 2000

// chunks calls do with tables of at most importChunk rows of t.
func chunks(t kg.Table, do func(kg.Table) error) error {
	for len(t.Rows) > 0 {
		n := min(len(t.Rows), importChunk)
		if err := do(kg.Table{Vars: t.Vars, Rows: t.Rows[:n]}); err != nil {
			return err
		}
		t.Rows = t.Rows[n:]
	}
	return nil
}

// selectTable runs query name with table (bound as $table) and params,
// in chunks, handing each row to row.
func (ds *Dataset) selectTable(ctx context.Context, name, q, table string, t kg.Table, params kg.Params, row func(kg.Solution) error) error {
	return chunks(t, func(t kg.Table) error {
		bound, err := kg.BindTables(q, params, map[string]kg.Table{table: t})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		res, err := ds.c.Select(ctx, bound)
		if err != nil {
			return err
		}
		for _, r := range res.Solutions {
			if err := row(r); err != nil {
				return fmt.Errorf("%w: %s: %v", session.ErrCorrupt, name, err)
			}
		}
		return nil
	})
}

// The queries of Import's checks, read once.
var (
	qImportSessions   = query("import-sessions.rq")
	qImportAncestors  = query("import-ancestors.rq")
	qImportBranches   = query("import-branches.rq")
	qImportTurns      = query("import-turns.rq")
	qImportDigests    = query("import-digests.rq")
	qImportActivities = query("import-activities.rq")
	qImportProv       = query("import-prov.rq")
)

// storedRow reads a row of import-sessions.rq or import-ancestors.rq into
// ss.
func storedRow(ss *storedSession, r kg.Solution) error {
	if r.String("parent") != "" {
		ss.parent = ontology.SessionID(r.String("parent"))
	}
	var err error
	if _, ok := r["at"]; ok {
		if ss.at, err = r.Int("at"); err != nil {
			return err
		}
	}
	ss.own = -1
	if _, ok := r["own"]; ok {
		if ss.own, err = r.Int("own"); err != nil {
			return err
		}
	}
	return nil
}

// importSessions returns what the store holds of the sessions ids.
func (ds *Dataset) importSessions(ctx context.Context, ids map[string]bool) (map[string]storedSession, error) {
	out := make(map[string]storedSession, len(ids))
	err := ds.selectTable(ctx, "import-sessions", qImportSessions, "sessions", sessionRows(ids), nil, func(r kg.Solution) error {
		id := ontology.SessionID(r.String("s"))
		ss := out[id]
		ss.exists = ss.exists || r.String("exists") == "true"
		if _, ok := r["rewinds"]; ok {
			n, err := r.Int("rewinds")
			if err != nil {
				return err
			}
			ss.rewinds = n
		}
		if err := storedRow(&ss, r); err != nil {
			return err
		}
		if k := r.String("kind"); k != "" {
			ss.kind = k
		}
		out[id] = ss
		return nil
	})
	return out, err
}

// importAncestors returns the stored sessions the parent links of starts
// reach, starts included.
func (ds *Dataset) importAncestors(ctx context.Context, starts []string) (map[string]storedSession, error) {
	out := make(map[string]storedSession)
	if len(starts) == 0 {
		return out, nil
	}
	t := kg.Table{Vars: []string{"start"}}
	for _, id := range starts {
		t.Rows = append(t.Rows, []rdf.Term{sessionIRI(id)})
	}
	err := ds.selectTable(ctx, "import-ancestors", qImportAncestors, "starts", t, nil, func(r kg.Solution) error {
		ss := storedSession{exists: true}
		if err := storedRow(&ss, r); err != nil {
			return err
		}
		out[ontology.SessionID(r.String("s"))] = ss
		return nil
	})
	return out, err
}

// checkTaken refuses a session new to the store whose fork label another
// stored session has.
func (ds *Dataset) checkTaken(ctx context.Context, in *importInput) error {
	t := kg.Table{Vars: []string{"b"}}
	by := make(map[string]*importSession)
	for _, s := range in.order {
		if b := s.hdr.Branch; b != session.MainBranch && !s.stored {
			by[b] = s
			t.Rows = append(t.Rows, []rdf.Term{kg.String(b)})
		}
	}
	return ds.selectTable(ctx, "import-branches", qImportBranches, "branches", t, nil, func(r kg.Solution) error {
		s := by[r.String("b")]
		if other := ontology.SessionID(r.String("s")); s != nil && other != s.id {
			in.faults.addf(s.fields[sfBranch].line, RuleStored, session.ErrConflict, "session %s: branch %q is taken by the stored session %s", s.id, s.hdr.Branch, other)
		}
		return nil
	})
}

// checkArchived refuses a turn of another session's IRI space in an
// archive new to the store when another graph of the store describes it.
func (ds *Dataset) checkArchived(ctx context.Context, in *importInput) error {
	t := kg.Table{Vars: []string{"t"}}
	for iri, s := range in.foreign {
		if !s.stored {
			t.Rows = append(t.Rows, []rdf.Term{kg.MustIRI(iri)})
		}
	}
	return ds.selectTable(ctx, "import-turns", qImportTurns, "turns", t, nil, func(r kg.Solution) error {
		iri := r.String("t")
		if s := in.foreign[iri]; s != nil && r.String("g") != s.iri {
			in.faults.addf(s.turns[iri].line, RuleResource, session.ErrConflict, "turn <%s> in archive %s is stored in graph <%s>", iri, s.id, r.String("g"))
		}
		return nil
	})
}

// checkProv marks the input's activities the store describes already,
// refuses a quad about one of them that the store lacks (an import adds
// new activities only), and returns the PROV quads stored already, by
// index.
func (ds *Dataset) checkProv(ctx context.Context, in *importInput) (map[int]bool, error) {
	prov := kg.Params{"prov": kg.MustIRI(ontology.ProvGraph)}
	acts := kg.Table{Vars: []string{"a"}}
	for _, iri := range slices.Sorted(maps.Keys(in.prov.activities)) {
		acts.Rows = append(acts.Rows, []rdf.Term{in.prov.activities[iri].iri})
	}
	err := ds.selectTable(ctx, "import-activities", qImportActivities, "activities", acts, prov, func(r kg.Solution) error {
		if a := in.prov.activities[r.String("a")]; a != nil {
			a.stored = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	quads := kg.Table{Vars: []string{"n", "s", "p", "o"}}
	for i, q := range in.prov.quads {
		quads.Rows = append(quads.Rows, []rdf.Term{kg.Int(i), q.t.s, q.t.p, q.t.o})
	}
	stored := make(map[int]bool)
	err = ds.selectTable(ctx, "import-prov", qImportProv, "quads", quads, prov, func(r kg.Solution) error {
		n, err := r.Int("n")
		if err != nil {
			return err
		}
		stored[n] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, a := range in.prov.activities {
		if !a.stored {
			continue
		}
		for _, n := range a.quads {
			if !stored[n] {
				q := in.prov.quads[n]
				in.faults.addf(q.line, RuleProv, session.ErrConflict, "activity <%s> is stored, without this quad: an import adds new activities only", a.iri)
				break
			}
		}
	}
	return stored, nil
}

// checkTurns reads the content of every turn of the input and applies
// Persist's rules for turns (session.CheckTurn), checks each session's
// trails:headDigest, and verifies the hash chains: a turn with a
// trails:digest must carry the one its fields and its predecessor give
// (predecessors stored in the store are fetched in one query); a turn
// without one is legacy data, accepted as it is.
func (ds *Dataset) checkTurns(ctx context.Context, in *importInput, stored map[string]storedSession) error {
	f := &in.faults
	sessions := make(map[string]chainSession, len(in.order)+len(stored))
	for id, ss := range stored {
		if ss.exists {
			sessions[id] = chainSession{ParentID: ss.parent, ForkedAt: ss.at}
		}
	}
	for _, s := range in.order {
		sessions[s.id] = chainSession{ParentID: s.hdr.ParentID, ForkedAt: s.hdr.ForkedAt}
	}
	chain := newChainCheck(sessions)
	for _, s := range in.order {
		turns := make([]session.Turn, 0, len(s.ordered))
		for _, it := range s.ordered {
			content, err := lineContent(s.graph.lines[it.content])
			if err != nil {
				return fmt.Errorf("%w: line %d: %v", session.ErrInvalid, it.lines[tfContent], err) // read once already: cannot happen
			}
			t := session.Turn{Index: it.index, Role: it.role, Content: content, Branch: it.branch, Created: it.created, ID: it.iri}
			if t.Branch == "" && s.legacy {
				t.Branch = s.hdr.Branch // as Load reads it
			}
			if len(it.structure) > 0 {
				x, line, err := importStructure(it)
				if err != nil {
					f.add(line, RuleTurn, fmt.Errorf("session %s: %w", s.id, err))
				}
				t.Structure = x
				if t.Structured() && !structuredMark(s) {
					f.addf(line, RuleTurn, session.ErrInvalid, "session %s holds structured turn <%s> but no trails:structuredTurns true, without which Load does not read it", s.id, it.iri)
				}
			}
			if err := session.CheckTurn(t); err != nil {
				f.add(it.line, RuleTurn, fmt.Errorf("session %s: %w", s.id, err))
			}
			// An archive holds the turns it took over with their labels;
			// a detached root the copies of its former prefix.
			if !s.archive && it.lines[tfBranch] != 0 {
				if err := s.hdr.CheckTurnBranch(t); err != nil {
					f.add(it.lines[tfBranch], RuleTurn, fmt.Errorf("session %s: %w", s.id, err))
				}
			}
			turns = append(turns, t)
			chain.turn(s.id, t, it.digest)
		}
		s.read = turns
		if v := s.fields[sfHeadDigest]; v.o != nil {
			if head, _ := stringValue(v.o); head != session.HeadDigest(turns) {
				f.addf(v.line, RuleTurn, session.ErrInvalid, "session %s: trails:headDigest %s, and its turns give %s", s.id, head, session.HeadDigest(turns))
			}
		}
	}
	if err := f.err(); err != nil {
		return err
	}
	if miss := chain.missing(); len(miss) > 0 {
		t := kg.Table{Vars: []string{"s", "i"}}
		for _, p := range miss {
			t.Rows = append(t.Rows, []rdf.Term{sessionIRI(p.session), kg.Int(p.index)})
		}
		err := ds.selectTable(ctx, "import-digests", qImportDigests, "positions", t, nil, func(r kg.Solution) error {
			i, err := r.Int("i")
			if err != nil {
				return err
			}
			chain.base(ontology.SessionID(r.String("s")), i, r.String("d"))
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, fl := range chain.finish() {
		if fl.Digest == "" {
			continue // legacy: a turn without a digest
		}
		line := 0
		if s := in.sessions[fl.Session]; s != nil {
			if t := s.turns[fl.Turn]; t != nil {
				line = t.lines[tfDigest]
			}
		}
		f.addf(line, RuleChain, session.ErrInvalid, "%s", fl)
	}
	return f.err()
}

// lineContent returns the value of the literal object of an N-Quads line
// as readImport wrote it.
func lineContent(line string) (string, error) {
	q, err := rdfio.NewDecoder(strings.NewReader(line), rdfio.NQuads).Decode()
	if err != nil {
		return "", err
	}
	l, ok := q.O.(rdf.Literal)
	if !ok {
		return "", errors.New("the content is not a literal")
	}
	return l.String(), nil
}

// importStructure reads the structured fields of turn it from its
// triples (session.ParseStructure) and checks that they are exactly the
// triples Persist writes for them (session.StructureTriples): nothing
// more, nothing less, every literal in the form Persist gives it. On
// error it also returns the line at fault.
func importStructure(it *importTurn) (*session.Structure, int, error) {
	triples := make([][3]rdf.Term, len(it.structure))
	for i, st := range it.structure {
		triples[i] = st.t
	}
	line := it.structure[0].line
	x, err := session.ParseStructure(it.iri, triples)
	if err != nil {
		return nil, line, fmt.Errorf("%w: turn <%s>: %v", session.ErrInvalid, it.iri, err)
	}
	want := map[string]bool{}
	for _, tr := range session.StructureTriples(it.iri, session.Turn{Structure: x}) {
		want[termsKey(tr)] = true
	}
	for _, st := range it.structure {
		k := termsKey(st.t)
		if !want[k] {
			return nil, st.line, fmt.Errorf("%w: turn <%s>: <%s> <%s> %s is not what Persist writes for the turn's structured fields", session.ErrInvalid, it.iri, st.t[0], st.t[1], termsafe.Quote(st.t[2].String()))
		}
		delete(want, k)
	}
	if len(want) > 0 {
		return nil, line, fmt.Errorf("%w: turn <%s>: %d triples of its structured fields are missing", session.ErrInvalid, it.iri, len(want))
	}
	return x, 0, nil
}

// termsKey identifies a triple by its terms, a literal by its lexical
// form, datatype and language.
func termsKey(t [3]rdf.Term) string {
	o := "<" + t[2].String() + ">"
	if l, ok := t[2].(rdf.Literal); ok {
		o = strconv.Quote(l.String()) + "^^" + l.DataType.String() + "@" + l.Lang()
	}
	return t[0].String() + " " + t[1].String() + " " + o
}

// structuredMark reports whether session s says it holds structured
// turns (trails:structuredTurns true).
func structuredMark(s *importSession) bool {
	l, ok := s.fields[sfStructured].o.(rdf.Literal)
	return ok && l.DataType.String() == ontology.XSDBoolean && l.String() == "true"
}
