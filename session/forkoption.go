package session

import (
	"fmt"
	"unicode/utf8"

	"github.com/trails-kg/trails/internal/termsafe"
)

// The options of a fork: where it forks (ForkAtAnchor, ForkAtTurn,
// ForkBeforeInvocation, ForkAfterEvent) and what is recorded with it.

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
