package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The session kinds of design note 002: main, branch and worker, stored
// once; a worker is a leaf.

func TestWorker(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "boss", 4)
	w, err := root.Fork(2, session.AsWorker(), session.WithCreatedBy(session.CreatedBySystem))
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind != session.KindWorker {
		t.Fatalf("got kind %q, want worker", w.Kind)
	}
	appendN(w, 2, "worker")
	mustPersist(t, st, w)

	t.Run("in memory", func(t *testing.T) {
		if _, err := w.Fork(1); !errors.Is(err, session.ErrNotForkable) {
			t.Fatalf("got %v, want ErrNotForkable", err)
		}
		if _, err := w.Fork(1, session.AsWorker()); !errors.Is(err, session.ErrNotForkable) {
			t.Fatalf("a worker of a worker: got %v, want ErrNotForkable", err)
		}
		loaded := mustLoad(t, st, w.ID)
		if loaded.Kind != session.KindWorker {
			t.Fatalf("loaded: got kind %q, want worker", loaded.Kind)
		}
		if _, err := loaded.Fork(3); !errors.Is(err, session.ErrNotForkable) {
			t.Fatalf("loaded: got %v, want ErrNotForkable", err)
		}
		if _, err := st.Fork(ctx, w.ID, 3); !errors.Is(err, session.ErrNotForkable) {
			t.Fatalf("Store.Fork: got %v, want ErrNotForkable", err)
		}
	})
	t.Run("at persist, when the value does not know", func(t *testing.T) {
		unaware := mustLoad(t, st, w.ID)
		unaware.Kind = "" // as a Session built by hand
		f, err := unaware.Fork(3)
		if err != nil {
			t.Fatalf("in memory, a session of no kind forks: %v", err)
		}
		byHand := &session.Session{ID: newID(), Principal: "hand", ParentID: w.ID, ForkedAt: 1,
			Branch: "fork-0123abcd", Turns: append([]session.Turn(nil), w.Turns[:1]...)}
		for _, f := range []*session.Session{f, byHand} {
			appendN(f, 1, "of a worker")
			before := storetest.CountQuads(t, c, "")
			if err := st.Persist(ctx, f); !errors.Is(err, session.ErrNotForkable) {
				t.Fatalf("got %v, want ErrNotForkable", err)
			}
			if got := storetest.CountQuads(t, c, ""); got != before {
				t.Fatalf("the refused fork wrote %d quads, want none", got-before)
			}
			mustNotBeStored(t, st, c, f.ID)
		}
	})
	t.Run("a worker is a session like others", func(t *testing.T) {
		appendN(w, 1, "more work")
		mustPersist(t, st, w)
		sameSession(t, mustLoad(t, st, w.ID), w)
		// Its parent can still be forked.
		mustPersist(t, st, mustFork(t, root, 1))
	})
}

func TestKindsRoundTrip(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	principal := "kinds-" + newID()
	root := persisted(t, st, principal, 3)
	branch := mustFork(t, root, 2)
	appendN(branch, 1, "branch")
	mustPersist(t, st, branch)
	worker, err := branch.Fork(3, session.AsWorker())
	if err != nil {
		t.Fatal(err)
	}
	mustPersist(t, st, worker)
	want := map[string]session.Kind{root.ID: session.KindMain, branch.ID: session.KindBranch, worker.ID: session.KindWorker}
	for _, s := range []*session.Session{root, branch, worker} {
		if s.Kind != want[s.ID] {
			t.Fatalf("in memory: got kind %q, want %q", s.Kind, want[s.ID])
		}
		if got := mustLoad(t, st, s.ID).Kind; got != want[s.ID] {
			t.Fatalf("load %s: got kind %q, want %q", s.ID, got, want[s.ID])
		}
		in, err := st.Info(ctx, s.ID)
		if err != nil || in.Kind != want[s.ID] {
			t.Fatalf("info %s: got kind %q (%v), want %q", s.ID, in.Kind, err, want[s.ID])
		}
	}
	infos, err := st.List(ctx, session.ByPrincipal(principal))
	if err != nil || len(infos) != 3 {
		t.Fatalf("list: got %d sessions (%v), want 3", len(infos), err)
	}
	for _, in := range infos {
		if in.Kind != want[in.ID] {
			t.Fatalf("list %s: got kind %q, want %q", in.ID, in.Kind, want[in.ID])
		}
	}
	kids, err := st.Branches(ctx, branch.ID)
	if err != nil || len(kids) != 1 || kids[0].Kind != session.KindWorker {
		t.Fatalf("branches: got %+v (%v), want the worker", kids, err)
	}
	// A kind is fixed when the session is created.
	changed := mustLoad(t, st, branch.ID)
	changed.Kind = session.KindWorker
	appendN(changed, 1, "as a worker?")
	if err := st.Persist(ctx, changed); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("a changed kind: got %v, want ErrConflict", err)
	}
	// A detached fork keeps its kind.
	if err := st.Detach(ctx, worker.ID, session.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, st, worker.ID); got.ParentID != "" || got.Kind != session.KindWorker {
		t.Fatalf("detached: got parent %q and kind %q, want a root worker", got.ParentID, got.Kind)
	}
}

// TestLegacyKinds: sessions stored before kinds existed (no trails:kind)
// are main if a root and branch if a fork.
func TestLegacyKinds(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	nq, err := os.ReadFile(filepath.Join("..", "testdata", "session", "legacy", "session.nq"))
	if err != nil {
		t.Fatal(err)
	}
	// A copy of the fixture under a new id, so that other tests' forks of
	// the fixture do not count here.
	id := newID()
	nq = []byte(strings.ReplaceAll(string(nq), storetest.LegacyID, id))
	if err := clustertest.LoadQuads(ctx, t, c, nq); err != nil {
		t.Fatal(err)
	}
	fork := newID()
	writeRaw(t, c, fork, id, 2) // a fork as the library wrote them before kinds
	for _, tc := range []struct {
		id   string
		want session.Kind
	}{{id, session.KindMain}, {fork, session.KindBranch}} {
		if got := mustLoad(t, st, tc.id).Kind; got != tc.want {
			t.Fatalf("load %s: got kind %q, want %q", tc.id, got, tc.want)
		}
		if in, err := st.Info(ctx, tc.id); err != nil || in.Kind != tc.want {
			t.Fatalf("info %s: got kind %q (%v), want %q", tc.id, in.Kind, err, tc.want)
		}
	}
	// The legacy root takes turns and forks as before; its forks count.
	s := mustLoad(t, st, id)
	s.Append("user", "a new turn on the old session")
	mustPersist(t, st, s)
	low := session.NewStore(querier(t, c), session.WithMaxChildren(2))
	mustPersist(t, low, mustFork(t, s, 3))
	if err := low.Persist(ctx, mustFork(t, s, 3)); !errors.Is(err, session.ErrTooManyChildren) {
		t.Fatalf("a third fork with the raw one: got %v, want ErrTooManyChildren", err)
	}
}

func TestKindInvalid(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "bad-kinds", 2)
	boss := session.New("p")
	boss.Kind = "boss"
	f := mustFork(t, root, 1)
	f.Kind = session.KindMain
	for name, s := range map[string]*session.Session{"an unknown kind": boss, "a fork of kind main": f} {
		if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
			t.Fatalf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	// A stored kind that is none of the three is corrupt data.
	var ins kg.Data
	g := storetest.SessionRef(root.ID)
	ins.Add(g, g, kg.MustIRI(ontology.Kind), kg.String("boss"))
	var del kg.Data
	del.Add(g, g, kg.MustIRI(ontology.Kind), kg.String("main"))
	storetest.RawChange(t, c, &del, &ins)
	if _, err := st.Load(ctx, root.ID); !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("load: got %v, want ErrCorrupt", err)
	}
}

// TestKindsCheck: trails-admin check (Store.Check) reports a fork of a
// worker and an unknown kind written behind the library's back.
func TestKindsCheck(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	st := session.NewStore(querier(t, c))
	ctx := context.Background()
	root := persisted(t, st, "checked", 3)
	w, err := root.Fork(2, session.AsWorker())
	if err != nil {
		t.Fatal(err)
	}
	mustPersist(t, st, w)
	if got, err := storetest.Check(ctx, admin.New(c)); err != nil || len(got) != 0 {
		t.Fatalf("before: got %v (%v), want no findings", got, err)
	}
	fusekitest.RequireFuseki(t, "the SHACL endpoint (the shapes alone check kinds)")
	var d kg.Data
	ofWorker := newID()
	storetest.AddRawFork(&d, ofWorker, w.ID, 1)
	storetest.RawChange(t, c, nil, &d)
	var ins, del kg.Data
	g := storetest.SessionRef(root.ID)
	del.Add(g, g, kg.MustIRI(ontology.Kind), kg.String("main"))
	ins.Add(g, g, kg.MustIRI(ontology.Kind), kg.String("boss"))
	storetest.RawChange(t, c, &del, &ins)
	got, err := storetest.Check(ctx, admin.New(c))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{ofWorker: false, root.ID: false}
	for _, f := range got {
		t.Logf("%s %s: %s", f.Rule, f.Resource, f.Message)
		if _, ok := want[f.Resource]; ok && f.Rule == admin.RuleSHACL {
			want[f.Resource] = true
		}
	}
	for id, found := range want {
		if !found {
			t.Errorf("no shacl finding for %s", id)
		}
	}
}
