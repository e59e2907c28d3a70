package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// TestForkProvesItsPrefix: a fork is stored only over the prefix its
// author saw (issue 11, D2). Each case makes the parent's history differ
// from what the fork holds after the fork was made, then persists the
// fork: ErrConflict, and not one quad written.
func TestForkProvesItsPrefix(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	cases := []struct {
		name string
		// fork returns a fork of a stored 20-turn parent p, and changes
		// the parent in the store behind the fork's back.
		fork func(t *testing.T, st *session.Store, p *session.Session) *session.Session
	}{
		{"parent rewound and continued past the fork point", func(t *testing.T, st *session.Store, p *session.Session) *session.Session {
			f := mustFork(t, mustLoad(t, st, p.ID), 15)
			if _, _, err := st.Rewind(ctx, p.ID, 10, session.RewindOptions{}); err != nil {
				t.Fatal(err)
			}
			again := mustLoad(t, st, p.ID)
			appendN(again, 10, "after the rewind")
			mustPersist(t, st, again)
			return f
		}},
		{"another writer stored other turns where the fork's author had unsaved ones", func(t *testing.T, st *session.Store, p *session.Session) *session.Session {
			v := mustLoad(t, st, p.ID)
			appendN(v, 3, "unsaved") // turns 20..22, never stored by v
			f := mustFork(t, v, 23)
			w := mustLoad(t, st, p.ID)
			appendN(w, 3, "the other writer's")
			mustPersist(t, st, w)
			return f
		}},
		{"another writer's turns, fork inside them", func(t *testing.T, st *session.Store, p *session.Session) *session.Session {
			v := mustLoad(t, st, p.ID)
			appendN(v, 3, "unsaved")
			f := mustFork(t, v, 21)
			w := mustLoad(t, st, p.ID)
			appendN(w, 3, "the other writer's")
			mustPersist(t, st, w)
			return f
		}},
		{"grandparent rewound under a fork of a fork", func(t *testing.T, st *session.Store, p *session.Session) *session.Session {
			mid := mustFork(t, mustLoad(t, st, p.ID), 12)
			appendN(mid, 2, "mid")
			mustPersist(t, st, mid)
			f := mustFork(t, mustLoad(t, st, mid.ID), 8) // inherits p's turns 0..7 through mid
			if _, _, err := st.Rewind(ctx, p.ID, 5, session.RewindOptions{}); err != nil {
				t.Fatal(err)
			}
			again := mustLoad(t, st, p.ID)
			appendN(again, 5, "after the rewind")
			mustPersist(t, st, again)
			// mid moved under the archive with p's old turns 5..19; the
			// fork's parent is mid, whose history is unchanged: allowed.
			return f
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, _, c := newStore(t)
			p := persisted(t, st, "prefix", 20)
			f := tc.fork(t, st, p)
			appendN(f, 1, "fork")
			before := storetest.CountQuads(t, c, "")
			err := st.Persist(ctx, f)
			if strings.HasPrefix(tc.name, "grandparent") {
				// The prefix the fork holds is still its parent's history.
				if err != nil {
					t.Fatalf("got %v, want the fork stored", err)
				}
				got := mustLoad(t, st, f.ID)
				sameHistory(t, got.Turns, f.Turns)
				return
			}
			if !errors.Is(err, session.ErrConflict) {
				t.Fatalf("got %v, want ErrConflict", err)
			}
			if after := storetest.CountQuads(t, c, ""); after != before {
				t.Fatalf("got %d quads after the refused fork, want %d", after, before)
			}
			if _, err := st.Load(ctx, f.ID); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("load of the refused fork: got %v, want ErrNotFound", err)
			}
		})
	}
}

// TestForkOfLegacyParent: a fork over turns stored before the hash chain
// is allowed: Persist first adds the chain to the parent's history.
func TestForkOfLegacyParent(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := emptyStore(t)
	ctx := context.Background()
	id := storetest.LoadLegacy(t, c)
	f := mustFork(t, mustLoad(t, st, id), 2)
	appendN(f, 1, "of legacy")
	mustPersist(t, st, f)
	sameHistory(t, mustLoad(t, st, f.ID).Turns, f.Turns)
	if n := storetest.CountUnchained(t, c, id); n != 0 {
		t.Fatalf("got %d turns of the legacy parent without a digest, want 0", n)
	}
	fs, err := storetest.Check(ctx, admin.New(c))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range fs {
		if x.Rule == admin.RuleChain {
			t.Errorf("got finding %+v, want none of rule chain", x)
		}
	}
}

// TestAppendChecksChainHead: an append is refused when the stored chain
// head is not the one the writer's history gives, even with the turn count
// and head digest unchanged.
func TestAppendChecksChainHead(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	s := persisted(t, st, "head", 3)
	storetest.Tamper(t, c, s.Turns[2].ID, ontology.Digest, kg.String("sha256:"+strings.Repeat("0", 64)))
	appendN(s, 1, "more")
	// Every graph but the replica graph, where a cluster's applier records
	// the refused record (its refusal marker) on the kafka profile.
	count := func() int {
		return storetest.QueryInt(t, c, `SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } FILTER(?g != $replica) }`,
			kg.Params{"replica": kg.MustIRI(ontology.ReplicaGraph)})
	}
	before := count()
	if err := st.Persist(ctx, s); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	if after := count(); after != before {
		t.Fatalf("got %d quads, want %d", after, before)
	}
}

// emptyStore wipes the binary's dataset (for tests that Check the whole
// of it) and returns a Store of it.
func emptyStore(tb testing.TB) (*session.Store, *kg.Client) {
	tb.Helper()
	c := fusekitest.Empty(tb)
	return session.NewStore(querier(tb, c)), c
}

// TestDetachRefusesEditedPrefix: Detach does not copy a turn edited in the
// store after it was written (the copy would carry a digest that
// verifies): ErrCorrupt, nothing written.
func TestDetachRefusesEditedPrefix(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	p := persisted(t, st, "detach", 4)
	f := mustFork(t, p, 3)
	appendN(f, 1, "fork")
	mustPersist(t, st, f)
	storetest.Tamper(t, c, p.Turns[1].ID, ontology.Content, kg.String("forged"))
	before := storetest.CountQuads(t, c, "")
	if err := st.Detach(ctx, f.ID, session.DetachOptions{}); !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	if after := storetest.CountQuads(t, c, ""); after != before {
		t.Fatalf("got %d quads, want %d", after, before)
	}
}
