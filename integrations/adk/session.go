package adk

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"sync"
	"time"

	"google.golang.org/adk/v2/session"

	trails "github.com/trails-kg/trails/session"
)

// Session is an ADK session as this service returns it: an ADK
// session.Session over a Trails session value, which AppendEvent appends
// to with Trails' compare and swap. Its State and Events are those of
// ADK's own session values: State holds the session's keys and the app:
// and user: keys as of the Get, Create or Fork that returned it, plus the
// changes of the events appended through it (temp: keys included, for
// the rest of the invocation, though never stored). It is safe for
// concurrent use.
type Session struct {
	app, user, id string

	mu      sync.RWMutex
	ts      *trails.Session // the Trails session value appends go through
	state   map[string]any
	events  []*session.Event
	updated time.Time
}

var _ session.Session = (*Session)(nil)

// newSession returns the ADK session of Trails session ts, whose ADK id
// is id, with events evs and ts's values as state.
func newSession(id string, ts *trails.Session, evs []*session.Event) (*Session, error) {
	s := &Session{app: ts.App, user: ts.Principal, id: id, ts: ts, events: evs, state: make(map[string]any, len(ts.Values))}
	for k, v := range ts.Values {
		var a any
		if err := json.Unmarshal(v, &a); err != nil {
			return nil, fmt.Errorf("%w: state key %q of session %s: %v", trails.ErrCorrupt, k, ts.ID, err)
		}
		s.state[k] = a
	}
	if n := len(evs); n > 0 {
		s.updated = evs[n-1].Timestamp
	} else if n := len(ts.Turns); n > 0 {
		s.updated = ts.Turns[n-1].Created
	}
	return s, nil
}

// ID returns the ADK session id.
func (s *Session) ID() string { return s.id }

// AppName returns the app name (the Trails session's App).
func (s *Session) AppName() string { return s.app }

// UserID returns the user id (the Trails session's Principal).
func (s *Session) UserID() string { return s.user }

// TrailsID returns the id of the Trails session that stores s: the ADK
// session id when that is a UUID, else one derived from it (what
// trails-admin and the audit queries take).
func (s *Session) TrailsID() string { return s.ts.ID }

// State returns the session's state.
func (s *Session) State() session.State { return &state{s: s} }

// Events returns the session's events, oldest first.
func (s *Session) Events() session.Events {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return events(s.events)
}

// LastUpdateTime returns the timestamp of the last event held (of the
// last turn of the history for a session without events).
func (s *Session) LastUpdateTime() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.updated
}

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

// state is a session's state, guarded by the session's lock.
type state struct{ s *Session }

func (st *state) Get(key string) (any, error) {
	st.s.mu.RLock()
	defer st.s.mu.RUnlock()
	v, ok := st.s.state[key]
	if !ok {
		return nil, session.ErrStateKeyNotExist
	}
	return v, nil
}

// Set sets key in this session value only, as ADK's own services do: a
// change is stored by the event whose StateDelta holds it.
func (st *state) Set(key string, v any) error {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	st.s.state[key] = v
	return nil
}

func (st *state) All() iter.Seq2[string, any] {
	st.s.mu.RLock()
	cp := maps.Clone(st.s.state)
	st.s.mu.RUnlock()
	return func(yield func(string, any) bool) {
		for k, v := range cp {
			if !yield(k, v) {
				return
			}
		}
	}
}
