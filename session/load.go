package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// maxIndex bounds the turn indices and counts Load believes: beyond it the
// stored value is corrupt (and sums could overflow).
const maxIndex = 1 << 40

// link is one session of a parent chain, as the chain query found it.
type link struct {
	iri       string
	exists    bool
	parent    string // IRI, "" for a root
	at        int    // fork point, 0 for a root
	branch    string
	own       int
	hasOwn    bool // own is known (trails:ownTurns is stored)
	principal string
	created   time.Time
	anchors   []Anchor // the anchors it named (anchor.go)
	tags      []string
	kind      string // trails:kind, "" when stored without one (see kindOf)
	// life is its state, expiry and cancellation flag (state.go).
	life lifecycle
	// rewind is its rewind count and whether it is an archive (rewind.go).
	rewind rewindLink
}

// span is the part of an effective history one session of the chain owns:
// indices lo <= i < hi (hi < 0: no upper bound).
type span struct {
	l      *link
	lo, hi int
}

// Load returns the session with the given id and its whole effective
// history: for a fork, each ancestor's share of the prefix, then its own
// turns. Along root ← f1 ← … ← self, each session contributes its own turns
// from its own fork point up to the fork point of the session below it. Load
// makes two SPARQL requests whatever the chain's depth: one finds the whole
// chain (a property path anchored at the session) with the anchors of its
// sessions, one fetches exactly the turns each session contributes (a third
// reads them again, more leniently, only when a stored turn lacks its branch
// label or creation time). Each turn gets its ID; Anchors holds the
// session's own anchors and those of its ancestors inside the prefix it
// inherits.
//
// It returns ErrInvalid for an id that is not a canonical UUID, ErrNotFound,
// an *AncestorError (ErrParentMissing) naming a missing ancestor,
// ErrForkCycle when parent links form a cycle (at once, whatever its
// length), ErrForkDepth when the chain has more ancestors than the limit,
// ErrCorrupt when stored turns have gaps or duplicates, or a store error
// wrapping the kg error.
func (st *Store) Load(ctx context.Context, id string) (*Session, error) {
	s, _, err := st.load(ctx, id, -1)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	return s, nil
}

// load assembles session id with the turns below upTo (upTo < 0: all). It
// also returns, for each turn, the IRI of the session that stored it.
func (st *Store) load(ctx context.Context, id string, upTo int) (*Session, []string, error) {
	if err := checkID(id); err != nil {
		return nil, nil, err
	}
	chain, err := st.chain(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if !st.visible(chain[0].principal) {
		return nil, nil, ErrNotFound
	}
	// The chain query fixed the session's turn count; the turns query reads
	// only below it, so that turns a writer appends between the two
	// requests do not show: Load returns the history as of one moment.
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
	want := -1 // unknown for a legacy session: whatever is stored
	if self := chain[0]; self.hasOwn {
		want = self.at + self.own
		if upTo >= 0 && upTo < want {
			want = upTo
		}
	}
	q := turnsQuery(chain)
	turns, err := st.readSpans(ctx, q, spans, owner, upTo)
	if err == nil && want >= 0 && len(turns) != want && q == qTurns {
		// A turn lacks a branch label or a creation time, which turns.rq
		// requires: read again, taking them as for a legacy turn.
		turns, err = st.readSpans(ctx, qTurnsLegacy, spans, owner, upTo)
	}
	if err != nil {
		return nil, nil, err
	}
	if want >= 0 && len(turns) != want {
		return nil, nil, fmt.Errorf("%w: %d turns found, the chain says %d", ErrCorrupt, len(turns), want)
	}
	owners := make([]string, len(turns))
	for i, t := range turns {
		if t.Index != i {
			return nil, nil, fmt.Errorf("%w: no turn at index %d", ErrCorrupt, i)
		}
		owners[i] = owner(i).iri
		if turns[i].ID == "" { // read by turns-ids.rq after a rewind (rewind.go)
			turns[i].ID = ontology.TurnIRI(owners[i], i)
		}
	}
	self := chain[0]
	s := &Session{
		ID:        id,
		Principal: self.principal,
		ParentID:  "",
		ForkedAt:  self.at,
		Branch:    branchOrMain(self.branch),
		Kind:      kindOf(self.kind, self.parent), // limits.go
		Turns:     turns,
		Anchors:   visibleAnchors(chain, len(turns)),
		depth:     len(chain) - 1,
		gen:       self.rewind.gen,
		fresh:     len(turns),
	}
	self.life.setOn(s) // state.go
	if self.parent != "" {
		s.ParentID = idOf(self.parent)
	}
	return s, owners, nil
}

// readSpans reads the turns of spans with query q (turnsQuery), sorted by
// index; owner names the session that wrote a turn.
func (st *Store) readSpans(ctx context.Context, q string, spans []span, owner func(int) *link, upTo int) ([]Turn, error) {
	if len(spans) == 0 {
		return nil, nil
	}
	rows := make([][]rdf.Term, len(spans))
	for k, sp := range spans {
		rows[k] = []rdf.Term{kg.MustIRI(sp.l.iri), kg.Int(sp.lo), kg.Int(sp.hi)}
	}
	bound, err := kg.BindTables(q, nil, map[string]kg.Table{"ranges": {Vars: []string{"s", "lo", "hi"}, Rows: rows}})
	if err != nil {
		return nil, err
	}
	tr := turnRows{branchOf: func(i int) string { return branchOrMain(owner(i).branch) }}
	if upTo >= 0 {
		tr.turns = make([]Turn, 0, upTo)
	}
	if err := st.c.SelectRows(ctx, bound, tr.start, tr.add); err != nil {
		return nil, err
	}
	return tr.done()
}

func branchOrMain(b string) string {
	if b == "" {
		return MainBranch
	}
	return b
}

// spansOf returns what each session of the chain (self first) contributes
// to the history below upTo (upTo < 0: all): self owns [at, upTo), each
// ancestor [its at, the smallest fork point below it). Empty spans are left
// out.
func spansOf(chain []*link, upTo int) []span {
	var spans []span
	hi := upTo
	for k, l := range chain {
		if k > 0 {
			if c := chain[k-1].at; hi < 0 || c < hi {
				hi = c
			}
		}
		if hi < 0 || l.at < hi {
			spans = append(spans, span{l: l, lo: l.at, hi: hi})
		}
	}
	return spans
}

// chain returns session id and its ancestors, self first, root last. It
// detects a cycle before the depth limit, whatever the cycle's length.
func (st *Store) chain(ctx context.Context, id string) ([]*link, error) {
	q, err := bind("chain", qChain, kg.Params{"self": kg.MustIRI(ontology.SessionIRI(id))})
	if err != nil {
		return nil, err
	}
	res, err := st.c.Select(ctx, q) // TSV: for the chain's few rows too, faster than JSON to write and read
	if err != nil {
		return nil, err
	}
	links := make(map[string]*link, len(res.Solutions))
	anchors, tags := map[string][]Anchor{}, map[string][]string{}
	for _, row := range res.Solutions {
		if extra, err := chainExtra(row, anchors, tags); extra || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if err := addLink(links, row); err != nil {
			return nil, err
		}
	}
	chain, err := st.walk(links, id)
	if err != nil {
		return nil, err
	}
	for _, l := range chain {
		l.anchors, l.tags = anchors[l.iri], tags[l.iri]
		sortAnchors(l.anchors)
	}
	return chain, nil
}

// addLink reads a session row of a chain query into links; a session with
// two rows has two values of a field that has one, which is ErrCorrupt.
func addLink(links map[string]*link, row kg.Solution) error {
	l, err := readLink(row)
	if err != nil {
		return err
	}
	if _, dup := links[l.iri]; dup {
		return fmt.Errorf("%w: session %s has two parents, fork points, branches or principals", ErrCorrupt, idOf(l.iri))
	}
	links[l.iri] = l
	return nil
}

// walk follows the parent links of session id through links (the
// sessions a chain query found, by IRI) and returns its chain, self first,
// root last. It detects a cycle before the depth limit, whatever the
// cycle's length, and checks what Load relies on: every fork has a branch
// label and a fork point within its parent's history. It returns
// ErrNotFound when id is not among links, an *AncestorError, ErrForkCycle,
// ErrForkDepth or ErrCorrupt.
func (st *Store) walk(links map[string]*link, id string) ([]*link, error) {
	self := ontology.SessionIRI(id)
	var chain []*link
	seen := make(map[string]bool)
	for cur := self; cur != ""; {
		if seen[cur] {
			return nil, fmt.Errorf("%w: %s is its own ancestor", ErrForkCycle, idOf(cur))
		}
		seen[cur] = true
		l := links[cur]
		if l == nil || !l.exists {
			if cur == self {
				return nil, ErrNotFound
			}
			if len(chain)-1 >= st.maxDepth {
				break // too deep anyway: report that
			}
			return nil, &AncestorError{Session: id, Missing: idOf(cur)}
		}
		chain = append(chain, l)
		cur = l.parent
	}
	if len(chain)-1 > st.maxDepth {
		return nil, fmt.Errorf("%w: %d ancestors, more than %d", ErrForkDepth, len(chain)-1, st.maxDepth)
	}
	for k, l := range chain {
		if l.parent != "" && l.branch == "" {
			return nil, fmt.Errorf("%w: fork %s has no branch label", ErrCorrupt, idOf(l.iri))
		}
		if l.at > maxIndex || l.own > maxIndex {
			return nil, fmt.Errorf("%w: session %s: fork point %d or turn count %d out of range", ErrCorrupt, idOf(l.iri), l.at, l.own)
		}
		if k+1 < len(chain) {
			if p := chain[k+1]; p.hasOwn && l.at > p.at+p.own {
				return nil, fmt.Errorf("%w: fork %s is forked at %d, beyond the %d turns of its parent %s", ErrCorrupt, idOf(l.iri), l.at, p.at+p.own, idOf(p.iri))
			}
		}
	}
	return chain, nil
}

func readLink(row kg.Solution) (*link, error) {
	l := &link{iri: row.String("s"), parent: row.String("parent"), branch: row.String("branch"), principal: row.String("principal"),
		kind: row.String("kind")}
	if err := storedKind(l.iri, l.kind); err != nil { // limits.go
		return nil, err
	}
	_, l.exists = row["exists"]
	var err error
	if _, ok := row["at"]; ok {
		if l.at, err = row.Int("at"); err != nil || l.at < 0 {
			return nil, fmt.Errorf("%w: session %s: fork point %q", ErrCorrupt, idOf(l.iri), row.String("at"))
		}
	}
	if _, ok := row["own"]; ok {
		if l.own, err = row.Int("own"); err != nil || l.own < 0 {
			return nil, fmt.Errorf("%w: session %s: turn count %q", ErrCorrupt, idOf(l.iri), row.String("own"))
		}
		l.hasOwn = true
	}
	if _, ok := row["created"]; ok {
		if l.created, err = row.Time("created"); err != nil {
			return nil, fmt.Errorf("%w: session %s: %v", ErrCorrupt, idOf(l.iri), err)
		}
	}
	if l.rewind, err = readRewindLink(row); err != nil { // rewind.go
		return nil, err
	}
	if l.life, err = readLifecycle(row); err != nil { // state.go
		return nil, fmt.Errorf("%w: session %s: %v", ErrCorrupt, idOf(l.iri), err)
	}
	return l, nil
}

// turnRows gathers turn rows (?i ?role ?content, optional ?branch
// ?created) into turns, one row at a time, so that a large answer is never
// held twice; branchOf names the branch of a turn stored without one.
type turnRows struct {
	turns    []Turn
	branchOf func(i int) string
}

// start drops what an earlier attempt of the request gathered.
func (r *turnRows) start([]string) error {
	clear(r.turns)
	r.turns = r.turns[:0]
	return nil
}

// add reads one row.
func (r *turnRows) add(row kg.Solution) error {
	i, err := row.Int("i")
	if err != nil {
		return fmt.Errorf("%w: turn index: %v", ErrCorrupt, err)
	}
	role, okRole := row.Literal("role")
	content, okContent := row.Literal("content")
	if !okRole || !okContent {
		return fmt.Errorf("%w: turn %d: role and content must be literals", ErrCorrupt, i)
	}
	t := Turn{Index: i, Role: role, Content: content, Branch: row.String("branch"), ID: row.String("t")} // ?t: turns-ids.rq
	if t.Branch == "" {
		t.Branch = r.branchOf(i)
	}
	if _, ok := row["created"]; ok {
		if t.Created, err = row.Time("created"); err != nil {
			return fmt.Errorf("%w: turn %d: %v", ErrCorrupt, i, err)
		}
	}
	r.turns = append(r.turns, t)
	return nil
}

// done returns the turns sorted by index; two turns at one index are
// ErrCorrupt.
func (r *turnRows) done() ([]Turn, error) {
	turns := r.turns
	slices.SortFunc(turns, func(a, b Turn) int { return a.Index - b.Index })
	for k := 1; k < len(turns); k++ {
		if turns[k].Index == turns[k-1].Index {
			return nil, fmt.Errorf("%w: two turns at index %d", ErrCorrupt, turns[k].Index)
		}
	}
	return turns, nil
}

// readTurns reads the turn rows of res (see turnRows), sorted by index.
func readTurns(res *kg.Results, branchOf func(i int) string) ([]Turn, error) {
	r := turnRows{turns: make([]Turn, 0, len(res.Solutions)), branchOf: branchOf}
	for _, row := range res.Solutions {
		if err := r.add(row); err != nil {
			return nil, err
		}
	}
	return r.done()
}
