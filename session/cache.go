package session

import (
	"container/list"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/trails-kg/trails/internal/telemetry"
)

// Cache keeps the turns that RawOnly loads read, by session, so that the
// next RawOnly Load or LoadTail of a history whose stored turns have not
// changed reads only its chain (one request), and one that grew since
// reads only the new turns (two requests, the second as small as they
// are). An agent framework that reads its whole session before every
// step (ADK's runner calls Get at each Run) then pays for what changed,
// not for the history. Safe for concurrent use; one Cache may serve
// several Stores of one dataset (never of two datasets: it is keyed by
// session IRI).
//
// What it holds is checked against the store at each use, by the chain
// query every Load makes anyway: a session's cached turns are used only
// while its creation time, rewind count and fork point are those they
// were read with, and its turn count and head digest (trails:headDigest,
// which covers every own turn) are those they were read with; when the
// session only grew, the turns read since must continue the cached ones
// (the stored chain digest of the last cached turn is read with them and
// compared). So a rewind, a detach, a re-chain or anything that changes a
// stored turn with its digests makes the cache read the store again; a
// deleted session is not found (the chain query says so first). An edit of the
// store's triples that leaves the digests as they were is not seen (nor
// by a Load without a cache, which does not verify digests: trails-admin
// check does).
//
// Loads without RawOnly neither read nor fill it.
type Cache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List               // of *cached, most recently used first
	bySes map[string]*list.Element // by session IRI
}

// NewCache returns a cache that holds at most about maxBytes of turns
// (their contents, raw copies and state changes), dropping the least
// recently used session's first; maxBytes <= 0 holds nothing.
func NewCache(maxBytes int) *Cache {
	return &Cache{max: maxBytes, order: list.New(), bySes: map[string]*list.Element{}}
}

// WithCache makes the Store's RawOnly loads keep what they read in c and
// read from it what has not changed (see Cache). Off by default.
func WithCache(c *Cache) StoreOption {
	return func(st *Store) { st.cache = c }
}

// cached is one session's turns in a Cache: those with lo <= Index < lo +
// len(turns), as a RawOnly load returned them, with what they were read
// with.
type cached struct {
	iri     string
	created time.Time
	rewinds int
	at      int
	own     int    // the session's turn count then
	head    string // and its head digest
	lo      int
	turns   []Turn
	last    string // the chain digest of the last of turns, "" if not read
	size    int
}

// hi is the index after the cached turns.
func (e *cached) hi() int { return e.lo + len(e.turns) }

// fits reports whether e was read from session l as it is now: same
// session (creation time, rewinds, fork point) and same own turns.
func (e *cached) fits(l *link) bool {
	return e.same(l) && e.own == l.own && e.head == l.head
}

// same reports whether e was read from session l in its present
// generation (it may have grown since).
func (e *cached) same(l *link) bool {
	return l.hasOwn && l.head != "" && e.created.Equal(l.created) && e.rewinds == l.rewinds && e.at == l.at && e.own <= l.own
}

// get returns the entry of session iri (nil if none), marking it used.
func (c *Cache) get(iri string) *cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.bySes[iri]
	if el == nil {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*cached)
}

// put stores e, replacing the entry of its session, and drops the least
// recently used entries past the cache's size.
func (c *Cache) put(e *cached) {
	e.size = 0
	for _, t := range e.turns {
		e.size += turnSize(t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.bySes[e.iri]; old != nil {
		c.size -= old.Value.(*cached).size
		c.order.Remove(old)
		delete(c.bySes, e.iri)
	}
	if e.size > c.max {
		return
	}
	c.bySes[e.iri] = c.order.PushFront(e)
	c.size += e.size
	for c.size > c.max {
		el := c.order.Back()
		old := el.Value.(*cached)
		c.order.Remove(el)
		delete(c.bySes, old.iri)
		c.size -= old.size
	}
}

// turnSize is what turn t costs a Cache, about.
func turnSize(t Turn) int {
	n := 160 + len(t.Role) + len(t.Content) + len(t.Branch) + len(t.ID)
	if x := t.Structure; x != nil {
		if x.Raw != nil {
			n += len(x.Raw.Format) + len(x.Raw.Data)
		}
		for k, v := range x.Delta {
			n += 48 + len(k) + len(v)
		}
	}
	return n
}

// cloneLean returns a copy of turns read by a RawOnly load that shares
// nothing a caller may change with them.
func cloneLean(turns []Turn) []Turn {
	out := slices.Clone(turns)
	for k, t := range out {
		x := t.Structure
		if x == nil {
			continue
		}
		y := &Structure{}
		if x.Raw != nil {
			y.Raw = &Raw{Format: x.Raw.Format, Data: slices.Clone(x.Raw.Data)}
		}
		if x.Delta != nil {
			y.Delta = make(map[string]json.RawMessage, len(x.Delta))
			for k, v := range x.Delta {
				y.Delta[k] = slices.Clone(v)
			}
		}
		out[k].Structure = y
	}
	return out
}

// loadCached is loadLean with a Cache: it assembles the turns of spans
// (the whole history below upTo, every session of the chain holding
// trails:ownTurns) from the cache and, in one request, what the cache
// lacks; then it keeps what it read. A tail (w.set) is cut from the
// whole, and is served so only when the cache lacks at most the newest
// turns of the session itself (else ok is false: the caller reads the
// tail alone, and the cache is left as it was). ok is false too when
// the turns read do not continue the cached ones.
func (st *Store) loadCached(ctx context.Context, id string, chain []*link, spans []span, owner func(int) *link, upTo int, w window) (s *Session, owners []string, ok bool, err error) {
	c := st.cache
	turns := make([]Turn, upTo)
	var (
		missing []span
		want    int
		also    []int              // the index of the last cached turn of a session that grew
		check   = map[int]string{} // and its chain digest, as cached
		last    string             // the chain digest of turn upTo-1, when cached
	)
	for k, sp := range spans {
		e := c.get(sp.l.iri)
		switch {
		case e != nil && e.fits(sp.l) && e.lo <= sp.lo && e.hi() >= sp.hi:
			copy(turns[sp.lo:sp.hi], e.turns[sp.lo-e.lo:sp.hi-e.lo])
			if sp.hi == upTo && e.hi() == upTo {
				last = e.last
			}
			telemetry.CacheLookup(ctx, true)
			continue
		case k == 0 && e != nil && e.same(sp.l) && e.lo <= sp.lo && e.hi() > sp.lo && e.hi() < sp.hi && e.last != "":
			// The session grew since: read only its new turns.
			telemetry.CacheLookup(ctx, true)
			copy(turns[sp.lo:e.hi()], e.turns[sp.lo-e.lo:])
			also = append(also, e.hi()-1)
			check[e.hi()-1] = e.last
			sp.lo = e.hi()
		case w.set:
			telemetry.CacheLookup(ctx, false)
			return nil, nil, false, nil // the tail alone costs less than what is missing
		default:
			telemetry.CacheLookup(ctx, false)
		}
		missing = append(missing, sp)
		want += sp.hi - sp.lo
	}
	var got leanRange
	if len(missing) > 0 {
		if got, err = st.readLeanRange(ctx, chain, missing, owner, want, upTo-1, also...); err != nil {
			return nil, nil, false, err
		}
		for i, d := range check {
			if got.digests[i] != d {
				return nil, nil, false, nil // not the turns cached: read them all
			}
		}
		for _, t := range got.turns {
			turns[t.Index] = t // in range: readLeanRange checked the count, stampOwners the order
		}
		if got.hasLast {
			last = got.last
		}
	}
	if owners, err = stampOwners(turns, 0, owner); err != nil {
		return nil, nil, false, err
	}
	for _, m := range missing { // keep what was read, with what was cached before it
		sp := spans[slices.IndexFunc(spans, func(sp span) bool { return sp.l == m.l })]
		if sp.l.head == "" {
			continue
		}
		e := &cached{iri: sp.l.iri, created: sp.l.created, rewinds: sp.l.rewinds, at: sp.l.at, own: sp.l.own, head: sp.l.head,
			lo: sp.lo, turns: cloneLean(turns[sp.lo:sp.hi])}
		if sp.hi == upTo {
			e.last = last
		}
		c.put(e)
	}
	// turns shares the cache's memory: only the turns returned are
	// copied, not the whole history a tail is cut from (the changes
	// before a tail are only read: Values holds copies, applyDelta).
	out, from := turns, 0
	var pre []valueChange
	if w.set {
		out, from = w.tail.cut(turns)
		pre = changesOf(turns[:from])
		owners = owners[from:]
	}
	out = cloneLean(out)
	s = newLoaded(id, chain, out, from, pre)
	s.lean = len(out)
	if !w.set {
		if sn, ok := leanSeen(s, chain[0].at, last, last != ""); ok {
			s.seen = sn
		}
	}
	return s, owners, true, nil
}

// cacheable reports whether a RawOnly load of chain may use st's Cache:
// there is one, and every session of the chain holds its turn count.
func (st *Store) cacheable(chain []*link) bool {
	if st.cache == nil {
		return false
	}
	for _, l := range chain {
		if !l.hasOwn {
			return false
		}
	}
	return true
}
