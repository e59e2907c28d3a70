package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk"
	trails "github.com/trails-kg/trails/session"
)

// writersRow is one backend's run of the concurrent writers: each writer
// appends to a session of its own (of a user of its own, in one app, so
// that their app: keys are shared), all at once.
type writersRow struct {
	OK     int           `json:"ok"`
	Stored int           `json:"stored"` // events a Get of each session returns afterwards, in all
	Wall   time.Duration `json:"wall_ns"`
	Errors []errCount    `json:"errors"`
}

// errCount is how often a kind of error came, with one message.
type errCount struct {
	Kind    string `json:"kind"`
	N       int    `json:"n"`
	Example string `json:"example"`
}

// errTally counts errors by kind. It is safe for concurrent use.
type errTally struct {
	mu sync.Mutex
	m  map[string]*errCount
}

func (t *errTally) add(k backend, err error) {
	kind := classify(k, err)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*errCount{}
	}
	if t.m[kind] == nil {
		msg := err.Error()
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		t.m[kind] = &errCount{Kind: kind, Example: msg}
	}
	t.m[kind].N++
}

func (t *errTally) list() []errCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []errCount
	for _, c := range t.m {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b errCount) int { return b.N - a.N })
	return out
}

// classify names the kind of an append's error. ADK's database service
// has no sentinel errors: its kinds are told by their messages, for this
// report only.
func classify(k backend, err error) string {
	msg := err.Error()
	switch {
	case k == trailsBackend && errors.Is(err, trails.ErrConflict):
		return "session.ErrConflict (compare and swap refused: stale value)"
	case k == trailsBackend && errors.Is(err, adk.ErrNotFound):
		return "adk.ErrNotFound"
	case strings.Contains(msg, "stale session"):
		return "stale session error"
	case strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked"):
		return "SQLITE_BUSY (database is locked)"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return "context: " + err.Error()
	}
	return "other"
}

// writers runs the plan's concurrent writers on each backend in turn.
func (b *bench) writers(ctx context.Context) (map[string]writersRow, error) {
	out := map[string]writersRow{}
	for _, k := range []backend{sqliteBackend, trailsBackend} {
		sess := make([]session.Session, b.plan.writers)
		for w := range sess {
			s, err := b.create(ctx, k, fmt.Sprintf("writer%d", w))
			if err != nil {
				return nil, err
			}
			sess[w] = s
		}
		var row writersRow
		var tally errTally
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w, s := range sess {
			wg.Go(func() {
				<-start
				ok := 0
				for i := range b.plan.perWriter {
					if ctx.Err() != nil {
						return
					}
					if err := b.svc(k).AppendEvent(ctx, s, event(fmt.Sprintf("w%d", w), i, time.Now())); err != nil {
						tally.add(k, err)
						continue
					}
					ok++
				}
				mu.Lock()
				row.OK += ok
				mu.Unlock()
			})
		}
		t0 := time.Now()
		close(start)
		wg.Wait()
		row.Wall = time.Since(t0)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		row.Errors = tally.list()
		for w, s := range sess {
			g, err := b.get(ctx, k, fmt.Sprintf("writer%d", w), s.ID(), 0)
			if err != nil {
				return nil, err
			}
			row.Stored += g.Events().Len()
		}
		b.logf("writers: %v: %d of %d appends succeeded in %v (%d stored)", k, row.OK, b.plan.writers*b.plan.perWriter, row.Wall.Round(time.Millisecond), row.Stored)
		out[k.String()] = row
	}
	return out, nil
}

// pairWriter is one of two writers on one session: what it got, and how
// its session value compares with the store afterwards.
type pairWriter struct {
	OK       int        `json:"ok"`
	Errors   []errCount `json:"errors"`
	Held     int        `json:"held"`     // events in its session value afterwards
	Refused  int        `json:"refused"`  // of them, events whose append was refused
	Unstored int        `json:"unstored"` // of them, events the store lacks (refused, or accepted but not stored)
	Equal    bool       `json:"equal"`    // its events are a fresh Get's
	Prefix   bool       `json:"prefix"`   // its events are a prefix of a fresh Get's
}

// pairRow is one backend's run of two writers on one session.
type pairRow struct {
	Initial int           `json:"initial"` // events the session held when both loaded it
	Stored  int           `json:"stored"`  // events a fresh Get returns afterwards
	Writers [2]pairWriter `json:"writers"`
}

// pair runs two writers on one session on each backend in turn: each
// Gets the session (a value of its own) and appends the plan's events
// through it, both at once, going on after an error as a careless caller
// would.
func (b *bench) pair(ctx context.Context) (map[string]pairRow, error) {
	out := map[string]pairRow{}
	const initial = perInvocation
	for _, k := range []backend{sqliteBackend, trailsBackend} {
		user := "pair"
		s, err := b.create(ctx, k, user)
		if err != nil {
			return nil, err
		}
		if err := b.fill(ctx, k, s, "p", initial); err != nil {
			return nil, err
		}
		var vals [2]session.Session
		for w := range vals {
			if vals[w], err = b.get(ctx, k, user, s.ID(), 0); err != nil {
				return nil, err
			}
		}
		row := pairRow{Initial: initial}
		refused := [2]map[string]bool{{}, {}}
		var tallies [2]errTally
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range vals {
			wg.Go(func() {
				<-start
				for i := range b.plan.pairEvents {
					if ctx.Err() != nil {
						return
					}
					ev := event(fmt.Sprintf("p%d", w), initial+i, time.Now())
					if err := b.svc(k).AppendEvent(ctx, vals[w], ev); err != nil {
						tallies[w].add(k, err)
						refused[w][ev.ID] = true
						continue
					}
					row.Writers[w].OK++
				}
			})
		}
		close(start)
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fresh, err := b.get(ctx, k, user, s.ID(), 0)
		if err != nil {
			return nil, err
		}
		stored := ids(fresh)
		row.Stored = len(stored)
		for w, v := range vals {
			held := ids(v)
			pw := &row.Writers[w]
			pw.Errors = tallies[w].list()
			pw.Held = len(held)
			inStore := make(map[string]bool, len(stored))
			for _, id := range stored {
				inStore[id] = true
			}
			for _, id := range held {
				if refused[w][id] {
					pw.Refused++
				}
				if !inStore[id] {
					pw.Unstored++
				}
			}
			pw.Equal = slices.Equal(held, stored)
			pw.Prefix = len(held) <= len(stored) && slices.Equal(held, stored[:len(held)])
		}
		b.logf("pair: %v: writers got %d and %d; %d stored; values hold %d (%d refused, %d not stored) and %d (%d refused, %d not stored)", k,
			row.Writers[0].OK, row.Writers[1].OK, row.Stored, row.Writers[0].Held, row.Writers[0].Refused, row.Writers[0].Unstored,
			row.Writers[1].Held, row.Writers[1].Refused, row.Writers[1].Unstored)
		out[k.String()] = row
	}
	return out, nil
}

// ids returns the ids of the events of s.
func ids(s session.Session) []string {
	var out []string
	for ev := range s.Events().All() {
		out = append(out, ev.ID)
	}
	return out
}
