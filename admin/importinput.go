package admin

// This file reads Import's input into sessions, turns and PROV records,
// quad by quad, with the line of each: a quad that no writer of Trails
// could have written is refused here, with the rule it breaks (the Rule
// constants).

import (
	"fmt"
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

// The rules of an ImportError, and RuleChain (one of Check's rules too):
// a turn's trails:digest does not follow from the chain.
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

// Error says what is wrong, after the line at fault when there is one.
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
	otherIRI      iriKind = iota
	sessionRes            // SessionBase and a canonical UUID
	turnRes               // a session IRI, TurnPath, an index, and maybe RewindSuffix and a generation
	turnSubRes            // a turn IRI and "/invocation", or PartPath, an index and maybe "/call": a structured turn's resource
	anchorRes             // a session IRI, AnchorPath and a name
	badRes                // anything else under SessionBase
	agentRes              // AgentBase and a principal
	appRes                // AppBase and an app name
	sessionSubRes         // a session IRI, ValuePath and an index: a change of the values it starts with
	activityRes           // ActivityBase and more
)

// resource is what an IRI says of itself.
type resource struct {
	kind  iriKind
	id    string // the session, for sessionRes, turnRes and anchorRes
	index int    // for turnRes
	gen   int    // for turnRes: the generation (0: none)
	turn  string // for turnSubRes: the IRI of its turn
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
		if k, ok := strings.CutPrefix(rest, ontology.ValuePath); ok {
			if _, nat := canonicalNat(k); nat {
				return resource{kind: sessionSubRes, id: id}
			}
			return resource{kind: badRes}
		}
		if n, ok := strings.CutPrefix(rest, ontology.TurnPath); ok {
			base, sub := n, ""
			for _, suffix := range []string{invocationSuffix, ontology.PartPath, ontology.ValuePath} {
				if i := strings.Index(n, suffix); i >= 0 {
					base, sub = n[:i], n[i:]
					break
				}
			}
			if sub != "" {
				t := classify(ontology.SessionBase + id + ontology.TurnPath + base)
				if t.kind != turnRes || !validTurnSub(sub) {
					return resource{kind: badRes}
				}
				t.kind, t.turn = turnSubRes, ontology.SessionBase+id+ontology.TurnPath+base
				return t
			}
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
	if rest, ok := strings.CutPrefix(s, ontology.AppBase); ok && rest != "" {
		return resource{kind: appRes}
	}
	if rest, ok := strings.CutPrefix(s, ontology.ActivityBase); ok && rest != "" {
		return resource{kind: activityRes}
	}
	return resource{kind: otherIRI}
}

// invocationSuffix follows a turn IRI in the IRI of its model invocation
// (ontology.InvocationIRI).
const invocationSuffix = "/invocation"

// validTurnSub reports whether sub, what follows a turn IRI, names one of
// the turn's structured resources: "/invocation", or PartPath and an index,
// maybe followed by "/call" (ontology.PartIRI, ToolCallIRI), or ValuePath
// and an index (a state change, ontology.ValueChangeIRI).
func validTurnSub(sub string) bool {
	if sub == invocationSuffix {
		return true
	}
	if k, ok := strings.CutPrefix(sub, ontology.ValuePath); ok {
		_, nat := canonicalNat(k)
		return nat
	}
	k, ok := strings.CutPrefix(sub, ontology.PartPath)
	k = strings.TrimSuffix(k, "/call")
	_, nat := canonicalNat(k)
	return ok && nat
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
	sfStructured
	sfApp
	nSessionFields
)

var sessionFields = map[string]int{
	ontology.DCTIdentifier:   sfIdentifier,
	ontology.Branch:          sfBranch,
	ontology.Kind:            sfKind,
	ontology.Created:         sfCreated,
	ontology.Principal:       sfPrincipal,
	ontology.ParentSession:   sfParent,
	ontology.ForkedAtIndex:   sfForkedAt,
	ontology.OwnTurns:        sfOwnTurns,
	ontology.HeadDigest:      sfHeadDigest,
	ontology.Rewinds:         sfRewinds,
	ontology.RewoundFrom:     sfRewoundFrom,
	ontology.State:           sfState,
	ontology.ExpiresAt:       sfExpiresAt,
	ontology.App:             sfApp,
	ontology.StructuredTurns: sfStructured,
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
	// values holds the triples of the values it starts with (its
	// trails:changes and their trails:ValueChange resources).
	values []structTriple
	// derived holds its prov:wasDerivedFrom values, for checkLinks.
	derived []value
	// Set by checkTurns: its turns as read, for the shared values Import
	// sets once they are stored.
	read []session.Turn
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
	// structure holds the triples of its structured fields (its own
	// structured predicates, its invocation, parts and tool calls), with
	// the line of each, for checkTurns.
	structure []structTriple
	links     turnLinks // its links to other resources, for checkLinks
}

// structTriple is a triple of a turn's structured fields and its line.
type structTriple struct {
	t    [3]rdf.Term
	line int
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
	// provLinks are the PROV quads saying what generated a session or a
	// turn, or what a session derives from, for checkLinks.
	provLinks []provLink
	faults    faults
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
		if p == ontology.Changes {
			s.values = append(s.values, structTriple{[3]rdf.Term{t.s, t.p, t.o}, q.Line})
			return nil
		}
		if linkPredicates[p] {
			if err := s.sessionLink(p, t.o, q.Line); err != nil || p != ontology.RewoundFrom {
				return err
			}
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
	case res.kind == turnSubRes:
		tn, err := in.turnOf(s, classify(res.turn), res.turn, q.Line)
		if err != nil {
			return err
		}
		tn.structure = append(tn.structure, structTriple{[3]rdf.Term{t.s, t.p, t.o}, q.Line})
		return nil
	case res.kind == anchorRes && res.id == s.id:
		if linkPredicates[p] {
			return linkFault(q.Line, "anchor <%s> <%s> %s: no writer says that of an anchor", subj, p, t.o)
		}
		if p == ontology.AnchorOf && t.o.String() != s.iri {
			return fault(q.Line, RuleResource, "anchor <%s> in the graph of %s names another session, <%s>", subj, s.id, t.o.String())
		}
		if p == ontology.RDFType && strings.HasPrefix(t.o.String(), ontology.NS) && t.o.String() != ontology.Anchor {
			return fault(q.Line, RuleResource, "anchor <%s> typed <%s>", subj, t.o.String())
		}
		return nil
	case res.kind == agentRes:
		return agentQuad(q, t)
	case res.kind == appRes:
		return appQuad(q, t)
	case res.kind == sessionSubRes && res.id == s.id:
		s.values = append(s.values, structTriple{[3]rdf.Term{t.s, t.p, t.o}, q.Line})
		return nil
	case res.kind == sessionRes:
		return fault(q.Line, RuleResource, "the graph of session %s holds a quad about session %s: a session's graph describes that session alone", s.id, res.id)
	}
	return fault(q.Line, RuleResource, "the graph of session %s holds a quad about <%s>, which is none of its session, turns, anchors or agent", s.id, subj)
}

// turnQuad takes a quad about turn res in the graph of session s.
func (in *importInput) turnQuad(s *importSession, res resource, q rdfio.Quad, t triple, li int) error {
	subj, p := t.s.String(), t.p.String()
	tn, err := in.turnOf(s, res, subj, q.Line)
	if err != nil {
		return err
	}
	if structuredTurnPredicates[p] || (p == ontology.ProvWasGeneratedBy && t.o.String() == subj+invocationSuffix) {
		tn.structure = append(tn.structure, structTriple{[3]rdf.Term{t.s, t.p, t.o}, q.Line})
		return nil
	}
	if p == ontology.RDFType {
		if o := t.o.String(); o == ontology.Turn {
			tn.typed = true
		} else if strings.HasPrefix(o, ontology.NS) {
			return fault(q.Line, RuleTurn, "turn <%s> typed <%s>", subj, o)
		}
		return nil
	}
	if linkPredicates[p] {
		return tn.turnLink(p, t.o, q.Line) // judged by checkLinks
	}
	f, ok := turnFields[p]
	if !ok {
		return nil // merge results: the turn's own business
	}
	if l := tn.lines[f]; l != 0 {
		return fault(q.Line, RuleTurn, "turn <%s> has two values of <%s> (line %d)", subj, p, l)
	}
	tn.lines[f] = q.Line
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

// structuredTurnPredicates are the predicates of a structured turn's own
// fields (session.Structure).
var structuredTurnPredicates = map[string]bool{
	ontology.Author: true, ontology.InvocationID: true, ontology.EventID: true, ontology.Metadata: true, ontology.RawFormat: true, ontology.Raw: true,
	ontology.Changes: true,
}

// turnOf returns the turn at IRI subj (what res says of it) in the graph
// of session s, made at line when new.
func (in *importInput) turnOf(s *importSession, res resource, subj string, line int) (*importTurn, error) {
	tn := s.turns[subj]
	if tn == nil {
		if res.id != s.id {
			// A turn of another session: only an archive of a rewind holds
			// such (the turns it took over, untouched); see checkForeign.
			if other := in.foreign[subj]; other != nil {
				return nil, fault(line, RuleResource, "turn <%s> is in the graphs of %s and %s", subj, other.id, s.id)
			}
			in.foreign[subj] = s
		}
		tn = &importTurn{iri: subj, res: res, line: line, content: -1}
		s.turns[subj] = tn
	}
	return tn, nil
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

// appQuad takes a quad about an app in a session's graph.
func appQuad(q rdfio.Quad, t triple) error {
	subj, p := t.s.String(), t.p.String()
	switch p {
	case ontology.RDFType:
		if t.o.String() == ontology.AppClass {
			return nil
		}
	case ontology.DCTIdentifier:
		if v, err := stringValue(t.o); err == nil && ontology.AppIRI(v) == subj {
			return nil
		}
	}
	return fault(q.Line, RuleResource, "app <%s>: Trails describes an app by its type trails:App and its identifier, the name its IRI names, only", subj)
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
		if entity {
			return nil
		}
		if res.kind == turnRes && p == ontology.ProvWasDerivedFrom {
			return linkFault(q.Line, "the PROV graph says turn <%s> prov:wasDerivedFrom %s: no writer says that of a turn", subj, t.o)
		}
		in.provLinks = append(in.provLinks, provLink{subj: res, iri: subj, p: p, o: t.o, line: q.Line})
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
	t, err := kg.ParseDateTime(l.String())
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date and time", l.String())
	}
	if err := kg.CheckTime(t); err != nil {
		return time.Time{}, fmt.Errorf("%q is outside years 0000 to 9999, which Trails does not write (milliseconds taken for seconds?)", l.String())
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
