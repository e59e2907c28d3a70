package session

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// The queries of a history's turns, read once.
var (
	qTurns       = query("turns.rq")
	qTurnsLegacy = query("turns-legacy.rq")
	qTurnsIDs    = query("turns-ids.rq")
)

// Load returns the session with the given id and its whole effective
// history: for a fork, each ancestor's share of the prefix, then its own
// turns. Along root ← f1 ← … ← self, each session contributes its own turns
// from its own fork point up to the fork point of the session below it. Load
// makes two SPARQL requests whatever the chain's depth: one finds the whole
// chain (a property path anchored at the session) with the anchors of its
// sessions, one fetches exactly the turns each session contributes (a third
// reads them again, more leniently, only when a stored turn lacks its branch
// label or creation time), and a chain holding structured turns one more
// for their fields (structure.rq), sent while the turns are read (a tail
// names its turns in it, structure-of.rq, once they are read). Values,
// the state as of the last turn, costs none more: the chain query brings
// the values its sessions start with and the shared values, the
// structure query the deltas (a tail needs one more, for the changes
// before it). Each turn gets its ID;
// Anchors holds the session's own anchors and those of its ancestors
// inside the prefix it inherits. LoadTail reads only the end of the
// history.
//
// With RawOnly, Load reads of each turn's structured fields only its raw
// copy and its state changes, in the same request as the turns: two
// requests whatever the depth, structured or not (see RawOnly).
//
// Load does not verify the stored digests of the turns it returns (the
// hash chain, chain.go): that is the job of the operators' check
// (trails-admin check, package admin), which recomputes every digest.
// Detach verifies those of the turns it copies, and an append's compare
// and swap checks the head of the history it extends.
//
// It returns ErrInvalid for an id that is not a canonical UUID, ErrNotFound,
// an *AncestorError (ErrParentMissing) naming a missing ancestor,
// ErrForkCycle when parent links form a cycle (at once, whatever its
// length), ErrForkDepth when the chain has more ancestors than the limit,
// ErrCorrupt when stored turns have gaps or duplicates, or a store error
// wrapping the kg error.
func (st *Store) Load(ctx context.Context, id string, opts ...LoadOption) (_ *Session, err error) {
	ctx, call := telemetry.Start(ctx, "session.Load", id)
	defer func() { call.End(err) }()
	s, _, err := st.loadWindow(ctx, id, window{upTo: -1, rawOnly: loadOptionsOf(opts).rawOnly})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	return s, nil
}

// load assembles session id with the turns below upTo (upTo < 0: all). It
// also returns, for each turn, the IRI of the session that stored it.
func (st *Store) load(ctx context.Context, id string, upTo int) (*Session, []string, error) {
	return st.loadWindow(ctx, id, window{upTo: upTo})
}

// window is the part of a history loadWindow reads: the turns below upTo
// (upTo < 0: all), and of those only the tail when tail is set.
type window struct {
	upTo    int
	tail    Tail
	set     bool // tail is set
	rawOnly bool // RawOnly: the turns' raw copies and state changes, not their structure
}

// loadWindow assembles session id with the turns of w. It also returns,
// for each turn held, the IRI of the session that stored it.
func (st *Store) loadWindow(ctx context.Context, id string, w window) (*Session, []string, error) {
	if err := checkID(id); err != nil {
		return nil, nil, err
	}
	chain, err := st.chain(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 1; ; attempt++ {
		s, owners, err := st.loadChain(ctx, id, chain, w)
		if err == nil || !errors.Is(err, ErrCorrupt) || attempt == maxLoadAttempts {
			return s, owners, err
		}
		// The turns do not agree with the chain: either they are corrupt,
		// or a Delete, Rewind or Detach changed the store between the
		// chain's request and the turns'. The chain read again tells: if
		// it changed, the load starts again from it (a deleted session is
		// then ErrNotFound, not a torn history reported as corruption).
		again, cerr := st.chain(ctx, id)
		if cerr != nil {
			return nil, nil, cerr
		}
		if sameChain(chain, again) {
			return nil, nil, err
		}
		chain = again
	}
}

// maxLoadAttempts bounds how many times a load starts again when the
// store changed under it.
const maxLoadAttempts = 3

// sameChain reports whether two reads of a chain found the same sessions
// holding the same turns.
func sameChain(a, b []*link) bool {
	return slices.EqualFunc(a, b, func(x, y *link) bool {
		return x.iri == y.iri && x.parent == y.parent && x.at == y.at && x.own == y.own && x.hasOwn == y.hasOwn &&
			x.head == y.head && x.rewinds == y.rewinds && x.created.Equal(y.created)
	})
}

// loadChain is loadWindow once the chain is read.
func (st *Store) loadChain(ctx context.Context, id string, chain []*link, w window) (*Session, []string, error) {
	if !st.visible(chain[0].principal) {
		return nil, nil, ErrNotFound
	}
	var err error
	// The chain query fixed the session's turn count; the turns query reads
	// only below it, so that turns a writer appends between the two
	// requests do not show: Load returns the history as of one moment.
	upTo := w.upTo
	if self := chain[0]; self.hasOwn {
		if n := self.at + self.own; upTo < 0 || n < upTo {
			upTo = n
		}
	}
	spans := spansOf(chain, upTo)
	owner := func(i int) *link {
		for _, sp := range spans {
			if i >= sp.lo && (sp.hi < 0 || i < sp.hi) {
				return sp.l
			}
		}
		return chain[0]
	}
	if w.rawOnly {
		return st.loadLean(ctx, id, chain, spans, owner, upTo, w)
	}
	// The structure of a whole history (structure.rq) does not depend on
	// its turns: it is read while they are.
	var ahead *structureAhead
	if !w.set && anyStructured(chain) {
		ahead = st.readStructureAhead(ctx, spans)
		defer ahead.stop()
	}
	var turns []Turn
	from := 0
	switch {
	case w.set && chain[0].hasOwn:
		// The history's length is known: read only the tail.
		turns, from, err = st.readTail(ctx, chain, spans, owner, upTo, w.tail)
	default:
		want := -1 // unknown for a legacy session: whatever is stored
		if chain[0].hasOwn {
			want = upTo
		}
		turns, err = st.readRange(ctx, chain, spans, owner, want)
		if err == nil && w.set {
			// A session stored before trails:ownTurns: its length is
			// known only once read, so its tail is cut here.
			turns, from = w.tail.cut(turns)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	owners, err := stampOwners(turns, from, owner)
	if err != nil {
		return nil, nil, err
	}
	var pre []valueChange // a tail's values before it
	switch {
	case ahead != nil:
		err = ahead.apply(turns)
	case anyStructured(chain):
		err = st.readStructure(ctx, spansFrom(spans, from), turns, from > 0)
		if err == nil && from > 0 {
			pre, err = st.readValues(ctx, spansBelow(spans, from))
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return newLoaded(id, chain, turns, from, pre), owners, nil
}

// stampOwners checks that turns (sorted) are those from index from on
// without a gap, gives each read without its IRI (by turns.rq or
// turns-legacy.rq: not after a rewind) the one its owner gives it, and
// returns, for each, the IRI of the session that stored it.
func stampOwners(turns []Turn, from int, owner func(int) *link) ([]string, error) {
	owners := make([]string, len(turns))
	for k, t := range turns {
		i := from + k
		if t.Index != i {
			return nil, fmt.Errorf("%w: no turn at index %d", ErrCorrupt, i)
		}
		owners[k] = owner(i).iri
		if turns[k].ID == "" {
			turns[k].ID = ontology.TurnIRI(owners[k], i)
		}
	}
	return owners, nil
}

// newLoaded returns session id, loaded with chain (self first): turns
// from index from on, its values with pre (for a tail: the last changes
// before it).
func newLoaded(id string, chain []*link, turns []Turn, from int, pre []valueChange) *Session {
	self := chain[0]
	s := &Session{
		ID:        id,
		Principal: self.principal,
		ParentID:  "",
		ForkedAt:  self.at,
		Branch:    branchOrMain(self.branch),
		Kind:      kindOf(self.kind, self.parent),
		Turns:     turns,
		From:      from,
		Anchors:   visibleAnchors(chain, from+len(turns)),
		depth:     len(chain) - 1,
		gen:       self.rewinds,
		fresh:     len(turns),
	}
	self.life.setOn(s)
	s.App = self.app
	setValues(s, chain, pre)
	if self.parent != "" {
		s.ParentID = ontology.SessionID(self.parent)
	}
	return s
}

// loadLean is loadWindow for RawOnly, once the chain is read: one
// request for the turns of w below upTo (upTo < 0: unknown, a session
// stored before trails:ownTurns), with their raw copies and state
// changes.
func (st *Store) loadLean(ctx context.Context, id string, chain []*link, spans []span, owner func(int) *link, upTo int, w window) (*Session, []string, error) {
	self := chain[0]
	if st.cacheable(chain) {
		s, owners, ok, err := st.loadCached(ctx, id, chain, spans, owner, upTo, w)
		if ok || err != nil {
			return s, owners, err
		}
	}
	var turns []Turn
	var pre []valueChange
	from := 0
	var got leanRange
	var err error
	switch {
	case w.set && self.hasOwn:
		turns, from, pre, err = st.readLeanTail(ctx, chain, spans, owner, upTo, w.tail)
	default:
		want := -1
		if self.hasOwn {
			want = upTo
		}
		got, err = st.readLeanRange(ctx, chain, spans, owner, want, want-1)
		turns = got.turns
		if err == nil && w.set {
			// Stored before trails:ownTurns: its length is known only
			// once read, so its tail is cut here.
			whole := turns
			turns, from = w.tail.cut(whole)
			pre = changesOf(whole[:from])
		}
	}
	if err != nil {
		return nil, nil, err
	}
	owners, err := stampOwners(turns, from, owner)
	if err != nil {
		return nil, nil, err
	}
	s := newLoaded(id, chain, turns, from, pre)
	s.lean = len(turns)
	if !w.set && self.hasOwn {
		// The whole history, with the chain digest of its last turn: its
		// next Persist appends without reading first (leanSeen).
		if sn, ok := leanSeen(s, self.at, got.last, got.hasLast); ok {
			s.seen = sn
		}
	}
	return s, owners, nil
}

// readRange reads the turns of spans with the chain's query
// (turnsQuery), want of them (want < 0: unknown), sorted by index. When
// the strict turns.rq finds fewer than want, a turn lacks a branch label
// or a creation time, and the turns are read again, leniently.
func (st *Store) readRange(ctx context.Context, chain []*link, spans []span, owner func(int) *link, want int) ([]Turn, error) {
	q := turnsQuery(chain)
	turns, err := st.readSpans(ctx, q, spans, owner, want)
	if err == nil && want >= 0 && len(turns) != want && q == qTurns {
		// A turn lacks a branch label or a creation time, which turns.rq
		// requires: read again, taking them as for a legacy turn.
		turns, err = st.readSpans(ctx, qTurnsLegacy, spans, owner, want)
	}
	if err != nil {
		return nil, err
	}
	if want >= 0 && len(turns) != want {
		return nil, fmt.Errorf("%w: %d turns found, the chain says %d", ErrCorrupt, len(turns), want)
	}
	return turns, nil
}

// readSpans reads the turns of spans with query q (turnsQuery), sorted by
// index; owner names the session that wrote a turn, and about n are
// expected (n < 0: unknown).
func (st *Store) readSpans(ctx context.Context, q string, spans []span, owner func(int) *link, n int) ([]Turn, error) {
	if len(spans) == 0 {
		return nil, nil
	}
	bound, err := kg.BindTables(q, nil, map[string]kg.Table{"ranges": rangeTable(spans)})
	if err != nil {
		return nil, err
	}
	tr := turnRows{branchOf: func(i int) string { return branchOrMain(owner(i).branch) }}
	if n >= 0 {
		tr.turns = make([]Turn, 0, n)
	}
	if err := tr.read(ctx, st.c, bound); err != nil {
		return nil, err
	}
	return tr.done()
}

// turnsQuery returns the query for the turns of chain: turns-ids.rq, which
// reads each turn's IRI, when a session of the chain was rewound or is the
// archive of a rewind (there a turn's IRI is not always TurnIRI(owner,
// index)); turns-legacy.rq when a session of the chain has no trails:kind
// (stored before Trails wrote it: its turns may lack a branch or a creation
// time); otherwise turns.rq, whose patterns are all required.
func turnsQuery(chain []*link) string {
	legacy := false
	for _, l := range chain {
		if l.rewinds > 0 || l.archive {
			return qTurnsIDs
		}
		legacy = legacy || l.kind == ""
	}
	if legacy {
		return qTurnsLegacy
	}
	return qTurns
}

// visibleAnchors returns the anchors of a session whose chain (self first)
// is chain and whose history has n turns: its own, and each ancestor's
// whose index is at most the smallest fork point below that ancestor (they
// lie inside the inherited prefix), all at most n. On a name held by
// several, the session nearest the start of chain wins. nil when none.
func visibleAnchors(chain []*link, n int) map[string]Anchor {
	var out map[string]Anchor
	hi := -1
	for k, l := range chain {
		if k > 0 {
			if c := chain[k-1].at; hi < 0 || c < hi {
				hi = c
			}
		}
		for _, a := range l.anchors {
			if a.Index > n || (hi >= 0 && a.Index > hi) {
				continue
			}
			if _, taken := out[a.Name]; taken {
				continue
			}
			if out == nil {
				out = make(map[string]Anchor)
			}
			out[a.Name] = a
		}
	}
	return out
}
