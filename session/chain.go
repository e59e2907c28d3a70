package session

import (
	"crypto/sha256"
	"fmt"
	"io"
	"strconv"
)

// The hash chain of turns. Every turn Persist writes carries
// trails:digest, a SHA-256 over the digest of the turn before it in the
// session's effective history (for a fork's first turn of its own, the
// parent's turn at ForkedAt-1, wherever in the parent's chain that turn
// is stored) and the turn's own fields. A digest thus stands for the whole
// history up to its turn: a new fork proves the prefix its author saw by
// naming one digest, an append's compare and swap checks the chain head,
// and Check names every turn whose stored fields no longer give its digest.
//
// The digest is "sha256:" and the lowercase hex of SHA-256 over, in order,
// each as the decimal length in bytes, ":" and the bytes: the tag
// "trails-turn/1", the previous digest ("" before the first turn), the
// index in decimal, the role, the content, the creation time as RFC 3339
// in UTC with as many fractional digits as it needs (Go's
// time.RFC3339Nano), and the branch label. Detach copies a turn with its
// digest, Rewind moves it untouched, so neither breaks the chain.

// chainTag starts the input of every turn digest: the version of the
// recipe above.
const chainTag = "trails-turn/1"

// chainDigest returns the trails:digest of turn t when the turn before it
// in its effective history has digest prev ("" when t is the first).
func chainDigest(prev string, t Turn) string {
	h := sha256.New()
	field(h, chainTag)
	field(h, prev)
	writeTurn(h, t) // index, role, content, created
	field(h, t.Branch)
	return sum(h)
}

// TurnDigest returns the trails:digest of turn t (its Index, Role,
// Content, Created and Branch) when the turn before it in its effective
// history has digest prev ("" when t is the first): what Persist writes
// with t, and what an auditor recomputes to verify a chain outside Trails.
func TurnDigest(prev string, t Turn) string { return chainDigest(prev, t) }

// chainHead returns the digest of the last of turns, the chain going on
// from prev; prev itself when turns is empty.
func chainHead(prev string, turns []Turn) string {
	for _, t := range turns {
		prev = chainDigest(prev, t)
	}
	return prev
}

// chainDigests returns the digests of turns, the chain going on from prev.
func chainDigests(prev string, turns []Turn) []string {
	out := make([]string, len(turns))
	for i, t := range turns {
		prev = chainDigest(prev, t)
		out[i] = prev
	}
	return out
}

// chainAt returns the digest at index i of a history whose digests are
// chain: "" for i < 0 (nothing before the first turn).
func chainAt(chain []string, i int) string {
	if i < 0 {
		return ""
	}
	return chain[i]
}

// field writes s to h length-prefixed, as writeTurn does for each field.
func field(h io.Writer, s string) {
	var buf [24]byte
	b := strconv.AppendInt(buf[:0], int64(len(s)), 10)
	b = append(b, ':')
	h.Write(b)
	io.WriteString(h, s)
}

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
	turn    Turn
	digest  string
	at      chainPos
	// after are the turns that follow it up to the first with a digest:
	// their predecessors' digests are known only once its own is.
	after []linkedTurn
}

type linkedTurn struct {
	turn   Turn
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
	for range MaxForkDepth + 2 {
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
func (c *chainCheck) turn(id string, t Turn, digest string) {
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
		want = chainDigest(prev, t)
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
			link := func(id string, u Turn, digest string) {
				want := chainDigest(prev, u)
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
