package adkcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/trails-kg/trails/kg"
	trails "github.com/trails-kg/trails/session"
)

// Codec is what Service needs of ADK's event type E of one major version
// (a pointer type, *session.Event).
type Codec[E any] struct {
	// Format names the raw copy of an event: its JSON as ADK encodes it.
	Format string
	// Fields returns the fields of an event that Trails stores.
	Fields func(E) Fields
	// Decode returns the event of a raw copy of Format.
	Decode func(raw []byte) (E, error)
	// FromFields returns the event of a turn another client of Trails
	// wrote (FieldsOf).
	FromFields func(Fields) E
	// WithDelta returns a shallow copy of an event with state delta d.
	WithDelta func(e E, d map[string]any) E
}

// Service is the ADK session service of event type E over a Trails
// store, in ADK's terms but not its types: each package's SessionService
// wraps one. It holds no state besides its options, and is safe for
// concurrent use.
type Service[E any] struct {
	St        *trails.Store
	ListState bool // List loads each session's state (one request each)
	Codec     Codec[E]
}

// Turn returns the Trails turn that stores event e (its temp: keys
// already removed): TurnOf with e's fields and JSON.
func (s *Service[E]) Turn(e E) (trails.Turn, error) {
	f := s.Codec.Fields(e)
	if err := kg.CheckTime(f.Timestamp); err != nil { // before JSON, which fails on it less clearly
		return trails.Turn{}, fmt.Errorf("%w: event %s: Timestamp: %w", ErrInvalid, f.ID, err)
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return trails.Turn{}, fmt.Errorf("%w: event %s: %v", ErrInvalid, f.ID, err)
	}
	return TurnOf(f, raw, s.Codec.Format)
}

// Event returns the ADK event turn t stores: decoded from its raw copy
// when it has one of the codec's format, else made from its fields.
func (s *Service[E]) Event(t trails.Turn) (E, error) {
	if x := t.Structure; x != nil && x.Raw != nil && x.Raw.Format == s.Codec.Format {
		e, err := s.Codec.Decode(x.Raw.Data)
		if err != nil {
			var zero E
			return zero, fmt.Errorf("turn %d (%s): raw event: %w", t.Index, t.ID, err)
		}
		return e, nil
	}
	return s.Codec.FromFields(FieldsOf(t)), nil
}

// lacksRaw reports whether turn t lacks a raw copy of the codec's format.
func (s *Service[E]) lacksRaw(t trails.Turn) bool {
	x := t.Structure
	return x == nil || x.Raw == nil || x.Raw.Format != s.Codec.Format
}

// withoutTemp returns e without the temp: keys of its state delta (e
// itself when it has none), as ADK's services store it.
func (s *Service[E]) withoutTemp(e E) E {
	kept, cut := WithoutTemp(s.Codec.Fields(e).StateDelta)
	if !cut {
		return e
	}
	return s.Codec.WithDelta(e, kept)
}

// at returns the timestamp of e.
func (s *Service[E]) at(e E) time.Time { return s.Codec.Fields(e).Timestamp }

// Create stores a new session: id, or a new UUIDv7 when empty, with state
// as the values it starts with, and returns it with the app's and user's
// current shared values in its state. The errors are those of package
// adk's SessionService.Create.
func (s *Service[E]) Create(ctx context.Context, app, user, id string, state map[string]any) (*Value[E], error) {
	if app == "" || user == "" {
		return nil, fmt.Errorf("create: %w: app name and user id are required, got %q and %q", ErrInvalid, app, user)
	}
	initial, err := DeltaOf(state)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", id, err)
	}
	id, err = s.CreateTurns(ctx, app, user, id, initial, nil)
	if err != nil {
		return nil, err
	}
	got, err := s.Load(ctx, app, user, id, trails.Tail{}, trails.RawOnly())
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", id, err)
	}
	return got, nil
}

// CreateTurns stores ADK session id (a new UUIDv7 when empty) of user in
// app, with the values it starts with and turns as its history, tagged
// with the app, its ADK id and tags; it returns the ADK id. The errors
// are Create's.
func (s *Service[E]) CreateTurns(ctx context.Context, app, user, id string, initial map[string]json.RawMessage, turns []trails.Turn, tags ...string) (string, error) {
	ts := trails.New(user)
	if id == "" {
		id = ts.ID
	}
	ts.ID = TrailsID(app, user, id)
	ts.App = app
	tags = append([]string{AppTag(app)}, tags...)
	if t, err := IDTag(id); err != nil {
		return "", fmt.Errorf("create %s: %w", id, err)
	} else if t != "" {
		tags = append(tags, t)
	}
	ts.Initial = initial
	for _, t := range turns {
		ts.AppendTurn(t)
	}
	if err := s.St.Create(ctx, ts); err != nil {
		if errors.Is(err, trails.ErrExists) {
			return "", fmt.Errorf("create %s: %w: %w", id, ErrExists, err)
		}
		return "", fmt.Errorf("create %s: %w", id, err)
	}
	if err := s.St.Tag(ctx, ts.ID, tags...); err != nil {
		return "", fmt.Errorf("create %s: %w", id, err)
	}
	return id, nil
}

// Get returns a session with its last n events (all when 0), those from
// after on (inclusive) when after is not zero, and its state. The errors
// are those of package adk's SessionService.Get.
func (s *Service[E]) Get(ctx context.Context, app, user, id string, n int, after time.Time) (*Value[E], error) {
	if app == "" || user == "" || id == "" {
		return nil, fmt.Errorf("get: %w: app name, user id and session id are required, got %q, %q and %q", ErrInvalid, app, user, id)
	}
	if n < 0 {
		return nil, fmt.Errorf("get %s: %w: NumRecentEvents %d", id, ErrInvalid, n)
	}
	tail := trails.Tail{Last: n}
	if !after.IsZero() {
		// Trails keeps creation times to the millisecond: the tail starts
		// at the millisecond, and the events before after are cut below.
		tail.Since = after.Truncate(time.Millisecond)
	}
	got, err := s.Load(ctx, app, user, id, tail, trails.RawOnly())
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", id, err)
	}
	if !after.IsZero() {
		k := 0
		for k < len(got.events) && s.at(got.events[k]).Before(after) {
			k++
		}
		got.events = got.events[k:]
	}
	return got, nil
}

// Load returns ADK session id of user in app, with the tail t of its
// history (all of it when t is zero), loaded with opts; ErrNotFound when
// no session of that app and user has the id. With trails.RawOnly the
// events come from their raw copies, and the structured fields of the
// turns are read (one request more) only when a turn has no raw copy of
// the codec's format (a turn another client of Trails wrote).
func (s *Service[E]) Load(ctx context.Context, app, user, id string, t trails.Tail, opts ...trails.LoadOption) (*Value[E], error) {
	tid := TrailsID(app, user, id)
	var ts *trails.Session
	var err error
	if t.Last > 0 || !t.Since.IsZero() {
		ts, err = s.St.LoadTail(ctx, tid, t, opts...)
	} else {
		ts, err = s.St.Load(ctx, tid, opts...)
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
		// the service tags the archive with the app (Rewind), so that tag
		// says whose it is.
		if ts.App != "" || ts.ParentID == "" {
			return nil, ErrNotFound
		}
		info, err := s.St.Info(ctx, tid)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(info.Tags, AppTag(app)) {
			return nil, ErrNotFound
		}
		ts.App = app
	}
	if slices.ContainsFunc(ts.Turns, s.lacksRaw) {
		// Not every event has its raw copy: the others are made from
		// their fields (FieldsOf).
		if err := s.St.LoadStructure(ctx, ts); err != nil {
			return nil, err
		}
	}
	evs := make([]E, 0, len(ts.Turns))
	for _, turn := range ts.Turns {
		ev, err := s.Event(turn)
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	return NewValue(id, ts, evs, s.at)
}

// List returns the sessions of app, of user only when it is not empty,
// without their events and, when ListState, with their state, in no
// particular order. The errors are those of package adk's
// SessionService.List.
func (s *Service[E]) List(ctx context.Context, app, user string) ([]*Value[E], error) {
	if app == "" {
		return nil, fmt.Errorf("list: %w: app name is required", ErrInvalid)
	}
	opts := []trails.ListOption{trails.ByTag(AppTag(app))}
	if user != "" {
		opts = append(opts, trails.ByPrincipal(user))
	}
	infos, err := s.St.List(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", app, err)
	}
	out := make([]*Value[E], 0, len(infos))
	for _, info := range infos {
		id := ADKID(info)
		if !s.ListState {
			out = append(out, &Value[E]{App: app, User: info.Principal, ID: id, ts: &trails.Session{ID: info.ID}, state: map[string]any{}, updated: info.Created})
			continue
		}
		got, err := s.Load(ctx, app, info.Principal, id, trails.Tail{Last: 1}, trails.RawOnly())
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile, or another app's with the same hashed tag
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", app, err)
		}
		got.withoutEvents()
		out = append(out, got)
	}
	return out, nil
}

// Delete deletes a session, recorded in PROV, detaching its forks first.
// The errors are those of package adk's SessionService.Delete.
func (s *Service[E]) Delete(ctx context.Context, app, user, id string) error {
	if app == "" || user == "" || id == "" {
		return fmt.Errorf("delete: %w: app name, user id and session id are required, got %q, %q and %q", ErrInvalid, app, user, id)
	}
	tid := TrailsID(app, user, id)
	info, err := s.St.Info(ctx, tid)
	switch {
	case errors.Is(err, trails.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("delete %s: %w", id, err)
	case info.Principal != user || !slices.Contains(info.Tags, AppTag(app)):
		return nil // another user's or app's
	}
	err = s.St.Delete(ctx, tid, trails.DeleteOptions{DetachChildren: true})
	if err != nil && !errors.Is(err, trails.ErrNotFound) {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	return nil
}

// Append stores event e in session value v, then adds it to v (without
// its temp: keys) and its state delta to v's state (with them). A
// partial event is neither stored nor added. The errors are those of
// package adk's SessionService.AppendEvent, less the checks of the
// session value's type.
func (s *Service[E]) Append(ctx context.Context, v *Value[E], e E) error {
	f := s.Codec.Fields(e)
	if f.Partial {
		return nil
	}
	stored := s.withoutTemp(e)
	turn, err := s.Turn(stored)
	if err != nil {
		return fmt.Errorf("append event to %s: %w", v.ID, err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	ts := v.ts
	n, values := len(ts.Turns), cloneValues(ts.Values)
	ts.AppendTurn(turn)
	if err := s.St.Persist(ctx, ts); err != nil {
		ts.Turns, ts.Values = ts.Turns[:n], values
		switch {
		case errors.Is(err, trails.ErrNotFound) || errors.Is(err, trails.ErrParentMissing):
			err = fmt.Errorf("%w: %w", ErrNotFound, err)
		case errors.Is(err, trails.ErrConflict):
			// Trails refuses an append to a deleted session as a conflict
			// (its history ended): ADK calls that not found.
			if _, ierr := s.St.Info(ctx, ts.ID); errors.Is(ierr, trails.ErrNotFound) {
				err = fmt.Errorf("%w: %w", ErrNotFound, err)
			}
		}
		return fmt.Errorf("append event %s to %s: %w", f.ID, v.ID, err)
	}
	v.events = append(v.events, stored)
	for k, a := range f.StateDelta {
		v.state[k] = a
	}
	v.updated = f.Timestamp
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

// Value returns the session value of Trails session ts, whose ADK id is
// id, with events evs (a fork's or a rewound session's, cut from a loaded
// one's).
func (s *Service[E]) Value(id string, ts *trails.Session, evs []E) (*Value[E], error) {
	return NewValue(id, ts, evs, s.at)
}
