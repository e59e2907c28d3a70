package adk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk/adkcore"
	"github.com/trails-kg/trails/internal/telemetry"
	trails "github.com/trails-kg/trails/session"
)

// What ADK lacks and Trails has (adk-python #4010): forks of a session
// that share its prefix in the store instead of copying it, rewinds that
// keep what they undo, and the list of a session's forks. Each fork and
// each rewind's archive is an ADK session of the same app and user, with
// its Trails id (a UUIDv7) as session id, that Get, AppendEvent, List and
// Delete serve like any other, and that trails-admin tree shows under its
// parent.

// Key names an ADK session.
type Key struct {
	AppName, UserID, SessionID string
}

// Point is a position in a session's history: where a fork starts or a
// rewind goes back to. Make one with BeforeInvocation or AtEvent.
type Point struct {
	invocation, event string
}

// BeforeInvocation is the position before the first event of invocation
// id: a fork there holds the events before the invocation (to run it
// again differently); a rewind there drops it and what followed.
func BeforeInvocation(id string) Point { return Point{invocation: id} }

// AtEvent is the position just after event id: a fork there holds the
// events up to and including it; a rewind there keeps it as the last
// event.
func AtEvent(id string) Point { return Point{event: id} }

// index returns the index of p in evs: the number of events before it.
func (p Point) index(evs []*session.Event) (int, error) {
	for i, ev := range evs {
		switch {
		case p.invocation != "" && ev.InvocationID == p.invocation:
			return i, nil
		case p.event != "" && ev.ID == p.event:
			return i + 1, nil
		}
	}
	switch {
	case p.invocation != "":
		return 0, fmt.Errorf("%w: no event of invocation %q", ErrNotFound, p.invocation)
	case p.event != "":
		return 0, fmt.Errorf("%w: no event %q", ErrNotFound, p.event)
	}
	return 0, fmt.Errorf("%w: an empty Point (use BeforeInvocation or AtEvent)", ErrInvalid)
}

// Fork stores a fork of session k at position at and returns it: a new
// ADK session of the same app and user, holding the events of k before
// at (which the store shares with k, not copies), recorded in PROV with
// reason (may be empty). Appends to the fork and to k never see each
// other's.
//
// It reads a constant amount whatever k's length (Trails' Store.Fork):
// the store's index finds the position (trails:invocationId for
// BeforeInvocation, trails:eventId for AtEvent), and the fork is created,
// tagged with its app, in one conditional update. Events stored before
// Trails kept their ids (trails:eventId), and invocation ids over 1 KiB,
// are not in that index: when the position is not found there, Fork
// loads k and looks for it among its events, as it always did.
//
// The Session returned holds k's state as of at and the shared values,
// and none of the events the fork inherits: its Events are those appended
// through it (none at first), and Get returns them all. It appends like
// any Session.
//
// It returns ErrNotFound when k or the position is not found, ErrInvalid
// for an empty Point, the errors of Trails' Store.Fork
// (session.ErrTooManyChildren, ErrForkDepth, ErrConflict when k was
// rewound below at meanwhile, ...), or a store error.
func (s *SessionService) Fork(ctx context.Context, k Key, at Point, reason string) (_ *Session, err error) {
	ctx, call := telemetry.Start(ctx, "adk.SessionService.Fork", k.SessionID)
	defer func() { call.End(err) }()
	tid := adkcore.TrailsID(k.AppName, k.UserID, k.SessionID)
	tag := adkcore.AppTag(k.AppName)
	opts := []trails.ForkOption{trails.WithTags(tag), trails.ForkIf(func(principal, app string, tags []string) bool {
		// As Get sees it: the user's, of the app or tagged with it (a
		// rewind's archive has no app).
		return principal == k.UserID && (app == k.AppName || slices.Contains(tags, tag))
	})}
	if reason != "" {
		opts = append(opts, trails.WithReason(reason))
	}
	var pos trails.ForkOption
	switch {
	case at.invocation != "":
		pos = trails.ForkBeforeInvocation(at.invocation)
	case at.event != "":
		pos = trails.ForkAfterEvent(at.event)
	default:
		return nil, fmt.Errorf("fork %s: %w: an empty Point (use BeforeInvocation or AtEvent)", k.SessionID, ErrInvalid)
	}
	f, err := s.core.St.Fork(ctx, tid, -1, append(opts, pos)...)
	if errors.Is(err, trails.ErrNotFound) {
		f, err = s.forkLoaded(ctx, k, at, opts)
	}
	switch {
	case errors.Is(err, trails.ErrNotFound) && !errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("fork %s: %w: %w", k.SessionID, ErrNotFound, err)
	case err != nil:
		return nil, fmt.Errorf("fork %s: %w", k.SessionID, err)
	}
	fv, err := s.core.Value(f.ID, f, nil)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", k.SessionID, err)
	}
	return &Session{fv}, nil
}

// forkLoaded is Fork for a position the store's index does not hold: it
// loads session k, finds at among its events and forks at that index.
func (s *SessionService) forkLoaded(ctx context.Context, k Key, at Point, opts []trails.ForkOption) (*trails.Session, error) {
	parent, err := s.load(ctx, k.AppName, k.UserID, k.SessionID, trails.Tail{})
	if err != nil {
		return nil, err
	}
	i, err := at.index(parent.v.Events())
	if err != nil {
		return nil, err
	}
	ts := parent.v.Trails()
	if i < len(ts.Turns) {
		// Before a turn: PROV records which (trails:beforeTurn).
		opts, i = append(opts, trails.ForkAtTurn(ts.Turns[i].ID)), -1
	}
	return s.core.St.Fork(ctx, ts.ID, i, opts...)
}

// Rewind makes session k continue from position to without losing
// anything: its events after to move, untouched, into an archive, a fork
// of k at to that is an ADK session of its own (its id returned), and the
// forks made from them follow them there. It returns k as Get would now
// return it, ready for AppendEvent; a value of k loaded before can no
// longer append (session.ErrConflict). A fork can be rewound only within
// its own events (to at or after its fork point).
//
// It returns ErrNotFound when k or the position is not found, ErrInvalid
// for an empty Point, the errors of Trails' Rewind (session.ErrInvalid
// for a position before the fork point or at the end, ErrConflict when k
// changed meanwhile, ...), or a store error.
func (s *SessionService) Rewind(ctx context.Context, k Key, to Point, reason string) (_ *Session, _ string, err error) {
	ctx, call := telemetry.Start(ctx, "adk.SessionService.Rewind", k.SessionID)
	defer func() { call.End(err) }()
	cur, err := s.load(ctx, k.AppName, k.UserID, k.SessionID, trails.Tail{})
	if err != nil {
		return nil, "", fmt.Errorf("rewind %s: %w", k.SessionID, err)
	}
	i, err := to.index(cur.v.Events())
	if err != nil {
		return nil, "", fmt.Errorf("rewind %s: %w", k.SessionID, err)
	}
	ts, res, err := s.core.St.Rewind(ctx, cur.v.TrailsID(), i, trails.RewindOptions{Reason: reason})
	if err == nil {
		err = s.core.St.Tag(ctx, res.Archive, adkcore.AppTag(k.AppName))
	}
	if err != nil {
		return nil, "", fmt.Errorf("rewind %s: %w", k.SessionID, err)
	}
	rv, err := s.core.Value(k.SessionID, ts, cur.v.Events()[:i])
	if err != nil {
		return nil, "", fmt.Errorf("rewind %s: %w", k.SessionID, err)
	}
	return &Session{rv}, res.Archive, nil
}

// ForkInfo describes a fork of a session.
type ForkInfo struct {
	SessionID string    // the fork's ADK session id
	ForkedAt  int       // how many events of the parent it holds
	Events    int       // its events in all: ForkedAt and its own
	Created   time.Time // when it was stored
	Archive   bool      // it is the archive of a Rewind of the parent
}

// Forks returns the direct forks of session k, oldest first: those Fork
// made and the archives of its rewinds.
//
// It returns ErrNotFound when k is not found, or a store error.
func (s *SessionService) Forks(ctx context.Context, k Key) (_ []ForkInfo, err error) {
	ctx, call := telemetry.Start(ctx, "adk.SessionService.Forks", k.SessionID)
	defer func() { call.End(err) }()
	tid := adkcore.TrailsID(k.AppName, k.UserID, k.SessionID)
	info, err := s.core.St.Info(ctx, tid)
	switch {
	case errors.Is(err, trails.ErrNotFound):
		return nil, fmt.Errorf("forks of %s: %w: %w", k.SessionID, ErrNotFound, err)
	case err != nil:
		return nil, fmt.Errorf("forks of %s: %w", k.SessionID, err)
	case info.Principal != k.UserID || !slices.Contains(info.Tags, adkcore.AppTag(k.AppName)):
		return nil, fmt.Errorf("forks of %s: %w", k.SessionID, ErrNotFound)
	}
	kids, err := s.core.St.Branches(ctx, tid)
	if err != nil {
		return nil, fmt.Errorf("forks of %s: %w", k.SessionID, err)
	}
	rws, err := s.core.St.Rewinds(ctx, tid)
	if err != nil {
		return nil, fmt.Errorf("forks of %s: %w", k.SessionID, err)
	}
	archives := make(map[string]bool, len(rws))
	for _, r := range rws {
		archives[r.Archive] = true
	}
	out := make([]ForkInfo, 0, len(kids))
	for _, c := range kids {
		out = append(out, ForkInfo{SessionID: adkcore.ADKID(c), ForkedAt: c.ForkedAt, Events: c.Turns, Created: c.Created, Archive: archives[c.ID]})
	}
	return out, nil
}
