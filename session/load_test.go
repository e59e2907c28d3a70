package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

func TestLegacySessionLoadsAsRoot(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	nq, err := os.ReadFile(filepath.Join("..", "testdata", "session", "legacy", "session.nq"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "0190a000-0000-7000-8000-00000000000a"
	g := kg.MustIRI(ontology.SessionIRI(id))
	clustertest.DeleteGraph(ctx, t, c, g) // a rerun against a kept dataset
	if err := clustertest.LoadQuads(ctx, t, c, nq); err != nil {
		t.Fatal(err)
	}
	s := mustLoad(t, st, id)
	if s.ParentID != "" || s.ForkedAt != 0 || s.Branch != session.MainBranch || s.Principal != "legacy-agent" {
		t.Fatalf("got %+v, want a root on main of legacy-agent", s)
	}
	wantRoles := []string{"system", "user", "assistant"}
	if len(s.Turns) != 3 {
		t.Fatalf("got %d turns, want 3", len(s.Turns))
	}
	for i, turn := range s.Turns {
		if turn.Role != wantRoles[i] || turn.Branch != session.MainBranch || turn.Created.Second() != i {
			t.Fatalf("turn %d: got %+v", i, turn)
		}
	}
	in, err := st.Info(ctx, id)
	if err != nil || in.OwnTurns != 3 || in.Turns != 3 {
		t.Fatalf("info: got %+v, %v; want 3 turns", in, err)
	}
	// It can be forked and continued like any root.
	f := mustFork(t, s, 2)
	appendN(f, 1, "f")
	mustPersist(t, st, f)
	sameSession(t, mustLoad(t, st, f.ID), f)
	s.Append("user", "a new turn on the old session")
	mustPersist(t, st, s)
	sameSession(t, mustLoad(t, st, id), s)
	// A stale copy of it conflicts like any other.
	stale := mustLoad(t, st, id)
	stale.Turns[0].Content = "changed"
	if err := st.Persist(ctx, stale); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
}
