package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/sharemark"
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

// uShareValue sets the shared value of one key from a change just stored,
// at the store's time; uShareValueAt at the time $now the writer gives
// (for a Querier whose updates several stores replay: see replicated).
var (
	uShareValue   = query("share-value.ru")
	uShareValueAt = atWriterTime(uShareValue)
)

// atWriterTime returns share-value.ru with the writer's $now in place of
// the store's NOW(); it panics when the template no longer has the BIND
// it replaces, so that a replicated store never keeps NOW() unnoticed.
func atWriterTime(tmpl string) string {
	const bind = "BIND(NOW() AS ?now)"
	if strings.Count(tmpl, bind) != 1 {
		panic("session: share-value.ru: want exactly one " + bind)
	}
	return strings.Replace(tmpl, bind, "BIND($now AS ?now)", 1)
}

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
// this writer stamped), and at most once per change (share-value.ru), so
// shared values follow the order the store acknowledged their changes in,
// and a retry never undoes a newer change. Empty when nothing is shared.
// The changes are marked with the store's time, or with now when it is not
// nil (replicated). Each operation is marked (internal/sharemark) for a
// Querier that sends it to another log than the change's (cluster.Sharded).
func shareValues(g rdf.IRI, s *Session, created time.Time, turns []Turn, now rdf.Term) string {
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
			p := kg.Params{
				"g": g, "owner": kg.MustIRI(owner), "change": kg.MustIRI(ontology.ValueChangeIRI(owner, k)),
				"node": kg.MustIRI(ontology.SharedValueIRI(holder, key)), "holder": kg.MustIRI(holder),
				"key": kg.String(key), "at": kg.DateTime(at),
			}
			tmpl := uShareValue
			if now != nil {
				tmpl, p["now"] = uShareValueAt, now
			}
			b.WriteString(" ;\n")
			b.WriteString(sharemark.Mark(sharemark.Op{
				G: termOrPanic(g), Owner: termOrPanic(p["owner"]), Change: termOrPanic(p["change"]), Node: termOrPanic(p["node"]),
				Text: bindOrPanic("share-value", tmpl, p),
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
	// The last change of each key decides: the values it leaves are
	// copied once, at the end, not at every change (a long history
	// changes its keys many times).
	var values map[string]json.RawMessage
	for _, c := range changes {
		switch {
		case scopeOf(c.key) != ontology.ScopeSession:
		case c.value == nil:
			delete(values, c.key)
		default:
			if values == nil {
				values = make(map[string]json.RawMessage)
			}
			values[c.key] = c.value
		}
	}
	for k, v := range values {
		values[k] = bytes.Clone(v)
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

// SharedValuesUpdate returns a SPARQL Update that sets the shared values
// (app: and user: keys) from the changes of session s, created at
// created, and of its turns (each with its ID and Created), once they are
// stored: what Persist sends with them, for the operators' Import. A
// change is applied at most once, the first time such an update finds it
// stored, so the update may be sent again, or after newer changes,
// harmlessly. "" when nothing is shared.
func SharedValuesUpdate(s *Session, created time.Time, turns []Turn) string {
	return strings.TrimPrefix(shareValues(sessionIRI(s.ID), s, created, turns, nil), " ;\n")
}

// SharedValuesUpdateAt is SharedValuesUpdate for a Querier whose updates
// several stores apply (a *cluster.Client, whose Replicated method says
// so): each change it applies is stamped now, the writer's time, where
// SharedValuesUpdate leaves the store's NOW(), so that every replica
// stores the same. Which change a key holds still follows the order in
// which the store applies them, not now.
func SharedValuesUpdateAt(s *Session, created time.Time, turns []Turn, now time.Time) string {
	return strings.TrimPrefix(shareValues(sessionIRI(s.ID), s, created, turns, kg.DateTime(now.UTC())), " ;\n")
}
