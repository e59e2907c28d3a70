package session_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// Rewind alongside the rest: Check, export and import, detach, the audit
// queries, merges and forks after a rewind.

// TestRewindIntegrity: Check finds nothing wrong after rewinds, detaches of
// a rewound session, an archive and a re-parented fork; an export imported
// into an empty store loads the same histories with the same IDs.
func TestRewindIntegrity(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	c := fusekitest.Empty(t)
	if _, err := admin.New(c).Init(ctx); err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(querier(t, c)) // after Init, which writes directly: a replicated store starts as a copy of it
	fx := rwSeed(t, st, "integrity")
	s, r := mustRewind(t, st, fx.root.ID, 3)
	appendN(s, 2, "after")
	mustPersist(t, st, s)
	f := mustFork(t, s, 4) // forks a generation-1 turn
	appendN(f, 2, "fork of the rewound")
	mustPersist(t, st, f)
	fs, rf := mustRewind(t, st, f.ID, 5)
	appendN(fs, 1, "after")
	mustPersist(t, st, fs)
	mustCheck(t, c)

	ids := []string{fx.root.ID, r.Archive, fx.early.ID, fx.late.ID, fx.lateChild.ID, f.ID, rf.Archive}
	want := make(map[string]*session.Session, len(ids))
	for _, id := range ids {
		want[id] = mustLoad(t, st, id)
	}

	t.Run("export and import", func(t *testing.T) {
		fusekitest.RequireDirect(t, "it wipes its whole dataset (the replicas' applied offsets with it) before it imports with admin.Dataset")
		var data bytes.Buffer
		if _, err := admin.New(c).Export(ctx, &data, admin.NQuads); err != nil {
			t.Fatalf("export: %v", err)
		}
		c := fusekitest.Empty(t)
		st := session.NewStore(querier(t, c))
		if _, err := admin.New(c).Import(ctx, &data, admin.NQuads, nil); err != nil {
			t.Fatalf("import: %v", err)
		}
		for _, id := range ids {
			got := mustLoad(t, st, id)
			sameSession(t, got, want[id])
			sameIDs(t, got.Turns, want[id].Turns)
		}
		// The imported session goes on in its generation.
		s := mustLoad(t, st, fx.root.ID)
		appendN(s, 1, "imported")
		mustPersist(t, st, s)
		if id := mustLoad(t, st, fx.root.ID).Turns[5].ID; id != session.TurnID(fx.root.ID, 5)+"/r1" {
			t.Fatalf("got %s, want generation 1", id)
		}
		mustRewind(t, st, fx.root.ID, 4)
		mustCheck(t, c)
	})
	t.Run("detach", func(t *testing.T) {
		fusekitest.RequireDirect(t, "it wipes its dataset mid-test, under the log's replicas")
		c := fusekitest.Empty(t)
		if _, err := admin.New(c).Init(ctx); err != nil {
			t.Fatal(err)
		}
		st := session.NewStore(querier(t, c)) // after Init, which writes directly: a replicated store starts as a copy of it
		fx := rwSeed(t, st, "detacher")
		s, r := mustRewind(t, st, fx.root.ID, 3)
		appendN(s, 2, "after")
		mustPersist(t, st, s)
		f := mustFork(t, s, 4)
		appendN(f, 1, "fork")
		mustPersist(t, st, f)
		fs, _ := mustRewind(t, st, f.ID, 4)
		appendN(fs, 1, "after")
		mustPersist(t, st, fs)
		for _, id := range []string{r.Archive, fx.lateChild.ID, f.ID} {
			before := mustLoad(t, st, id)
			if err := st.Detach(ctx, id, session.DetachOptions{}); err != nil {
				t.Fatalf("detach %s: %v", id, err)
			}
			after := mustLoad(t, st, id)
			if after.ParentID != "" {
				t.Fatalf("detach %s: still a fork of %s", id, after.ParentID)
			}
			sameHistory(t, after.Turns, before.Turns)
			// Each copy says which turn it copies: the one Load gave before.
			for _, tn := range before.Turns[:before.ForkedAt] {
				q, err := kg.Bind(`PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $g { ?copy trails:copiedFrom $orig ; trails:index $i ; trails:session $g } }`,
					kg.Params{"g": kg.MustIRI(ontology.SessionIRI(id)), "orig": kg.MustIRI(tn.ID), "i": kg.Int(tn.Index)})
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := c.Ask(ctx, q); err != nil || !ok {
					t.Fatalf("detach %s: no copy of turn %d from %s (%v)", id, tn.Index, tn.ID, err)
				}
			}
			appendN(after, 1, "after detach")
			mustPersist(t, st, after)
		}
		mustCheck(t, c)
	})
}

// TestRewindAuditQueries runs the prov queries of rewinds.
func TestRewindAuditQueries(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	principal := "auditee-" + newID()
	fx := rwSeed(t, st, principal)
	_, r1 := mustRewind(t, st, fx.root.ID, 3, session.RewindOptions{Reason: "first"})
	_, r2 := mustRewind(t, st, fx.root.ID, 2, session.RewindOptions{By: "operator-" + principal})
	rd := prov.NewReader(c)

	res, err := rd.Run(ctx, "rewinds-of", map[string]string{"session": fx.root.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Solutions) != 2 {
		t.Fatalf("rewinds-of: got %d rows, want 2", len(res.Solutions))
	}
	for i, w := range []struct {
		archive         string
		to, moved, kids int
		principal, why  string
	}{
		{r1.Archive, 3, 3, 1, principal, "first"},
		{r2.Archive, 2, 1, 1, "operator-" + principal, ""}, // the first archive, forked at 3, is re-parented
	} {
		row := res.Solutions[i]
		to, _ := row.Int("rewoundTo")
		moved, _ := row.Int("archiveTurns")
		kids, _ := row.Int("reparented")
		if row.String("archive") != ontology.SessionIRI(w.archive) || to != w.to || moved != w.moved || kids != w.kids ||
			row.String("principal") != w.principal || row.String("reason") != w.why || row.String("session") != ontology.SessionIRI(fx.root.ID) {
			t.Fatalf("rewinds-of row %d: got %v, want %+v", i, row, w)
		}
	}
	res, err = rd.Run(ctx, "rewinds-by-principal", map[string]string{"principal": principal})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Solutions) != 1 || res.Solutions[0].String("archive") != ontology.SessionIRI(r1.Archive) ||
		res.Solutions[0].String("session") != ontology.SessionIRI(fx.root.ID) || res.Solutions[0].String("reason") != "first" {
		t.Fatalf("rewinds-by-principal: got %v, want the first rewind", res.Solutions)
	}
}

// TestRewindThenMerge merges a fork's result into a rewound session: the
// merge turn takes an IRI of the session's generation, never that of the
// abandoned turn at its index, which stays in the archive.
func TestRewindThenMerge(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "merger", 4)
	child := mustFork(t, root, 1)
	appendN(child, 1, "child")
	mustPersist(t, st, child)
	_, r := mustRewind(t, st, root.ID, 2)
	mt, err := st.Merge(ctx, child.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "done"})
	if err != nil {
		t.Fatal(err)
	}
	if want := session.TurnID(root.ID, 2) + "/r1"; mt.ID != want || mt.Index != 2 {
		t.Fatalf("got merge turn %d %s, want 2 %s", mt.Index, mt.ID, want)
	}
	got := mustLoad(t, st, root.ID)
	if len(got.Turns) != 3 || got.Turns[2].ID != mt.ID || got.Turns[2].Content != "done" {
		t.Fatalf("got %+v, want the merge turn at 2", got.Turns)
	}
	rwResolves(t, c, root.ID, got.Turns)
	rwResolves(t, c, r.Archive, root.Turns[2:])
}

// TestRewindRacesFork: a fork whose parent is rewound below its fork point
// between Persist's read and its write is refused (ErrConflict), not
// stored hanging beyond its parent's end.
func TestRewindRacesFork(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "racer", 6)
	f := mustFork(t, mustLoad(t, st, root.ID), 5)
	appendN(f, 1, "late fork")
	var rewindErr error
	hooked := rwHookedStore(t, "ns#forkPoint>", func() { _, _, rewindErr = st.Rewind(ctx, root.ID, 3, session.RewindOptions{}) })
	err := hooked.Persist(ctx, f)
	if rewindErr != nil || !errors.Is(err, session.ErrConflict) {
		t.Fatalf("got rewind %v, fork %v, want nil and ErrConflict", rewindErr, err)
	}
	if _, err := st.Info(ctx, f.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("the fork: got %v, want ErrNotFound", err)
	}
	mustCheckSessions(t, st, c, root.ID)
}

// mustCheckSessions fails tb unless the sessions under id load.
func mustCheckSessions(tb testing.TB, st *session.Store, c *kg.Client, id string) {
	tb.Helper()
	tree, err := st.Tree(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	tree.Walk(func(n *session.Node) { mustLoad(tb, st, n.ID) })
}
