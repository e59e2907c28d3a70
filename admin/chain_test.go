package admin_test

import (
	"context"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// TestCheckFindsEditedTurn: Check names a turn whose content was changed
// in the store under an unchanged digest, and only that turn.
func TestCheckFindsEditedTurn(t *testing.T) {
	fusekitest.Parallel(t)
	c := clustertest.Empty(t)
	st := openStore(t, c)
	p := storetest.Persisted(t, st, "edited", 5)
	f := storetest.MustFork(t, p, 3)
	storetest.AppendN(f, 2, "fork")
	storetest.MustPersist(t, st, f)
	for _, x := range findings(t, st) {
		if x.Rule == admin.RuleChain || x.Rule == admin.RuleUnchained {
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
			storetest.Tamper(t, c, tc.turn, tc.pred, kg.String(tc.new))
			var got []string
			for _, x := range findings(t, st) {
				if x.Rule == admin.RuleChain {
					got = append(got, x.Resource)
				}
			}
			if len(got) != 1 || got[0] != tc.turn {
				t.Fatalf("got chain findings for %v, want exactly %s", got, tc.turn)
			}
		})
	}
}

// TestRechain: Rechain adds the chain to turns stored before it, once;
// a second run finds nothing, and Check then verifies the chains.
func TestRechain(t *testing.T) {
	fusekitest.Parallel(t)
	c := clustertest.Empty(t)
	st := openStore(t, c)
	ctx := context.Background()
	id := storetest.LoadLegacy(t, c)
	if n := storetest.CountUnchained(t, c, id); n != 3 {
		t.Fatalf("got %d unchained turns in the fixture, want 3", n)
	}
	var unchained []string
	for _, x := range findings(t, st) {
		if x.Rule == admin.RuleUnchained {
			unchained = append(unchained, x.Resource)
		}
	}
	if len(unchained) != 1 || unchained[0] != id {
		t.Fatalf("got unchained findings %v, want [%s]", unchained, id)
	}
	var calls int
	stats, err := st.Dataset.Rechain(ctx, func(done, total int) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sessions != 1 || stats.Turns != 3 || stats.Total != 1 || len(stats.Skipped) != 0 || calls != 1 {
		t.Fatalf("got %+v after %d progress calls, want 1 session, 3 turns, one call", stats, calls)
	}
	if n := storetest.CountUnchained(t, c, id); n != 0 {
		t.Fatalf("got %d unchained turns after Rechain, want 0", n)
	}
	again, err := st.Dataset.Rechain(ctx, nil)
	if err != nil || again.Total != 0 || again.Sessions != 0 {
		t.Fatalf("second run: got %+v, %v; want nothing to do", again, err)
	}
	for _, x := range findings(t, st) {
		if x.Rule == admin.RuleChain || x.Rule == admin.RuleUnchained {
			t.Errorf("after Rechain: got finding %+v", x)
		}
	}
	// The legacy session takes a turn, and its chain goes on.
	s := storetest.MustLoad(t, st, id)
	storetest.AppendN(s, 1, "after rechain")
	storetest.MustPersist(t, st, s)
	for _, x := range findings(t, st) {
		if x.Rule == admin.RuleChain {
			t.Errorf("after an append: got finding %+v", x)
		}
	}
}

// findings returns what Check finds in the dataset of st.
func findings(tb testing.TB, st *store) []admin.Finding {
	tb.Helper()
	fs, err := st.Check(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return fs
}
