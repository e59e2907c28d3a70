package session_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

// Hostile and broken input: ids that are not UUIDs, fork points out of
// range, turns and sessions Persist refuses (empty roles, indices out of
// place, hostile branch labels, a session its own parent).

// hostileIDs are session ids that are not canonical UUIDs.
var hostileIDs = []string{
	"",
	" ",
	"not-a-uuid",
	"0190A000-0000-7000-8000-00000000000A", // upper case
	"{0190a000-0000-7000-8000-00000000000a}",
	"urn:uuid:0190a000-0000-7000-8000-00000000000a",
	"0190a0000000700080000000000000 0a",
	"0190a000000070008000000000000000a", // no dashes
	"0190a000-0000-7000-8000-00000000000a ",
	"0190a000-0000-7000-8000-00000000000a\n",
	"0190a000-0000-7000-8000-00000000000a\x00",
	"0190a000-0000-7000-8000-00000000000\xff",
	"../../etc/passwd",
	`"} ; DROP ALL ; INSERT DATA {"`,
	"> ; DROP ALL ; #",
	"?x",
	"$self",
	strings.Repeat("a", 1<<20),
}

// TestHostileIDs: every method that takes an id refuses one that is not a
// canonical UUID with ErrInvalid, before any request.
func TestHostileIDs(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	ops := []struct {
		name string
		call func(id string) error
	}{
		{"load", func(id string) error { _, err := st.Load(ctx, id); return err }},
		{"replay", func(id string) error { _, err := st.Replay(ctx, id); return err }},
		{"info", func(id string) error { _, err := st.Info(ctx, id); return err }},
		{"branches", func(id string) error { _, err := st.Branches(ctx, id); return err }},
		{"tree", func(id string) error { _, err := st.Tree(ctx, id); return err }},
		{"delete", func(id string) error { return st.Delete(ctx, id, session.DeleteOptions{}) }},
		{"detach", func(id string) error { return st.Detach(ctx, id, session.DetachOptions{}) }},
		{"persist", func(id string) error {
			s := session.New("p")
			s.ID = id
			s.Append("user", "x")
			return st.Persist(ctx, s)
		}},
		{"persist with parent", func(id string) error {
			if id == "" {
				id = "-" // "" is no parent: a root, which may keep a fork label
			}
			s := session.New("p")
			s.ParentID, s.Branch = id, "fork-0badc0de"
			s.Append("user", "x")
			return st.Persist(ctx, s)
		}},
		{"fork", func(id string) error {
			s := session.New("p")
			s.ID = id
			_, err := s.Fork(0)
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			for _, id := range hostileIDs {
				before := ct.requests.Load()
				err := op.call(id)
				if !errors.Is(err, session.ErrInvalid) {
					t.Errorf("%s %q: got %v, want ErrInvalid", op.name, clip(id), err)
				}
				if n := ct.requests.Load() - before; n != 0 {
					t.Errorf("%s %q: %d requests sent, want none", op.name, clip(id), n)
				}
			}
		})
	}
}

// TestHostileForkPoints: fork points and replay bounds out of range.
func TestHostileForkPoints(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "forker", 3)

	t.Run("fork in memory", func(t *testing.T) {
		for _, at := range []int{-1, 4, math.MaxInt, math.MinInt, math.MaxInt32 + 1} {
			if f, err := root.Fork(at); !errors.Is(err, session.ErrInvalid) {
				t.Errorf("fork at %d: got %v, %v; want ErrInvalid", at, f, err)
			}
		}
	})
	t.Run("persist a hand-made fork", func(t *testing.T) {
		for _, at := range []int{-1, 4, math.MaxInt, math.MinInt} {
			f := &session.Session{ID: newID(), Principal: "forker", ParentID: root.ID, ForkedAt: at,
				Branch: "fork-0badc0de", Turns: append([]session.Turn(nil), root.Turns...)}
			before := ct.requests.Load()
			if err := st.Persist(ctx, f); !errors.Is(err, session.ErrInvalid) {
				t.Errorf("fork point %d: got %v, want ErrInvalid", at, err)
			}
			if n := ct.requests.Load() - before; n != 0 {
				t.Errorf("fork point %d: %d requests sent, want none", at, n)
			}
		}
	})
	t.Run("a root with a fork point", func(t *testing.T) {
		s := session.New("forker")
		s.Append("user", "x")
		s.ForkedAt = 1
		if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("got %v, want ErrInvalid", err)
		}
	})
	t.Run("fork beyond what the parent stored", func(t *testing.T) {
		p := persisted(t, st, "forker", 2)
		appendN(p, 3, "unsaved") // 5 in memory, 2 stored
		f := mustFork(t, p, 4)
		if err := st.Persist(ctx, f); !errors.Is(err, session.ErrConflict) {
			t.Errorf("got %v, want ErrConflict", err)
		}
		if _, err := st.Load(ctx, f.ID); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("the refused fork: got %v, want ErrNotFound", err)
		}
	})
	t.Run("replay bounds", func(t *testing.T) {
		for _, tc := range []struct {
			n    int
			want int
			err  error
		}{
			{-1, 0, session.ErrInvalid},
			{math.MinInt, 0, session.ErrInvalid},
			{0, 0, nil},
			{2, 2, nil},
			{3, 3, nil},
			{4, 3, nil},
			{math.MaxInt, 3, nil},
		} {
			turns, err := st.Replay(ctx, root.ID, session.UpTo(tc.n))
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Errorf("UpTo(%d): got %v, want %v", tc.n, err, tc.err)
				continue
			}
			if len(turns) != tc.want {
				t.Errorf("UpTo(%d): got %d turns, want %d", tc.n, len(turns), tc.want)
			}
		}
	})
}

// TestHostileTurns: turns and sessions Persist must refuse before any
// request.
func TestHostileTurns(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		make func() *session.Session
	}{
		{"empty role", func() *session.Session {
			s := session.New("p")
			s.Append("", "content")
			return s
		}},
		{"empty role after a good turn", func() *session.Session {
			s := session.New("p")
			s.Append("user", "content")
			s.Append("", "content")
			return s
		}},
		{"empty principal", func() *session.Session {
			s := session.New("")
			s.Append("user", "content")
			return s
		}},
		{"turn index out of place", func() *session.Session {
			s := session.New("p")
			s.Append("user", "a")
			s.Append("user", "b")
			s.Turns[1].Index = 7
			return s
		}},
		{"negative turn index", func() *session.Session {
			s := session.New("p")
			s.Append("user", "a")
			s.Turns[0].Index = -1
			return s
		}},
		{"turn of another branch", func() *session.Session {
			s := session.New("p")
			s.Append("user", "a")
			s.Turns[0].Branch = "fork-0badc0de"
			return s
		}},
		{"branch payload", func() *session.Session {
			s := session.New("p")
			s.Branch = `main" ; DROP ALL ; #`
			s.Append("user", "a")
			return s
		}},
		{"turn branch payload", func() *session.Session {
			s := session.New("p")
			s.Append("user", "a")
			s.Turns[0].Branch = "main\n} ; DROP ALL ; #"
			return s
		}},
		{"fork labelled main", func() *session.Session {
			p := session.New("p")
			p.Append("user", "a")
			f := mustFork(t, p, 1)
			f.Branch = session.MainBranch
			return f
		}},
		{"own parent", func() *session.Session {
			s := session.New("p")
			s.ParentID, s.Branch = s.ID, "fork-0badc0de"
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.make()
			before := ct.requests.Load()
			if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
			if n := ct.requests.Load() - before; n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
	if err := st.Persist(ctx, nil); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("persist nil: got %v, want ErrInvalid", err)
	}
}
