package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
)

// The queries of a tail load, read once.
var (
	qTurnsTail  = query("turns-tail.rq")
	qTurnsSince = query("turns-since.rq")
	qDeleted    = query("deleted.rq")
)

// maxTailRows is the longest tail read by index (turns-tail.rq, one row
// per turn, each found through its graph's index); a longer one is read by
// range, as Load reads a whole history (one row per session of the chain).
const maxTailRows = 1024

// Tail says which end of a history LoadTail (and Replay, with WithTail)
// returns. The tail is always the end of the history, without gaps: of the
// turns with Index < the history's length, those from a first index on.
// Given both fields, the tail starts at the later of the two starts (the
// last Last turns, of them those from the first created at or after
// Since: what ADK's GetRequest with NumRecentEvents and After returns).
type Tail struct {
	// Last, above 0, keeps the last Last turns (all when the history has
	// fewer). 0: no limit by count.
	Last int
	// Since, when not zero, keeps the turns from the first one created at
	// or after Since (inclusive, as ADK's GetRequest.After) to the end: with
	// creation times that grow along the history, as Persist stamps them,
	// exactly the turns created at or after Since. A turn stored without a
	// creation time (data written before Trails stamped turns) counts as
	// older than any Since.
	Since time.Time
}

// check returns ErrInvalid for a tail that asks for nothing or for a
// negative count.
func (t Tail) check() error {
	if t.Last < 0 {
		return fmt.Errorf("%w: Tail.Last %d is negative", ErrInvalid, t.Last)
	}
	if t.Last == 0 && t.Since.IsZero() {
		return fmt.Errorf("%w: a Tail needs Last above 0 or a Since (Load reads the whole history)", ErrInvalid)
	}
	return nil
}

// cut returns the tail t keeps of a whole history turns (sorted, turns[k]
// at index k) and the index of its first turn.
func (t Tail) cut(turns []Turn) ([]Turn, int) {
	from := 0
	if t.Last > 0 && len(turns) > t.Last {
		from = len(turns) - t.Last
	}
	if !t.Since.IsZero() {
		k := from
		for k < len(turns) && (turns[k].Created.IsZero() || turns[k].Created.Before(t.Since)) {
			k++
		}
		from = k
	}
	return turns[from:], from
}

// LoadTail returns session id as Load does, with only the end of its
// effective history that t asks for (Tail): the last turns, or those from
// a time on, which may reach into its ancestors. The Session's header is
// the whole session's (ID, parent, fork point, branch, kind, lifecycle,
// and the anchors of the whole history); Turns holds only the tail, each
// turn with its real Index, and From is the Index of the first (the
// history's length when the tail is empty). A caller tells a tail from a
// whole history by From: 0 means Turns is the whole history (as when Last
// is at least its length).
//
// A tail costs what its turns cost, not the history: the same two
// requests as Load, whatever the depth (a third only when the creation
// times of the turns from Since on do not grow along the history), the
// second asking for the tail's turns only. For a session stored before
// Trails counted turns (no trails:ownTurns), the whole history is read and
// cut.
//
// A tail appends like a whole history: Append gives the next index, and
// Persist stores the new turns after the tail, with the same compare and
// swap and hash chain. Its first Persist reads the history below the tail
// once (the session's head digest covers all its own turns); later ones
// cost what their new turns cost. Fork forks a tail at a point inside it
// (From up to its end), and the fork is a tail too.
//
// It returns ErrInvalid for a bad id or a Tail that asks for nothing
// (Last and Since both zero) or a negative Last, and otherwise the errors
// of Load.
func (st *Store) LoadTail(ctx context.Context, id string, t Tail, opts ...LoadOption) (_ *Session, err error) {
	ctx, call := telemetry.Start(ctx, "session.LoadTail", id)
	defer func() { call.End(err) }()
	if err := t.check(); err != nil {
		return nil, fmt.Errorf("load %s: %w", shownID(id), err)
	}
	s, _, err := st.loadWindow(ctx, id, window{upTo: -1, tail: t, set: true, rawOnly: loadOptionsOf(opts).rawOnly})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", shownID(id), err)
	}
	return s, nil
}

// readTail reads the tail t of a history of n turns whose sessions own
// spans, and returns it with the index of its first turn.
func (st *Store) readTail(ctx context.Context, chain []*link, spans []span, owner func(int) *link, n int, t Tail) ([]Turn, int, error) {
	lo := 0
	if t.Last > 0 && n > t.Last {
		lo = n - t.Last
	}
	if !t.Since.IsZero() {
		turns, err := st.readSince(ctx, clipSpans(spans, lo), owner, t.Since)
		if err != nil {
			return nil, 0, err
		}
		if len(turns) == 0 {
			return nil, n, nil
		}
		lo = turns[0].Index
		if len(turns) == n-lo && turns[len(turns)-1].Index == n-1 {
			return turns, lo, nil // the indices are distinct and in [lo, n): all there
		}
		// Creation times that do not grow along the history, or a turn
		// from lo on lacking its time: read the tail from lo by index.
	}
	var turns []Turn
	var err error
	if n-lo <= maxTailRows {
		turns, err = st.readIndices(ctx, lo, n, owner)
	} else {
		turns, err = st.readRange(ctx, chain, clipSpans(spans, lo), owner, n-lo)
	}
	if err != nil {
		return nil, 0, err
	}
	if len(turns) != n-lo {
		return nil, 0, fmt.Errorf("%w: %d turns found from index %d, the chain says %d", ErrCorrupt, len(turns), lo, n-lo)
	}
	return turns, lo, nil
}

// readIndices reads the turns with lo <= Index < hi by index
// (turns-tail.rq).
func (st *Store) readIndices(ctx context.Context, lo, hi int, owner func(int) *link) ([]Turn, error) {
	if hi <= lo {
		return nil, nil
	}
	rows := make([][]rdf.Term, 0, hi-lo)
	for i := lo; i < hi; i++ {
		rows = append(rows, []rdf.Term{kg.MustIRI(owner(i).iri), kg.Int(i), kg.Int(owner(i).rewinds)})
	}
	q, err := kg.BindTables(qTurnsTail, nil, map[string]kg.Table{"turns": {Vars: []string{"s", "i", "gen"}, Rows: rows}})
	if err != nil {
		return nil, fmt.Errorf("turns-tail: %w", err)
	}
	return st.readTurnRows(ctx, q, owner, hi-lo)
}

// readSince reads the turns of spans created at or after since
// (turns-since.rq).
func (st *Store) readSince(ctx context.Context, spans []span, owner func(int) *link, since time.Time) ([]Turn, error) {
	if len(spans) == 0 {
		return nil, nil
	}
	q, err := kg.BindTables(qTurnsSince, kg.Params{"since": kg.DateTime(since.UTC())},
		map[string]kg.Table{"ranges": rangeTable(spans)})
	if err != nil {
		return nil, fmt.Errorf("turns-since: %w", err)
	}
	return st.readTurnRows(ctx, q, owner, 0)
}

// readTurnRows runs turn query q (bound) and returns its turns sorted by
// index, about n of them.
func (st *Store) readTurnRows(ctx context.Context, q string, owner func(int) *link, n int) ([]Turn, error) {
	tr := turnRows{turns: make([]Turn, 0, n), branchOf: func(i int) string { return branchOrMain(owner(i).branch) }}
	if err := tr.read(ctx, st.c, q); err != nil {
		return nil, err
	}
	return tr.done()
}

// clipSpans returns spans without the indices below lo.
func clipSpans(spans []span, lo int) []span {
	var out []span
	for _, sp := range spans {
		if sp.hi >= 0 && sp.hi <= lo {
			continue
		}
		sp.lo = max(sp.lo, lo)
		out = append(out, sp)
	}
	return out
}

// persistTail is Persist of a session holding a tail of its history
// (From > 0).
func (st *Store) persistTail(ctx context.Context, s *Session) error {
	done, err := st.appendTailSeen(ctx, s)
	if err != nil {
		return fmt.Errorf("persist %s: %w", s.ID, err)
	}
	if done {
		return nil
	}
	return st.persistWhole(ctx, s)
}

// appendTailSeen is appendSeen for a tail: when this value persisted
// before, it appends the new turns with no read, going on from the head
// digest's hash state and the chain digest it kept. It reports false (and
// changes nothing in the store) when that does not apply or the store
// moved on; persistWhole then takes the full path.
func (st *Store) appendTailSeen(ctx context.Context, s *Session) (bool, error) {
	sn := s.seen
	start := s.ForkedAt + sn.own // the index of the first turn not stored
	end := s.From + len(s.Turns)
	if !sn.ok || sn.state == nil || start >= end || start < s.From {
		return false, nil
	}
	dropTemps(s, start)
	if err := s.validate(start); err != nil {
		return false, err
	}
	if !st.visible(s.Principal) {
		return false, fmt.Errorf("%w: the session's principal is %q, the store's %q", ErrForbidden, s.Principal, st.scope)
	}
	if sn.own > 0 && start-1 >= s.From && !sameTurn(s.Turns[start-1-s.From], sn.last) {
		return false, nil // the caller changed stored turns: the full path says how
	}
	more := s.Turns[start-s.From:]
	for i := range more {
		if more[i].Created.IsZero() {
			more[i].Created = st.now()
		}
		more[i].ID = s.turnID(start + i)
	}
	if err := ownBranch(s, more); err != nil {
		return false, err
	}
	if err := st.checkStaging(more); err != nil {
		return false, err
	}
	if !callsFound(s.Turns, start-s.From) {
		return false, nil // a tool result answers a call before the tail: the full path links it
	}
	s.seen = seen{}
	all, state, err := digestOn(sn.state, more)
	if err != nil {
		return false, nil
	}
	g := sessionIRI(s.ID)
	chain := chainDigests(sn.chain, more)
	var d kg.Data
	sg := st.newStaging()
	for i, t := range more {
		addTurn(&d, sg, g, t, chain[i])
	}
	linkResults(&d, g, s.Turns, start-s.From)
	own := sn.own + len(more)
	addHead(&d, g, own, all)
	// With an ack (Fuseki, Oxigraph), a success answer says it applied,
	// whatever a Delete does before a question could be asked (issue 22,
	// seeds 498168231296 and 498168231303), as sendAppend's.
	w, err := st.appendWrite(s, &d, sg, sn.own, sn.head, sn.chain, more, all, chain[len(chain)-1])
	if err != nil {
		return false, err
	}
	last := more[len(more)-1]
	ok, err := st.applyWrite(ctx, w, sg)
	if ok {
		s.seen = seen{ok: true, own: own, head: all, state: state, last: last, chain: chain[len(chain)-1]}
		s.replaced = seen{ok: true, own: sn.own}
		if sn.own > 0 {
			s.replaced.chain = sn.chain
		}
	}
	return ok, err
}

// persistWhole persists tail s through the full path: it reads the
// history below the tail (of s, or of its parent for a fork not stored
// yet), persists the whole history, and leaves s a tail again, with what
// Persist learned (s.seen) for the next append.
func (st *Store) persistWhole(ctx context.Context, s *Session) error {
	if err := st.readLeanStructure(ctx, s); err != nil { // the tail's turns, read with RawOnly
		return fmt.Errorf("persist %s: %w", s.ID, err)
	}
	from := s.From
	below, _, err := st.load(ctx, s.ID, from)
	if errors.Is(err, ErrNotFound) {
		// A session deleted since this value was read answers as Persist
		// does for a late write, before its parent (deleted with it by a
		// Cascade) is looked for (issue 22).
		if gone, derr := st.wasDeleted(ctx, s.ID); derr != nil {
			return fmt.Errorf("persist %s: %w", s.ID, derr)
		} else if gone {
			return fmt.Errorf("persist %s: %w: the session was deleted; a late write does not bring it back", s.ID, ErrConflict)
		}
	}
	if errors.Is(err, ErrNotFound) && s.ParentID != "" && from <= s.ForkedAt {
		below, _, err = st.load(ctx, s.ParentID, from) // a new fork: what lies below the tail is its parent's
		if errors.Is(err, ErrNotFound) {
			err = &AncestorError{Session: s.ID, Missing: s.ParentID} // as Persist of a whole fork says
		}
	}
	if err != nil {
		return fmt.Errorf("persist %s: the history below its tail: %w", s.ID, err)
	}
	if len(below.Turns) != from {
		return fmt.Errorf("persist %s: %w: the store holds %d turns below the tail, which starts at %d; load it again", s.ID, ErrConflict, len(below.Turns), from)
	}
	tail := s.Turns
	whole := *s
	whole.Turns = append(below.Turns, tail...)
	whole.From, whole.fresh, whole.seen = 0, from+s.fresh, seen{}
	err = st.persist(ctx, &whole)
	copy(tail, whole.Turns[from:]) // stamped by Persist
	whole.Turns, whole.From, whole.fresh = tail, from, s.fresh
	*s = whole
	return err
}

// wasDeleted reports whether session id was deleted (deleted.rq).
func (st *Store) wasDeleted(ctx context.Context, id string) (bool, error) {
	q, err := bind("deleted", qDeleted, kg.Params{"s": sessionIRI(id)})
	if err != nil {
		return false, err
	}
	return st.c.Ask(ctx, q)
}
