package admin

import (
	"fmt"

	"github.com/trails-kg/trails/session"
)

// The verifier of the hash chains (session.TurnDigest) that Check runs
// over the stored turns and Import over its input's.

// chainSession is what the chain check knows of a session: where it
// hangs. ParentID is "" for a root.
type chainSession struct {
	ParentID string
	ForkedAt int
}

// ChainFault is a stored turn whose trails:digest does not follow from
// its fields and the digest before it (Digest and Want differ), or that
// has no digest at all (Digest is "": stored before the chain existed).
type ChainFault struct {
	Session string // the id of the session whose graph holds the turn
	Index   int
	Turn    string // the turn's IRI
	Digest  string // as stored; "" when the turn has none
	Want    string // what its fields and its predecessor's digest give
}

// String describes the fault in one line.
func (f ChainFault) String() string {
	if f.Digest == "" {
		return fmt.Sprintf("turn %d of %s has no trails:digest (stored before the hash chain)", f.Index, f.Session)
	}
	return fmt.Sprintf("turn %d of %s: stored digest %s, its fields give %s (changed after it was written)", f.Index, f.Session, f.Digest, f.Want)
}

// chainPos is a turn of one session's graph, by index.
type chainPos struct {
	session string
	index   int
}

// chainCheck verifies the hash chains of a set of sessions from their
// stored turns, in time linear in the turns and memory linear in the
// sessions: feed it every stored turn of the sessions, ordered by session
// and then index (turn), then take the faults (finish). The predecessor of
// a fork's first turn of its own lies in an ancestor: the check notes the
// digests it needs of such turns as they pass, and the caller may supply
// those it cannot see (base) before finish.
//
// A link is checked against the predecessor's stored digest (its
// computed one when it has none), so that an edited turn is named alone,
// not with every turn after it. A turn whose predecessor is missing (a gap,
// a missing ancestor) is not checked: other rules report those.
type chainCheck struct {
	sessions map[string]chainSession
	need     map[chainPos]string // predecessor positions of first own turns: digest once seen
	known    map[chainPos]bool
	pending  []*pendingTurn // first own turns of forks, until their predecessor is known
	faults   []ChainFault

	cur       string // session of the last turn fed
	prevIndex int
	prev      string // its digest (stored, or computed when it had none)
	prevOK    bool
	open      *pendingTurn // the pending turn the turns fed since follow, while none of them has a digest
}

type pendingTurn struct {
	session string
	turn    session.Turn
	digest  string
	at      chainPos
	// after are the turns that follow it up to the first with a digest:
	// their predecessors' digests are known only once its own is.
	after []linkedTurn
}

type linkedTurn struct {
	turn   session.Turn
	digest string
}

// newChainCheck returns a check of the chains of sessions (by id).
func newChainCheck(sessions map[string]chainSession) *chainCheck {
	c := &chainCheck{sessions: sessions, need: map[chainPos]string{}, known: map[chainPos]bool{}}
	for id, s := range sessions {
		if s.ForkedAt > 0 {
			if p, ok := c.holder(id, s.ForkedAt-1); ok {
				c.need[p] = ""
			}
		}
	}
	return c
}

// holder returns where the turn at index k of session id's effective
// history is stored: the first session from id up its parent chain whose
// fork point is at most k. It reports false when the chain breaks off
// (missing parent, cycle, too deep) before one is found.
func (c *chainCheck) holder(id string, k int) (chainPos, bool) {
	cur := id
	for range session.MaxForkDepth + 2 {
		s, ok := c.sessions[cur]
		if !ok {
			return chainPos{}, false
		}
		if s.ParentID == "" || s.ForkedAt <= k {
			return chainPos{cur, k}, true
		}
		cur = s.ParentID
	}
	return chainPos{}, false
}

// turn feeds the stored turn t (its ID the turn's IRI) of session id,
// with its stored digest ("" if none).
func (c *chainCheck) turn(id string, t session.Turn, digest string) {
	if id != c.cur {
		c.cur, c.prevOK, c.open = id, false, nil
	}
	s := c.sessions[id]
	var prev string
	var ok bool
	switch {
	case t.Index == 0:
		prev, ok = "", true
	case c.prevOK && c.prevIndex == t.Index-1:
		prev, ok = c.prev, true
	case c.open != nil && c.prevIndex == t.Index-1:
		// It follows a pending turn through turns without digests: checked
		// once the pending turn's predecessor is known (finish).
		c.open.after = append(c.open.after, linkedTurn{t, digest})
		if digest != "" {
			c.open = nil
		}
	case t.Index == s.ForkedAt && s.ParentID != "":
		if p, found := c.holder(s.ParentID, t.Index-1); found {
			c.pending = append(c.pending, &pendingTurn{session: id, turn: t, digest: digest, at: p})
			if digest == "" {
				c.open = c.pending[len(c.pending)-1]
			}
		}
	}
	if ok || digest != "" {
		c.open = nil
	}
	want := ""
	if ok {
		want = session.TurnDigest(prev, t)
		if digest != want {
			c.faults = append(c.faults, ChainFault{Session: id, Index: t.Index, Turn: t.ID, Digest: digest, Want: want})
		}
	}
	c.prevIndex, c.prevOK = t.Index, ok || digest != ""
	c.prev = digest
	if digest == "" {
		c.prev = want
	}
	if p := (chainPos{id, t.Index}); c.prevOK {
		if _, wanted := c.need[p]; wanted {
			c.base(id, t.Index, c.prev)
		}
	}
}

// missing returns the predecessor positions (session id and index) the
// check still needs a digest of: turns it was not fed, stored elsewhere.
func (c *chainCheck) missing() []chainPos {
	var out []chainPos
	for _, t := range c.pending {
		if t != nil && !c.known[t.at] {
			out = append(out, t.at)
		}
	}
	return out
}

// base supplies the digest of turn index of session id.
func (c *chainCheck) base(id string, index int, digest string) {
	p := chainPos{id, index}
	c.need[p] = digest
	c.known[p] = true
}

// finish checks the first own turns of forks (and the turns that follow
// one without a digest) and returns every fault found, in the order the
// turns were fed (forks' first turns last). A pending turn may be the
// predecessor another fork needs: finish goes round until no pending turn
// gets its predecessor.
func (c *chainCheck) finish() []ChainFault {
	for progress := true; progress; {
		progress = false
		for i, t := range c.pending {
			if t == nil || !c.known[t.at] {
				continue
			}
			c.pending[i], progress = nil, true
			prev := c.need[t.at]
			link := func(id string, u session.Turn, digest string) {
				want := session.TurnDigest(prev, u)
				if digest != want {
					c.faults = append(c.faults, ChainFault{Session: id, Index: u.Index, Turn: u.ID, Digest: digest, Want: want})
				}
				prev = digest
				if digest == "" {
					prev = want
				}
				if p := (chainPos{id, u.Index}); !c.known[p] {
					if _, wanted := c.need[p]; wanted {
						c.base(id, u.Index, prev)
					}
				}
			}
			link(t.session, t.turn, t.digest)
			for _, a := range t.after {
				link(t.session, a.turn, a.digest)
			}
		}
	}
	c.pending = nil
	return c.faults
}
