// Package adkcore is what the ADK session services of Trails share
// whatever ADK's major version: package adk (ADK v2, this module) and
// package adkv1 (ADK v1, module integrations/adkv1, which cannot be
// built with ADK v2: the two require versions of OpenTelemetry's log
// module that do not compile together). It holds how ADK keys map onto
// Trails sessions (id.go), how an event is stored as a structured turn
// and read back (turn.go), the session value appends go through
// (value.go), and Create, Get, List, Delete and AppendEvent over a Trails
// store (service.go), generic over the event type; each adapter gives it
// its event type's codec (Codec) and wraps its values in its own ADK
// types. It imports neither version of ADK (genai's types are the same in
// both). It is public only so that the other module can import it: an
// application uses package adk or adkv1, and its names may change with
// them.
package adkcore

import "errors"

// Errors returned by the services, which packages adk and adkv1 export
// under the same names.
var (
	// ErrNotFound: no ADK session has this app name, user id and session
	// id (a session of another user or app is not found either).
	ErrNotFound = errors.New("adk: session not found")
	// ErrExists: Create was given a session id that is taken.
	ErrExists = errors.New("adk: session exists")
	// ErrInvalid: a request lacks a field ADK requires, or holds a value
	// Trails cannot store; nothing was sent to the store.
	ErrInvalid = errors.New("adk: invalid request")
)
