package openaiagents

import (
	"context"
	"fmt"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/session"
)

// Fork stores a fork of the session that shares its first at items with
// it (the store keeps them once, in the parent) and returns a Session of
// the fork, ready for GetItems and AddItems: a Trails session of its own
// (SessionID gives its fresh id) with the parent's principal and app,
// recorded in PROV as a fork of this one. Items added to the fork and to
// this session never see each other's. opts are those of
// session.Session.Fork: WithReason and the other metadata options, or
// ForkAtTurn and ForkAtAnchor with at -1. What this Session holds is left
// as it is.
//
// It returns session.ErrNotFound when the session is not stored, the
// errors of session.Store.Fork (session.ErrInvalid for at out of range
// 0..the number of items, session.ErrTooManyChildren,
// session.ErrForkDepth, ...), or a store error.
func (s *Session) Fork(ctx context.Context, at int, opts ...session.ForkOption) (_ *Session, err error) {
	ctx, call := telemetry.Start(ctx, "openaiagents.Session.Fork", s.id)
	defer func() { call.End(err) }()
	f, err := s.st.Fork(ctx, s.id, at, opts...)
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	return &Session{st: s.st, id: f.ID, principal: f.Principal, app: f.App, s: f}, nil
}
