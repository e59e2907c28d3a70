package openaiagents

import (
	"errors"
	"fmt"
)

// Errors returned by this package, usable with errors.Is. An error that
// comes from the Trails store also matches the session package's error
// (session.ErrConflict, session.ErrNotFound, ...) and the kg error below
// it.
var (
	// ErrInvalid: an item Trails cannot store as it is (no variant of the
	// union set, or more than one; a string that is not valid UTF-8; an
	// item over session.MaxTurnBytes; one the OpenAI SDK cannot encode).
	// It comes inside an *ItemError naming the item; one the core's rules
	// refuse (UTF-8, size, role) also matches session.ErrInvalid. Nothing
	// was sent to the store.
	ErrInvalid = errors.New("openaiagents: invalid item")
	// ErrInherited: PopItem or ClearSession would remove an item that a
	// fork inherits from its parent: a fork can give up only its own
	// items (fork the parent at an earlier point instead). Nothing was
	// changed.
	ErrInherited = errors.New("openaiagents: item inherited from the parent session")
)

// ItemError reports an item of AddItems that cannot be stored: Index is
// its position in the slice given, Type its "type" ("" when it has none),
// Err why (matching ErrInvalid). AddItems stores none of the items when
// one is refused.
type ItemError struct {
	Index int
	Type  string
	Err   error
}

// Error says which item was refused and why.
func (e *ItemError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("item %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("item %d (%s): %v", e.Index, e.Type, e.Err)
}

// Unwrap returns Err.
func (e *ItemError) Unwrap() error { return e.Err }
