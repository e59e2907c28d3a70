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
	"context"
	"fmt"

	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk/adkcore"
	"github.com/trails-kg/trails/internal/telemetry"
	trails "github.com/trails-kg/trails/session"
)

// SessionService is an ADK session.Service over a Trails store. It holds
// no state besides its options and its cache of the turns Get read
// (checked against the store at every Get: see WithCache), so any number
// of services (in one process or many) may share a dataset. It is safe
// for concurrent use.
type SessionService struct {
	core  adkcore.Service[*session.Event]
	cache *trails.Cache
}

// DefaultCacheBytes is the size of the cache of a SessionService made
// without WithCache.
const DefaultCacheBytes = 64 << 20

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

// WithCache sets the cache of the turns Get reads (a trails.Cache, of
// DefaultCacheBytes unless set): ADK's runner calls Get for the whole
// session at every Run, and with the cache a Get of a session that has
// not changed since the last reads only its chain (one request), and one
// that grew only the new events. What the cache holds is checked against
// the session's stored turn count and head digest at each Get (see
// trails.Cache). nil turns it off (the Store's own cache, if it has one,
// is then used). One cache may be shared by the services of one dataset.
func WithCache(c *trails.Cache) Option {
	return func(s *SessionService) { s.cache = c }
}

// NewSessionService returns a SessionService storing in st. A Store
// scoped to a principal (session.ForPrincipal) serves that user's
// sessions only.
func NewSessionService(st *trails.Store, opts ...Option) *SessionService {
	s := &SessionService{core: adkcore.Service[*session.Event]{St: st, ListState: true, Codec: codec},
		cache: trails.NewCache(DefaultCacheBytes)}
	for _, o := range opts {
		o(s)
	}
	if s.cache != nil {
		s.core.St = st.With(trails.WithCache(s.cache))
	}
	return s
}

// Create stores a new session: req.SessionID, or a new UUIDv7 when empty,
// with req.State as the values it starts with (app: and user: keys are
// shared with the app's and the user's other sessions), and returns it
// with the app's and user's current shared values in its state.
//
// It returns ErrInvalid for a nil request, when the app name or user id is empty or a state
// value is not JSON, ErrExists when the id is taken (also by a session
// deleted since: Trails does not bring a deleted session back), or a
// store error.
func (s *SessionService) Create(ctx context.Context, req *session.CreateRequest) (_ *session.CreateResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adk.SessionService.Create", "")
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
// those from req.After on, inclusive: as ADK's own services) and its
// state, the app's and user's shared values included.
//
// It returns ErrInvalid for a nil request or an empty field, ErrNotFound when no session
// of that app and user has the id, or a store error.
func (s *SessionService) Get(ctx context.Context, req *session.GetRequest) (_ *session.GetResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adk.SessionService.Get", "")
	defer func() { call.End(err) }()
	if req != nil {
		call.SetSession(req.SessionID)
	}
	if req == nil {
		return nil, fmt.Errorf("get: %w: nil request", ErrInvalid)
	}
	v, err := s.core.Get(ctx, req.AppName, req.UserID, req.SessionID, req.NumRecentEvents, req.After)
	if err != nil {
		return nil, err
	}
	return &session.GetResponse{Session: &Session{v}}, nil
}

// load returns ADK session id of user in app, with the tail t of its
// history (all of it when t is zero).
func (s *SessionService) load(ctx context.Context, app, user, id string, t trails.Tail) (*Session, error) {
	v, err := s.core.Load(ctx, app, user, id, t)
	if err != nil {
		return nil, err
	}
	return &Session{v}, nil
}

// List returns the sessions of req.AppName, of req.UserID only when it is
// not empty, without their events and, unless WithListState(false), with
// their state, in no particular order.
//
// It returns ErrInvalid for a nil request or an empty app name, or a
// store error.
func (s *SessionService) List(ctx context.Context, req *session.ListRequest) (_ *session.ListResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adk.SessionService.List", "")
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

// Delete deletes a session, recorded in PROV. Its forks stay, as ADK
// sessions of their own: each is detached first (given the history it
// inherited), in one atomic step each. Deleting a session that is not
// stored, or is another user's, does nothing, as in ADK's own in-memory
// service: of Deletes racing on one session, one deletes it (recorded in
// PROV once) and the others do nothing.
//
// It returns ErrInvalid for a nil request or an empty field, or a store
// error.
func (s *SessionService) Delete(ctx context.Context, req *session.DeleteRequest) (err error) {
	ctx, call := telemetry.Start(ctx, "adk.SessionService.Delete", "")
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
func (s *SessionService) AppendEvent(ctx context.Context, cur session.Session, event *session.Event) (err error) {
	ctx, call := telemetry.Start(ctx, "adk.SessionService.AppendEvent", "")
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
	return s.core.Append(ctx, sess.v, event)
}
