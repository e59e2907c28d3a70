package session

import (
	"context"
	"fmt"

	"github.com/trails-kg/trails/internal/telemetry"
)

// ReplayOption narrows a Replay.
type ReplayOption func(*replayConfig)

type replayConfig struct {
	upTo    int
	set     bool
	tail    Tail
	hasTail bool
}

// UpTo keeps only the turns with Index < n (n >= 0).
func UpTo(n int) ReplayOption {
	return func(c *replayConfig) { c.upTo, c.set = n, true }
}

// WithTail keeps only the tail t of the history (see Tail and LoadTail),
// fetching only its turns. Beside UpTo, it is the tail of the turns below
// UpTo.
func WithTail(t Tail) ReplayOption {
	return func(c *replayConfig) { c.tail, c.hasTail = t, true }
}

// Replay returns the effective history of session id as plain turns, for
// audit, diff and tests: the same turns as Load, fetched read-only. It
// writes nothing, PROV included. With UpTo(n) it fetches only the turns with
// Index < n; with WithTail only the end of the history.
//
// It returns ErrInvalid for a bad id, a negative UpTo or a Tail that asks
// for nothing, and otherwise the errors of Load.
func (st *Store) Replay(ctx context.Context, id string, opts ...ReplayOption) (_ []Turn, err error) {
	ctx, call := telemetry.Start(ctx, "session.Replay", id)
	defer func() { call.End(err) }()
	cfg := replayConfig{upTo: -1}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.set && cfg.upTo < 0 {
		return nil, fmt.Errorf("replay %s: %w: UpTo(%d)", id, ErrInvalid, cfg.upTo)
	}
	if cfg.hasTail {
		if err := cfg.tail.check(); err != nil {
			return nil, fmt.Errorf("replay %s: %w", shownID(id), err)
		}
	}
	s, _, err := st.loadWindow(ctx, id, window{upTo: cfg.upTo, tail: cfg.tail, set: cfg.hasTail})
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", shownID(id), err)
	}
	return s.Turns, nil
}
