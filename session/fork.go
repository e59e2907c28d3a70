package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/witness"
)

// ForkOption qualifies a Fork.
type ForkOption func(*Session)

// AcrossPrincipals allows a Store scoped to a principal (ForPrincipal) to
// persist this fork although its parent belongs to another principal. The
// fork's PROV record says so (trails:acrossPrincipals true).
func AcrossPrincipals() ForkOption { return func(s *Session) { s.across = true } }

// ForkType says how a fork came about (design note 003). It is recorded on the
// fork's PROV activity (trails:forkType).
type ForkType string

// The fork types.
const (
	// ForkExplicit: someone asked for the fork. The default.
	ForkExplicit ForkType = "explicit"
	// ForkAutoEdit: made because a message was edited.
	ForkAutoEdit ForkType = "auto-edit"
	// ForkAutoRegenerate: made because a response was regenerated.
	ForkAutoRegenerate ForkType = "auto-regenerate"
)

// Creator says on whose initiative a fork was made (design note 003): a person
// or the system itself. Who acted is the session's principal; it is
// recorded on the fork's PROV activity (trails:createdBy).
type Creator string

// The creators of a fork.
const (
	// CreatedByUser: a person asked for the fork. The default.
	CreatedByUser Creator = "user"
	// CreatedBySystem: the system made it, e.g. an agent runtime
	// delegating work to a subagent.
	CreatedBySystem Creator = "system"
)

// ForkAtAnchor forks at the anchor named name of the session forked (one
// of its Anchors, set by Load): the child inherits the turns that existed
// when the anchor was made. Give -1 as Fork's index. Fork returns
// ErrNotFound when the session has no anchor of that name. PROV records
// the anchor (trails:fromAnchor).
func ForkAtAnchor(name string) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.anchor, f.hasAnchor = name, true
	}
}

// ForkAtTurn forks before the turn with ID id (Turn.ID) of the session
// forked: that turn is the first one the child does not inherit, so the
// fork point is its index (design note 004's "rewind before invocation"; the turn
// may be one the session inherited). Give -1 as Fork's index. Fork returns
// ErrNotFound when no turn of the session has that ID. PROV records the
// turn (trails:beforeTurn).
func ForkAtTurn(id string) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.turn, f.hasTurn = id, true
	}
}

// ForkBeforeInvocation forks before the first turn of the agent
// invocation id (Structure.InvocationID) in the history of the session
// forked: the child holds the turns before that invocation, to run it
// again differently. Give -1 as Fork's index. Fork returns ErrNotFound
// when no turn of the history belongs to the invocation. PROV records the
// turn forked before (trails:beforeTurn).
func ForkBeforeInvocation(id string) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.inv, f.hasInv = id, true
		if id == "" || !utf8.ValidString(id) {
			f.fail(fmt.Errorf("%w: invocation id %s: want a non-empty UTF-8 string", ErrInvalid, termsafe.Quote(id)))
		}
	}
}

// ForkAfterEvent forks just after the turn that stores the framework's
// event id (Structure.EventID) in the history of the session forked: the
// child holds the turns up to and including it. Give -1 as Fork's index.
// Fork returns ErrNotFound when no turn of the history has that event id
// (also for a turn stored before Trails kept event ids: an adapter finds
// those in its own copies). PROV records the turn after it, when there is
// one (trails:beforeTurn).
func ForkAfterEvent(id string) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.event, f.hasEvent = id, true
		if id == "" || !utf8.ValidString(id) {
			f.fail(fmt.Errorf("%w: event id %s: want a non-empty UTF-8 string", ErrInvalid, termsafe.Quote(id)))
		}
	}
}

// WithTags gives the fork tags (Session.Tags), written in the update that
// creates it, as Tag would add them after. Fork returns ErrInvalid for a
// tag Tag refuses.
func WithTags(tags ...string) ForkOption {
	return func(s *Session) {
		for _, t := range tags {
			if err := checkLabel("tag", t); err != nil {
				s.spec().fail(err)
				return
			}
		}
		s.Tags = append(s.Tags, tags...)
	}
}

// ForkIf makes Store.Fork refuse, with ErrNotFound, a parent for which
// ok, given the parent's principal, app ("" for none) and tags as the
// chain query read them, reports false: how an adapter that keeps
// namespaces of its own (ADK's apps and users) forks only what its caller
// may see, with no request more. Session.Fork, given a value already
// loaded, ignores it.
func ForkIf(ok func(principal, app string, tags []string) bool) ForkOption {
	return func(s *Session) { s.spec().parentOK = ok }
}

// WithIntention records with the fork the intention it starts with (design
// note 001's AgentIntention): what the child is to do next and a summary of
// the context it starts from. Either may be empty. Persist writes them on
// the fork's PROV activity (trails:nextSteps, trails:contextSummary);
// prov.Reader.ForkRecord reads them back.
func WithIntention(nextSteps, contextSummary string) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.nextSteps, f.summary = nextSteps, contextSummary
		if !utf8.ValidString(nextSteps) || !utf8.ValidString(contextSummary) {
			f.fail(fmt.Errorf("%w: intention is not valid UTF-8", ErrInvalid))
		}
	}
}

// WithForkType records how the fork came about (default ForkExplicit).
// Fork returns ErrInvalid for a type not listed.
func WithForkType(t ForkType) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.typ = t
		switch t {
		case ForkExplicit, ForkAutoEdit, ForkAutoRegenerate:
		default:
			f.fail(fmt.Errorf("%w: fork type %s: want %q, %q or %q", ErrInvalid, termsafe.Quote(string(t)), ForkExplicit, ForkAutoEdit, ForkAutoRegenerate))
		}
	}
}

// WithCreatedBy records on whose initiative the fork was made (default
// CreatedByUser). Fork returns ErrInvalid for a creator not listed.
func WithCreatedBy(c Creator) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.creator = c
		if c != CreatedByUser && c != CreatedBySystem {
			f.fail(fmt.Errorf("%w: created by %s: want %q or %q", ErrInvalid, termsafe.Quote(string(c)), CreatedByUser, CreatedBySystem))
		}
	}
}

// WithReason records why the fork was made, in words.
func WithReason(reason string) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.reason = reason
		if !utf8.ValidString(reason) {
			f.fail(fmt.Errorf("%w: reason is not valid UTF-8", ErrInvalid))
		}
	}
}

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

// forkSpec is what the options of a Fork asked for: a position other than
// an index, and the metadata Persist records with the fork.
type forkSpec struct {
	anchor, turn       string // ForkAtAnchor, ForkAtTurn
	hasAnchor, hasTurn bool
	inv, event         string // ForkBeforeInvocation, ForkAfterEvent
	hasInv, hasEvent   bool
	typ                ForkType
	creator            Creator
	reason             string
	nextSteps, summary string
	err                error                                           // the first option value that cannot be used
	parentOK           func(principal, app string, tags []string) bool // ForkIf

	// Set by position: the IRIs of the anchor or turn forked at.
	anchorIRI, turnIRI string
}

// spec returns the forkSpec of new fork s, made on first use.
func (s *Session) spec() *forkSpec {
	if s.fork == nil {
		s.fork = &forkSpec{}
	}
	return s.fork
}

// fail keeps the first error of an option.
func (f *forkSpec) fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

// position returns the fork point of a fork of parent asked for with index
// at and the options in f (nil: no options). A position option needs at to
// be -1.
func (f *forkSpec) position(parent *Session, at int) (int, error) {
	if f == nil {
		return at, nil
	}
	if f.err != nil {
		return 0, f.err
	}
	if err := f.check(at); err != nil {
		return 0, err
	}
	switch {
	case f.hasAnchor:
		a, ok := parent.Anchors[f.anchor]
		if !ok {
			return 0, fmt.Errorf("%w: no anchor named %s in the session's history", ErrNotFound, termsafe.Quote(f.anchor))
		}
		owner := a.Session
		if owner == "" {
			owner = parent.ID
		}
		f.anchorIRI = ontology.AnchorIRI(ontology.SessionIRI(owner), a.Name)
		return a.Index, nil
	case f.hasTurn, f.hasInv, f.hasEvent:
		for k, t := range parent.Turns {
			if !f.matches(t) {
				continue
			}
			if f.hasEvent {
				if k+1 < len(parent.Turns) {
					f.turnIRI = parent.Turns[k+1].ID
				}
				return t.Index + 1, nil
			}
			if _, err := kg.IRI(t.ID); err != nil {
				return 0, fmt.Errorf("%w: turn id %s: %v", ErrInvalid, termsafe.Quote(t.ID), err)
			}
			f.turnIRI = t.ID
			return t.Index, nil
		}
		return 0, f.notFound()
	}
	return at, nil
}

// check returns ErrInvalid for options that cannot go together: two
// positions, or a position beside an index other than -1.
func (f *forkSpec) check(at int) error {
	if f.err != nil {
		return f.err
	}
	n := 0
	for _, has := range []bool{f.hasAnchor, f.hasTurn, f.hasInv, f.hasEvent} {
		if has {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("%w: more than one of ForkAtAnchor, ForkAtTurn, ForkBeforeInvocation and ForkAfterEvent given", ErrInvalid)
	case n == 1 && at != -1:
		return fmt.Errorf("%w: index %d given beside a position option (ForkAtAnchor, ForkAtTurn, ...); give -1", ErrInvalid, at)
	}
	return nil
}

// matches reports whether turn t is the one a ForkAtTurn,
// ForkBeforeInvocation or ForkAfterEvent of f names.
func (f *forkSpec) matches(t Turn) bool {
	switch {
	case f.hasTurn:
		return t.ID == f.turn && t.ID != ""
	case f.hasInv:
		return t.Structure != nil && t.Structure.InvocationID == f.inv
	case f.hasEvent:
		return t.Structure != nil && t.Structure.EventID == f.event
	}
	return false
}

// notFound is the error of a position option that names no turn of the
// history.
func (f *forkSpec) notFound() error {
	switch {
	case f.hasInv:
		return fmt.Errorf("%w: no turn of invocation %s in the session's history", ErrNotFound, termsafe.Quote(f.inv))
	case f.hasEvent:
		return fmt.Errorf("%w: no turn with event id %s in the session's history", ErrNotFound, termsafe.Quote(f.event))
	}
	return fmt.Errorf("%w: no turn with id %s in the session's history", ErrNotFound, termsafe.Quote(f.turn))
}

// describe adds what f asked to record to the PROV record of the fork.
func (f *forkSpec) describe(r *prov.Fork) {
	if f == nil {
		return
	}
	r.Type, r.CreatedBy = string(f.typ), string(f.creator)
	r.Reason, r.NextSteps, r.ContextSummary = f.reason, f.nextSteps, f.summary
	r.Anchor, r.Turn = f.anchorIRI, f.turnIRI
}

// The update that creates a fork, read once.
var (
	uCreateFork = query("create-fork.ru")
)

// admitFork checks, for new fork s, what the store must hold before it
// creates the fork, as the state row of Persist (row: state.rq) says: the
// parent, with at least ForkedAt turns and base (the chain digest of the
// prefix s holds) at ForkedAt-1, a chain within the depth limit, the tree
// limits (checkFork), a parent of another principal only with
// AcrossPrincipals, and a free branch label. It returns the depth the
// fork will have, or again when Persist must read the state again: the
// label was taken (s has a new one now), or the parent's turns were given
// the hash chain (sameBase).
func (st *Store) admitFork(ctx context.Context, s *Session, row kg.Solution, base string) (depth int, again bool, err error) {
	if _, ok := row["pexists"]; !ok {
		return 0, false, &AncestorError{Session: s.ID, Missing: s.ParentID}
	}
	plen, err := st.parentLength(ctx, s.ParentID, row)
	if err != nil {
		return 0, false, err
	}
	if plen < s.ForkedAt {
		return 0, false, fmt.Errorf("%w: parent %s has %d turns stored, the fork point is %d", ErrConflict, s.ParentID, plen, s.ForkedAt)
	}
	pdepth, err := row.Int("depth")
	if err != nil {
		return 0, false, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if depth = pdepth + 1; depth > st.maxDepth {
		return 0, false, fmt.Errorf("%w: the fork would have %d ancestors, more than %d", ErrForkDepth, depth, st.maxDepth)
	}
	if err := st.checkFork(s, row); err != nil {
		return 0, false, err
	}
	if pp := row.String("pprincipal"); !st.visible(pp) && !s.across {
		return 0, false, fmt.Errorf("%w: parent %s belongs to %q; fork it with AcrossPrincipals to allow it", ErrForbidden, s.ParentID, pp)
	}
	if again, err := st.sameBase(ctx, s, row, base); err != nil || again {
		return 0, again, err
	}
	if _, taken := row["taken"]; taken {
		relabel(s)
		return 0, true, nil
	}
	return depth, false, nil
}

// parentLength returns the length of the parent's effective history:
// its fork point plus its own turns.
func (st *Store) parentLength(ctx context.Context, parentID string, row kg.Solution) (int, error) {
	at := 0
	if _, ok := row["pat"]; ok {
		var err error
		if at, err = row.Int("pat"); err != nil {
			return 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	if _, ok := row["pown"]; ok {
		n, err := row.Int("pown")
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return at + n, nil
	}
	counts, err := st.countTurns(ctx, []string{ontology.SessionIRI(parentID)})
	if err != nil {
		return 0, err
	}
	return at + counts[ontology.SessionIRI(parentID)], nil
}

// checkFork checks the tree limits for fork s of a parent described by row
// (a row of state.rq): the parent is not a worker and has fewer forks than
// the Store allows. create-fork.ru checks the same inside the update.
func (st *Store) checkFork(s *Session, row kg.Solution) error {
	if Kind(row.String("pkind")) == KindWorker {
		return fmt.Errorf("%w: parent %s is a worker, and a worker is always a leaf", ErrNotForkable, s.ParentID)
	}
	if st.maxKids <= 0 {
		return nil
	}
	n := 0
	if _, ok := row["children"]; ok {
		var err error
		if n, err = row.Int("children"); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	if n >= st.maxKids {
		return fmt.Errorf("%w: parent %s has %s, the limit is %d", ErrTooManyChildren, s.ParentID, forks(n), st.maxKids)
	}
	return nil
}

// forks returns "1 fork", "2 forks".
func forks(n int) string {
	if n == 1 {
		return "1 fork"
	}
	return fmt.Sprintf("%d forks", n)
}

// sameBase checks, for a new fork s, that its parent's turn at the fork
// point minus one, as stored (row: state.rq), carries base, the chain
// digest of the prefix s holds: that the fork inherits the prefix its
// author saw. The create update checks it again, atomically; this check
// says what is wrong. When that turn was stored before the hash chain
// (it has no digest), sameBase adds the chain to the parent's history
// (rechain) and reports that Persist must read the state again.
func (st *Store) sameBase(ctx context.Context, s *Session, row kg.Solution, base string) (again bool, err error) {
	if s.ForkedAt == 0 {
		return false, nil // a fork at 0 inherits nothing
	}
	k := s.ForkedAt - 1
	if _, ok := row["based"]; !ok {
		return false, fmt.Errorf("%w: parent %s holds no turn %d in its history as stored now (rewound since this fork was made?)", ErrConflict, s.ParentID, k)
	}
	switch got := row.String("basedigest"); got {
	case base:
		return false, nil
	case "":
		if _, err := st.rechain(ctx, s.ParentID); err != nil {
			return false, fmt.Errorf("add the hash chain to parent %s: %w", s.ParentID, err)
		}
		return true, nil
	default:
		return false, fmt.Errorf("%w: turn %d of parent %s as stored is not the one this fork was made from (the parent was rewound, or another writer appended first); load the parent again and fork it", ErrConflict, k, s.ParentID)
	}
}

// relabel gives fork s and its own turns a fresh branch label.
func relabel(s *Session) {
	s.Branch = newBranch()
	for i := s.ForkedAt; i < len(s.Turns); i++ {
		s.Turns[i].Branch = s.Branch
	}
}

// forkUpdate returns the update that creates new fork s, created at now,
// from d, which holds its metadata, turns and head, and sg, which holds
// its long contents (staging): it adds the fork's
// PROV record (with what the fork's options asked to record) and binds
// create-fork.ru, which checks the tree limits, the fork point (never
// beyond the parent's end) and base at ForkedAt-1 again, atomically.
func (st *Store) forkUpdate(d *kg.Data, sg *staging, s *Session, row kg.Solution, now time.Time, base string) (string, error) {
	f := prov.Fork{Child: s.ID, Parent: s.ParentID, At: s.ForkedAt, Principal: s.Principal, Time: now,
		AcrossPrincipals: s.across && !st.visible(row.String("pprincipal"))}
	s.fork.describe(&f)
	prov.AddFork(d, f)
	return withStaged("create-fork", uCreateFork, sg, d, kg.Params{
		"s": sessionIRI(s.ID), "parent": sessionIRI(s.ParentID), "branch": kg.String(s.Branch), "max": kg.Int(st.maxKids),
		"at": kg.Int(s.ForkedAt), "k": kg.Int(s.ForkedAt - 1), "base": kg.String(base),
	})
}

// sameFork checks that the stored fork fields of s are the caller's.
func sameFork(s *Session, row kg.Solution) error {
	wantParent := ""
	if s.ParentID != "" {
		wantParent = ontology.SessionIRI(s.ParentID)
	}
	if got := row.String("parent"); got != wantParent {
		return fmt.Errorf("%w: stored parent %q, the caller's %q (detached or forked elsewhere?)", ErrConflict, ontology.SessionID(got), s.ParentID)
	}
	at := 0
	if _, ok := row["at"]; ok {
		var err error
		if at, err = row.Int("at"); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	if at != s.ForkedAt {
		return fmt.Errorf("%w: stored fork point %d, the caller's %d", ErrConflict, at, s.ForkedAt)
	}
	branch := row.String("branch")
	if branch == "" {
		branch = MainBranch
	}
	if branch != s.Branch {
		return fmt.Errorf("%w: stored branch %q, the caller's %q", ErrConflict, branch, s.Branch)
	}
	return nil
}

// The queries of Store.Fork, read once.
var (
	qForkPoint        = query("fork-point.rq")
	qForkAtTurn       = query("fork-at-turn.rq")
	qForkAtInvocation = query("fork-at-invocation.rq")
	qForkAtEvent      = query("fork-at-event.rq")
)

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

// positioned reports whether f (nil: no options) names the fork point by
// an option instead of an index.
func (f *forkSpec) positioned() bool {
	return f != nil && (f.hasAnchor || f.hasTurn || f.hasInv || f.hasEvent)
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

// point is what fork-point.rq found: the fork point, the IRI of the
// turn at it ("" at the history's end), the chain digest of the turn
// before it ("" at 0, or stored before the hash chain), and the last
// change of each state key below it.
type point struct {
	at     int
	next   string
	digest string
	values []valueChange
}

// forkPoint reads, for a fork of the history spans at index at or at
// the position f names, what the fork needs of it (fork-point.rq).
func (st *Store) forkPoint(ctx context.Context, spans []span, f *forkSpec, at int) (point, error) {
	pos, params := "BIND($at AS ?at)", kg.Params{"at": kg.Int(at)}
	switch {
	case f == nil || f.hasAnchor:
	case f.hasTurn:
		t, err := kg.IRI(f.turn)
		if err != nil {
			return point{}, fmt.Errorf("%w: turn id %s: %v", ErrInvalid, termsafe.Quote(f.turn), err)
		}
		pos, params = qForkAtTurn, kg.Params{"turn": t}
	case f.hasInv:
		pos, params = qForkAtInvocation, kg.Params{"inv": kg.String(f.inv)}
	case f.hasEvent:
		pos, params = qForkAtEvent, kg.Params{"event": kg.String(f.event)}
	}
	rows := make([][]rdf.Term, len(spans))
	for k, sp := range spans {
		rows[k] = []rdf.Term{kg.MustIRI(sp.l.iri), kg.Int(sp.lo), kg.Int(sp.hi)}
	}
	q, err := kg.BindTables(strings.ReplaceAll(qForkPoint, "#POSITION", pos), params,
		map[string]kg.Table{"ranges": {Vars: []string{"s", "lo", "hi"}, Rows: rows}})
	if err != nil {
		return point{}, fmt.Errorf("fork-point: %w", err)
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return point{}, err
	}
	pt, found, base := point{}, false, false
	for _, row := range res.Solutions {
		switch {
		case row["key"] != nil:
			i, err := row.Int("i")
			if err != nil || i < 0 {
				return point{}, fmt.Errorf("%w: state change of turn %s", ErrCorrupt, termsafe.Quote(row.String("i")))
			}
			c, err := readValueChange(row, "", 2*i+1)
			if err != nil {
				return point{}, err
			}
			pt.values = append(pt.values, c)
		case row["base"] != nil:
			base, pt.digest = true, row.String("digest")
		case row["next"] != nil:
			pt.next = row.String("next")
		case row["at"] != nil:
			if pt.at, err = row.Int("at"); err != nil {
				return point{}, fmt.Errorf("%w: fork point %s", ErrCorrupt, termsafe.Quote(row.String("at")))
			}
			found = true
		}
	}
	switch {
	case !found && f.positioned():
		return point{}, f.notFound()
	case !found:
		return point{}, fmt.Errorf("%w: no fork point found", ErrCorrupt)
	case pt.at > 0 && !base:
		return point{}, fmt.Errorf("%w: the parent's history has no turn %d (rewound meanwhile?)", ErrConflict, pt.at-1)
	}
	return pt, nil
}

// createFork stores new fork s (a tail with no turns, its fields set by
// Store.Fork) of a parent of principal pp whose turn at s.ForkedAt-1 has
// chain digest base, in one conditional update (create-fork.ru), and
// sets s.seen so that its next Persist appends without a read. When the
// update is refused, one read of the store's state (state.rq) says why:
// the error Persist would return, or a branch label taken meanwhile, and
// then it tries again with a new one.
func (st *Store) createFork(ctx context.Context, s *Session, pp, base string) error {
	g := sessionIRI(s.ID)
	_, head, state := digestsState(nil, 0)
	row := kg.Solution{"pprincipal": kg.String(pp)}
	for range maxPersistRounds {
		now := st.now()
		var d kg.Data
		addSession(&d, s, now)
		addExpiry(&d, s, now)
		addHead(&d, g, 0, head)
		ack, acks := st.ackGraph()
		if acks {
			d.Add(ack, ack, ack, ack) // written only if the fork is created
		}
		sg := st.newStaging()
		u, err := st.forkUpdate(&d, sg, s, row, now, base)
		if err != nil {
			return err
		}
		verify := bindOrPanic("verify-create", qVerifyCreate, kg.Params{"s": g, "created": kg.DateTime(now),
			"agent": kg.MustIRI(ontology.AgentIRI(s.Principal)), "t": g, "digest": kg.String("")})
		var ok bool
		if acks {
			ok, err = st.applyAcked(ctx, u, ack, verify, g, sg)
		} else {
			ok, err = st.apply(ctx, u, verify, g, sg)
		}
		if err != nil {
			return err
		}
		if ok {
			s.seen = seen{ok: true, head: head, state: state, chain: base}
			return nil
		}
		if err := st.whyNotForked(ctx, s, base); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: the parent kept changing under this fork", ErrConflict)
}

// whyNotForked reads the state of new fork s (state.rq) after its
// create-fork update was refused, and returns the error that says why,
// or nil when nothing stands in the way any more (a branch label taken
// meanwhile: s has a new one now).
func (st *Store) whyNotForked(ctx context.Context, s *Session, base string) error {
	q, err := bind("state", qState, kg.Params{"s": sessionIRI(s.ID), "parent": sessionIRI(s.ParentID),
		"branch": kg.String(s.Branch), "k": kg.Int(s.ForkedAt - 1), "last": kg.Int(-1)})
	if err != nil {
		return err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return err
	}
	if len(res.Solutions) != 1 {
		return fmt.Errorf("%w: %d state rows for one session", ErrCorrupt, len(res.Solutions))
	}
	row := res.Solutions[0]
	switch {
	case row["exists"] != nil:
		return fmt.Errorf("%w: a session with the fork's id is stored", ErrConflict)
	case row["deleted"] != nil:
		return fmt.Errorf("%w: a session with the fork's id was deleted", ErrConflict)
	}
	_, _, err = st.admitFork(ctx, s, row, base)
	return err
}
