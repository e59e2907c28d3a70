package adk

import (
	"iter"
	"maps"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk/adkcore"
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
	v *adkcore.Value[*session.Event]
}

var _ session.Session = (*Session)(nil)

// ID returns the ADK session id.
func (s *Session) ID() string { return s.v.ID }

// AppName returns the app name (the Trails session's App).
func (s *Session) AppName() string { return s.v.App }

// UserID returns the user id (the Trails session's Principal).
func (s *Session) UserID() string { return s.v.User }

// TrailsID returns the id of the Trails session that stores s: the ADK
// session id when that is a UUID, else one derived from it (what
// trails-admin and the audit queries take).
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
