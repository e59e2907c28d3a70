package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// outOfRange are times a writer may slip into a turn: milliseconds taken
// for seconds (year 57868 and beyond), a negative year, the first instant
// after year 9999.
var outOfRange = []struct {
	name string
	t    time.Time
}{
	{"milliseconds taken for seconds", time.Unix(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC).UnixMilli(), 0)},
	{"year -5", time.Date(-5, 3, 1, 0, 0, 0, 0, time.UTC)},
	{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
}

// TestTurnTimeOutOfRange: Persist refuses a turn whose creation time it
// could not read back (issue 36: it was acknowledged, and from then on
// every Load of its session and its forks failed with ErrCorrupt), with
// ErrInvalid naming the turn and the field; the session keeps what it
// held and stays loadable. The same for a fork's own turn, an expiry,
// and a Store whose clock is wrong.
func TestTurnTimeOutOfRange(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	for _, tc := range outOfRange {
		t.Run(tc.name, func(t *testing.T) {
			s := persisted(t, st, "time-"+newID(), 2)
			s.Append("user", "when?")
			s.Turns[2].Created = tc.t
			err := st.Persist(ctx, s)
			if !errors.Is(err, session.ErrInvalid) || !strings.Contains(err.Error(), "turn 2: Created") {
				t.Fatalf("persist: got %v, want ErrInvalid naming turn 2's Created", err)
			}
			if got := mustLoad(t, st, s.ID); len(got.Turns) != 2 {
				t.Fatalf("load after the refusal: got %d turns, want 2", len(got.Turns))
			}

			f := mustFork(t, mustLoad(t, st, s.ID), 1)
			f.Append("assistant", "another path")
			f.Turns[len(f.Turns)-1].Created = tc.t
			if err := st.Persist(ctx, f); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("persist a fork: got %v, want ErrInvalid", err)
			}
			if _, err := st.Load(ctx, f.ID); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("load the refused fork: got %v, want ErrNotFound", err)
			}

			if err := st.SetExpiry(ctx, s.ID, tc.t); !errors.Is(err, session.ErrInvalid) || !strings.Contains(err.Error(), "expiry") {
				t.Fatalf("set expiry: got %v, want ErrInvalid naming the expiry", err)
			}
			if in, err := st.Info(ctx, s.ID); err != nil || !in.ExpiresAt.IsZero() {
				t.Fatalf("info after the refused expiry: %+v, %v; want no expiry", in, err)
			}

			clocked := st.With(session.WithClock(func() time.Time { return tc.t }))
			r := session.New("time-" + newID())
			r.Append("user", "hello")
			r.Turns[0].Created = time.Now()
			if err := clocked.Persist(ctx, r); !errors.Is(err, session.ErrInvalid) || !strings.Contains(err.Error(), ontology.Created) {
				t.Fatalf("persist with a wrong clock: got %v, want ErrInvalid naming %s", err, ontology.Created)
			}
			if _, err := st.Load(ctx, r.ID); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("load after the wrong clock: got %v, want ErrNotFound", err)
			}
		})
	}
}

// TestTurnTimeBeyondYear9999Stored: a session that already holds a turn
// time outside years 0000 to 9999 (an older Trails acknowledged it, or
// another writer put it there) loads, with its forks and tail, the time as
// stored (it made every load of the tree fail with ErrCorrupt), and check
// names the turn (rule time).
func TestTurnTimeBeyondYear9999Stored(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	fx := newCorruptFixture(t, st, c)
	far := time.Date(57877, 12, 12, 8, 0, 0, 0, time.UTC)
	past := time.Date(-5, 1, 2, 3, 4, 5, 0, time.UTC)
	fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 1), ontology.Created, badLiteral("57877-12-12T08:00:00Z", xsdDateTime))
	fx.replace(t, fx.f.ID, storetest.TurnRef(fx.f.ID, 2), ontology.Created, badLiteral("-0005-01-02T03:04:05Z", xsdDateTime))

	for _, id := range []string{fx.r.ID, fx.f.ID, fx.g.ID} {
		s, err := st.Load(ctx, id)
		if err != nil {
			t.Fatalf("load %s: %v", id, err)
		}
		if got := s.Turns[1].Created; !got.Equal(far) {
			t.Errorf("load %s: turn 1 created %v, want %v", id, got, far)
		}
		if id != fx.r.ID {
			if got := s.Turns[2].Created; !got.Equal(past) {
				t.Errorf("load %s: turn 2 created %v, want %v", id, got, past)
			}
		}
		tail, err := st.LoadTail(ctx, id, session.Tail{Last: 3})
		if err != nil {
			t.Fatalf("load the tail of %s: %v", id, err)
		}
		if len(tail.Turns) == 0 {
			t.Fatalf("load the tail of %s: no turns", id)
		}
	}

	findings, err := admin.New(c).Check(ctx)
	if err != nil && !errors.Is(err, admin.ErrSHACLNotRun) {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, f := range findings {
		if f.Rule == admin.RuleTime {
			named[f.Resource] = true
		}
	}
	for _, turn := range []string{storetest.TurnRef(fx.r.ID, 1).String(), storetest.TurnRef(fx.f.ID, 2).String()} {
		if !named[turn] {
			t.Errorf("check: no finding of rule %s for %s (got %v)", admin.RuleTime, turn, findings)
		}
	}
}
