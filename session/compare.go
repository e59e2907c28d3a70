package session

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// The queries of Compare.
var (
	qCompareChain = query("compare-chain.rq")
	qCompareTurns = query("compare-turns.rq")
)

// Comparison is what Compare found about two sessions a and b: where their
// effective histories stop being the same turns, and what follows in each.
// Shared followed by A is a's history, Shared followed by B is b's, as Load
// returns them. It is a plain value, detached from the store.
type Comparison struct {
	// Common is the id of the nearest common ancestor: the first session of
	// a's parent chain (a itself first) that is also on b's (b itself
	// included). So Compare(x, x) gives x, and Compare(child, parent) the
	// parent. It is "" when the chains do not meet (different roots).
	Common string
	// Divergence is the first index at which the two histories hold
	// different turns; for histories of equal turns, their length; when one
	// history is the start of the other, the shorter one's length.
	Divergence int
	// Shared holds the turns [0, Divergence), the same in both, as a holds
	// them: where a has a detach copy, the copy (its ID differs from b's).
	Shared []Turn
	A, B   []Turn // a's and b's turns from Divergence on
	// Copied is how many of the Shared turns are the same only through
	// trails:copiedFrom: at that index one history holds a copy made by
	// Detach and the other the original, or each its own copy of it. It is
	// non-zero only when a detach is involved; then Common may be "" while
	// Divergence is not 0.
	Copied int
	// ChainA and ChainB are the parent chains, as ids: the session itself
	// first, its root last.
	ChainA, ChainB []string
}

// Compare compares the effective histories of sessions a and b (in either
// order, or the same session twice).
//
// Two turns are the same when they are the same stored turn: a fork shares
// its ancestors' turns, so two sessions of one fork tree hold the same turns
// up to the fork point that separates them. Equal text is not enough: two
// roots with identical turns share none (Divergence 0). A copy that Detach
// made is the turn it copies (it says so with trails:copiedFrom, followed
// to the original): a detached fork still shares its prefix with its former
// parent and siblings, and compares with them as it did before the detach,
// except that Common no longer names the former parent, which is not on its
// chain any more (Copied counts such turns). A diff of Compare is thus the
// same before and after a detach; only Common and Copied tell one happened.
//
// Compare makes two SPARQL requests whatever the chains' depth (as one
// Load does): one finds both parent chains, one fetches the turns of both
// histories, each stored turn once however many of the two share it.
//
// It returns ErrInvalid when a or b is not a canonical UUID (nothing is
// sent), ErrNotFound when one of them is not stored (the message names it),
// and otherwise the errors of Load for either chain: an *AncestorError
// (ErrParentMissing), ErrForkCycle, ErrForkDepth, ErrCorrupt, or a store
// error wrapping the kg error.
func (st *Store) Compare(ctx context.Context, a, b string) (_ *Comparison, err error) {
	ctx, call := telemetry.Start(ctx, "session.Compare", a)
	defer func() { call.End(err) }()
	c, err := st.compare(ctx, a, b)
	if err != nil {
		return nil, fmt.Errorf("compare %s %s: %w", a, b, err)
	}
	return c, nil
}

func (st *Store) compare(ctx context.Context, a, b string) (*Comparison, error) {
	for _, id := range []string{a, b} {
		if err := checkID(id); err != nil {
			return nil, err
		}
	}
	links, err := st.chainLinks(ctx, a, b)
	if err != nil {
		return nil, err
	}
	var chains [2][]*link
	for k, id := range []string{a, b} {
		if chains[k], err = st.walk(links, id); err != nil {
			switch { // say which of the two
			case errors.Is(err, ErrNotFound):
				return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
			case errors.Is(err, ErrForkDepth):
				return nil, fmt.Errorf("%s: %w", shownID(id), err)
			}
			return nil, err
		}
		if !st.visible(chains[k][0].principal) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
	}
	stored, err := st.storedTurns(ctx, links, chains[0], chains[1])
	if err != nil {
		return nil, err
	}
	var hs [2]history
	for k, ch := range chains {
		if hs[k], err = assemble(ch, stored); err != nil {
			return nil, err
		}
	}
	ha, hb := hs[0], hs[1]
	c := &Comparison{ChainA: chainIDs(chains[0]), ChainB: chainIDs(chains[1])}
	n := min(len(ha.turns), len(hb.turns))
	for c.Divergence < n && ha.same[c.Divergence] == hb.same[c.Divergence] {
		if ha.stored[c.Divergence] != hb.stored[c.Divergence] {
			c.Copied++
		}
		c.Divergence++
	}
	onB := make(map[string]bool, len(chains[1]))
	for _, l := range chains[1] {
		onB[l.iri] = true
	}
	for _, l := range chains[0] {
		if onB[l.iri] {
			c.Common = ontology.SessionID(l.iri)
			break
		}
	}
	c.Shared = ha.turns[:c.Divergence:c.Divergence]
	c.A = ha.turns[c.Divergence:]
	c.B = hb.turns[c.Divergence:]
	return c, nil
}

// chainLinks returns the sessions of the parent chains of a and b, by IRI,
// from one query.
func (st *Store) chainLinks(ctx context.Context, a, b string) (map[string]*link, error) {
	q, err := bind("compare-chain", qCompareChain, kg.Params{
		"a": kg.MustIRI(ontology.SessionIRI(a)), "b": kg.MustIRI(ontology.SessionIRI(b)),
	})
	if err != nil {
		return nil, err
	}
	res, err := st.c.Select(ctx, q) // TSV, as Load's chain query
	if err != nil {
		return nil, err
	}
	links := make(map[string]*link, len(res.Solutions))
	for _, row := range res.Solutions {
		if err := addLink(links, row); err != nil {
			return nil, err
		}
	}
	return links, nil
}

func chainIDs(chain []*link) []string {
	ids := make([]string, len(chain))
	for k, l := range chain {
		ids[k] = ontology.SessionID(l.iri)
	}
	return ids
}

// storedTurn is a turn as compare-turns found it.
type storedTurn struct {
	turn   Turn
	iri    string // the turn's own IRI
	origin string // what it is: the original it copies, else iri
}

// storedTurns fetches, in one query, every turn the sessions of both
// chains contribute, by session IRI and index. A session on both chains is
// asked for once, with the wider of its two spans.
func (st *Store) storedTurns(ctx context.Context, links map[string]*link, a, b []*link) (map[string]map[int]storedTurn, error) {
	type rng struct{ lo, hi int }
	ranges := map[string]rng{}
	var order []string
	for _, sp := range append(spansOf(a, -1), spansOf(b, -1)...) {
		r, ok := ranges[sp.l.iri]
		switch {
		case !ok:
			order = append(order, sp.l.iri)
			r = rng{sp.lo, sp.hi}
		case r.hi >= 0 && (sp.hi < 0 || sp.hi > r.hi):
			r.hi = sp.hi
		}
		ranges[sp.l.iri] = r
	}
	rows := make([][]rdf.Term, len(order))
	for k, s := range order {
		rows[k] = []rdf.Term{kg.MustIRI(s), kg.Int(ranges[s].lo), kg.Int(ranges[s].hi)}
	}
	q, err := kg.BindTables(qCompareTurns, nil, map[string]kg.Table{"ranges": {Vars: []string{"s", "lo", "hi"}, Rows: rows}})
	if err != nil {
		return nil, fmt.Errorf("compare-turns: %w", err)
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[int]storedTurn, len(order))
	for _, row := range res.Solutions {
		s := row.String("s")
		i, err := row.Int("i")
		if err != nil {
			return nil, fmt.Errorf("%w: turn index: %v", ErrCorrupt, err)
		}
		t := Turn{Index: i, Role: row.String("role"), Content: row.String("content"), Branch: row.String("branch"), ID: row.String("t")}
		if t.Branch == "" {
			t.Branch = branchOrMain(links[s].branch)
		}
		if _, ok := row["created"]; ok {
			if t.Created, err = row.Time("created"); err != nil {
				return nil, fmt.Errorf("%w: turn %d of %s: %v", ErrCorrupt, i, ontology.SessionID(s), err)
			}
		}
		found := storedTurn{turn: t, iri: row.String("t"), origin: row.String("origin")}
		if found.origin == "" {
			found.origin = found.iri
		}
		if out[s] == nil {
			out[s] = map[int]storedTurn{}
		}
		if _, dup := out[s][i]; dup {
			return nil, fmt.Errorf("%w: session %s has two turns at index %d (or one copied from two)", ErrCorrupt, ontology.SessionID(s), i)
		}
		out[s][i] = found
	}
	if anyStructured(a) || anyStructured(b) {
		if err := st.compareStructures(ctx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// compareStructures sets the structured fields of the stored turns, in
// one more request, for chains that hold structured turns.
func (st *Store) compareStructures(ctx context.Context, stored map[string]map[int]storedTurn) error {
	type key struct {
		s string
		i int
	}
	var turns []Turn
	var keys []key
	for s, byIndex := range stored {
		for i, t := range byIndex {
			turns, keys = append(turns, t.turn), append(keys, key{s, i})
		}
	}
	if err := ReadStructures(ctx, st.c, turns); err != nil {
		return err
	}
	for k, t := range turns {
		found := stored[keys[k].s][keys[k].i]
		found.turn = t
		stored[keys[k].s][keys[k].i] = found
	}
	return nil
}

// history is one session's effective history, with what each turn is.
type history struct {
	turns  []Turn
	stored []string // the IRI of each turn as stored
	same   []string // what each turn is: the original a copy copies, else stored
}

// assemble builds the history of chain[0] from the stored turns, checking
// it as Load does.
func assemble(chain []*link, stored map[string]map[int]storedTurn) (history, error) {
	var parts []storedTurn
	for _, sp := range spansOf(chain, -1) {
		for i, t := range stored[sp.l.iri] {
			if i >= sp.lo && (sp.hi < 0 || i < sp.hi) {
				parts = append(parts, t)
			}
		}
	}
	slices.SortFunc(parts, func(x, y storedTurn) int { return x.turn.Index - y.turn.Index })
	self := chain[0]
	want := len(parts)
	if self.hasOwn {
		want = self.at + self.own
	}
	if len(parts) != want {
		return history{}, fmt.Errorf("%w: session %s: %d turns found, the chain says %d", ErrCorrupt, ontology.SessionID(self.iri), len(parts), want)
	}
	h := history{turns: make([]Turn, len(parts)), stored: make([]string, len(parts)), same: make([]string, len(parts))}
	for i, p := range parts {
		if p.turn.Index != i {
			return history{}, fmt.Errorf("%w: session %s: no turn at index %d", ErrCorrupt, ontology.SessionID(self.iri), i)
		}
		h.turns[i], h.stored[i], h.same[i] = p.turn, p.iri, p.origin
	}
	return h, nil
}
