package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/witness"
)

// Fork returns a new in-memory session that shares s.Turns[0:at] and
// continues from there: a fresh id, s as parent, s's principal, a new
// branch label "fork-" + 8 random hex characters, and the anchors of s at
// or below at. 0 <= at <= len(s.Turns). The fork is of KindBranch, or
// KindWorker with the option AsWorker. For a tail (s.From > 0, see
// LoadTail), at is an Index, s.From <= at <= s.From+len(s.Turns), and the
// fork is a tail from s.From too.
//
// The fork point may instead come from an option: ForkAtAnchor(name) forks
// at the index of an anchor of s.Anchors, ForkAtTurn(id) before the turn of
// s.Turns with that ID. With one of them at must be -1 (no index given).
// Other options set the fork's metadata (WithIntention, WithForkType,
// WithCreatedBy, WithReason), which Persist records in PROV. Options are
// applied before the history is copied.
//
// It returns ErrInvalid when at is out of range (or not -1 beside a
// position option), s has no id, or an option's value cannot be used;
// ErrNotFound when a ForkAtAnchor or ForkAtTurn names no anchor or turn of
// s (never a fork from the start); ErrForkDepth when the child's chain
// would exceed MaxForkDepth; ErrNotForkable when s is a worker. How many
// forks s may have only the store knows: Persist says (ErrTooManyChildren).
func (s *Session) Fork(at int, opts ...ForkOption) (*Session, error) {
	if err := checkID(s.ID); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	if err := s.forkable(); err != nil {
		return nil, fmt.Errorf("fork %s: %w", s.ID, err)
	}
	child := &Session{
		ID:        uuid.Must(uuid.NewV7()).String(),
		Principal: s.Principal,
		ParentID:  s.ID,
		Branch:    newBranch(),
		Kind:      KindBranch,
		depth:     s.depth + 1,
	}
	for _, o := range opts {
		o(child)
	}
	at, err := child.fork.position(s, at)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", s.ID, err)
	}
	if at < s.From || at > s.From+len(s.Turns) {
		return nil, fmt.Errorf("fork %s at %d: %w: fork point out of range %d..%d", s.ID, at, ErrInvalid, s.From, s.From+len(s.Turns))
	}
	if s.depth+1 > MaxForkDepth {
		return nil, fmt.Errorf("fork %s: %w: the child would have %d ancestors, more than %d", s.ID, ErrForkDepth, s.depth+1, MaxForkDepth)
	}
	child.ForkedAt, child.From = at, s.From // a fork of a tail is a tail
	child.Turns = make([]Turn, at-s.From, at-s.From+8)
	copy(child.Turns, s.Turns[:at-s.From])
	child.lean = min(s.lean, at-s.From) // read by its first Persist (RawOnly)
	child.Anchors = anchorsUpTo(s.Anchors, at)
	s.forkValues(child, at)
	return child, nil
}

// newBranch returns a fresh fork label: "fork-" and 8 random hex digits.
func newBranch() string {
	var b [4]byte
	rand.Read(b[:])
	return "fork-" + hex.EncodeToString(b[:])
}

// Fork stores a fork of stored session id at index at, with opts as
// Session.Fork takes them (at -1 with ForkAtAnchor, ForkAtTurn,
// ForkBeforeInvocation or ForkAfterEvent), with no turns of its own yet,
// its PROV record and the metadata the options give: the way to fork a
// stored session, as a runtime delegating to a subagent does.
//
// It reads a constant amount whatever the length of the parent's history:
// the chain query (as Load's first request), one query for what the fork
// needs at its fork point (the position an option names, the chain digest
// of the turn before it, which stands for the prefix the fork inherits,
// and the last change of each state key below it), then the update that
// creates the fork. That update checks again, atomically, what the reads
// found: the parent is stored with at least that many turns, the turn
// before the fork point still carries that digest (so a fork racing a
// Rewind of its parent either inherits the prefix as it stands or is
// refused with ErrConflict, never half-written), the fork's id is free,
// and the tree limits hold. Only a parent stored before Trails counted
// turns or kept the hash chain is loaded whole, as Fork did before.
//
// The fork returned is a tail (Session.From, as LoadTail returns): it
// holds none of the turns it inherits (Turns is empty, From and ForkedAt
// are the fork point), with the parent's principal and app, the anchors
// it inherits and Values as of the fork point. It appends and persists
// like any tail; Load reads its whole history.
//
// It returns ErrInvalid for a bad id, an index out of range or an
// option's value that cannot be used (then nothing is sent), ErrNotFound
// when the session is not stored (or not visible to a Store scoped to a
// principal) or a position option names nothing in its history,
// ErrNotForkable when it is a worker, ErrForkDepth, ErrTooManyChildren,
// ErrConflict when the parent was rewound below the fork point or deleted
// between the reads and the update, the errors of Load's chain
// (ErrForkCycle, ErrCorrupt, an *AncestorError), or a store error. A
// refusal means no fork was stored; after a store error the fork was not
// stored either, unless an update's answer was lost and the store could
// not be reached to fence it (as Persist says).
//
// With WithSigning it signs the new fork's head; when that does not reach
// the witness it returns the fork, stored, and an error matching
// ErrNotWitnessed.
func (st *Store) Fork(ctx context.Context, id string, at int, opts ...ForkOption) (_ *Session, err error) {
	ctx, call := telemetry.Start(ctx, "session.Fork", id)
	defer func() { call.End(err) }()
	child, err := st.fork(ctx, id, at, opts)
	if err != nil {
		return nil, err
	}
	if err := st.attest(ctx, witness.KindHead, seenHead(child, seen{})); err != nil {
		return child, fmt.Errorf("fork %s: %w", id, err)
	}
	return child, nil
}

// fork is Fork without signing.
func (st *Store) fork(ctx context.Context, id string, at int, opts []ForkOption) (*Session, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	child := &Session{
		ID:       uuid.Must(uuid.NewV7()).String(),
		ParentID: id,
		Branch:   newBranch(),
		Kind:     KindBranch,
	}
	for _, o := range opts {
		o(child)
	}
	if f := child.fork; f != nil {
		if err := f.check(at); err != nil {
			return nil, fmt.Errorf("fork %s: %w", id, err)
		}
	}
	if at < -1 || (at == -1 && !child.fork.positioned()) {
		return nil, fmt.Errorf("fork %s at %d: %w: a fork point is 0 or more", id, at, ErrInvalid)
	}
	chain, err := st.chain(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	p := chain[0]
	if !st.visible(p.principal) {
		return nil, fmt.Errorf("fork %s: %w", id, ErrNotFound)
	}
	if f := child.fork; f != nil && f.parentOK != nil && !f.parentOK(p.principal, p.app, slices.Clone(p.tags)) {
		return nil, fmt.Errorf("fork %s: %w", id, ErrNotFound)
	}
	if !p.hasOwn {
		return st.forkLoaded(ctx, id, at, opts) // stored before Trails counted turns
	}
	if Kind(p.kind) == KindWorker {
		return nil, fmt.Errorf("fork %s: %w: it is a worker, and a worker is always a leaf", id, ErrNotForkable)
	}
	if depth := len(chain); depth > st.maxDepth {
		return nil, fmt.Errorf("fork %s: %w: the child would have %d ancestors, more than %d", id, ErrForkDepth, depth, st.maxDepth)
	}
	n := p.at + p.own
	anchors := visibleAnchors(chain, n)
	if f := child.fork; f != nil && f.hasAnchor {
		a, ok := anchors[f.anchor]
		if !ok {
			return nil, fmt.Errorf("fork %s: %w: no anchor named %s in the session's history", id, ErrNotFound, termsafe.Quote(f.anchor))
		}
		owner := a.Session
		if owner == "" {
			owner = id
		}
		f.anchorIRI = ontology.AnchorIRI(ontology.SessionIRI(owner), a.Name)
		at = a.Index
	}
	if at > n {
		return nil, fmt.Errorf("fork %s at %d: %w: fork point out of range 0..%d", id, at, ErrInvalid, n)
	}
	pt, err := st.forkPoint(ctx, spansOf(chain, n), child.fork, at)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	if pt.at > 0 && pt.digest == "" {
		return st.forkLoaded(ctx, id, at, opts) // stored before the hash chain: Persist adds it (rechain)
	}
	if f := child.fork; f != nil && (f.hasTurn || f.hasInv || f.hasEvent) {
		f.turnIRI = pt.next
	}
	child.Principal, child.App = p.principal, p.app
	child.ForkedAt, child.From, child.Turns = pt.at, pt.at, make([]Turn, 0, 8)
	child.depth = len(chain)
	child.Anchors = anchorsUpTo(anchors, pt.at)
	child.initials = slices.DeleteFunc(initialsOf(chain), func(c valueChange) bool { return c.pos > 2*pt.at })
	child.pre = pt.values
	child.Values = foldValues(child.initials, 2*pt.at, nil, child.pre, chain[0].shared)
	if err := st.createFork(ctx, child, p.principal, pt.digest); err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	return child, nil
}

// forkLoaded is Store.Fork the way that reads the parent's whole history:
// for a parent stored before Trails counted its turns or kept the hash
// chain, whose fork point and digest only its turns give.
func (st *Store) forkLoaded(ctx context.Context, id string, at int, opts []ForkOption) (*Session, error) {
	s, err := st.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	f, err := s.Fork(at, opts...)
	if err != nil {
		return nil, err
	}
	if err := st.persist(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}
