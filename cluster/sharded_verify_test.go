package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
)

// testShardedVerify: a signed writer on two groups leaves trees in both
// (roots, forks, a merge); verify over the sharded dataset (the audit
// replica) finds nothing, an audit query lists the forks of both groups'
// trees in one answer, and an insider's edit of a turn in either group's
// tree is named.
func testShardedVerify(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	sh := sr.client(t)
	if _, err := admin.New(sh).Init(ctx); err != nil {
		t.Fatal(err)
	}
	ws, _, wv := keytest.New(t, "witness.test")
	writer, _, vk := keytest.New(t, "writer.test")
	dir, err := witness.OpenDir(ctx, t.TempDir(), ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	keys, err := witness.ParseKeyList([]byte("witness " + wv + "\nwriter " + vk + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(sh, session.WithSigning(writer, dir))

	// A root in each group, a fork of each with a turn, one fork merged.
	roots := map[int]*session.Session{}
	for len(roots) < 2 {
		s := session.New("sharded-audit")
		s.Append("user", "hello from "+s.ID)
		s.Append("assistant", "hi")
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		if g := sh.HomeGroup(s.ID); roots[g] == nil {
			roots[g] = s
		}
	}
	forks := map[int]*session.Session{}
	for g, root := range roots {
		f, err := st.Fork(ctx, root.ID, 1, session.WithReason("try in group"))
		if err != nil {
			t.Fatal(err)
		}
		f.Append("assistant", "another answer")
		if err := st.Persist(ctx, f); err != nil {
			t.Fatal(err)
		}
		forks[g] = f
	}
	if _, err := st.Merge(ctx, forks[1].ID, session.MergeResult{Status: session.MergeCompleted, Summary: "group 1's fork, merged"}); err != nil {
		t.Fatal(err)
	}

	ds := admin.New(sh)
	verify := func() *admin.VerifyReport {
		t.Helper()
		rep, err := ds.Verify(ctx, admin.VerifyOptions{Witness: dir, Keys: keys})
		if err != nil {
			t.Fatalf("verify over two groups: %v", err)
		}
		return rep
	}
	rep := verify()
	for _, f := range rep.Findings {
		if f.Kind != admin.VerifyCheck {
			t.Errorf("verify of clean trees in two groups: finding %s: %s", f.Kind, f.Message)
		}
	}
	if rep.Sessions < 4 {
		t.Errorf("verify over two groups read %d sessions, want at least the 4 written", rep.Sessions)
	}

	// An audit query across groups: the forks of both groups' trees.
	q, _ := prov.Lookup("forks-by-principal")
	text, err := q.Bind(map[string]string{"principal": "sharded-audit",
		"from": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "to": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sh.Select(ctx, text)
	if err != nil {
		t.Fatalf("audit query over two groups: %v", err)
	}
	seen := map[string]bool{}
	for _, row := range res.Solutions {
		seen[row["child"].String()] = true
	}
	for g, f := range forks {
		if !seen[ontology.SessionIRI(f.ID)] {
			t.Errorf("forks-by-principal over two groups: the fork of group %d's tree (%s) missing from %v", g, f.ID, seen)
		}
	}

	// An insider with the store's credentials edits a turn of each
	// group's tree, on every dataset that holds it.
	for g, root := range roots {
		edit := `DELETE { GRAPH $g { $t $p ?o } } INSERT { GRAPH $g { $t $p "what was never said" } } WHERE { GRAPH $g { $t $p ?o } }`
		sid := ontology.SessionIRI(root.ID)
		u, err := kg.Bind(edit, kg.Params{"g": kg.MustIRI(sid), "t": kg.MustIRI(ontology.TurnIRI(sid, 0)), "p": kg.MustIRI(ontology.Content)})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range append(sr.groups[g].stores, sr.audit) {
			if err := c.Update(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := map[string]bool{}
	for _, f := range verify().Findings {
		got[f.Session] = true
	}
	for g, root := range roots {
		if !got[root.ID] {
			t.Errorf("verify over two groups: the edit of group %d's root %s not named", g, root.ID)
		}
	}
}
