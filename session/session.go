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
// A Store's conditional writes share requests (group commit, batch.go):
// those sent while another is in flight leave together, in one SPARQL
// Update request, each keeping its own compare and swap and outcome (see
// WithGroupCommit).
//
// A Store WithSigning signs a statement of each session head its writes
// leave and adds it to a witness outside the store (package witness,
// docs/verify.md), once the store has acknowledged the write.
//
// Comments that cite a "design note 00N" mean the design notes 000-004
// this package's features come from; they are not in this repository (see
// the README, "Features and the design notes they come from").
package session

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// MaxForkDepth is the longest parent chain (number of ancestors) a session
// may have: Fork refuses to go deeper and Load refuses to walk further.
const MaxForkDepth = 32

// MainBranch is the branch label a root session gets from New, carried by
// its turns; data stored before branch labels existed loads with it too.
// Not every root has it: a fork that Detach made a root keeps its
// "fork-…" label (the turns Detach copied keep the branch each came from).
const MainBranch = "main"

// Session is a conversation held in memory. Append and Fork change only
// memory; Store.Persist writes what the store lacks. A Session is not safe
// for concurrent use.
type Session struct {
	ID        string // UUIDv7 string
	Principal string // who acts; a fork inherits its parent's unless set before Persist
	ParentID  string // "" for a root
	ForkedAt  int    // for a fork: it owns turns with Index >= ForkedAt; indices below belong to ancestors
	Branch    string // MainBranch for a root New made, "fork-" + 8 hex chars for a fork (a root Detach made keeps its fork label)
	Kind      Kind   // KindMain (a root), KindBranch (a fork) or KindWorker (AsWorker), stored with a new session; "": the default
	Turns     []Turn // the effective history (inherited prefix, then its own turns), or its tail when From > 0
	// From is the Index of Turns[0]: 0 when Turns holds the whole
	// history; for a tail (LoadTail) the index of the first turn held
	// (Turns[k] is the turn at index From+k). Append, Fork and Persist
	// take it into account.
	From int
	// Anchors are the named positions of the history, by name: the
	// session's own and those of its ancestors inside the prefix it
	// inherits (see Anchor). Set by Load and Fork; ForkAtAnchor reads it.
	Anchors map[string]Anchor
	// TTL, set before the first Persist, gives the session a time to live:
	// Persist stores trails:expiresAt (its creation time plus TTL), after
	// which the operators' Expire (package admin) marks it expired. 0: it
	// never expires. Read only when the session is created; SetExpiry
	// changes the expiry later. A fork does not inherit it.
	TTL time.Duration
	// State, ExpiresAt and CancelRequested are the session's lifecycle as
	// stored: its state (StateActive when none is stored), when
	// it expires (zero: never) and whether an ancestor's end flagged it
	// for cancellation. Set by Load (ExpiresAt also by the Persist that
	// creates the session with a TTL); changed only by the Store.
	State           State
	ExpiresAt       time.Time
	CancelRequested bool

	// App is the app the session belongs to ("": none): its sessions share
	// the values of app: keys. Stored with a new session; a fork
	// belongs to its parent's.
	App string
	// Initial holds the values the session starts with (key prefixes as
	// for Structure.Delta), stored by the Persist that creates it, before
	// its first own turn (after the prefix a fork inherits); ignored
	// afterwards. Load does not set it: its values are part of Values.
	Initial map[string]json.RawMessage
	// Tags are stored with a new session, in the update that creates it
	// (each checked as Store.Tag checks it); ignored afterwards: Store.Tag
	// and Untag change a stored session's tags. Load does not set it
	// (Info.Tags lists them). A fork does not inherit its parent's.
	Tags []string
	// Values is the session's state as of its last turn: the values of
	// its own keys, changed by the deltas of its effective history and
	// the values it and its ancestors started with (a fork sees them as
	// of its fork point), and the current values of its principal's user:
	// keys and its app's app: keys (shared, so changed by other sessions
	// too). Set by Load and LoadTail; AppendTurn applies a turn's Delta
	// (but no temp: key) to it; Fork computes it as of the fork point.
	// Only Load and LoadTail read the shared values again.
	Values map[string]json.RawMessage

	depth int  // number of ancestors, as far as this value knows
	seen  seen // what this value last stored, for Persist's fast path
	// replaced is the head the last write of this value replaced (ok
	// false: the session was new with it): what its signed statement
	// names as the head it replaces.
	replaced seen
	across   bool      // forked with AcrossPrincipals: may be persisted by a scoped Store whatever the parent's principal
	fork     *forkSpec // how a new fork was asked for (position, metadata)
	gen      int       // the session's rewinds when loaded (trails:rewinds): its turns' IRI generation (turnID)
	fresh    int       // Turns[:fresh] were stored when this value was loaded or rewound: they keep their IDs
	lean     int       // Turns[:lean] were loaded with RawOnly: their Structure holds Raw and Delta only
	create   bool      // set by Store.Create for its Persist: a stored session with this id is ErrExists
	// initials are the values the sessions of its chain start with, root
	// first (set by Load): what Fork needs to compute a fork's values.
	initials []valueChange
	pre      []valueChange // for a tail: the last change of each key before it
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

// New returns a new root session of principal, with a fresh UUIDv7 id and no
// turns.
func New(principal string) *Session {
	return &Session{ID: uuid.Must(uuid.NewV7()).String(), Principal: principal, Branch: MainBranch, Kind: KindMain}
}

// Append adds a turn at the end of the history, stamped now, and returns
// it. Nothing is written to the store until Persist.
func (s *Session) Append(role, content string) Turn {
	i := s.From + len(s.Turns)
	t := Turn{
		Index:   i,
		Role:    role,
		Content: content,
		Branch:  s.Branch,
		Created: now(),
		ID:      s.turnID(i),
	}
	s.Turns = append(s.Turns, t)
	return t
}

// Depth returns the number of ancestors of s, as known to this value: set by
// Load and Fork.
func (s *Session) Depth() int { return s.depth }

// id returns s's id, "" for a nil Session (which the Store's calls
// refuse), for the spans of the calls given s.
func (s *Session) id() string {
	if s == nil {
		return ""
	}
	return s.ID
}

// now returns the current time as the store keeps it.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// branchRE matches a branch label: MainBranch, or "fork-" and 8 hex digits.
var branchRE = regexp.MustCompile(`^(main|fork-[0-9a-f]{8})$`)

// validate checks everything Persist needs before it sends anything, the
// content of the turns from index from on (the turns before it were stored
// by this value already, see seen).
func (s *Session) validate(from int) error {
	if err := s.checkHeader(); err != nil {
		return err
	}
	if s.From < 0 {
		return fmt.Errorf("%w: From %d is negative", ErrInvalid, s.From)
	}
	if s.ParentID != "" && s.ForkedAt > s.From+len(s.Turns) {
		return fmt.Errorf("%w: fork point %d out of range 0..%d", ErrInvalid, s.ForkedAt, s.From+len(s.Turns))
	}
	for k, t := range s.Turns {
		i := s.From + k
		if t.Index != i {
			return fmt.Errorf("%w: turn %d has index %d", ErrInvalid, i, t.Index)
		}
		if i < s.ForkedAt || i < from {
			continue // inherited (the ancestors' business) or stored already
		}
		if err := checkTurn(t); err != nil {
			return err
		}
		// A turn loaded from the store keeps the label it was stored
		// with: the archive of a rewind holds the rewound session's.
		if err := s.checkTurnBranch(t); err != nil && k >= s.fresh {
			return err
		}
		if err := checkDelta(deltaOf(t), s); err != nil {
			return fmt.Errorf("%w: turn %d: %v", ErrInvalid, i, err)
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
	if err := s.checkKind(); err != nil {
		return err
	}
	if !utf8.ValidString(s.App) || len(s.App) > maxShortBytes {
		return fmt.Errorf("%w: app %s must be UTF-8 of at most %d bytes", ErrInvalid, termsafe.Quote(s.App), maxShortBytes)
	}
	if err := checkDelta(s.Initial, s); err != nil {
		return fmt.Errorf("%w: initial values: %v", ErrInvalid, err)
	}
	for _, t := range s.Tags {
		if err := checkLabel("tag", t); err != nil {
			return err
		}
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

// addSession adds the metadata of s, created at t, to its graph in d.
func addSession(d *kg.Data, s *Session, t time.Time) {
	g := sessionIRI(s.ID)
	d.Add(g, g, iri(ontology.RDFType), iri(ontology.Session))
	d.Add(g, g, iri(ontology.RDFType), iri(ontology.ProvEntity)) // for PROV tools, which do no inference
	d.Add(g, g, iri(ontology.DCTIdentifier), kg.String(s.ID))
	d.Add(g, g, iri(ontology.Branch), kg.String(s.Branch))
	d.Add(g, g, iri(ontology.Kind), kg.String(string(s.kindOrDefault())))
	d.Add(g, g, iri(ontology.Created), kg.DateTime(t))
	agent := prov.AddAgent(d, g, s.Principal)
	d.Add(g, g, iri(ontology.Principal), agent)
	addApp(d, g, s)
	for _, t := range s.Tags {
		d.Add(g, g, iri(ontology.Tag), kg.String(t))
	}
	if s.ParentID != "" {
		p := sessionIRI(s.ParentID)
		d.Add(g, g, iri(ontology.ParentSession), p)
		d.Add(g, g, iri(ontology.ProvWasDerivedFrom), p)
		d.Add(g, g, iri(ontology.ForkedAtIndex), kg.Int(s.ForkedAt))
	}
}

// branchOrMain returns branch label b as stored, MainBranch when none is
// stored (data written before branch labels).
func branchOrMain(b string) string {
	if b == "" {
		return MainBranch
	}
	return b
}

// sameOwner checks that the stored principal and app of s (a row of
// state.rq) are the caller's: both are fixed when the session is created,
// so a value that names a stored session with another principal or app is
// not that session, and writing its turns there would put them in a
// conversation their author never saw (through a Store scoped to the
// author's principal, too). A caller without an app takes the stored one.
func sameOwner(s *Session, row kg.Solution) error {
	if p := row.String("principal"); p != s.Principal {
		return fmt.Errorf("%w: session %s is stored with another principal than the caller's %s", ErrConflict, s.ID, termsafe.Quote(s.Principal))
	}
	switch app := row.String("app"); s.App {
	case app:
	case "":
		s.App = app
	default:
		return fmt.Errorf("%w: session %s is stored with app %s, the caller's is %s (an app is fixed when the session is created)", ErrConflict, s.ID, termsafe.Quote(app), termsafe.Quote(s.App))
	}
	return nil
}
