package session_test

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

var (
	propSeed = flag.Uint64("prop.seed", 0, "seed of TestPropertyModel (0: from the clock)")
	propOps  = flag.Int("prop.ops", 400, "operations in TestPropertyModel")
)

// model is what the store should hold: for each session its in-memory
// value and how many of its turns were persisted.
type model struct {
	live   []*session.Session // every session created, persisted or not
	stored map[string]int     // id → length of the persisted effective history
}

// TestPropertyModel drives random sequences of append, fork, persist and
// load, and checks every Load and every Persist outcome against an
// in-memory model.
func TestPropertyModel(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t, session.WithMaxChildren(0)) // random forks may pile up on one parent
	ctx := context.Background()
	seed := *propSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -prop.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	m := model{stored: map[string]int{}}
	pick := func() *session.Session { return m.live[rng.IntN(len(m.live))] }
	counts := map[string]int{}

	for op := 0; op < *propOps; op++ {
		if len(m.live) == 0 || rng.IntN(20) == 0 {
			s := session.New("prop")
			m.live = append(m.live, s)
			counts["new"]++
			continue
		}
		s := pick()
		switch k := rng.IntN(10); {
		case k < 4: // append 1..3 turns in memory
			for n := 1 + rng.IntN(3); n > 0; n-- {
				s.Append([]string{"user", "assistant", "tool"}[rng.IntN(3)], randomText(rng))
			}
			counts["append"]++
		case k < 6: // fork in memory
			at := rng.IntN(len(s.Turns) + 1)
			f, err := s.Fork(at)
			if s.Depth()+1 > session.MaxForkDepth {
				if !errors.Is(err, session.ErrForkDepth) {
					t.Fatalf("op %d: fork beyond the depth limit: got %v, want ErrForkDepth", op, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("op %d: fork %s at %d: %v", op, s.ID, at, err)
			}
			m.live = append(m.live, f)
			counts["fork"]++
		case k < 8: // persist
			err := st.Persist(ctx, s)
			want := m.persistOutcome(s)
			if !errors.Is(err, want) || (want == nil && err != nil) {
				t.Fatalf("op %d: persist %s (parent %q at %d, %d turns): got %v, want %v",
					op, s.ID, s.ParentID, s.ForkedAt, len(s.Turns), err, want)
			}
			if err == nil {
				m.stored[s.ID] = len(s.Turns)
			}
			counts["persist"]++
		default: // load and compare
			got, err := st.Load(ctx, s.ID)
			n, ok := m.stored[s.ID]
			if !ok {
				if !errors.Is(err, session.ErrNotFound) {
					t.Fatalf("op %d: load of a never-persisted session: got %v, want ErrNotFound", op, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("op %d: load %s: %v", op, s.ID, err)
			}
			sameHistory(t, got.Turns, s.Turns[:n])
			if got.ParentID != s.ParentID || got.ForkedAt != s.ForkedAt || got.Branch != s.Branch {
				t.Fatalf("op %d: load %s: got fork fields %q %d %q, want %q %d %q", op, s.ID,
					got.ParentID, got.ForkedAt, got.Branch, s.ParentID, s.ForkedAt, s.Branch)
			}
			counts["load"]++
		}
	}
	// Every persisted session loads as modelled at the end.
	for _, s := range m.live {
		if n, ok := m.stored[s.ID]; ok {
			sameHistory(t, mustLoad(t, st, s.ID).Turns, s.Turns[:n])
		}
	}
	t.Logf("operations: %v; sessions: %d, persisted: %d", counts, len(m.live), len(m.stored))
}

// persistOutcome is the error the model expects from persisting s.
func (m *model) persistOutcome(s *session.Session) error {
	if s.ParentID == "" {
		return nil
	}
	if _, ok := m.stored[s.ID]; ok {
		return nil // already created: appends only
	}
	plen, ok := m.stored[s.ParentID]
	if !ok {
		return session.ErrParentMissing
	}
	if plen < s.ForkedAt {
		return session.ErrConflict
	}
	return nil
}

func randomText(rng *rand.Rand) string {
	pieces := []string{"plain", "\"quoted\"", "line\nbreak", "tab\there", "émoji 🎉", "back\\slash", "}#", "$x", "<a>", ""}
	n := 1 + rng.IntN(6)
	out := ""
	for i := 0; i < n; i++ {
		out += pieces[rng.IntN(len(pieces))] + " "
	}
	return out
}
