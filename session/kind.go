package session

import (
	"fmt"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Kind says what a session is for (design note 002). It is fixed when the session
// is created: Persist stores it (trails:kind) with a new session, and Load,
// Info and List read it back. A session stored without one (written before
// kinds existed) is KindMain if it is a root and KindBranch if it is a fork;
// a detached fork keeps its kind.
type Kind string

// The kinds of sessions.
const (
	// KindMain is a primary conversation: a root. New makes one.
	KindMain Kind = "main"
	// KindBranch is a sub-task forked from another session. Fork makes
	// one unless given AsWorker.
	KindBranch Kind = "branch"
	// KindWorker is a fork made to run one task (AsWorker). A worker is
	// always a leaf: Session.Fork and Persist refuse to fork it with
	// ErrNotForkable.
	KindWorker Kind = "worker"
)

// AsWorker makes the fork a worker (KindWorker): a session that runs one
// task and cannot itself be forked.
func AsWorker() ForkOption { return func(s *Session) { s.Kind = KindWorker } }

// kindOf returns the kind of a stored session from its trails:kind value
// (stored, "" when absent) and its parent IRI ("" for a root).
func kindOf(stored, parent string) Kind {
	switch {
	case stored != "":
		return Kind(stored)
	case parent == "":
		return KindMain
	default:
		return KindBranch
	}
}

// kindOrDefault returns the kind Persist stores for s: its Kind, or the
// default of a root or a fork when it has none.
func (s *Session) kindOrDefault() Kind {
	if s.Kind != "" {
		return s.Kind
	}
	return kindOf("", s.ParentID)
}

// forkable returns ErrNotForkable when s is a worker.
func (s *Session) forkable() error {
	if s.Kind == KindWorker {
		return fmt.Errorf("%w: it is a worker, and a worker is always a leaf", ErrNotForkable)
	}
	return nil
}

// checkKind returns ErrInvalid unless the Kind of s is empty or a kind,
// and main only for a root.
func (s *Session) checkKind() error {
	switch s.Kind {
	case "", KindBranch, KindWorker:
		return nil
	case KindMain:
		if s.ParentID != "" {
			return fmt.Errorf("%w: a fork cannot be of kind %q (a fork is %q or %q)", ErrInvalid, KindMain, KindBranch, KindWorker)
		}
		return nil
	}
	return fmt.Errorf("%w: kind %s is none of %q, %q and %q", ErrInvalid, termsafe.Quote(string(s.Kind)), KindMain, KindBranch, KindWorker)
}

// storedKind returns ErrCorrupt when the trails:kind stored for session iri
// is not a kind ("" is: a session stored before kinds existed).
func storedKind(iri, kind string) error {
	switch Kind(kind) {
	case "", KindMain, KindBranch, KindWorker:
		return nil
	}
	return fmt.Errorf("%w: session %s: kind %s is none of %q, %q and %q", ErrCorrupt, ontology.SessionID(iri), termsafe.Quote(kind), KindMain, KindBranch, KindWorker)
}

// sameKind checks that the stored kind of s (a row of state.rq) is the
// caller's: a kind is fixed at creation. A caller without one takes the
// stored kind.
func sameKind(s *Session, row kg.Solution) error {
	stored := kindOf(row.String("kind"), row.String("parent"))
	switch s.Kind {
	case "":
		s.Kind = stored
	case stored:
	default:
		return fmt.Errorf("%w: stored kind %s, the caller's %s (a kind is fixed when the session is created)", ErrConflict, termsafe.Quote(string(stored)), termsafe.Quote(string(s.Kind)))
	}
	return nil
}
