// Package adk is a session service of Google's Agent Development Kit for
// Go (ADK v2, google.golang.org/adk/v2) backed by Trails: SessionService
// implements ADK's session.Service and passes ADK's own conformance suite
// (sessiontestsuite) against Fuseki. Each ADK session is a Trails session
// (app name as App, user id as Principal), each event a structured turn
// with a raw copy from which Get returns it as ADK encoded it, and state
// keys keep ADK's scopes (app:, user:, temp:), which Trails shares. Beyond
// ADK, a session can be forked before an invocation or at an event,
// sharing its prefix in the store, rewound without losing anything, and
// its forks listed (fork.go). MemoryService (ADK's memory.Service)
// searches a user's sessions where they are stored, with SPARQL;
// ArtifactService (ADK's artifact.Service) keeps each version of an
// artifact as a data part of a turn, recorded in PROV.
package adk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/adk/v2/session"

	trails "github.com/trails-kg/trails/session"
)

// SessionService is an ADK session.Service over a Trails store. It holds
// no state besides its options, so any number of services (in one
// process or many) may share a dataset. It is safe for concurrent use.
type SessionService struct {
	st        *trails.Store
	listState bool
}

var _ session.Service = (*SessionService)(nil)

// Option configures a SessionService.
type Option func(*SessionService)

// WithListState says whether List returns each session's state (true, the
// default, as ADK's own services do), which costs one load of the
// session's last turn per session listed, or sessions with an empty state
// (one request in all).
func WithListState(load bool) Option {
	return func(s *SessionService) { s.listState = load }
}

// NewSessionService returns a SessionService storing in st. A Store
// scoped to a principal (session.ForPrincipal) serves that user's
// sessions only.
func NewSessionService(st *trails.Store, opts ...Option) *SessionService {
	s := &SessionService{st: st, listState: true}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Create stores a new session: req.SessionID, or a new UUIDv7 when empty,
// with req.State as the values it starts with (app: and user: keys are
// shared with the app's and the user's other sessions), and returns it
// with the app's and user's current shared values in its state.
//
// It returns ErrInvalid when the app name or user id is empty or a state
// value is not JSON, ErrExists when the id is taken (also by a session
// deleted since: Trails does not bring a deleted session back), or a
// store error.
func (s *SessionService) Create(ctx context.Context, req *session.CreateRequest) (*session.CreateResponse, error) {
	if req.AppName == "" || req.UserID == "" {
		return nil, fmt.Errorf("create: %w: app name and user id are required, got %q and %q", ErrInvalid, req.AppName, req.UserID)
	}
	initial, err := deltaOf(req.State)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", req.SessionID, err)
	}
	id, err := s.create(ctx, req.AppName, req.UserID, req.SessionID, initial, nil)
	if err != nil {
		return nil, err
	}
	got, err := s.load(ctx, req.AppName, req.UserID, id, trails.Tail{})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", id, err)
	}
	return &session.CreateResponse{Session: got}, nil
}

// create stores ADK session id (a new UUIDv7 when empty) of user in app,
// with the values it starts with and turns as its history, tagged with
// the app, its ADK id and tags; it returns the ADK id. The errors are
// Create's.
func (s *SessionService) create(ctx context.Context, app, user, id string, initial map[string]json.RawMessage, turns []trails.Turn, tags ...string) (string, error) {
	ts := trails.New(user)
	if id == "" {
		id = ts.ID
	}
	ts.ID = trailsID(app, user, id)
	ts.App = app
	tags = append([]string{appTag(app)}, tags...)
	if t, err := idTag(id); err != nil {
		return "", fmt.Errorf("create %s: %w", id, err)
	} else if t != "" {
		tags = append(tags, t)
	}
	ts.Initial = initial
	for _, t := range turns {
		ts.AppendTurn(t)
	}
	if err := s.st.Create(ctx, ts); err != nil {
		if errors.Is(err, trails.ErrExists) {
			return "", fmt.Errorf("create %s: %w: %w", id, ErrExists, err)
		}
		return "", fmt.Errorf("create %s: %w", id, err)
	}
	if err := s.st.Tag(ctx, ts.ID, tags...); err != nil {
		return "", fmt.Errorf("create %s: %w", id, err)
	}
	return id, nil
}

// Get returns a session with its events (the last req.NumRecentEvents,
// those from req.After on, inclusive: as ADK's own services) and its
// state, the app's and user's shared values included.
//
// It returns ErrInvalid when a field is empty, ErrNotFound when no session
// of that app and user has the id, or a store error.
func (s *SessionService) Get(ctx context.Context, req *session.GetRequest) (*session.GetResponse, error) {
	if req.AppName == "" || req.UserID == "" || req.SessionID == "" {
		return nil, fmt.Errorf("get: %w: app name, user id and session id are required, got %q, %q and %q", ErrInvalid, req.AppName, req.UserID, req.SessionID)
	}
	if req.NumRecentEvents < 0 {
		return nil, fmt.Errorf("get %s: %w: NumRecentEvents %d", req.SessionID, ErrInvalid, req.NumRecentEvents)
	}
	tail := trails.Tail{Last: req.NumRecentEvents}
	if !req.After.IsZero() {
		// Trails keeps creation times to the millisecond: the tail starts
		// at the millisecond, and the events before After are cut below.
		tail.Since = req.After.Truncate(time.Millisecond)
	}
	got, err := s.load(ctx, req.AppName, req.UserID, req.SessionID, tail)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", req.SessionID, err)
	}
	if !req.After.IsZero() {
		k := 0
		for k < len(got.events) && got.events[k].Timestamp.Before(req.After) {
			k++
		}
		got.events = got.events[k:]
	}
	return &session.GetResponse{Session: got}, nil
}

// load returns ADK session id of user in app, with the tail t of its
// history (all of it when t is zero).
func (s *SessionService) load(ctx context.Context, app, user, id string, t trails.Tail) (*Session, error) {
	tid := trailsID(app, user, id)
	var ts *trails.Session
	var err error
	if t.Last > 0 || !t.Since.IsZero() {
		ts, err = s.st.LoadTail(ctx, tid, t)
	} else {
		ts, err = s.st.Load(ctx, tid)
	}
	switch {
	case errors.Is(err, trails.ErrNotFound):
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	case err != nil:
		return nil, err
	case ts.Principal != user:
		return nil, ErrNotFound // another user's session with this UUID
	case ts.App != app:
		// Trails' Rewind stores its archive without the session's App;
		// this service tags the archive with the app (Rewind), so that tag
		// says whose it is.
		if ts.App != "" || ts.ParentID == "" {
			return nil, ErrNotFound
		}
		info, err := s.st.Info(ctx, tid)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(info.Tags, appTag(app)) {
			return nil, ErrNotFound
		}
		ts.App = app
	}
	evs := make([]*session.Event, 0, len(ts.Turns))
	for _, turn := range ts.Turns {
		ev, err := eventOf(turn)
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	return newSession(id, ts, evs)
}

// List returns the sessions of req.AppName, of req.UserID only when it is
// not empty, without their events and, unless WithListState(false), with
// their state, in no particular order.
//
// It returns ErrInvalid when the app name is empty, or a store error.
func (s *SessionService) List(ctx context.Context, req *session.ListRequest) (*session.ListResponse, error) {
	if req.AppName == "" {
		return nil, fmt.Errorf("list: %w: app name is required", ErrInvalid)
	}
	opts := []trails.ListOption{trails.ByTag(appTag(req.AppName))}
	if req.UserID != "" {
		opts = append(opts, trails.ByPrincipal(req.UserID))
	}
	infos, err := s.st.List(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", req.AppName, err)
	}
	out := make([]session.Session, 0, len(infos))
	for _, info := range infos {
		id := adkID(info)
		if !s.listState {
			out = append(out, &Session{app: req.AppName, user: info.Principal, id: id, ts: &trails.Session{ID: info.ID}, state: map[string]any{}, updated: info.Created})
			continue
		}
		got, err := s.load(ctx, req.AppName, info.Principal, id, trails.Tail{Last: 1})
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile, or another app's with the same hashed tag
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", req.AppName, err)
		}
		got.events = nil
		out = append(out, got)
	}
	return &session.ListResponse{Sessions: out}, nil
}

// Delete deletes a session, recorded in PROV. Its forks stay, as ADK
// sessions of their own: each is detached first (given the history it
// inherited), in one atomic step each. Deleting a session that is not
// stored, or is another user's, does nothing.
//
// It returns ErrInvalid when a field is empty, or a store error.
func (s *SessionService) Delete(ctx context.Context, req *session.DeleteRequest) error {
	if req.AppName == "" || req.UserID == "" || req.SessionID == "" {
		return fmt.Errorf("delete: %w: app name, user id and session id are required, got %q, %q and %q", ErrInvalid, req.AppName, req.UserID, req.SessionID)
	}
	tid := trailsID(req.AppName, req.UserID, req.SessionID)
	info, err := s.st.Info(ctx, tid)
	switch {
	case errors.Is(err, trails.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("delete %s: %w", req.SessionID, err)
	case info.Principal != req.UserID || !slices.Contains(info.Tags, appTag(req.AppName)):
		return nil // another user's or app's
	}
	err = s.st.Delete(ctx, tid, trails.DeleteOptions{DetachChildren: true})
	if err != nil && !errors.Is(err, trails.ErrNotFound) {
		return fmt.Errorf("delete %s: %w", req.SessionID, err)
	}
	return nil
}

// AppendEvent stores event in session cur, a value this service returned,
// and then adds it to cur (without its temp: keys) and its state delta to
// cur's state (with them, for the rest of the invocation), as ADK's own
// in-memory service does. A partial event is neither stored nor added.
// The append is a compare and swap on the history cur holds: when another
// writer appended since cur was loaded, nothing is stored, cur is left as
// it was (the refused event is not in it), and the error matches
// session.ErrConflict of Trails: Get the session again and retry.
//
// It returns ErrInvalid for a nil session or event or a state value that
// is not JSON, ErrForeignSession for a session value of another service,
// ErrNotFound when the session is no longer stored, or a store error.
func (s *SessionService) AppendEvent(ctx context.Context, cur session.Session, event *session.Event) error {
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
	stored := withoutTemp(event)
	turn, err := turnOf(stored)
	if err != nil {
		return fmt.Errorf("append event to %s: %w", sess.id, err)
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	ts := sess.ts
	n, values := len(ts.Turns), cloneValues(ts.Values)
	ts.AppendTurn(turn)
	if err := s.st.Persist(ctx, ts); err != nil {
		ts.Turns, ts.Values = ts.Turns[:n], values
		if errors.Is(err, trails.ErrNotFound) || errors.Is(err, trails.ErrParentMissing) {
			err = fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return fmt.Errorf("append event %s to %s: %w", event.ID, sess.id, err)
	}
	sess.events = append(sess.events, stored)
	for k, v := range event.Actions.StateDelta {
		sess.state[k] = v
	}
	sess.updated = event.Timestamp
	return nil
}

// cloneValues returns a deep copy of Trails values v.
func cloneValues(v map[string]json.RawMessage) map[string]json.RawMessage {
	if v == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(v))
	for k, b := range v {
		out[k] = bytes.Clone(b)
	}
	return out
}
