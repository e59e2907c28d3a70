package admin

// This file holds the rules Import applies to its input before it writes
// anything: the rules Persist and the other writers apply, and nothing
// more. Each quad must be one such a writer could have written: a quad in
// a session's graph is about that session or its own turns and anchors
// (and the agent of its principal); a quad in the PROV graph records a new
// activity about the input's sessions. The sessions must be whole and
// valid (session.Session.CheckHeader, session.CheckTurn), hang in a tree without cycles,
// no deeper than MaxForkDepth, forked within their parent's history, under
// a parent the input or the store holds, and their turns' hash chains
// (session.TurnDigest) must verify where the turns carry digests.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/rdfio"
	"github.com/trails-kg/trails/session"
)

// ImportError is input Import refuses: the line of the first quad that
// breaks one of its rules, the rule, and what is wrong. Err wraps
// ErrInvalid (the input breaks a rule on its own; with ErrForkCycle,
// ErrForkDepth or ErrParentMissing for those rules) or ErrConflict (the
// input contradicts the store), so callers test it with errors.Is.
type ImportError struct {
	Line int    // the line of the input, from 1; 0 when no one line is at fault
	Rule string // the rule broken: one of the Rule constants
	Err  error
}

// The rules of an ImportError, and RuleChain (check.go): a turn's
// trails:digest does not follow from the chain.
const (
	RuleSyntax   = "syntax"   // the input does not parse, or holds a blank node or an invalid term
	RuleGraph    = "graph"    // a quad outside the session graphs and the PROV graph
	RuleResource = "resource" // a quad in a session's graph about something not that session's
	RuleSession  = "session"  // a session's own description is incomplete or invalid
	RuleTurn     = "turn"     // a turn is incomplete or invalid, or the turns do not add up
	RuleFork     = "fork"     // a cycle, a chain too deep, a fork point beyond the parent's history, a missing parent
	RuleProv     = "prov"     // a PROV quad about something else than new activities on the input's sessions
	RuleStored   = "stored"   // a session stored with other content, or a branch label taken
)

func (e *ImportError) Error() string {
	if e.Line <= 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

// Unwrap returns what is wrong.
func (e *ImportError) Unwrap() error { return e.Err }

// faults keeps the fault of an input at its lowest line.
type faults struct{ first *ImportError }

func (f *faults) add(line int, rule string, err error) {
	if f.first == nil || line < f.first.Line {
		f.first = &ImportError{Line: line, Rule: rule, Err: err}
	}
}

func (f *faults) addf(line int, rule string, sentinel error, format string, args ...any) {
	f.add(line, rule, fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...))
}

// err returns the fault kept, or nil.
func (f *faults) err() error {
	if f.first == nil {
		return nil
	}
	return f.first
}

// iriKind classifies the IRIs Import meets.
type iriKind int

const (
	otherIRI    iriKind = iota
	sessionRes          // SessionBase and a canonical UUID
	turnRes             // a session IRI, TurnPath, an index, and maybe RewindSuffix and a generation
	anchorRes           // a session IRI, AnchorPath and a name
	badRes              // anything else under SessionBase
	agentRes            // AgentBase and a principal
	activityRes         // ActivityBase and more
)

// resource is what an IRI says of itself.
type resource struct {
	kind  iriKind
	id    string // the session, for sessionRes, turnRes and anchorRes
	index int    // for turnRes
	gen   int    // for turnRes: the generation (0: none)
}

// classify returns what the IRI s names.
func classify(s string) resource {
	if rest, ok := strings.CutPrefix(s, ontology.SessionBase); ok {
		if len(rest) < 36 || session.CheckID(rest[:36]) != nil {
			return resource{kind: badRes}
		}
		id, rest := rest[:36], rest[36:]
		if rest == "" {
			return resource{kind: sessionRes, id: id}
		}
		if name, ok := strings.CutPrefix(rest, ontology.AnchorPath); ok && name != "" {
			return resource{kind: anchorRes, id: id}
		}
		if n, ok := strings.CutPrefix(rest, ontology.TurnPath); ok {
			n, g, hasGen := strings.Cut(n, ontology.RewindSuffix)
			index, ok := canonicalNat(n)
			gen := 0
			if hasGen {
				var okGen bool
				gen, okGen = canonicalNat(g)
				ok = ok && okGen && gen > 0
			}
			if ok {
				return resource{kind: turnRes, id: id, index: index, gen: gen}
			}
		}
		return resource{kind: badRes}
	}
	if rest, ok := strings.CutPrefix(s, ontology.AgentBase); ok && rest != "" {
		return resource{kind: agentRes}
	}
	if rest, ok := strings.CutPrefix(s, ontology.ActivityBase); ok && rest != "" {
		return resource{kind: activityRes}
	}
	return resource{kind: otherIRI}
}

// canonicalNat parses a natural number written without sign or leading
// zeros.
func canonicalNat(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// The fields of a session Import reads, each with at most one value.
const (
	sfIdentifier = iota
	sfBranch
	sfKind
	sfCreated
	sfPrincipal
	sfParent
	sfForkedAt
	sfOwnTurns
	sfHeadDigest
	sfRewinds
	sfRewoundFrom
	sfState
	sfExpiresAt
	nSessionFields
)

var sessionFields = map[string]int{
	ontology.DCTIdentifier: sfIdentifier,
	ontology.Branch:        sfBranch,
	ontology.Kind:          sfKind,
	ontology.Created:       sfCreated,
	ontology.Principal:     sfPrincipal,
	ontology.ParentSession: sfParent,
	ontology.ForkedAtIndex: sfForkedAt,
	ontology.OwnTurns:      sfOwnTurns,
	ontology.HeadDigest:    sfHeadDigest,
	ontology.Rewinds:       sfRewinds,
	ontology.RewoundFrom:   sfRewoundFrom,
	ontology.State:         sfState,
	ontology.ExpiresAt:     sfExpiresAt,
}

// The fields of a turn Import reads, each with at most one value.
const (
	tfSession = iota
	tfIndex
	tfRole
	tfContent
	tfBranch
	tfCreated
	tfDigest
	nTurnFields
)

var turnFields = map[string]int{
	ontology.TurnSession: tfSession,
	ontology.Index:       tfIndex,
	ontology.Role:        tfRole,
	ontology.Content:     tfContent,
	ontology.Branch:      tfBranch,
	ontology.Created:     tfCreated,
	ontology.Digest:      tfDigest,
}

// value is a field's value and the line that gave it.
type value struct {
	o    rdf.Term
	line int
}

// importSession is what an import's input says of one session.
type importSession struct {
	id     string
	iri    string
	graph  *importGraph
	line   int // the first quad of its graph
	typed  bool
	fields [nSessionFields]value
	turns  map[string]*importTurn // the turns its graph holds, by IRI

	// Set by the checks of the input alone:
	hdr     *session.Session // the session's header: id, principal, parent, fork point, branch, kind
	archive bool             // it has trails:rewoundFrom: it may hold turns of the session it was rewound from
	legacy  bool             // stored before Trails wrote kinds: its turns may lack a branch or a time
	rewinds int              // its trails:rewinds
	ordered []*importTurn    // its turns by index
	stored  bool             // the store holds its graph with the same triples
}

// importTurn is what an import's input says of one turn.
type importTurn struct {
	iri     string
	res     resource // what the IRI says: session, index, generation
	line    int      // its first quad
	typed   bool
	lines   [nTurnFields]int // the line of each field, 0 when absent
	index   int
	role    string
	branch  string
	digest  string
	created time.Time
	content int // the index of its content quad in its graph's lines
}

// importProv is what an import's input holds in the PROV graph.
type importProv struct {
	graph      *importGraph // nil when the input has no PROV quad
	quads      []provQuad
	activities map[string]*provActivity // by IRI
	refs       []sessionRef             // the sessions it names
	deletions  []sessionRef             // the sessions its trails:Deletion activities invalidate
}

type provQuad struct {
	t    triple
	line int
	li   int // its index in the PROV graph's lines
}

type provActivity struct {
	iri      rdf.IRI
	line     int
	quads    []int // indices into quads
	deletion bool
	stored   bool
}

type sessionRef struct {
	id   string
	line int
	quad int // the index of the PROV quad that names it
}

// importInput is an import's input, read: its graphs and what its quads
// say.
type importInput struct {
	graphs   []*importGraph
	sessions map[string]*importSession
	order    []*importSession // in input order
	prov     importProv
	foreign  map[string]*importSession // turns of other sessions' IRI space, by IRI: the archive holding each
	faults   faults
}

func newImportInput() *importInput {
	return &importInput{
		sessions: make(map[string]*importSession),
		foreign:  make(map[string]*importSession),
		prov:     importProv{activities: make(map[string]*provActivity)},
	}
}

// quad takes quad q of graph g, t its serialized terms, li its index in
// the graph's lines, and records what it says; it returns the fault of a
// quad no writer of Trails writes.
func (in *importInput) quad(g *importGraph, q rdfio.Quad, t triple, li int) error {
	switch g.kind {
	case sessionGraph:
		s := in.sessions[g.id]
		if s == nil {
			s = &importSession{id: g.id, iri: g.iri.String(), graph: g, line: q.Line, turns: make(map[string]*importTurn)}
			in.sessions[g.id] = s
			in.order = append(in.order, s)
		}
		return in.sessionQuad(s, q, t, li)
	case provGraph:
		return in.provQuad(q, t, li)
	}
	return &ImportError{Line: q.Line, Rule: RuleGraph, Err: fmt.Errorf("%w: a quad in the ontology graph <%s>: Import writes no vocabulary (trails-admin init loads it)", session.ErrInvalid, ontology.OntologyGraph)}
}

// fault returns an ImportError at line wrapping ErrInvalid.
func fault(line int, rule, format string, args ...any) error {
	return &ImportError{Line: line, Rule: rule, Err: fmt.Errorf("%w: "+format, append([]any{session.ErrInvalid}, args...)...)}
}

// sessionQuad takes a quad of the graph of session s.
func (in *importInput) sessionQuad(s *importSession, q rdfio.Quad, t triple, li int) error {
	subj, p := t.s.String(), t.p.String()
	res := classify(subj)
	if subj != s.iri && (p == ontology.ParentSession || p == ontology.RewoundFrom) {
		return fault(q.Line, RuleResource, "<%s> on <%s>: only a session has a parent", p, subj)
	}
	if res.kind != turnRes && p == ontology.TurnSession {
		return fault(q.Line, RuleResource, "<%s> on <%s>, which is not a turn", p, subj)
	}
	if res.kind != anchorRes && p == ontology.AnchorOf {
		return fault(q.Line, RuleResource, "<%s> on <%s>, which is not an anchor", p, subj)
	}
	switch {
	case subj == s.iri:
		if p == ontology.RDFType {
			if o := t.o.String(); o == ontology.Session {
				s.typed = true
			} else if strings.HasPrefix(o, ontology.NS) {
				return fault(q.Line, RuleSession, "session %s typed <%s>", s.id, o)
			}
			return nil
		}
		if f, ok := sessionFields[p]; ok {
			if v := s.fields[f]; v.o != nil {
				return fault(q.Line, RuleSession, "session %s has two values of <%s> (line %d)", s.id, p, v.line)
			}
			s.fields[f] = value{t.o, q.Line}
		}
		return nil
	case res.kind == turnRes:
		return in.turnQuad(s, res, q, t, li)
	case res.kind == anchorRes && res.id == s.id:
		if p == ontology.AnchorOf && t.o.String() != s.iri {
			return fault(q.Line, RuleResource, "anchor <%s> in the graph of %s names another session, <%s>", subj, s.id, t.o.String())
		}
		if p == ontology.RDFType && strings.HasPrefix(t.o.String(), ontology.NS) && t.o.String() != ontology.Anchor {
			return fault(q.Line, RuleResource, "anchor <%s> typed <%s>", subj, t.o.String())
		}
		return nil
	case res.kind == agentRes:
		return agentQuad(q, t)
	case res.kind == sessionRes:
		return fault(q.Line, RuleResource, "the graph of session %s holds a quad about session %s: a session's graph describes that session alone", s.id, res.id)
	}
	return fault(q.Line, RuleResource, "the graph of session %s holds a quad about <%s>, which is none of its session, turns, anchors or agent", s.id, subj)
}

// turnQuad takes a quad about turn res in the graph of session s.
func (in *importInput) turnQuad(s *importSession, res resource, q rdfio.Quad, t triple, li int) error {
	subj, p := t.s.String(), t.p.String()
	tn := s.turns[subj]
	if tn == nil {
		if res.id != s.id {
			// A turn of another session: only an archive of a rewind holds
			// such (the turns it took over, untouched); see checkForeign.
			if other := in.foreign[subj]; other != nil {
				return fault(q.Line, RuleResource, "turn <%s> is in the graphs of %s and %s", subj, other.id, s.id)
			}
			in.foreign[subj] = s
		}
		tn = &importTurn{iri: subj, res: res, line: q.Line, content: -1}
		s.turns[subj] = tn
	}
	if p == ontology.RDFType {
		if o := t.o.String(); o == ontology.Turn {
			tn.typed = true
		} else if strings.HasPrefix(o, ontology.NS) {
			return fault(q.Line, RuleTurn, "turn <%s> typed <%s>", subj, o)
		}
		return nil
	}
	f, ok := turnFields[p]
	if !ok {
		return nil // merge results, copies' sources, PROV links: the turn's own business
	}
	if l := tn.lines[f]; l != 0 {
		return fault(q.Line, RuleTurn, "turn <%s> has two values of <%s> (line %d)", subj, p, l)
	}
	tn.lines[f] = q.Line
	var err error
	switch f {
	case tfSession:
		if t.o.String() != s.iri {
			return fault(q.Line, RuleResource, "turn <%s> in the graph of %s says it is a turn of <%s>", subj, s.id, t.o.String())
		}
	case tfIndex:
		tn.index, err = intValue(t.o)
	case tfRole:
		tn.role, err = stringValue(t.o)
		if err == nil && len(tn.role) > 1024 {
			err = fmt.Errorf("a role of %d bytes, more than 1024", len(tn.role))
		}
	case tfContent:
		var c string
		if c, err = stringValue(t.o); err == nil && len(c) > session.MaxTurnBytes {
			err = fmt.Errorf("%d bytes of content, more than the %d a turn may hold (session.MaxTurnBytes)", len(c), session.MaxTurnBytes)
		}
		tn.content = li
	case tfBranch:
		tn.branch, err = stringValue(t.o)
	case tfCreated:
		tn.created, err = timeValue(t.o)
	case tfDigest:
		tn.digest, err = stringValue(t.o)
	}
	if err != nil {
		return fault(q.Line, RuleTurn, "turn <%s>: <%s>: %v", subj, p, err)
	}
	return nil
}

// agentQuad checks a quad about an agent: Trails writes its type and its
// identifier, the principal its IRI encodes, and nothing else.
func agentQuad(q rdfio.Quad, t triple) error {
	subj, p := t.s.String(), t.p.String()
	switch p {
	case ontology.RDFType:
		if t.o.String() == ontology.ProvAgent {
			return nil
		}
	case ontology.DCTIdentifier:
		if v, err := stringValue(t.o); err == nil && ontology.AgentIRI(v) == subj {
			return nil
		}
	}
	return fault(q.Line, RuleResource, "agent <%s>: Trails describes an agent by its type prov:Agent and its identifier, the principal its IRI names, only", subj)
}

// provQuad takes a quad of the PROV graph.
func (in *importInput) provQuad(q rdfio.Quad, t triple, li int) error {
	subj, p := t.s.String(), t.p.String()
	res := classify(subj)
	n := len(in.prov.quads)
	in.prov.quads = append(in.prov.quads, provQuad{t: t, line: q.Line, li: li})
	if o, ok := t.o.(rdf.IRI); ok {
		switch r := classify(o.String()); r.kind {
		case sessionRes, turnRes, anchorRes:
			in.prov.refs = append(in.prov.refs, sessionRef{r.id, q.Line, n})
		case badRes:
			return fault(q.Line, RuleProv, "<%s> is not the IRI of a session, turn or anchor", o.String())
		}
	}
	switch res.kind {
	case activityRes:
		a := in.prov.activities[subj]
		if a == nil {
			a = &provActivity{iri: t.s.(rdf.IRI), line: q.Line}
			in.prov.activities[subj] = a
		}
		a.quads = append(a.quads, n)
		if p == ontology.RDFType && t.o.String() == ontology.Deletion {
			a.deletion = true
		}
		return nil
	case agentRes:
		return agentQuad(q, t)
	case sessionRes, turnRes:
		// A Deletion record keeps the deleted session a prov:Entity
		// (prov.AddDeletion); the rest is what generated a session or a
		// turn and what it derives from.
		entity := p == ontology.RDFType && t.o.String() == ontology.ProvEntity
		if !entity && p != ontology.ProvWasGeneratedBy && p != ontology.ProvWasDerivedFrom {
			return fault(q.Line, RuleProv, "<%s> about <%s>: the PROV graph says of a session or a turn only its type prov:Entity, what generated it and what it derives from", p, subj)
		}
		in.prov.refs = append(in.prov.refs, sessionRef{res.id, q.Line, n})
		return nil
	}
	return fault(q.Line, RuleProv, "a PROV quad about <%s>, which is none of an activity, an agent, a session or a turn", subj)
}

func intValue(o rdf.Term) (int, error) {
	l, ok := o.(rdf.Literal)
	if !ok || l.DataType.String() != ontology.XSDInteger {
		return 0, fmt.Errorf("%s is not an xsd:integer", o)
	}
	n, err := strconv.Atoi(l.String())
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", l.String())
	}
	return n, nil
}

func stringValue(o rdf.Term) (string, error) {
	l, ok := o.(rdf.Literal)
	if !ok || l.Lang() != "" || l.DataType.String() != ontology.XSDString {
		return "", fmt.Errorf("%s is not a string", o)
	}
	return l.String(), nil
}

func timeValue(o rdf.Term) (time.Time, error) {
	l, ok := o.(rdf.Literal)
	if !ok || l.DataType.String() != ontology.XSDDateTime {
		return time.Time{}, fmt.Errorf("%s is not an xsd:dateTime", o)
	}
	t, err := time.Parse(time.RFC3339Nano, l.String())
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date and time", l.String())
	}
	return t.UTC(), nil
}

// sessionValue returns the session id of the IRI v.
func sessionValue(o rdf.Term) (string, error) {
	if _, ok := o.(rdf.IRI); ok {
		if r := classify(o.String()); r.kind == sessionRes {
			return r.id, nil
		}
	}
	return "", fmt.Errorf("%s is not a session", o)
}

// check applies the rules that need the input alone, and returns the
// first fault.
func (in *importInput) check() error {
	for _, a := range in.prov.activities {
		if !a.deletion {
			continue
		}
		for _, n := range a.quads {
			q := in.prov.quads[n]
			if q.t.p.String() == ontology.ProvInvalidated {
				if id, err := sessionValue(q.t.o); err == nil {
					in.prov.deletions = append(in.prov.deletions, sessionRef{id, q.line, n})
				}
			}
		}
	}
	for _, s := range in.order {
		in.checkSession(s)
	}
	if err := in.faults.err(); err != nil {
		return err
	}
	for _, s := range in.order {
		in.checkForeign(s)
	}
	in.checkBranches()
	in.checkTree()
	for _, d := range in.prov.deletions {
		if _, ok := in.sessions[d.id]; ok {
			in.faults.addf(d.line, RuleProv, session.ErrInvalid, "a trails:Deletion of session %s, which the input holds", d.id)
		}
	}
	return in.faults.err()
}

// checkSession checks the description of session s and its turns.
func (in *importInput) checkSession(s *importSession) {
	f := &in.faults
	if !s.typed {
		f.addf(s.line, RuleSession, session.ErrInvalid, "the graph of session %s does not say it is a trails:Session", s.id)
		return
	}
	hdr := &session.Session{ID: s.id, ForkedAt: 0}
	fv := func(i int) value { return s.fields[i] }
	bad := func(i int, err error) {
		f.addf(fv(i).line, RuleSession, session.ErrInvalid, "session %s: %v", s.id, err)
	}
	if v := fv(sfIdentifier); v.o != nil {
		if id, err := stringValue(v.o); err != nil || id != s.id {
			bad(sfIdentifier, fmt.Errorf("identifier %s, want %q", v.o, s.id))
		}
	}
	if v := fv(sfPrincipal); v.o != nil {
		rest, ok := strings.CutPrefix(v.o.String(), ontology.AgentBase)
		p, err := url.PathUnescape(rest)
		if _, isIRI := v.o.(rdf.IRI); !isIRI || !ok || err != nil || ontology.AgentIRI(p) != v.o.String() {
			bad(sfPrincipal, fmt.Errorf("principal %s is not an agent IRI", v.o))
		}
		hdr.Principal = p
	}
	if v := fv(sfParent); v.o != nil {
		id, err := sessionValue(v.o)
		if err != nil {
			bad(sfParent, err)
		}
		hdr.ParentID = id
		if fv(sfForkedAt).o == nil {
			bad(sfParent, errors.New("a fork without trails:forkedAtIndex"))
		}
	}
	for _, i := range []int{sfForkedAt, sfOwnTurns, sfRewinds} {
		if v := fv(i); v.o != nil {
			n, err := intValue(v.o)
			if err == nil && n < 0 {
				err = fmt.Errorf("%d is negative", n)
			}
			if err != nil {
				bad(i, err)
			}
			switch i {
			case sfForkedAt:
				hdr.ForkedAt = n
			case sfRewinds:
				s.rewinds = n
			}
		}
	}
	for _, i := range []int{sfBranch, sfKind, sfHeadDigest, sfState} {
		if v := fv(i); v.o != nil {
			str, err := stringValue(v.o)
			if err == nil && i == sfState {
				if _, perr := session.ParseState(str); perr != nil {
					err = fmt.Errorf("state %q is none of %v", str, session.States())
				}
			}
			if err != nil {
				bad(i, err)
			}
			switch i {
			case sfBranch:
				hdr.Branch = str
			case sfKind:
				hdr.Kind = session.Kind(str)
			}
		}
	}
	for _, i := range []int{sfCreated, sfExpiresAt} {
		if v := fv(i); v.o != nil {
			if _, err := timeValue(v.o); err != nil {
				bad(i, err)
			}
		}
	}
	if v := fv(sfRewoundFrom); v.o != nil {
		if _, err := sessionValue(v.o); err != nil {
			bad(sfRewoundFrom, err)
		}
		s.archive = true
	}
	if err := hdr.CheckHeader(); err != nil {
		f.add(s.line, RuleSession, fmt.Errorf("session %s: %w", s.id, err))
	}
	s.hdr = hdr
	s.legacy = fv(sfKind).o == nil

	s.ordered = make([]*importTurn, 0, len(s.turns))
	for iri, t := range s.turns {
		if t.res.id != s.id && !s.archive {
			f.addf(t.line, RuleResource, session.ErrInvalid, "the graph of session %s holds turn <%s> of session %s, and %s is no archive of a rewind", s.id, iri, t.res.id, s.id)
			continue
		}
		s.ordered = append(s.ordered, t)
	}
	slices.SortFunc(s.ordered, func(a, b *importTurn) int { return cmp.Compare(a.index, b.index) })
	for i, t := range s.ordered {
		missing := ""
		switch {
		case !t.typed:
			missing = "rdf:type trails:Turn"
		case t.lines[tfSession] == 0:
			missing = "trails:session"
		case t.lines[tfIndex] == 0:
			missing = "trails:index"
		case t.lines[tfRole] == 0:
			missing = "trails:role"
		case t.lines[tfContent] == 0:
			missing = "trails:content"
		case t.lines[tfBranch] == 0 && !s.legacy:
			missing = "trails:branch"
		case t.lines[tfCreated] == 0 && !s.legacy:
			missing = "trails:created"
		}
		if missing != "" {
			f.addf(t.line, RuleTurn, session.ErrInvalid, "turn <%s> has no %s", t.iri, missing)
			continue
		}
		if t.index != t.res.index {
			f.addf(t.lines[tfIndex], RuleTurn, session.ErrInvalid, "turn <%s> has index %d", t.iri, t.index)
		}
		if t.res.id == s.id && t.res.gen > s.rewinds {
			f.addf(t.line, RuleTurn, session.ErrInvalid, "turn <%s> is of generation %d, and session %s was rewound %d times", t.iri, t.res.gen, s.id, s.rewinds)
		}
		if want := hdr.ForkedAt + i; t.index != want {
			what := "missing"
			if i > 0 && s.ordered[i-1].index == t.index {
				what = "twice"
			}
			f.addf(t.lines[tfIndex], RuleTurn, session.ErrInvalid, "session %s: turn %d is %s (its own turns are %d and up, each once)", s.id, want, what, hdr.ForkedAt)
		}
	}
	if v := fv(sfOwnTurns); v.o != nil {
		if n, err := intValue(v.o); err == nil && n != len(s.ordered) {
			f.addf(v.line, RuleTurn, session.ErrInvalid, "session %s: trails:ownTurns %d, and its graph holds %d turns", s.id, n, len(s.ordered))
		}
	}
}

// length returns the length of the effective history of s.
func (s *importSession) length() int { return s.hdr.ForkedAt + len(s.ordered) }

// checkForeign checks the turns of other sessions that s, an archive of a
// rewind (which takes the turns over untouched), holds: the session whose
// IRI space they are in, if in the input, neither holds them nor writes
// them again (they are of a generation before its last rewind).
func (in *importInput) checkForeign(s *importSession) {
	for iri, t := range s.turns {
		if t.res.id == s.id || !s.archive {
			continue // a foreign turn in a session that is no archive: checkSession
		}
		o := in.sessions[t.res.id]
		if o == nil {
			continue // checked against the store (checkStored)
		}
		if _, ok := o.turns[iri]; ok {
			in.faults.addf(t.line, RuleResource, session.ErrInvalid, "turn <%s> is in the graphs of %s and %s", iri, o.id, s.id)
		} else if t.res.gen >= o.rewinds {
			in.faults.addf(t.line, RuleResource, session.ErrInvalid, "turn <%s> in archive %s: session %s may still write it (it was rewound %d times)", iri, s.id, o.id, o.rewinds)
		}
	}
}

// checkBranches refuses two sessions of the input with one fork label.
func (in *importInput) checkBranches() {
	by := make(map[string]*importSession)
	for _, s := range in.order {
		b := s.hdr.Branch
		if b == session.MainBranch {
			continue
		}
		if other := by[b]; other != nil {
			in.faults.addf(s.fields[sfBranch].line, RuleSession, session.ErrInvalid, "sessions %s and %s both have branch %q", other.id, s.id, b)
			continue
		}
		by[b] = s
	}
}

// checkTree checks the parent links among the input's sessions: no cycle,
// and fork points within the parent's history. Depth and parents in the
// store are checked with the store (checkStored).
func (in *importInput) checkTree() {
	for _, s := range in.order {
		if p := in.sessions[s.hdr.ParentID]; p != nil && s.hdr.ForkedAt > p.length() {
			in.faults.addf(s.fields[sfForkedAt].line, RuleFork, session.ErrInvalid, "session %s is forked at %d, beyond the %d turns of its parent %s", s.id, s.hdr.ForkedAt, p.length(), p.id)
		}
		seen := map[string]bool{s.id: true}
		for cur := in.sessions[s.hdr.ParentID]; cur != nil; cur = in.sessions[cur.hdr.ParentID] {
			if seen[cur.id] {
				in.faults.add(s.fields[sfParent].line, RuleFork, fmt.Errorf("%w: %w: the parent links of %s lead back to %s", session.ErrInvalid, session.ErrForkCycle, s.id, cur.id))
				break
			}
			seen[cur.id] = true
		}
	}
}

// storedSession is what the store holds of a session an import names.
type storedSession struct {
	exists  bool
	rewinds int
	parent  string
	at      int
	own     int // -1: unknown
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
		res, err := ds.c.Query(ctx, bound)
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
		ss.parent = idOf(r.String("parent"))
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
		id := idOf(r.String("s"))
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
		out[idOf(r.String("s"))] = ss
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
		if other := idOf(r.String("s")); s != nil && other != s.id {
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
			chain.base(idOf(r.String("s")), i, r.String("d"))
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
