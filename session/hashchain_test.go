package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/fusekitest"
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
			if _, _, err := st.Rewind(ctx, p.ID, 10); err != nil {
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
			if _, _, err := st.Rewind(ctx, p.ID, 5); err != nil {
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
			before := countQuads(t, c, "")
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
			if after := countQuads(t, c, ""); after != before {
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
	id := loadLegacy(t, c)
	f := mustFork(t, mustLoad(t, st, id), 2)
	appendN(f, 1, "of legacy")
	mustPersist(t, st, f)
	sameHistory(t, mustLoad(t, st, f.ID).Turns, f.Turns)
	if n := countUnchained(t, c, id); n != 0 {
		t.Fatalf("got %d turns of the legacy parent without a digest, want 0", n)
	}
	fs, err := check(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range fs {
		if x.Rule == session.RuleChain {
			t.Errorf("got finding %+v, want none of rule chain", x)
		}
	}
}

// TestCheckFindsEditedTurn: Check names a turn whose content was changed
// in the store under an unchanged digest, and only that turn.
func TestCheckFindsEditedTurn(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := emptyStore(t)
	p := persisted(t, st, "edited", 5)
	f := mustFork(t, p, 3)
	appendN(f, 2, "fork")
	mustPersist(t, st, f)
	for _, x := range findings(t, st) {
		if x.Rule == session.RuleChain || x.Rule == session.RuleUnchained {
			t.Fatalf("before the edit: got finding %+v, want none", x)
		}
	}
	cases := []struct {
		name string
		turn string // IRI of the turn to edit
		pred string
		new  string
	}{
		{"content of a root's turn", p.Turns[1].ID, ontology.Content, "forged"},
		{"role of a fork's first own turn", f.Turns[3].ID, ontology.Role, "system"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tamper(t, c, tc.turn, tc.pred, kg.String(tc.new))
			var got []string
			for _, x := range findings(t, st) {
				if x.Rule == session.RuleChain {
					got = append(got, x.Resource)
				}
			}
			if len(got) != 1 || got[0] != tc.turn {
				t.Fatalf("got chain findings for %v, want exactly %s", got, tc.turn)
			}
		})
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
	tamper(t, c, s.Turns[2].ID, ontology.Digest, kg.String("sha256:"+strings.Repeat("0", 64)))
	appendN(s, 1, "more")
	before := countQuads(t, c, "")
	if err := st.Persist(ctx, s); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	if after := countQuads(t, c, ""); after != before {
		t.Fatalf("got %d quads, want %d", after, before)
	}
}

// TestRechain: Rechain adds the chain to turns stored before it, once;
// a second run finds nothing, and Check then verifies the chains.
func TestRechain(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := emptyStore(t)
	ctx := context.Background()
	id := loadLegacy(t, c)
	if n := countUnchained(t, c, id); n != 3 {
		t.Fatalf("got %d unchained turns in the fixture, want 3", n)
	}
	var unchained []string
	for _, x := range findings(t, st) {
		if x.Rule == session.RuleUnchained {
			unchained = append(unchained, x.Resource)
		}
	}
	if len(unchained) != 1 || unchained[0] != id {
		t.Fatalf("got unchained findings %v, want [%s]", unchained, id)
	}
	var calls int
	stats, err := st.Rechain(ctx, func(done, total int) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sessions != 1 || stats.Turns != 3 || stats.Total != 1 || len(stats.Skipped) != 0 || calls != 1 {
		t.Fatalf("got %+v after %d progress calls, want 1 session, 3 turns, one call", stats, calls)
	}
	if n := countUnchained(t, c, id); n != 0 {
		t.Fatalf("got %d unchained turns after Rechain, want 0", n)
	}
	again, err := st.Rechain(ctx, nil)
	if err != nil || again.Total != 0 || again.Sessions != 0 {
		t.Fatalf("second run: got %+v, %v; want nothing to do", again, err)
	}
	for _, x := range findings(t, st) {
		if x.Rule == session.RuleChain || x.Rule == session.RuleUnchained {
			t.Errorf("after Rechain: got finding %+v", x)
		}
	}
	// The legacy session takes a turn, and its chain goes on.
	s := mustLoad(t, st, id)
	appendN(s, 1, "after rechain")
	mustPersist(t, st, s)
	for _, x := range findings(t, st) {
		if x.Rule == session.RuleChain {
			t.Errorf("after an append: got finding %+v", x)
		}
	}
}

// loadLegacy puts testdata/session/legacy into the store (a session
// written before Trails kept counts, digests or the chain) and returns its
// id.
func loadLegacy(tb testing.TB, c *kg.Client) string {
	tb.Helper()
	nq, err := os.ReadFile(filepath.Join("..", "testdata", "session", "legacy", "session.nq"))
	if err != nil {
		tb.Fatal(err)
	}
	c.DeleteGraph(context.Background(), kg.MustIRI(ontology.SessionIRI(legacyFixtureID)))
	if err := c.LoadQuads(context.Background(), nq); err != nil {
		tb.Fatal(err)
	}
	return legacyFixtureID
}

func countUnchained(tb testing.TB, c *kg.Client, id string) int {
	tb.Helper()
	return queryInt(tb, c, `SELECT (COUNT(?t) AS ?n) WHERE { GRAPH $g { ?t a <`+ontology.Turn+`> . FILTER NOT EXISTS { ?t <`+ontology.Digest+`> ?d } } }`,
		kg.Params{"g": kg.MustIRI(ontology.SessionIRI(id))})
}

// emptyStore wipes the binary's dataset (for tests that Check the whole
// of it) and returns a Store of it.
func emptyStore(tb testing.TB) (*session.Store, *kg.Client) {
	tb.Helper()
	c := fusekitest.Empty(tb)
	return session.NewStore(c), c
}

func findings(tb testing.TB, st *session.Store) []session.Finding {
	tb.Helper()
	fs, err := check(context.Background(), st)
	if err != nil {
		tb.Fatal(err)
	}
	return fs
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
	tamper(t, c, p.Turns[1].ID, ontology.Content, kg.String("forged"))
	before := countQuads(t, c, "")
	if err := st.Detach(ctx, f.ID); !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	if after := countQuads(t, c, ""); after != before {
		t.Fatalf("got %d quads, want %d", after, before)
	}
}

// tamper replaces the value of predicate pred of turn in the store with
// v, as a hand edit would, and puts the old value back when tb ends, so
// that the binary's other tests find a sound dataset.
func tamper(tb testing.TB, c *kg.Client, turn, pred string, v rdf.Term) {
	tb.Helper()
	ctx := context.Background()
	q, err := kg.Bind(`SELECT ?g ?o WHERE { GRAPH ?g { $t $p ?o } }`, kg.Params{"t": kg.MustIRI(turn), "p": kg.MustIRI(pred)})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Query(ctx, q)
	if err != nil || len(res.Solutions) != 1 {
		tb.Fatalf("tamper: got %d values of %s, %v; want one", len(res.Solutions), pred, err)
	}
	g, old := res.Solutions[0]["g"], res.Solutions[0]["o"]
	swap := func(from, to rdf.Term) {
		u, err := kg.Bind(`DELETE DATA { GRAPH $g { $t $p $from } } ; INSERT DATA { GRAPH $g { $t $p $to } }`,
			kg.Params{"g": g, "t": kg.MustIRI(turn), "p": kg.MustIRI(pred), "from": from, "to": to})
		if err != nil {
			tb.Fatal(err)
		}
		if err := c.Update(ctx, u); err != nil {
			tb.Fatal(err)
		}
	}
	swap(old, v)
	tb.Cleanup(func() { swap(v, old) })
}
