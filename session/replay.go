package session

import (
	"context"
	"fmt"
)

// ReplayOption narrows a Replay.
type ReplayOption func(*replayConfig)

type replayConfig struct {
	upTo int
	set  bool
}

// UpTo keeps only the turns with Index < n (n >= 0).
func UpTo(n int) ReplayOption {
	return func(c *replayConfig) { c.upTo, c.set = n, true }
}

// Replay returns the effective history of session id as plain turns, for
// audit, diff and tests: the same turns as Load, fetched read-only. It
// writes nothing, PROV included. With UpTo(n) it fetches only the turns with
// Index < n.
//
// It returns ErrInvalid for a bad id or a negative UpTo, and otherwise the
// errors of Load.
func (st *Store) Replay(ctx context.Context, id string, opts ...ReplayOption) ([]Turn, error) {
	cfg := replayConfig{upTo: -1}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.set && cfg.upTo < 0 {
		return nil, fmt.Errorf("replay %s: %w: UpTo(%d)", id, ErrInvalid, cfg.upTo)
	}
	s, _, err := st.load(ctx, id, cfg.upTo)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", shownID(id), err)
	}
	return s.Turns, nil
}
