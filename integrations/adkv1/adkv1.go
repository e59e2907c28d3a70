// Package adkv1 is a session service of Google's Agent Development Kit
// for Go v1 (google.golang.org/adk, v1.7.0) backed by Trails:
// SessionService implements ADK v1's session.Service and passes ADK v1's
// own conformance suite (sessiontestsuite) against Fuseki. It is package
// adk's service for ADK v2 with v1's types: both are package adkcore
// with their own event codec, so a session is stored the same way by
// either (app name as App, user id as Principal, each event a structured
// turn with a raw copy, state keys with ADK's scopes), and each reads the
// other's events from their structured fields. It is a module of its own
// because ADK v1.7.0 and v2.2.0 require versions of OpenTelemetry's log
// module that do not build together; it is not in the repository's
// go.work for the same reason (run its tests with GOWORK=off).
package adkv1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/adk/session"

	"github.com/trails-kg/trails/integrations/adk/adkcore"
	"github.com/trails-kg/trails/internal/telemetry"
	trails "github.com/trails-kg/trails/session"
)

// Errors returned by this package, usable with errors.Is; the same
// values as package adk's. An error that comes from the Trails store also
// matches the session package's error (session.ErrConflict of Trails, ...)
// and the kg error below it.
var (
	// ErrNotFound: no ADK session has this app name, user id and session
	// id (a session of another user or app is not found either). Get and
	// AppendEvent return it wrapped with ADK v1's session.ErrNotFound as
	// well, as ADK v1 asks of every service.
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
	ErrForeignSession = errors.New("adkv1: session value not from this service")
)

// RawFormat is the format of the raw copy each stored event keeps: the
// event's JSON as ADK v1 encodes it (field names as in Go), from which Get
// returns the event. Package adk's events (adk.event/v2) are read from
// their structured fields, as a turn of any other client.
const RawFormat = "adk.event/v1"

// codec is how ADK v1's events are stored.
var codec = adkcore.Codec[*session.Event]{
	Format: RawFormat,
	Fields: func(ev *session.Event) adkcore.Fields {
		return adkcore.Fields{ID: ev.ID, InvocationID: ev.InvocationID, Author: ev.Author, Timestamp: ev.Timestamp,
			Content: ev.Content, ModelVersion: ev.ModelVersion, FinishReason: ev.FinishReason, Usage: ev.UsageMetadata,
			CustomMetadata: ev.CustomMetadata, StateDelta: ev.Actions.StateDelta, Partial: ev.Partial}
	},
	Decode: func(raw []byte) (*session.Event, error) {
		ev := new(session.Event)
		return ev, json.Unmarshal(raw, ev)
	},
	FromFields: func(f adkcore.Fields) *session.Event {
		ev := &session.Event{ID: f.ID, Timestamp: f.Timestamp, Author: f.Author, InvocationID: f.InvocationID,
			LLMResponse: model.LLMResponse{Content: f.Content, ModelVersion: f.ModelVersion, FinishReason: f.FinishReason}}
		ev.Actions.StateDelta = f.StateDelta
		return ev
	},
	WithDelta: func(ev *session.Event, d map[string]any) *session.Event {
		cp := *ev
		cp.Actions.StateDelta = d
		return &cp
	},
}

// SessionService is an ADK v1 session.Service over a Trails store. It
// holds no state besides its options, so any number of services (in one
// process or many, of either ADK version) may share a dataset. It is safe
// for concurrent use.
type SessionService struct {
	core adkcore.Service[*session.Event]
}

var _ session.Service = (*SessionService)(nil)

// Option configures a SessionService.
type Option func(*SessionService)

// WithListState says whether List returns each session's state (true, the
// default, as ADK's own services do), which costs one load of the
// session's last turn per session listed, or sessions with an empty state
// (one request in all).
func WithListState(load bool) Option {
	return func(s *SessionService) { s.core.ListState = load }
}

// NewSessionService returns a SessionService storing in st. A Store
// scoped to a principal (session.ForPrincipal of Trails) serves that
// user's sessions only.
func NewSessionService(st *trails.Store, opts ...Option) *SessionService {
	s := &SessionService{core: adkcore.Service[*session.Event]{St: st, ListState: true, Codec: codec}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// notFound wraps err with ADK v1's session.ErrNotFound when it is
// ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %w", session.ErrNotFound, err)
	}
	return err
}

// Create stores a new session: req.SessionID, or a new UUIDv7 when empty,
// with req.State as the values it starts with (app: and user: keys are
// shared with the app's and the user's other sessions), and returns it
// with the app's and user's current shared values in its state.
//
// It returns ErrInvalid for a nil request, an empty app name or user id
// or a state value that is not JSON, ErrExists when the id is taken (also
// by a session deleted since), or a store error.
func (s *SessionService) Create(ctx context.Context, req *session.CreateRequest) (_ *session.CreateResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adkv1.SessionService.Create", "")
	defer func() { call.End(err) }()
	if req != nil {
		call.SetSession(req.SessionID)
	}
	if req == nil {
		return nil, fmt.Errorf("create: %w: nil request", ErrInvalid)
	}
	v, err := s.core.Create(ctx, req.AppName, req.UserID, req.SessionID, req.State)
	if err != nil {
		return nil, err
	}
	return &session.CreateResponse{Session: &Session{v}}, nil
}

// Get returns a session with its events (the last req.NumRecentEvents,
// those from req.After on, inclusive) and its state, the app's and user's
// shared values included.
//
// It returns ErrInvalid for a nil request or an empty field, ErrNotFound
// (with session.ErrNotFound of ADK) when no session of that app and user
// has the id, or a store error.
func (s *SessionService) Get(ctx context.Context, req *session.GetRequest) (_ *session.GetResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adkv1.SessionService.Get", "")
	defer func() { call.End(err) }()
	if req != nil {
		call.SetSession(req.SessionID)
	}
	if req == nil {
		return nil, fmt.Errorf("get: %w: nil request", ErrInvalid)
	}
	v, err := s.core.Get(ctx, req.AppName, req.UserID, req.SessionID, req.NumRecentEvents, req.After)
	if err != nil {
		return nil, notFound(err)
	}
	return &session.GetResponse{Session: &Session{v}}, nil
}

// List returns the sessions of req.AppName, of req.UserID only when it is
// not empty, without their events and, unless WithListState(false), with
// their state, in no particular order.
//
// It returns ErrInvalid for a nil request or an empty app name, or a
// store error.
func (s *SessionService) List(ctx context.Context, req *session.ListRequest) (_ *session.ListResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adkv1.SessionService.List", "")
	defer func() { call.End(err) }()
	if req == nil {
		return nil, fmt.Errorf("list: %w: nil request", ErrInvalid)
	}
	vs, err := s.core.List(ctx, req.AppName, req.UserID)
	if err != nil {
		return nil, err
	}
	out := make([]session.Session, len(vs))
	for i, v := range vs {
		out[i] = &Session{v}
	}
	return &session.ListResponse{Sessions: out}, nil
}

// Delete deletes a session, recorded in PROV; its forks (made with
// package adk) are detached first and stay. Deleting a session that is
// not stored, or is another user's, does nothing.
//
// It returns ErrInvalid for a nil request or an empty field, or a store
// error.
func (s *SessionService) Delete(ctx context.Context, req *session.DeleteRequest) (err error) {
	ctx, call := telemetry.Start(ctx, "adkv1.SessionService.Delete", "")
	defer func() { call.End(err) }()
	if req != nil {
		call.SetSession(req.SessionID)
	}
	if req == nil {
		return fmt.Errorf("delete: %w: nil request", ErrInvalid)
	}
	return s.core.Delete(ctx, req.AppName, req.UserID, req.SessionID)
}

// AppendEvent stores event in session cur, a value this service returned,
// and then adds it to cur (without its temp: keys) and its state delta to
// cur's state (with them, for the rest of the invocation). A partial event
// is neither stored nor added. The append is a compare and swap on the
// history cur holds: when another writer appended since cur was loaded,
// nothing is stored, cur is left as it was, and the error matches
// session.ErrConflict of Trails: Get the session again and retry.
//
// It returns ErrInvalid for a nil session or event or a state value that
// is not JSON, ErrForeignSession for a session value of another service,
// ErrNotFound (with session.ErrNotFound of ADK) when the session is no
// longer stored, or a store error.
func (s *SessionService) AppendEvent(ctx context.Context, cur session.Session, event *session.Event) (err error) {
	ctx, call := telemetry.Start(ctx, "adkv1.SessionService.AppendEvent", "")
	defer func() { call.End(err) }()
	if cur != nil {
		call.SetSession(cur.ID())
	}
	if cur == nil || event == nil {
		return fmt.Errorf("append event: %w: nil session or event", ErrInvalid)
	}
	if event.Partial {
		return nil
	}
	sess, ok := cur.(*Session)
	if !ok {
		return fmt.Errorf("append event to %s: %w: %T", cur.ID(), ErrForeignSession, cur)
	}
	return notFound(s.core.Append(ctx, sess.v, event))
}

// Session is an ADK v1 session as this service returns it, over a Trails
// session value that AppendEvent appends to with Trails' compare and
// swap. Its State holds the session's keys and the app: and user: keys as
// of the Get or Create that returned it, plus the changes of the events
// appended through it (temp: keys included, never stored). It is safe for
// concurrent use.
type Session struct {
	v *adkcore.Value[*session.Event]
}

var _ session.Session = (*Session)(nil)

// ID returns the ADK session id.
func (s *Session) ID() string { return s.v.ID }

// AppName returns the app name (the Trails session's App).
func (s *Session) AppName() string { return s.v.App }

// UserID returns the user id (the Trails session's Principal).
func (s *Session) UserID() string { return s.v.User }

// TrailsID returns the id of the Trails session that stores s.
func (s *Session) TrailsID() string { return s.v.TrailsID() }

// State returns the session's state.
func (s *Session) State() session.State { return state{s.v} }

// Events returns the session's events, oldest first.
func (s *Session) Events() session.Events { return events(s.v.Events()) }

// LastUpdateTime returns the timestamp of the last event held (of the
// last turn of the history for a session without events).
func (s *Session) LastUpdateTime() time.Time { return s.v.Updated() }

// events is the list of a session's events.
type events []*session.Event

func (e events) All() iter.Seq[*session.Event] {
	return func(yield func(*session.Event) bool) {
		for _, ev := range e {
			if !yield(ev) {
				return
			}
		}
	}
}

func (e events) Len() int { return len(e) }

func (e events) At(i int) *session.Event {
	if i >= 0 && i < len(e) {
		return e[i]
	}
	return nil
}

// state is a session's state.
type state struct {
	v *adkcore.Value[*session.Event]
}

func (st state) Get(key string) (any, error) {
	a, ok := st.v.Get(key)
	if !ok {
		return nil, session.ErrStateKeyNotExist
	}
	return a, nil
}

// Set sets key in this session value only, as ADK's own services do: a
// change is stored by the event whose StateDelta holds it.
func (st state) Set(key string, v any) error {
	st.v.Set(key, v)
	return nil
}

func (st state) All() iter.Seq2[string, any] {
	cp := st.v.State()
	return func(yield func(string, any) bool) {
		for k, v := range maps.All(cp) {
			if !yield(k, v) {
				return
			}
		}
	}
}
