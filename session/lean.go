package session

import (
	"context"
	"fmt"
	"slices"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// A load that reads only what a caller returns (RawOnly): the turns'
// plain fields, raw copies and state changes in one request after the
// chain query, without the typed structure (parts, model invocation,
// author, metadata) that structure.rq reads.

// The queries of a RawOnly load, read once.
var (
	qTurnsLean     = query("turns-lean.rq")
	qTurnsLeanIDs  = query("turns-lean-ids.rq")
	qTurnsLeanTail = query("turns-lean-tail.rq")
)

// LoadOption qualifies a Load or LoadTail: what it reads of each turn.
type LoadOption func(*loadOptions)

// loadOptions are what the LoadOptions of a load asked for.
type loadOptions struct {
	rawOnly bool
}

// RawOnly makes Load and LoadTail read, of each turn's structured
// fields, only its raw copy (Structure.Raw) and its state changes
// (Structure.Delta, from which Values is computed as in a full load): an
// adapter that rebuilds its framework's events from their raw copies
// (package adk does) needs no more, and the parts, model invocation,
// author and metadata of a long history are most of what a full load
// receives. Whatever the chain's depth, Load then makes two requests
// (the chain query, then one for the turns: turns-lean.rq) and LoadTail
// two as well for a tail of Last turns (turns-lean-tail.rq, which also
// brings the values before the tail); a tail with Since takes one more,
// to find its first turn, as does a tail of more than 1,024 turns.
//
// A turn read so holds, in Structure, its Raw and Delta only (nil when it
// has neither). The value appends and persists as any other: Persist
// reads the missing fields itself when it needs them (LoadStructure: on
// its full path, which hashes every turn, and when a new tool result
// answers a call made in a turn read so), and a whole history loaded so
// appends its next turns in one request, with no read first, as after an
// earlier Persist by the same value (the load read the chain digest of
// its last turn). Session.Fork of such a value gives a fork whose
// inherited turns are read the same way when it is first persisted.
// LoadStructure reads them on demand.
func RawOnly() LoadOption {
	return func(o *loadOptions) { o.rawOnly = true }
}

// loadOptionsOf returns what opts ask for.
func loadOptionsOf(opts []LoadOption) loadOptions {
	var o loadOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// LoadStructure reads the structured fields that a Load or LoadTail with
// RawOnly left out of the turns of s (those it loaded; turns appended
// since hold theirs), in one request, and sets them: s is then as a full
// load would have returned it. Nothing is read for a value loaded
// without RawOnly. On an error s is left as it was.
//
// It returns ErrInvalid for a nil session, ErrForbidden for a session of
// another principal than a scoped Store's, ErrCorrupt for a structured
// field it cannot read, or a store error wrapping the kg error.
func (st *Store) LoadStructure(ctx context.Context, s *Session) (err error) {
	ctx, call := telemetry.Start(ctx, "session.LoadStructure", s.id())
	defer func() { call.End(err) }()
	if s == nil {
		return fmt.Errorf("load structure: %w: nil session", ErrInvalid)
	}
	if err := st.readLeanStructure(ctx, s); err != nil {
		return fmt.Errorf("load structure %s: %w", s.ID, err)
	}
	return nil
}

// readLeanStructure is LoadStructure.
func (st *Store) readLeanStructure(ctx context.Context, s *Session) error {
	n := min(s.lean, len(s.Turns))
	if n <= 0 {
		s.lean = 0
		return nil
	}
	if !st.visible(s.Principal) {
		return fmt.Errorf("%w: the session's principal is %q, the store's %q", ErrForbidden, s.Principal, st.scope)
	}
	turns := slices.Clone(s.Turns[:n])
	for _, t := range turns {
		if _, err := kg.IRI(t.ID); err != nil {
			return fmt.Errorf("%w: turn %d has no ID to read its structure by", ErrInvalid, t.Index)
		}
	}
	if err := ReadStructures(ctx, st.c, turns); err != nil {
		return err
	}
	for k := range turns {
		s.Turns[k].Structure = turns[k].Structure
	}
	s.lean = 0
	if sn := &s.seen; sn.ok && sn.own > 0 {
		if k := s.ForkedAt + sn.own - 1 - s.From; k >= 0 && k < n {
			sn.last = s.Turns[k] // as held now, for the fast path's comparison
		}
	}
	return nil
}

// leanForPersist reads the structure of the turns s holds without it
// (RawOnly) when Persist cannot do without it, before it writes the
// turns of s from position from (of s.Turns) on: always on the full path
// (fast false), which computes the chain digest of every turn; on the
// fast path only when a new tool result answers a call that is not found
// among the turns held with their parts (linkResults must find it).
func (st *Store) leanForPersist(ctx context.Context, s *Session, from int, fast bool) error {
	if s.lean <= 0 {
		return nil
	}
	if fast && callsFound(s.Turns, max(from, 0)) {
		return nil
	}
	return st.readLeanStructure(ctx, s)
}

// leanRows gathers the rows of the RawOnly queries: turn rows (as
// turnRows, with ?rawFormat ?raw when the turn has a raw copy), state
// change rows (?c, by ?i), the chain digest of the history's last turn
// (?lastDigest) and, for a tail, the last change of each key before it
// (?pkey, by ?pi).
type leanRows struct {
	tr      turnRows
	changes []leanChange
	pre     []valueChange
	digests map[int]string // the chain digests read (?lastDigest), by index (?li)
}

// leanChange is one row of a state change, kept until the turns are
// sorted.
type leanChange struct {
	i   int
	c   string
	row kg.Solution
}

func (r *leanRows) start() {
	r.tr.start()
	r.changes, r.pre, r.digests = r.changes[:0], nil, nil
}

// read runs q (bound) on c and gathers its rows.
func (r *leanRows) read(ctx context.Context, c Querier, q string) error {
	return readRows(ctx, c, q, r.start, r.add)
}

// add reads one row.
func (r *leanRows) add(row kg.Solution) error {
	if err := staleRow(row); err != nil {
		return err
	}
	if _, ok := row["lastDigest"]; ok {
		i, err := row.Int("li")
		if err != nil {
			return fmt.Errorf("%w: chain digest of turn %s", ErrCorrupt, row.String("li"))
		}
		if r.digests == nil {
			r.digests = map[int]string{}
		}
		r.digests[i] = row.String("lastDigest")
		return nil
	}
	if _, ok := row["pkey"]; ok {
		i, err := row.Int("pi")
		if err != nil || i < 0 {
			return fmt.Errorf("%w: state change of turn %s", ErrCorrupt, row.String("pi"))
		}
		c, err := readValueChange(row, "p", 2*i+1)
		if err != nil {
			return err
		}
		r.pre = append(r.pre, c)
		return nil
	}
	if _, ok := row["c"]; ok {
		i, err := row.Int("i")
		if err != nil {
			return fmt.Errorf("%w: turn index: %v", ErrCorrupt, err)
		}
		r.changes = append(r.changes, leanChange{i: i, c: row.String("c"), row: row})
		return nil
	}
	if err := r.tr.add(row); err != nil {
		return err
	}
	f, hasFormat := row["rawFormat"]
	d, hasData := row["raw"]
	if !hasFormat && !hasData {
		return nil
	}
	t := &r.tr.turns[len(r.tr.turns)-1]
	x := &Structure{Raw: &Raw{}}
	var err error
	if x.Raw.Format, err = (stored{t, ontology.RawFormat, f}).text(ontology.XSDString); err != nil {
		return err
	}
	if x.Raw.Data, err = (stored{t, ontology.Raw, d}).bytes(); err != nil {
		return err
	}
	t.Structure = x
	return nil
}

// done returns the turns sorted by index, each with its state changes
// (Structure.Delta); two turns at one index are ErrCorrupt.
func (r *leanRows) done() ([]Turn, error) {
	turns, err := r.tr.done()
	if err != nil || len(r.changes) == 0 {
		return turns, err
	}
	at := make(map[int]int, len(turns))
	for k, t := range turns {
		at[t.Index] = k
	}
	sr := structureRows{turns: turns}
	for _, ch := range r.changes {
		k, ok := at[ch.i]
		if !ok {
			continue // a turn outside the range read
		}
		for _, f := range [...]struct{ col, p string }{{"key", ontology.Key}, {"value", ontology.Value}, {"removed", ontology.Removed}} {
			if o, ok := ch.row[f.col]; ok {
				if err := sr.addChange(k, ch.c, stored{&turns[k], f.p, o}); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := sr.doneChanges(); err != nil {
		return nil, err
	}
	return turns, nil
}

// rangeTable is the $ranges table of spans.
func rangeTable(spans []span) kg.Table {
	rows := make([][]rdf.Term, len(spans))
	for k, sp := range spans {
		rows[k] = []rdf.Term{kg.MustIRI(sp.l.iri), kg.Int(sp.lo), kg.Int(sp.hi), kg.Int(sp.l.rewinds)}
	}
	return kg.Table{Vars: []string{"s", "lo", "hi", "gen"}, Rows: rows}
}

// leanRange is what readLeanRange read.
type leanRange struct {
	turns   []Turn
	last    string // the chain digest of the turn at index n-1
	hasLast bool
	digests map[int]string // the chain digests read, by index: last's and also's
}

// readLeanRange reads the turns of spans with their raw copies and state
// changes (turns-lean.rq), want of them (want < 0: unknown), sorted by
// index, and the chain digest of the turn at index last (none when last
// < 0) and of those at the indices also. Like readRange, it reads again
// with the lenient query (turns-lean-ids.rq) when the strict one finds
// fewer turns than want.
func (st *Store) readLeanRange(ctx context.Context, chain []*link, spans []span, owner func(int) *link, want, last int, also ...int) (leanRange, error) {
	q := qTurnsLean
	if turnsQuery(chain) != qTurns {
		q = qTurnsLeanIDs
	}
	got, err := st.readLeanSpans(ctx, q, spans, owner, want, last, also)
	if err == nil && want >= 0 && len(got.turns) != want && q == qTurnsLean {
		got, err = st.readLeanSpans(ctx, qTurnsLeanIDs, spans, owner, want, last, also)
	}
	if err != nil {
		return leanRange{}, err
	}
	if want >= 0 && len(got.turns) != want {
		return leanRange{}, fmt.Errorf("%w: %d turns found, the chain says %d", ErrCorrupt, len(got.turns), want)
	}
	return got, nil
}

// readLeanSpans is one query of readLeanRange.
func (st *Store) readLeanSpans(ctx context.Context, q string, spans []span, owner func(int) *link, want, last int, also []int) (leanRange, error) {
	if len(spans) == 0 {
		return leanRange{}, nil
	}
	lt := kg.Table{Vars: []string{"ls", "li"}}
	for _, i := range append([]int{last}, also...) {
		if i >= 0 {
			lt.Rows = append(lt.Rows, []rdf.Term{kg.MustIRI(owner(i).iri), kg.Int(i)})
		}
	}
	bound, err := kg.BindTables(q, nil, map[string]kg.Table{"ranges": rangeTable(spans), "last": lt})
	if err != nil {
		return leanRange{}, err
	}
	r := leanRows{tr: turnRows{branchOf: func(i int) string { return branchOrMain(owner(i).branch) }}}
	if want >= 0 {
		r.tr.turns = make([]Turn, 0, want)
	}
	if err := r.read(ctx, st.c, bound); err != nil {
		return leanRange{}, err
	}
	turns, err := r.done()
	if err != nil {
		return leanRange{}, err
	}
	got := leanRange{turns: turns, digests: r.digests}
	got.last, got.hasLast = r.digests[last]
	return got, nil
}

// readLeanIndices reads the turns with lo <= Index < hi by index, with
// their raw copies and state changes, and the last change of each key
// among the turns of below (the history before lo), in one request
// (turns-lean-tail.rq).
func (st *Store) readLeanIndices(ctx context.Context, lo, hi int, owner func(int) *link, below []span) ([]Turn, []valueChange, error) {
	rows := make([][]rdf.Term, 0, max(hi-lo, 0))
	for i := lo; i < hi; i++ {
		rows = append(rows, []rdf.Term{kg.MustIRI(owner(i).iri), kg.Int(i), kg.Int(owner(i).rewinds)})
	}
	q, err := kg.BindTables(qTurnsLeanTail, nil, map[string]kg.Table{
		"turns": {Vars: []string{"s", "i", "gen"}, Rows: rows},
		"below": rangeTable(below),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("turns-lean-tail: %w", err)
	}
	r := leanRows{tr: turnRows{turns: make([]Turn, 0, len(rows)), branchOf: func(i int) string { return branchOrMain(owner(i).branch) }}}
	if err := r.read(ctx, st.c, q); err != nil {
		return nil, nil, err
	}
	turns, err := r.done()
	if err != nil {
		return nil, nil, err
	}
	return turns, r.pre, nil
}

// readLeanTail is readTail for RawOnly: it returns the tail t of a
// history of n turns whose sessions own spans, the index of its first
// turn, and the last change of each key before it.
func (st *Store) readLeanTail(ctx context.Context, chain []*link, spans []span, owner func(int) *link, n int, t Tail) ([]Turn, int, []valueChange, error) {
	lo := 0
	if t.Last > 0 && n > t.Last {
		lo = n - t.Last
	}
	if !t.Since.IsZero() {
		// One request more: the first turn created at or after Since.
		turns, err := st.readSince(ctx, clipSpans(spans, lo), owner, t.Since)
		if err != nil {
			return nil, 0, nil, err
		}
		lo = n // none: an empty tail, with the values of the whole history
		if len(turns) > 0 {
			lo = turns[0].Index
		}
	}
	if n-lo > maxTailRows {
		got, err := st.readLeanRange(ctx, chain, clipSpans(spans, lo), owner, n-lo, -1)
		if err != nil {
			return nil, 0, nil, err
		}
		pre, err := st.readValues(ctx, spansBelow(spans, lo))
		return got.turns, lo, pre, err
	}
	turns, pre, err := st.readLeanIndices(ctx, lo, n, owner, spansBelow(spans, lo))
	if err != nil {
		return nil, 0, nil, err
	}
	if len(turns) != n-lo {
		return nil, 0, nil, fmt.Errorf("%w: %d turns found from index %d, the chain says %d", ErrCorrupt, len(turns), lo, n-lo)
	}
	return turns, lo, pre, nil
}

// changesOf returns the changes the turns make, at their positions (for
// the values before a tail cut from a whole history).
func changesOf(turns []Turn) []valueChange {
	var out []valueChange
	for _, t := range turns {
		for k, v := range deltaOf(t) {
			out = append(out, valueChange{pos: 2*t.Index + 1, key: k, value: v})
		}
	}
	slices.SortStableFunc(out, func(a, b valueChange) int { return a.pos - b.pos })
	return out
}

// leanSeen returns what a whole history loaded with RawOnly lets its
// first Persist know without a read (see seen): its own turns (as held:
// from index at on) and their head digest, and the chain digest of its
// last turn, read with it; ok is false when that digest is not stored
// (a turn written before the hash chain).
func leanSeen(s *Session, at int, last string, hasLast bool) (seen, bool) {
	if len(s.Turns) > 0 && !hasLast {
		return seen{}, false
	}
	_, head, state := digestsState(s.Turns[at:], 0)
	return seenAfter(s, head, state, last), true
}
