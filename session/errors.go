package session

import (
	"errors"
	"fmt"

	"github.com/trails-kg/trails/internal/telemetry"
)

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
	// ErrExists: Store.Create was asked to create a session whose id is
	// stored already, or was stored and deleted.
	ErrExists = errors.New("session: already exists")
	// ErrMerged: the child's result was merged into its parent already
	// (Merge); a child is merged once.
	ErrMerged = errors.New("session: already merged")
	// ErrNotWitnessed: the write is stored, but its signed statement did
	// not reach the Store's witness (WithSigning); the error is a
	// *WitnessError holding the statement.
	ErrNotWitnessed = errors.New("session: stored but not witnessed")
)

// The sentinels name the failures they match in traces and metrics
// (error.type), before the kg errors they may wrap.
func init() {
	telemetry.RegisterErrors(ErrNotFound, ErrParentMissing, ErrForkDepth, ErrNotForkable, ErrTooManyChildren,
		ErrForkCycle, ErrHasChildren, ErrConflict, ErrInvalid, ErrForbidden, ErrCorrupt, ErrState, ErrExists,
		ErrMerged, ErrNotWitnessed)
}

// AncestorError reports a missing ancestor: Session's chain leads to
// Missing, which is not stored. It matches ErrParentMissing.
type AncestorError struct {
	Session string // the session whose chain is broken
	Missing string // the id of the missing ancestor
}

// Error names the session and the ancestor it is missing.
func (e *AncestorError) Error() string {
	return fmt.Sprintf("session: ancestor %s of %s is missing", e.Missing, e.Session)
}

// Is reports whether target is ErrParentMissing.
func (e *AncestorError) Is(target error) bool { return target == ErrParentMissing }
