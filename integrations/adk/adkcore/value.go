package adkcore

import (
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	trails "github.com/trails-kg/trails/session"
)

// Value is an ADK session value of event type E, over the Trails session
// value appends go through (with Trails' compare and swap): what each
// package's Session type wraps. Its state holds the session's keys and
// the app: and user: keys as of the load that made it, plus the changes
// of the events appended through it (temp: keys included, for the rest of
// the invocation, though never stored). It is safe for concurrent use.
type Value[E any] struct {
	App, User, ID string // the ADK keys

	mu      sync.RWMutex
	ts      *trails.Session
	state   map[string]any
	events  []E
	updated time.Time
}

// NewValue returns the ADK session of Trails session ts, whose ADK id is
// id, with events evs (their times by ts) and ts's values as state.
func NewValue[E any](id string, ts *trails.Session, evs []E, at func(E) time.Time) (*Value[E], error) {
	v := &Value[E]{App: ts.App, User: ts.Principal, ID: id, ts: ts, events: evs, state: make(map[string]any, len(ts.Values))}
	for k, b := range ts.Values {
		var a any
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, fmt.Errorf("%w: state key %q of session %s: %v", trails.ErrCorrupt, k, ts.ID, err)
		}
		v.state[k] = a
	}
	if n := len(evs); n > 0 {
		v.updated = at(evs[n-1])
	} else if n := len(ts.Turns); n > 0 {
		v.updated = ts.Turns[n-1].Created
	}
	return v, nil
}

// TrailsID returns the id of the Trails session that stores v.
func (v *Value[E]) TrailsID() string { return v.ts.ID }

// Trails returns the Trails session value v appends through: the caller
// must not change it.
func (v *Value[E]) Trails() *trails.Session { return v.ts }

// Events returns v's events, oldest first; the caller must not change
// the slice.
func (v *Value[E]) Events() []E {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.events
}

// Updated returns the time of the last event held (of the last turn of
// the history for a session without events).
func (v *Value[E]) Updated() time.Time {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.updated
}

// Get returns the value of state key k.
func (v *Value[E]) Get(k string) (any, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	a, ok := v.state[k]
	return a, ok
}

// Set sets state key k in v only, as ADK's own services do: a change is
// stored by the event whose state delta holds it.
func (v *Value[E]) Set(k string, a any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.state[k] = a
}

// State returns a copy of v's state.
func (v *Value[E]) State() map[string]any {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return maps.Clone(v.state)
}

// withoutEvents drops v's events, as List returns sessions.
func (v *Value[E]) withoutEvents() {
	v.events = nil
}
