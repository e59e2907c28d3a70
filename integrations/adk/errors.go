package adk

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/trails-kg/trails/integrations/adk/adkcore"
)

// Errors returned by this package, usable with errors.Is. An error that
// comes from the Trails store also matches the session package's error
// (session.ErrConflict, session.ErrInvalid, ...) and the kg error below
// it.
var (
	// ErrNotFound: no ADK session has this app name, user id and session
	// id (a session of another user or app is not found either).
	ErrNotFound = adkcore.ErrNotFound
	// ErrExists: Create was given a session id that is taken.
	ErrExists = adkcore.ErrExists
	// ErrInvalid: a request lacks a field ADK requires (app name, user
	// id, session id), or holds a value Trails cannot store (a state
	// value that is not JSON, a session id too long to record); nothing
	// was sent to the store.
	ErrInvalid = adkcore.ErrInvalid
	// ErrForeignSession: AppendEvent was given a session value that this
	// service did not return (it holds the history the append is checked
	// against).
	ErrForeignSession = errors.New("adk: session value not from this service")
	// ErrDiverged: AddSessionToMemory was given a session value whose
	// events are not those stored for its app name, user id and session
	// id: an event of the value differs from the stored event at its
	// position. Nothing was stored.
	ErrDiverged = errors.New("adk: session value differs from the stored session")
	// ErrNoArtifact: the artifact, or the version of it asked for, does
	// not exist (never saved, or deleted). It matches fs.ErrNotExist as
	// well, as the errors of ADK's own artifact services do.
	ErrNoArtifact = fmt.Errorf("adk: artifact not found: %w", fs.ErrNotExist)
	// ErrVersionTaken: Save was asked for a version that is not above
	// every version the file ever had (a version number names one
	// content, even once deleted); nothing was stored.
	ErrVersionTaken = errors.New("adk: artifact version taken")
)
