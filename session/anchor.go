package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Anchor is a named position in a session's effective history (the anchors
// of the session forking pattern): forking at the anchor inherits the
// turns with Index < Index. A session's own anchors and those of its
// ancestors that lie inside the prefix it inherits are in Session.Anchors;
// when two share a name, the one of the session nearest the fork wins.
type Anchor struct {
	Name    string
	Index   int               // the length of the history when it was anchored
	State   map[string]string // what was recorded with it; nil when nothing
	Session string            // id of the session that named it: the session itself or an ancestor
	Created time.Time         // UTC, millisecond precision
}

// The queries of anchors, read once.
var (
	uAnchor     = query("anchor.ru")
	qAnchorRead = query("anchor-read.rq")
)

// Anchor names the current position of stored session id: the length of
// its effective history in the store (its fork point plus its own stored
// turns; turns only appended in memory do not count), computed inside the
// one update that writes the anchor, so it cannot interleave with an append.
// state is recorded with the anchor (the handoff state of design note 001); it may
// be nil. The anchor lives in the session's graph; forks of the session at
// or after that position see it in Session.Anchors and can be made with
// ForkAtAnchor(name). A name is unique in a session and an anchor is never
// moved: anchoring a name the session already has is refused. The update
// is safe to retry: a retry that finds the anchor it wrote succeeds.
//
// It returns the anchor as stored. It returns ErrInvalid for a bad id, a
// name that is empty, longer than 128 characters or holds white space,
// control characters (C0, DEL, C1) or bidi controls (U+202A–U+202E,
// U+2066–U+2069, U+200E, U+200F, U+061C), or state that is not UTF-8
// (nothing is sent);
// ErrNotFound when the session is not stored (or not visible to a Store
// scoped to a principal); ErrConflict when the session already has an
// anchor of that name; or a store error wrapping the kg error.
func (st *Store) Anchor(ctx context.Context, id, name string, state map[string]string) (_ Anchor, err error) {
	ctx, call := telemetry.Start(ctx, "session.Anchor", id)
	defer func() { call.End(err) }()
	a, err := st.anchor(ctx, id, name, state)
	if err != nil {
		return Anchor{}, fmt.Errorf("anchor %s %s: %w", shownID(id), termsafe.Quote(name), err)
	}
	return a, nil
}

func (st *Store) anchor(ctx context.Context, id, name string, state map[string]string) (Anchor, error) {
	if err := checkID(id); err != nil {
		return Anchor{}, err
	}
	if err := checkLabel("anchor name", name); err != nil {
		return Anchor{}, err
	}
	js, err := encodeState(state)
	if err != nil {
		return Anchor{}, err
	}
	g := sessionIRI(id)
	ai := anchorIRI(g, name)
	created := st.now()
	var d kg.Data
	d.Add(g, ai, iri(ontology.RDFType), iri(ontology.Anchor))
	d.Add(g, ai, iri(ontology.RDFType), iri(ontology.ProvEntity))
	d.Add(g, ai, iri(ontology.AnchorOf), g)
	d.Add(g, ai, iri(ontology.AnchorName), kg.String(name))
	d.Add(g, ai, iri(ontology.Created), kg.DateTime(created))
	if js != "" {
		d.Add(g, ai, iri(ontology.AnchorState), kg.String(js))
	}
	u, err := withData("anchor", uAnchor, &d, kg.Params{
		"s": g, "anchor": ai, "name": kg.String(name), "scope": kg.String(st.scope),
	})
	if err != nil {
		return Anchor{}, err
	}
	if err := st.c.Update(ctx, u, kg.Idempotent()); err != nil {
		return Anchor{}, err
	}
	// SPARQL Update says nothing of what it did: read the anchor back.
	q, err := bind("anchor-read", qAnchorRead, kg.Params{"s": g, "name": kg.String(name)})
	if err != nil {
		return Anchor{}, err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return Anchor{}, err
	}
	if len(res.Solutions) == 0 {
		return Anchor{}, ErrNotFound
	}
	row := res.Solutions[0]
	if _, ok := row["exists"]; !ok || !st.visible(row.String("principal")) {
		return Anchor{}, ErrNotFound
	}
	if len(res.Solutions) > 1 {
		return Anchor{}, fmt.Errorf("%w: %d anchors or descriptions named %s", ErrCorrupt, len(res.Solutions), termsafe.Quote(name))
	}
	if _, ok := row["index"]; !ok {
		return Anchor{}, fmt.Errorf("%w: the anchor was not written", ErrConflict)
	}
	got, err := readAnchor(row, "index", "state", "created")
	if err != nil {
		return Anchor{}, err
	}
	got.Name, got.Session = name, id
	if !got.Created.Equal(created) || row.String("state") != js {
		return Anchor{}, fmt.Errorf("%w: the session already has an anchor named %s, at %d", ErrConflict, termsafe.Quote(name), got.Index)
	}
	return got, nil
}

// anchorIRI returns the IRI of the anchor named name of session g.
func anchorIRI(g rdf.IRI, name string) rdf.IRI {
	return kg.MustIRI(ontology.AnchorIRI(g.String(), name)) // percent-encoded: always valid
}

// encodeState returns state as the JSON object Trails stores ("" for an
// empty state), keys sorted.
func encodeState(state map[string]string) (string, error) {
	if len(state) == 0 {
		return "", nil
	}
	for k, v := range state {
		if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return "", fmt.Errorf("%w: anchor state: keys must be non-empty UTF-8 and values UTF-8 (key %s)", ErrInvalid, termsafe.Quote(k))
		}
	}
	b, err := json.Marshal(state) // sorts the keys
	if err != nil {
		return "", fmt.Errorf("%w: anchor state: %v", ErrInvalid, err)
	}
	return string(b), nil
}

// readAnchor reads an anchor's index, state and creation time from the
// columns of row named by the other arguments.
func readAnchor(row kg.Solution, index, state, created string) (Anchor, error) {
	var a Anchor
	var err error
	if a.Index, err = row.Int(index); err != nil || a.Index < 0 {
		return Anchor{}, fmt.Errorf("%w: anchor index %s", ErrCorrupt, termsafe.Quote(row.String(index)))
	}
	if js := row.String(state); js != "" {
		if err := json.Unmarshal([]byte(js), &a.State); err != nil {
			return Anchor{}, fmt.Errorf("%w: anchor state %s: %v", ErrCorrupt, termsafe.Quote(js), err)
		}
	}
	if _, ok := row[created]; ok {
		if a.Created, err = row.Time(created); err != nil {
			return Anchor{}, fmt.Errorf("%w: anchor creation time: %v", ErrCorrupt, err)
		}
	}
	return a, nil
}

// sortAnchors orders the anchors of one session by index, then name, so
// that a corrupt duplicate name resolves the same way every time.
func sortAnchors(as []Anchor) {
	slices.SortFunc(as, func(a, b Anchor) int {
		if a.Index != b.Index {
			return a.Index - b.Index
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
}

// anchorsUpTo returns the anchors of m at index at most at (nil when none).
func anchorsUpTo(m map[string]Anchor, at int) map[string]Anchor {
	var out map[string]Anchor
	for name, a := range m {
		if a.Index > at {
			continue
		}
		if out == nil {
			out = make(map[string]Anchor)
		}
		a.State = maps.Clone(a.State)
		out[name] = a
	}
	return out
}

// sortedAnchors returns the anchors of m ordered by index, then name.
func sortedAnchors(m map[string]Anchor) []Anchor {
	out := slices.Collect(maps.Values(m))
	sortAnchors(out)
	return out
}

// addInheritedAnchors adds to graph g in d a copy of each anchor of s that
// an ancestor named (Detach materializes them with the prefix, so that the
// detached session keeps every position it could be forked at).
func addInheritedAnchors(d *kg.Data, g rdf.IRI, s *Session) {
	for _, a := range sortedAnchors(s.Anchors) {
		if a.Session == s.ID {
			continue
		}
		ai := anchorIRI(g, a.Name)
		d.Add(g, ai, iri(ontology.RDFType), iri(ontology.Anchor))
		d.Add(g, ai, iri(ontology.RDFType), iri(ontology.ProvEntity))
		d.Add(g, ai, iri(ontology.AnchorOf), g)
		d.Add(g, ai, iri(ontology.AnchorName), kg.String(a.Name))
		d.Add(g, ai, iri(ontology.AnchorIndex), kg.Int(a.Index))
		if !a.Created.IsZero() {
			d.Add(g, ai, iri(ontology.Created), kg.DateTime(a.Created))
		}
		if js, err := encodeState(a.State); err == nil && js != "" {
			d.Add(g, ai, iri(ontology.AnchorState), kg.String(js))
		}
	}
}
