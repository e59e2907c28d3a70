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
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

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
	if v := fv(sfApp); v.o != nil {
		rest, ok := strings.CutPrefix(v.o.String(), ontology.AppBase)
		a, err := url.PathUnescape(rest)
		if _, isIRI := v.o.(rdf.IRI); !isIRI || !ok || err != nil || ontology.AppIRI(a) != v.o.String() {
			bad(sfApp, fmt.Errorf("app %s is not an app IRI", v.o))
		}
		hdr.App = a
	}
	if len(s.values) > 0 {
		initial, line, err := importValues(s)
		if err != nil {
			f.add(line, RuleSession, fmt.Errorf("session %s: %w", s.id, err))
		}
		hdr.Initial = initial
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

// importValues reads the values session s starts with from its triples
// (session.ParseStartValues) and checks that they are exactly the triples
// Persist (or Detach) writes for them (session.StartValueTriples). It
// returns its own start values, not the copies of its ancestors' that a
// detach made. On error it also returns the line at fault.
func importValues(s *importSession) (map[string]json.RawMessage, int, error) {
	triples := make([][3]rdf.Term, len(s.values))
	for i, st := range s.values {
		triples[i] = st.t
	}
	line := s.values[0].line
	vs, err := session.ParseStartValues(s.iri, triples)
	if err != nil {
		return nil, line, fmt.Errorf("%w: its values: %v", session.ErrInvalid, err)
	}
	want := map[string]bool{}
	for _, tr := range session.StartValueTriples(s.iri, vs) {
		want[termsKey(tr)] = true
	}
	for _, st := range s.values {
		k := termsKey(st.t)
		if !want[k] {
			return nil, st.line, fmt.Errorf("%w: <%s> <%s> %s is not what Persist writes for the values a session starts with", session.ErrInvalid, st.t[0], st.t[1], termsafe.Quote(st.t[2].String()))
		}
		delete(want, k)
	}
	if len(want) > 0 {
		return nil, line, fmt.Errorf("%w: %d triples of the values it starts with are missing", session.ErrInvalid, len(want))
	}
	own := make(map[string]json.RawMessage)
	for _, v := range vs {
		if v.CopiedFrom != "" {
			continue
		}
		if _, dup := own[v.Key]; dup {
			return nil, line, fmt.Errorf("%w: it starts with two values of key %s", session.ErrInvalid, termsafe.Quote(v.Key))
		}
		own[v.Key] = v.Value
	}
	return own, 0, nil
}
