package session_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

func TestPersistLoadRoot(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	s := session.New("alice")
	s.Append("system", "You are terse.")
	s.Append("user", "Hello \"world\"\n\ttab, emoji 🎉, NUL \x00, backslash \\")
	s.Append("assistant", "")
	mustPersist(t, st, s)
	got := mustLoad(t, st, s.ID)
	sameSession(t, got, s)
	if got.Branch != session.MainBranch || got.Depth() != 0 {
		t.Fatalf("got branch %q depth %d, want %q 0", got.Branch, got.Depth(), session.MainBranch)
	}
}

func TestBranchLabels(t *testing.T) {
	fusekitest.Parallel(t)
	root := session.New("alice")
	appendN(root, 2, "r")
	re := regexp.MustCompile(`^fork-[0-9a-f]{8}$`)
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		f := mustFork(t, root, 1)
		if !re.MatchString(f.Branch) {
			t.Fatalf("got branch %q, want fork- and 8 hex digits", f.Branch)
		}
		if seen[f.Branch] {
			t.Fatalf("branch %q given twice", f.Branch)
		}
		seen[f.Branch] = true
		if f.Principal != "alice" || f.ParentID != root.ID || f.ForkedAt != 1 {
			t.Fatalf("got %+v, want alice's fork of %s at 1", f, root.ID)
		}
	}
}

func TestPersistTwiceWritesNothing(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, _ := newStore(t)
	root := persisted(t, st, "alice", 4)
	f := mustFork(t, root, 2)
	appendN(f, 2, "f")
	mustPersist(t, st, f)
	before := ct.requests.Load()
	mustPersist(t, st, f)
	mustPersist(t, st, root)
	// One state query each, no update.
	if got := ct.requests.Load() - before; got != 2 {
		t.Fatalf("got %d requests for two unchanged persists, want 2 (no writes)", got)
	}
	kids, err := st.Branches(context.Background(), root.ID)
	if err != nil || len(kids) != 1 {
		t.Fatalf("got %d forks (%v), want 1", len(kids), err)
	}
	// Appending after a persist writes only the new turns.
	appendN(f, 3, "more")
	mustPersist(t, st, f)
	sameSession(t, mustLoad(t, st, f.ID), f)
}

func TestPrincipalOverride(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	root := persisted(t, st, "alice", 2)
	f := mustFork(t, root, 1)
	if f.Principal != "alice" {
		t.Fatalf("got principal %q, want the parent's alice", f.Principal)
	}
	f.Principal = "bob's agent"
	appendN(f, 1, "bob")
	mustPersist(t, st, f)
	if got := mustLoad(t, st, f.ID); got.Principal != "bob's agent" {
		t.Fatalf("got principal %q, want %q", got.Principal, "bob's agent")
	}
}

func TestInvalidInput(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	good := func() *session.Session {
		s := session.New("alice")
		appendN(s, 2, "x")
		return s
	}
	for _, tc := range []struct {
		name   string
		mutate func(*session.Session)
	}{
		{"bad id", func(s *session.Session) { s.ID = "not-a-uuid" }},
		{"uppercase id", func(s *session.Session) { s.ID = "0190C5D2-0000-7000-8000-000000000000" }},
		{"empty principal", func(s *session.Session) { s.Principal = "" }},
		{"empty role", func(s *session.Session) { s.Turns[1].Role = "" }},
		{"invalid UTF-8 content", func(s *session.Session) { s.Turns[0].Content = "a\xffb" }},
		{"invalid UTF-8 role", func(s *session.Session) { s.Turns[0].Role = "\xfe" }},
		{"wrong index", func(s *session.Session) { s.Turns[1].Index = 5 }},
		{"bad branch", func(s *session.Session) { s.Branch = "dev" }},
		{"root with fork point", func(s *session.Session) { s.ForkedAt = 1 }},
		{"fork on main", func(s *session.Session) { s.ParentID = "0190c5d2-0000-7000-8000-000000000000" }},
		{"own parent", func(s *session.Session) { s.ParentID = s.ID; s.Branch = "fork-00000000" }},
		{"fork point beyond history", func(s *session.Session) {
			s.ParentID = "0190c5d2-0000-7000-8000-000000000000"
			s.Branch = "fork-00000000"
			s.ForkedAt = 9
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.mutate(s)
			before := ct.requests.Load()
			if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			if got := ct.requests.Load() - before; got != 0 {
				t.Fatalf("got %d requests, want 0: bad input is refused before sending", got)
			}
		})
	}
	for _, id := range []string{"", "x", "../../etc", "0190c5d2-0000-7000-8000-00000000000g"} {
		if _, err := st.Load(ctx, id); !errors.Is(err, session.ErrInvalid) {
			t.Fatalf("load %q: got %v, want ErrInvalid", id, err)
		}
	}
	if err := st.Persist(ctx, nil); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("persist nil: got %v, want ErrInvalid", err)
	}
}

func TestLoadNotFound(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	_, err := st.Load(context.Background(), session.New("x").ID)
	if !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
}

func TestConflict(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 3)

	t.Run("changed stored turn", func(t *testing.T) {
		s := mustLoad(t, st, root.ID)
		s.Turns[1].Content = "rewritten history"
		s.Append("user", "and more")
		if err := st.Persist(ctx, s); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("got %v, want ErrConflict", err)
		}
		sameSession(t, mustLoad(t, st, root.ID), root)
	})
	t.Run("two writers", func(t *testing.T) {
		a := mustLoad(t, st, root.ID)
		b := mustLoad(t, st, root.ID)
		a.Append("user", "from a")
		b.Append("user", "from b")
		mustPersist(t, st, a)
		if err := st.Persist(ctx, b); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("got %v, want ErrConflict", err)
		}
		sameSession(t, mustLoad(t, st, root.ID), a)
		// The loser reloads, re-applies and succeeds.
		b = mustLoad(t, st, root.ID)
		b.Append("user", "from b")
		mustPersist(t, st, b)
		sameSession(t, mustLoad(t, st, root.ID), b)
		root = b
	})
	t.Run("stale copy", func(t *testing.T) {
		stale := *root
		stale.Turns = append([]session.Turn(nil), root.Turns[:2]...)
		if err := st.Persist(ctx, &stale); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("got %v, want ErrConflict for a copy with fewer turns than stored", err)
		}
	})
	t.Run("parent too short", func(t *testing.T) {
		p := session.New("alice")
		appendN(p, 4, "p")
		short := *p
		short.Turns = p.Turns[:2]
		mustPersist(t, st, &short)
		f := mustFork(t, p, 3)
		if err := st.Persist(ctx, f); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("got %v, want ErrConflict for a fork beyond its parent's stored history", err)
		}
	})
}
