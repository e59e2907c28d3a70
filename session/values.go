package session

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// The prefixes that give a state key its scope, as ADK's do. A key
// without one is the session's own.
const (
	// AppPrefix begins the keys shared by every session of the session's
	// App.
	AppPrefix = "app:"
	// UserPrefix begins the keys shared by every session of the session's
	// Principal.
	UserPrefix = "user:"
	// TempPrefix begins the keys that are never stored: Persist removes
	// them from the deltas it stores.
	TempPrefix = "temp:"
)

// uShareValue sets the shared value of one key from a change just stored.
var uShareValue = query("share-value.ru")

// scopeOf returns the scope of key (ontology.ScopeSession, ScopePrincipal,
// ScopeApp), "" for a temp: key.
func scopeOf(key string) string {
	switch {
	case strings.HasPrefix(key, AppPrefix):
		return ontology.ScopeApp
	case strings.HasPrefix(key, UserPrefix):
		return ontology.ScopePrincipal
	case strings.HasPrefix(key, TempPrefix):
		return ""
	}
	return ontology.ScopeSession
}

// checkDelta checks the changes d (of a turn, or the values a session
// starts with): keys UTF-8 of 1 to 1,024 bytes, values valid UTF-8 JSON
// or nil (removal), app: keys only in a session with an App, user: keys
// only in one with a Principal.
func checkDelta(d map[string]json.RawMessage, s *Session) error {
	for _, k := range slices.Sorted(maps.Keys(d)) {
		v := d[k]
		switch {
		case k == "" || !utf8.ValidString(k) || len(k) > maxShortBytes:
			return fmt.Errorf("key %s must be UTF-8 of 1 to %d bytes", termsafe.Quote(k), maxShortBytes)
		case v != nil && !validJSON(v):
			return fmt.Errorf("the value of %s is not valid UTF-8 JSON (a nil value removes the key)", termsafe.Quote(k))
		case scopeOf(k) == ontology.ScopeApp && s.App == "":
			return fmt.Errorf("key %s is an app's, and the session has no App", termsafe.Quote(k))
		case scopeOf(k) == ontology.ScopePrincipal && s.Principal == "":
			return fmt.Errorf("key %s is a principal's, and the session has no Principal", termsafe.Quote(k))
		}
	}
	return nil
}

// dropTemp removes the temp: keys of d, in place, and returns d, or nil
// when no key is left.
func dropTemp(d map[string]json.RawMessage) map[string]json.RawMessage {
	maps.DeleteFunc(d, func(k string, _ json.RawMessage) bool { return strings.HasPrefix(k, TempPrefix) })
	if len(d) == 0 {
		return nil
	}
	return d
}

// applyDelta applies the changes d to values (made when nil) and returns
// it: a nil value removes its key; temp: keys are left out.
func applyDelta(values, d map[string]json.RawMessage) map[string]json.RawMessage {
	for k, v := range d {
		switch {
		case strings.HasPrefix(k, TempPrefix):
		case v == nil:
			delete(values, k)
		default:
			if values == nil {
				values = make(map[string]json.RawMessage)
			}
			values[k] = bytes.Clone(v)
		}
	}
	return values
}

// deltaOf returns the changes turn t makes, nil for none.
func deltaOf(t Turn) map[string]json.RawMessage {
	if t.Structure == nil {
		return nil
	}
	return t.Structure.Delta
}

// eachValueTriple calls add with each triple of the changes d that the
// turn or session at owner makes: one trails:ValueChange per key, in key
// order.
func eachValueTriple(owner rdf.IRI, d map[string]json.RawMessage, add func(s, p rdf.IRI, o rdf.Term)) {
	for k, key := range slices.Sorted(maps.Keys(d)) {
		e := kg.MustIRI(ontology.ValueChangeIRI(owner.String(), k))
		add(owner, iri(ontology.Changes), e)
		add(e, iri(ontology.RDFType), iri(ontology.ValueChange))
		add(e, iri(ontology.RDFType), iri(ontology.ProvEntity))
		add(e, iri(ontology.Key), kg.String(key))
		add(e, iri(ontology.Scope), kg.String(scopeOf(key)))
		if v := d[key]; v != nil {
			add(e, iri(ontology.Value), jsonLiteral(v))
		} else {
			add(e, iri(ontology.Removed), kg.Bool(true))
		}
	}
}

// addInitial adds the values session s (graph g) starts with to d, through
// sg as a turn's long values go, and marks g as holding structured data,
// so that Load reads them.
func addInitial(d *kg.Data, sg *staging, g rdf.IRI, s *Session) {
	if len(s.Initial) == 0 {
		return
	}
	d.Add(g, g, iri(ontology.StructuredTurns), kg.Bool(true))
	eachValueTriple(g, s.Initial, func(sub, p rdf.IRI, o rdf.Term) {
		if lit, ok := o.(rdf.Literal); ok {
			sg.literal(d, g, sub, p, lit, "")
			return
		}
		d.Add(g, sub, p, o)
	})
}

// addApp adds the app of session s (graph g) to d.
func addApp(d *kg.Data, g rdf.IRI, s *Session) {
	if s.App == "" {
		return
	}
	a := kg.MustIRI(ontology.AppIRI(s.App))
	d.Add(g, g, iri(ontology.App), a)
	d.Add(g, a, iri(ontology.RDFType), iri(ontology.AppClass))
	d.Add(g, a, iri(ontology.DCTIdentifier), kg.String(s.App))
}

// shareValues returns the update operations (each after " ;\n") that set
// the shared values (ValuesGraph) of the app: and user: keys that the
// session at owner (its graph g), created at created, starts with, and of
// those its turns change: to be sent after the update that stores them,
// in the same request. Each applies only if that update did (the change
// it copies its value from is stored, under an owner created at the time
// this writer stamped), and only over a value changed no later (a retry
// never undoes a newer change). Empty when nothing is shared.
func shareValues(g rdf.IRI, s *Session, created time.Time, turns []Turn) string {
	var b strings.Builder
	add := func(owner string, at time.Time, d map[string]json.RawMessage) {
		for k, key := range slices.Sorted(maps.Keys(d)) {
			var holder string
			switch scopeOf(key) {
			case ontology.ScopeApp:
				holder = ontology.AppIRI(s.App)
			case ontology.ScopePrincipal:
				holder = ontology.AgentIRI(s.Principal)
			default:
				continue
			}
			b.WriteString(" ;\n")
			b.WriteString(bindOrPanic("share-value", uShareValue, kg.Params{
				"g": g, "owner": kg.MustIRI(owner), "change": kg.MustIRI(ontology.ValueChangeIRI(owner, k)),
				"node": kg.MustIRI(ontology.SharedValueIRI(holder, key)), "holder": kg.MustIRI(holder),
				"key": kg.String(key), "at": kg.DateTime(at),
			}))
		}
	}
	if !created.IsZero() {
		add(g.String(), created, s.Initial)
	}
	for _, t := range turns {
		add(t.ID, t.Created, deltaOf(t))
	}
	return b.String()
}

// valueChange is one stored change of a key: a value (nil: removed) at a
// position of the effective history. A turn's changes at index i are at
// 2i+1; the values a session starts with are at 2·its fork point, before
// its first own turn and after every turn it inherits.
type valueChange struct {
	pos   int
	key   string
	value json.RawMessage
	iri   string // of a start value: its trails:ValueChange
	at    int    // of a start value: its trails:atIndex, -1 when it has none (at its session's fork point)
	copy  bool   // of a start value: an ancestor's, copied by Detach
}

// startOrder orders the start values of one session: by position; at one
// position the copies of its ancestors' (Detach numbered them root first)
// before its own.
func startOrder(a, b valueChange) int {
	if a.pos != b.pos {
		return cmp.Compare(a.pos, b.pos)
	}
	if a.copy != b.copy {
		if a.copy {
			return -1
		}
		return 1
	}
	return cmp.Compare(changeNumber(a.iri), changeNumber(b.iri))
}

// changeNumber returns k of a change IRI ending in ValuePath and k.
func changeNumber(iri string) int {
	_, k, _ := strings.Cut(iri[strings.LastIndex(iri, ontology.ValuePath)+1:], "/")
	n, _ := strconv.Atoi(k)
	return n
}

// readValueChange reads a change from a row's columns key, value and
// removed, with prefix (e.g. "i": ?ikey ?ivalue ?iremoved).
func readValueChange(row kg.Solution, prefix string, pos int) (valueChange, error) {
	c := valueChange{pos: pos, key: row.String(prefix + "key")}
	if o, ok := row[prefix+"value"]; ok {
		lit, isLit := o.(rdf.Literal)
		if !isLit || lit.DataType.String() != ontology.RDFJSON {
			return c, fmt.Errorf("%w: the value of key %s is not an rdf:JSON literal", ErrCorrupt, termsafe.Quote(c.key))
		}
		c.value = json.RawMessage(lit.String())
	} else if row.String(prefix+"removed") != "true" {
		return c, fmt.Errorf("%w: key %s has neither a value nor trails:removed", ErrCorrupt, termsafe.Quote(c.key))
	}
	return c, nil
}

// initialsOf returns the values the sessions of chain (self first) start
// with that apply to its history, root first (the order in which they
// apply): an ancestor's apply when every fork below it was made at or
// after its own fork point.
func initialsOf(chain []*link) []valueChange {
	lim := -1
	var keep []*link
	for k, l := range chain {
		if k == 0 || l.at <= lim {
			keep = append(keep, l)
		}
		if k == 0 || l.at < lim {
			lim = l.at
		}
	}
	var out []valueChange
	for _, l := range slices.Backward(keep) {
		out = append(out, l.initial...)
	}
	return out
}

// foldValues returns the values of a history: its session-scope changes
// in the order of their positions — initials (the values the sessions of
// its chain start with, root first, up to position upTo included), the
// changes of turns, then more (changes of turns not held, from a tail's
// values query) — and over them the shared values.
func foldValues(initials []valueChange, upTo int, turns []Turn, more []valueChange, shared map[string]json.RawMessage) map[string]json.RawMessage {
	var changes []valueChange
	for _, c := range initials {
		if c.pos <= upTo {
			changes = append(changes, c)
		}
	}
	changes = append(changes, more...)
	for _, t := range turns {
		for _, k := range slices.Sorted(maps.Keys(deltaOf(t))) {
			changes = append(changes, valueChange{pos: 2*t.Index + 1, key: k, value: t.Structure.Delta[k]})
		}
	}
	slices.SortStableFunc(changes, func(a, b valueChange) int { return a.pos - b.pos })
	var values map[string]json.RawMessage
	for _, c := range changes {
		if scopeOf(c.key) == ontology.ScopeSession {
			values = applyDelta(values, map[string]json.RawMessage{c.key: c.value})
		}
	}
	for k, v := range shared {
		values = applyDelta(values, map[string]json.RawMessage{k: v})
	}
	return values
}

// sharedOf returns the app: and user: keys of values.
func sharedOf(values map[string]json.RawMessage) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for k, v := range values {
		if scopeOf(k) == ontology.ScopeApp || scopeOf(k) == ontology.ScopePrincipal {
			out = applyDelta(out, map[string]json.RawMessage{k: v})
		}
	}
	return out
}

// chainValues gathers the state rows of chain.rq: the values each
// session starts with (?ikey ?ivalue ?iremoved, by ?s) and the shared
// values (?svkey ?svvalue).
type chainValues struct {
	initial map[string][]valueChange
	shared  map[string]json.RawMessage
}

// add reads row if it is a state row, and reports whether it was one.
func (v *chainValues) add(row kg.Solution) (bool, error) {
	if _, ok := row["svkey"]; ok {
		c, err := readValueChange(row, "sv", 0)
		if err != nil {
			return true, err
		}
		v.shared = applyDelta(v.shared, map[string]json.RawMessage{c.key: c.value})
		return true, nil
	}
	if _, ok := row["ikey"]; !ok {
		return false, nil
	}
	c, err := readValueChange(row, "i", 0) // its position is set once the session's fork point is known
	if err != nil {
		return true, fmt.Errorf("session %s: %w", ontology.SessionID(row.String("s")), err)
	}
	c.iri, c.at = row.String("ic"), -1
	_, c.copy = row["icopy"]
	if _, ok := row["iat"]; ok {
		if c.at, err = row.Int("iat"); err != nil || c.at < 0 {
			return true, fmt.Errorf("%w: session %s: trails:atIndex %s", ErrCorrupt, ontology.SessionID(row.String("s")), termsafe.Quote(row.String("iat")))
		}
	}
	if v.initial == nil {
		v.initial = make(map[string][]valueChange)
	}
	s := row.String("s")
	v.initial[s] = append(v.initial[s], c)
	return true, nil
}

// deltaRow gathers the rows of one stored change of a turn.
type deltaRow struct {
	key, value     string
	hasKey, hasVal bool
	removed        bool
}

// addChange reads a row about a state change of turn t (at position i):
// its key, value or removal mark.
func (r *structureRows) addChange(row kg.Solution, i int, t *Turn, p string, text func(string) (string, error)) error {
	if r.changes == nil {
		r.changes = make(map[int]map[string]*deltaRow)
	}
	if r.changes[i] == nil {
		r.changes[i] = make(map[string]*deltaRow)
	}
	x := row.String("x")
	c := r.changes[i][x]
	if c == nil {
		c = &deltaRow{}
		r.changes[i][x] = c
	}
	var err error
	switch p {
	case ontology.Key:
		c.key, err = text(ontology.XSDString)
		c.hasKey = true
	case ontology.Value:
		c.value, err = text(ontology.RDFJSON)
		c.hasVal = true
	case ontology.Removed:
		var s string
		s, err = text(ontology.XSDBoolean)
		c.removed = s == "true" || s == "1"
	}
	return err
}

// doneChanges puts the changes read on their turns' Delta.
func (r *structureRows) doneChanges() error {
	for i, byIRI := range r.changes {
		t := &r.turns[i]
		for x, c := range byIRI {
			if !c.hasKey || c.hasVal == c.removed {
				return fmt.Errorf("%w: turn %d (%s): state change %s needs a key and either a value or trails:removed", ErrCorrupt, t.Index, t.ID, termsafe.Quote(x))
			}
			if t.Structure.Delta == nil {
				t.Structure.Delta = make(map[string]json.RawMessage)
			}
			if _, dup := t.Structure.Delta[c.key]; dup {
				return fmt.Errorf("%w: turn %d (%s): key %s changed twice", ErrCorrupt, t.Index, t.ID, termsafe.Quote(c.key))
			}
			var v json.RawMessage
			if c.hasVal {
				v = json.RawMessage(c.value)
			}
			t.Structure.Delta[c.key] = v
		}
	}
	return nil
}

// dropTemps removes the temp: keys of the deltas of the turns of s from
// index from on, and of its Initial: they are never stored, and the
// caller's value shows what was.
func dropTemps(s *Session, from int) {
	s.Initial = dropTemp(s.Initial)
	for i := max(from-s.From, 0); i < len(s.Turns); i++ {
		if x := s.Turns[i].Structure; x != nil && len(x.Delta) > 0 {
			x.Delta = dropTemp(x.Delta)
		}
	}
}

// qValues reads, for a tail, the last change of each key before it.
var qValues = query("values.rq")

// readValues returns the last change of each session-scope key among the
// turns of spans.
func (st *Store) readValues(ctx context.Context, spans []span) ([]valueChange, error) {
	if len(spans) == 0 {
		return nil, nil
	}
	rows := make([][]rdf.Term, len(spans))
	for k, sp := range spans {
		rows[k] = []rdf.Term{kg.MustIRI(sp.l.iri), kg.Int(sp.lo), kg.Int(sp.hi)}
	}
	q, err := kg.BindTables(qValues, nil, map[string]kg.Table{"ranges": {Vars: []string{"s", "lo", "hi"}, Rows: rows}})
	if err != nil {
		return nil, err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]valueChange, 0, len(res.Solutions))
	for _, row := range res.Solutions {
		i, err := row.Int("i")
		if err != nil || i < 0 {
			return nil, fmt.Errorf("%w: state change of turn %s", ErrCorrupt, termsafe.Quote(row.String("i")))
		}
		c, err := readValueChange(row, "", 2*i+1)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// spansBelow returns spans cut to the indices below n.
func spansBelow(spans []span, n int) []span {
	var out []span
	for _, sp := range spans {
		if sp.hi < 0 || sp.hi > n {
			sp.hi = n
		}
		if sp.lo < sp.hi {
			out = append(out, sp)
		}
	}
	return out
}

// setValues sets the values of s, loaded with chain, its turns held and
// pre (for a tail: the last changes before it).
func setValues(s *Session, chain []*link, pre []valueChange) {
	s.initials, s.pre = initialsOf(chain), pre
	s.Values = foldValues(s.initials, 2*(s.From+len(s.Turns)), s.Turns, pre, chain[0].shared)
}

// forkValues returns the values of a fork of s at index at: those of s
// as of at, with the shared values s holds.
func (s *Session) forkValues(child *Session, at int) {
	child.App = s.App
	child.initials = slices.DeleteFunc(slices.Clone(s.initials), func(c valueChange) bool { return c.pos > 2*at })
	child.pre = slices.DeleteFunc(slices.Clone(s.pre), func(c valueChange) bool { return c.pos > 2*at })
	child.Values = foldValues(child.initials, 2*at, s.Turns[:at-s.From], child.pre, sharedOf(s.Values))
}

// ValueTriples returns the triples Persist writes for the changes d that
// the turn or session at IRI owner makes, as (subject, predicate, object).
// Import compares them with its input.
func ValueTriples(owner string, d map[string]json.RawMessage) [][3]rdf.Term {
	var out [][3]rdf.Term
	eachValueTriple(kg.MustIRI(owner), d, func(s, p rdf.IRI, o rdf.Term) { out = append(out, [3]rdf.Term{s, p, o}) })
	return out
}

// ParseValues reads the changes that the turn or session at IRI owner
// makes from triples about it and its trails:ValueChange resources (other
// triples are ignored), as Load does. It returns ErrCorrupt for a change
// Load could not read.
func ParseValues(owner string, triples [][3]rdf.Term) (map[string]json.RawMessage, error) {
	turns := []Turn{{ID: owner, Structure: &Structure{}}}
	sr := structureRows{turns: turns, byID: map[string]int{owner: 0}}
	for _, tr := range triples {
		if !strings.HasPrefix(tr[0].String(), owner+ontology.ValuePath) {
			continue
		}
		p := tr[1].String()
		if p != ontology.Key && p != ontology.Value && p != ontology.Removed {
			continue
		}
		row := kg.Solution{"t": kg.MustIRI(owner), "x": tr[0], "p": tr[1], "o": tr[2]}
		if err := sr.add(row); err != nil {
			return nil, err
		}
	}
	if err := sr.doneChanges(); err != nil {
		return nil, err
	}
	return turns[0].Structure.Delta, nil
}

// SharedValuesUpdate returns a SPARQL Update that sets the shared values
// (app: and user: keys) from the changes of session s, created at
// created, and of its turns (each with its ID and Created), once they are
// stored: what Persist sends with them, for the operators' Import. Each
// key keeps the change of the latest turn by creation time, so it may be
// sent again, or after newer changes, harmlessly. "" when nothing is
// shared.
func SharedValuesUpdate(s *Session, created time.Time, turns []Turn) string {
	return strings.TrimPrefix(shareValues(sessionIRI(s.ID), s, created, turns), " ;\n")
}

// StartValue is one change of the values a session starts with, as
// stored: its own (AtIndex -1: at its fork point), or for a detached
// session a copy of an ancestor's, placed where it applied.
type StartValue struct {
	IRI        string          // its trails:ValueChange
	Key        string          // with its scope's prefix
	Value      json.RawMessage // nil: the key is removed
	AtIndex    int             // trails:atIndex, -1 when absent
	CopiedFrom string          // trails:copiedFrom, "" when absent
}

// startValueTriples calls add with the triples of the start values vs of
// the session at owner.
func startValueTriples(owner rdf.IRI, vs []StartValue, add func(s, p rdf.IRI, o rdf.Term)) {
	for _, v := range vs {
		e := kg.MustIRI(v.IRI)
		add(owner, iri(ontology.Changes), e)
		add(e, iri(ontology.RDFType), iri(ontology.ValueChange))
		add(e, iri(ontology.RDFType), iri(ontology.ProvEntity))
		add(e, iri(ontology.Key), kg.String(v.Key))
		add(e, iri(ontology.Scope), kg.String(scopeOf(v.Key)))
		if v.Value != nil {
			add(e, iri(ontology.Value), jsonLiteral(v.Value))
		} else {
			add(e, iri(ontology.Removed), kg.Bool(true))
		}
		if v.AtIndex >= 0 {
			add(e, iri(ontology.AtIndex), kg.Int(v.AtIndex))
		}
		if v.CopiedFrom != "" {
			add(e, iri(ontology.CopiedFrom), kg.MustIRI(v.CopiedFrom))
		}
	}
}

// StartValueTriples returns the triples Persist and Detach write for the
// start values vs of the session at IRI owner. Import compares them with
// its input.
func StartValueTriples(owner string, vs []StartValue) [][3]rdf.Term {
	var out [][3]rdf.Term
	startValueTriples(kg.MustIRI(owner), vs, func(s, p rdf.IRI, o rdf.Term) { out = append(out, [3]rdf.Term{s, p, o}) })
	return out
}

// ParseStartValues reads the start values of the session at IRI owner
// from triples about its trails:ValueChange resources (other triples are
// ignored), in IRI order. It returns ErrCorrupt for a change Load could
// not read.
func ParseStartValues(owner string, triples [][3]rdf.Term) ([]StartValue, error) {
	byIRI := map[string]*StartValue{}
	get := func(x string) *StartValue {
		if byIRI[x] == nil {
			byIRI[x] = &StartValue{IRI: x, AtIndex: -1}
		}
		return byIRI[x]
	}
	seen := map[string]map[string]bool{} // change → predicates met
	for _, tr := range triples {
		x, p := tr[0].String(), tr[1].String()
		if !strings.HasPrefix(x, owner+ontology.ValuePath) {
			continue
		}
		v := get(x)
		if seen[x] == nil {
			seen[x] = map[string]bool{}
		}
		if seen[x][p] && p != ontology.RDFType {
			return nil, fmt.Errorf("%w: %s has two <%s>", ErrCorrupt, x, p)
		}
		seen[x][p] = true
		lit, isLit := tr[2].(rdf.Literal)
		bad := fmt.Errorf("%w: %s: <%s> %s", ErrCorrupt, x, p, termsafe.Quote(tr[2].String()))
		switch p {
		case ontology.Key:
			if !isLit || lit.DataType.String() != ontology.XSDString {
				return nil, bad
			}
			v.Key = lit.String()
		case ontology.Value:
			if !isLit || lit.DataType.String() != ontology.RDFJSON {
				return nil, bad
			}
			v.Value = json.RawMessage(lit.String())
		case ontology.AtIndex:
			n, err := strconv.Atoi(tr[2].String())
			if !isLit || err != nil || n < 0 {
				return nil, bad
			}
			v.AtIndex = n
		case ontology.CopiedFrom:
			if _, ok := tr[2].(rdf.IRI); !ok {
				return nil, bad
			}
			v.CopiedFrom = tr[2].String()
		}
	}
	out := make([]StartValue, 0, len(byIRI))
	for _, x := range slices.Sorted(maps.Keys(byIRI)) {
		v := byIRI[x]
		if !seen[x][ontology.Key] || seen[x][ontology.Value] == seen[x][ontology.Removed] {
			return nil, fmt.Errorf("%w: %s needs a key and either a value or trails:removed", ErrCorrupt, x)
		}
		if err := checkDelta(map[string]json.RawMessage{v.Key: v.Value}, &Session{App: "-", Principal: "-"}); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, x, err)
		}
		out = append(out, *v)
	}
	return out, nil
}

// addDetachedStart adds to d, for fork s (graph g) that Detach makes a
// root, what keeps its state the same at every turn once its fork point
// is gone: its own start values get their trails:atIndex (its old fork
// point), and the start values of its ancestors that applied to its
// history are copied into it, each with the index it applied at.
func addDetachedStart(d *kg.Data, g rdf.IRI, s *Session) {
	var own, copies []valueChange
	for _, c := range s.initials {
		if strings.HasPrefix(c.iri, g.String()+ontology.ValuePath) {
			own = append(own, c)
		} else {
			copies = append(copies, c)
		}
	}
	next := 0
	for _, c := range own {
		next = max(next, changeNumber(c.iri)+1)
		if c.at < 0 {
			d.Add(g, kg.MustIRI(c.iri), iri(ontology.AtIndex), kg.Int(s.ForkedAt))
		}
	}
	if len(copies) == 0 {
		return
	}
	d.Add(g, g, iri(ontology.StructuredTurns), kg.Bool(true))
	vs := make([]StartValue, len(copies))
	for k, c := range copies {
		vs[k] = StartValue{IRI: ontology.ValueChangeIRI(g.String(), next+k), Key: c.key, Value: c.value, AtIndex: c.pos / 2, CopiedFrom: c.iri}
	}
	startValueTriples(g, vs, func(sub, p rdf.IRI, o rdf.Term) { d.Add(g, sub, p, o) })
}
