// Package session is the domain of Trails: sessions of turns, forks that
// share their parent's prefix instead of copying it, Load that reassembles a
// fork by walking its parent chain, and read-only Replay. A Store persists
// sessions in Fuseki through package kg and records every fork, detach and
// deletion in PROV-O through package prov.
//
// A Session is an in-memory value: Append and Fork change nothing in the
// store until Persist. A fork stores only its own turns (indices ForkedAt and
// up) plus its parent link; Load walks the chain root ← … ← fork in two
// SPARQL requests whatever its depth (a third only for turns stored without
// a branch label or creation time, data written before those; see Load),
// guarded by MaxForkDepth and a visited set.
//
// A Store holds what an agent needs, and ForPrincipal scopes it to one
// principal's sessions. The operators' work on the whole dataset (Init,
// Check, Export, Import, the Expire sweep, Forest, Rechain of every
// session) is not here: it is package admin's, on a type of its own built
// from the kg client.
//
// Comments that cite a "design note 00N" mean the design notes 000-004
// this package's features come from; they are not in this repository (see
// the README, "Features and the design notes they come from").
package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/trails-kg/trails/internal/termsafe"
)

// MaxForkDepth is the longest parent chain (number of ancestors) a session
// may have: Fork refuses to go deeper and Load refuses to walk further.
const MaxForkDepth = 32

// MainBranch is the branch label a root session gets from New, carried by
// its turns; data stored before branch labels existed loads with it too.
// Not every root has it: a fork that Detach made a root keeps its
// "fork-…" label (the turns Detach copied keep the branch each came from).
const MainBranch = "main"

// MaxTurnBytes is the largest content of one turn Persist accepts (a role
// may hold up to 1 KiB). Fuseki's SPARQL parser takes time that grows faster than the
// length of a string literal (about 3 s for 1 MiB and minutes for 10 MiB on
// a small machine, blocking the store's one writer meanwhile), so larger
// turns are refused with ErrInvalid before anything is sent; store big
// artifacts elsewhere and put their IRI in the turn.
const MaxTurnBytes = 1 << 20

// maxRoleBytes is the longest role Persist accepts.
const maxRoleBytes = 1024

// Errors returned by this package, usable with errors.Is. Errors that come
// from the store also match the kg error (kg.ErrUnavailable, ...).
var (
	// ErrNotFound: no session has this id.
	ErrNotFound = errors.New("session: not found")
	// ErrParentMissing: an ancestor of a fork is gone (or was never
	// stored); the error is an *AncestorError naming it.
	ErrParentMissing = errors.New("session: parent missing")
	// ErrForkDepth: the parent chain is, or would become, longer than the
	// depth limit (MaxForkDepth unless the Store sets a lower one).
	ErrForkDepth = errors.New("session: fork chain too deep")
	// ErrNotForkable: the session is a worker (KindWorker), which is
	// always a leaf.
	ErrNotForkable = errors.New("session: cannot be forked")
	// ErrTooManyChildren: the parent already has as many forks as the
	// Store allows (DefaultMaxChildren unless WithMaxChildren says).
	ErrTooManyChildren = errors.New("session: too many forks")
	// ErrForkCycle: the parent links stored form a cycle.
	ErrForkCycle = errors.New("session: fork cycle")
	// ErrHasChildren: the session has forks, so it cannot be deleted.
	ErrHasChildren = errors.New("session: has forks")
	// ErrConflict: the stored history differs from what the caller holds,
	// e.g. another writer persisted first. Load, re-apply, retry.
	ErrConflict = errors.New("session: conflict with stored history")
	// ErrInvalid: bad input, such as a bad id, a fork point out of range,
	// invalid UTF-8 or an empty role. Nothing was sent to the store.
	ErrInvalid = errors.New("session: invalid")
	// ErrForbidden: a Store scoped to a principal (ForPrincipal) was asked
	// to act on another principal's session, or to fork one without
	// AcrossPrincipals.
	ErrForbidden = errors.New("session: not allowed for this principal")
	// ErrCorrupt: the stored data breaks Trails' rules (a gap or a
	// duplicate in a session's turn indices, two parents, ...); run
	// trails-admin check.
	ErrCorrupt = errors.New("session: stored data is corrupt")
	// ErrState: the session's lifecycle state does not allow it: a
	// transition SetState refuses (completed, failed and expired are
	// terminal), or turns appended to a session in a terminal state.
	ErrState = errors.New("session: state does not allow it")
	// ErrMerged: the child's result was merged into its parent already
	// (Merge); a child is merged once.
	ErrMerged = errors.New("session: already merged")
)

// AncestorError reports a missing ancestor: Session's chain leads to
// Missing, which is not stored. It matches ErrParentMissing.
type AncestorError struct {
	Session string // the session whose chain is broken
	Missing string // the id of the missing ancestor
}

func (e *AncestorError) Error() string {
	return fmt.Sprintf("session: ancestor %s of %s is missing", e.Missing, e.Session)
}

// Is reports whether target is ErrParentMissing.
func (e *AncestorError) Is(target error) bool { return target == ErrParentMissing }

// Turn is one turn of a conversation.
type Turn struct {
	Index   int    // position in the effective history, from 0
	Role    string // "user", "assistant", "system", "tool", ...
	Content string
	Branch  string    // label of the session that wrote it: "main" or "fork-xxxxxxxx"
	Created time.Time // UTC, millisecond precision (what the store keeps)
	// ID is the turn's IRI in the store, TurnID(owner, Index) where owner is
	// the session that wrote it (an ancestor, for an inherited turn; the
	// session itself after a Detach), followed by "/r" and k for a turn
	// written after the owner's k-th Rewind (ontology.TurnIRIGen). A turn a
	// Rewind moved to its archive keeps its ID. Set by Append, Persist, Load
	// and Replay; ForkAtTurn takes it.
	ID string
}

// Session is a conversation held in memory. Append and Fork change only
// memory; Store.Persist writes what the store lacks. A Session is not safe
// for concurrent use.
type Session struct {
	ID        string // UUIDv7 string
	Principal string // who acts; a fork inherits its parent's unless set before Persist
	ParentID  string // "" for a root
	ForkedAt  int    // for a fork: it owns turns with Index >= ForkedAt; indices below belong to ancestors
	Branch    string // MainBranch for a root, "fork-" + 8 hex chars for a fork
	Kind      Kind   // KindMain (a root), KindBranch (a fork) or KindWorker (AsWorker), stored with a new session; "": the default
	Turns     []Turn // the whole effective history: inherited prefix, then its own turns
	// Anchors are the named positions of the history, by name: the
	// session's own and those of its ancestors inside the prefix it
	// inherits (see Anchor). Set by Load and Fork; ForkAtAnchor reads it.
	Anchors map[string]Anchor
	// TTL, set before the first Persist, gives the session a time to live:
	// Persist stores trails:expiresAt (its creation time plus TTL), after
	// which the operators' Expire (package admin) marks it expired. 0: it
	// never expires. Read only when the session is created; SetExpiry
	// changes the expiry later. A fork does not inherit it (state.go).
	TTL time.Duration
	// State, ExpiresAt and CancelRequested are the session's lifecycle as
	// stored (state.go): its state (StateActive when none is stored), when
	// it expires (zero: never) and whether an ancestor's end flagged it
	// for cancellation. Set by Load (ExpiresAt also by the Persist that
	// creates the session with a TTL); changed only by the Store.
	State           State
	ExpiresAt       time.Time
	CancelRequested bool

	depth  int       // number of ancestors, as far as this value knows
	seen   seen      // what this value last stored, for Persist's fast path
	across bool      // forked with AcrossPrincipals: may be persisted by a scoped Store whatever the parent's principal
	fork   *forkSpec // how a new fork was asked for (position, metadata): see meta.go
	gen    int       // the session's rewinds when loaded (trails:rewinds): its turns' IRI generation (rewind.go)
	fresh  int       // Turns[:fresh] were stored when this value was loaded or rewound: they keep their IDs
}

// seen is the stored state of a session as its last successful Persist
// left it: Persist's next append can then go straight to the compare and
// swap, without first reading the state (one round trip less).
type seen struct {
	ok    bool
	own   int       // own turns stored
	head  string    // their digest
	state hashState // the digest's hash state, to go on from
	last  Turn      // the last of them, as stored
	chain string    // the chain digest of the last turn of the effective history ("" if none)
}

// seenAfter returns the seen state of s once its own turns are all stored,
// with the hash state after them and the chain digest of its last turn.
func seenAfter(s *Session, head string, state hashState, chain string) seen {
	own := s.Turns[s.ForkedAt:]
	sn := seen{ok: true, own: len(own), head: head, state: state, chain: chain}
	if len(own) > 0 {
		sn.last = own[len(own)-1]
	}
	return sn
}

// ForkOption qualifies a Fork.
type ForkOption func(*Session)

// AcrossPrincipals allows a Store scoped to a principal (ForPrincipal) to
// persist this fork although its parent belongs to another principal. The
// fork's PROV record says so (trails:acrossPrincipals true).
func AcrossPrincipals() ForkOption { return func(s *Session) { s.across = true } }

// New returns a new root session of principal, with a fresh UUIDv7 id and no
// turns.
func New(principal string) *Session {
	return &Session{ID: uuid.Must(uuid.NewV7()).String(), Principal: principal, Branch: MainBranch, Kind: KindMain}
}

// Append adds a turn at the end of the history, stamped now, and returns
// it. Nothing is written to the store until Persist.
func (s *Session) Append(role, content string) Turn {
	t := Turn{
		Index:   len(s.Turns),
		Role:    role,
		Content: content,
		Branch:  s.Branch,
		Created: now(),
		ID:      s.turnID(len(s.Turns)), // rewind.go
	}
	s.Turns = append(s.Turns, t)
	return t
}

// Fork returns a new in-memory session that shares s.Turns[0:at] and
// continues from there: a fresh id, s as parent, s's principal, a new
// branch label "fork-" + 8 random hex characters, and the anchors of s at
// or below at. 0 <= at <= len(s.Turns). The fork is of KindBranch, or
// KindWorker with the option AsWorker.
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
	if at < 0 || at > len(s.Turns) {
		return nil, fmt.Errorf("fork %s at %d: %w: fork point out of range 0..%d", s.ID, at, ErrInvalid, len(s.Turns))
	}
	if s.depth+1 > MaxForkDepth {
		return nil, fmt.Errorf("fork %s: %w: the child would have %d ancestors, more than %d", s.ID, ErrForkDepth, s.depth+1, MaxForkDepth)
	}
	child.ForkedAt = at
	child.Turns = make([]Turn, at, at+8)
	copy(child.Turns, s.Turns[:at])
	child.Anchors = anchorsUpTo(s.Anchors, at)
	return child, nil
}

// Depth returns the number of ancestors of s, as known to this value: set by
// Load and Fork.
func (s *Session) Depth() int { return s.depth }

// now returns the current time as the store keeps it.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// newBranch returns a fresh fork label: "fork-" and 8 random hex digits.
func newBranch() string {
	var b [4]byte
	rand.Read(b[:])
	return "fork-" + hex.EncodeToString(b[:])
}

var branchRE = regexp.MustCompile(`^(main|fork-[0-9a-f]{8})$`)

// checkID returns ErrInvalid unless id is a UUID in canonical form.
// shownID returns session id as an error message shows it, escaped and
// cut (termsafe.Cut): an id a caller gave may be anything.
func shownID(id string) string { return termsafe.Cut(id, termsafe.MaxQuoted) }

func checkID(id string) error {
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return fmt.Errorf("%w: session id %s is not a canonical UUID", ErrInvalid, termsafe.Quote(id))
	}
	return nil
}

// validate checks everything Persist needs before it sends anything, the
// content of the turns from index from on (the turns before it were stored
// by this value already, see seen).
func (s *Session) validate(from int) error {
	if err := s.checkHeader(); err != nil {
		return err
	}
	if s.ParentID != "" && s.ForkedAt > len(s.Turns) {
		return fmt.Errorf("%w: fork point %d out of range 0..%d", ErrInvalid, s.ForkedAt, len(s.Turns))
	}
	for i, t := range s.Turns {
		if t.Index != i {
			return fmt.Errorf("%w: turn %d has index %d", ErrInvalid, i, t.Index)
		}
		if i < s.ForkedAt || i < from {
			continue // inherited (the ancestors' business) or stored already
		}
		if err := checkTurn(t); err != nil {
			return err
		}
		if err := s.checkTurnBranch(t); err != nil {
			return err
		}
	}
	return nil
}

// checkHeader checks the fields of s that Persist stores with a new
// session: its id, principal, branch label, TTL, kind and fork link (a
// fork point of at least 0; validate bounds it by the history).
func (s *Session) checkHeader() error {
	if err := checkID(s.ID); err != nil {
		return err
	}
	if s.Principal == "" || !utf8.ValidString(s.Principal) || strings.ContainsAny(s.Principal, "\x00") {
		return fmt.Errorf("%w: principal %s must be non-empty UTF-8", ErrInvalid, termsafe.Quote(s.Principal))
	}
	if !branchRE.MatchString(s.Branch) {
		return fmt.Errorf("%w: branch %s is neither %q nor \"fork-\" and 8 hex digits", ErrInvalid, termsafe.Quote(s.Branch), MainBranch)
	}
	if s.TTL < 0 {
		return fmt.Errorf("%w: negative TTL %v", ErrInvalid, s.TTL)
	}
	if err := s.checkKind(); err != nil { // limits.go
		return err
	}
	if s.ParentID == "" {
		// A root's branch is MainBranch, or the fork label it kept when it
		// was detached.
		if s.ForkedAt != 0 {
			return fmt.Errorf("%w: a root has ForkedAt 0, not %d", ErrInvalid, s.ForkedAt)
		}
		return nil
	}
	if err := checkID(s.ParentID); err != nil {
		return fmt.Errorf("parent: %w", err)
	}
	if s.ParentID == s.ID {
		return fmt.Errorf("%w: a session cannot be its own parent", ErrInvalid)
	}
	if s.Branch == MainBranch {
		return fmt.Errorf("%w: a fork's branch is \"fork-\" and 8 hex digits, not %q", ErrInvalid, MainBranch)
	}
	if s.ForkedAt < 0 {
		return fmt.Errorf("%w: fork point %d out of range", ErrInvalid, s.ForkedAt)
	}
	return nil
}

// checkTurn checks what Persist demands of the fields of a turn it
// writes: a non-empty UTF-8 role of at most 1 KiB, UTF-8 content of at
// most MaxTurnBytes, and a branch label.
func checkTurn(t Turn) error {
	i := t.Index
	if t.Role == "" || !utf8.ValidString(t.Role) {
		return fmt.Errorf("%w: turn %d: role %s must be non-empty UTF-8", ErrInvalid, i, termsafe.Quote(t.Role))
	}
	if !utf8.ValidString(t.Content) {
		return fmt.Errorf("%w: turn %d: content is not valid UTF-8", ErrInvalid, i)
	}
	if n := len(t.Content); n > MaxTurnBytes {
		return fmt.Errorf("%w: turn %d: %d bytes of content, more than the %d a turn may hold (session.MaxTurnBytes)", ErrInvalid, i, n, MaxTurnBytes)
	}
	if len(t.Role) > maxRoleBytes {
		return fmt.Errorf("%w: turn %d: a role of %d bytes, more than %d", ErrInvalid, i, len(t.Role), maxRoleBytes)
	}
	if !branchRE.MatchString(t.Branch) {
		return fmt.Errorf("%w: turn %d: branch %s is not a branch label", ErrInvalid, i, termsafe.Quote(t.Branch))
	}
	return nil
}

// checkTurnBranch checks that s writes turn t under its own label: only a
// detached root holds turns of other branches (the copies of its former
// prefix).
func (s *Session) checkTurnBranch(t Turn) error {
	if (s.ParentID != "" || s.Branch == MainBranch) && t.Branch != s.Branch {
		return fmt.Errorf("%w: turn %d: branch %s, want the session's %s", ErrInvalid, t.Index, termsafe.Quote(t.Branch), termsafe.Quote(s.Branch))
	}
	return nil
}
