package admin_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// checkFixture is a sound dataset made through the library.
type checkFixture struct {
	root       *session.Session // 4 turns
	fork       *session.Session // of root at 2, 3 own turns (2..4)
	forkOfFork *session.Session // of fork at 4, 3 own turns (4..6), a leaf
	detached   *session.Session // of root at 3, then detached
}

// soundStore wipes the test binary's dataset and fills it with the
// ontology graph and sessions that break no rule: three roots (one empty),
// forks at 0, in the middle and at the end, a fork of a fork, a detached
// fork, a deleted leaf, a fork tree deleted with Cascade, a root deleted
// with DetachChildren, a legacy session (testdata/session/legacy) and a
// fork of it.
func soundStore(tb testing.TB) (*store, *kg.Client, checkFixture) {
	tb.Helper()
	ctx := context.Background()
	c := clustertest.Empty(tb)
	st := openStore(tb, c)
	if _, err := st.Init(ctx); err != nil { // the vocabulary and shapes are in the union graph too
		tb.Fatal(err)
	}
	var fx checkFixture
	fx.root = storetest.Persisted(tb, st, "checker", 4)
	storetest.Persisted(tb, st, "other", 1)
	empty := session.New("other")
	storetest.MustPersist(tb, st, empty)

	fx.fork = storetest.MustFork(tb, fx.root, 2)
	storetest.AppendN(fx.fork, 3, "fork")
	storetest.MustPersist(tb, st, fx.fork)
	fx.forkOfFork = storetest.MustFork(tb, fx.fork, 4)
	storetest.AppendN(fx.forkOfFork, 3, "fork of fork")
	storetest.MustPersist(tb, st, fx.forkOfFork)
	atZero := storetest.MustFork(tb, fx.root, 0)
	storetest.AppendN(atZero, 1, "at zero")
	storetest.MustPersist(tb, st, atZero)
	atEnd := storetest.MustFork(tb, fx.root, 4) // no turns of its own
	storetest.MustPersist(tb, st, atEnd)

	fx.detached = storetest.MustFork(tb, fx.root, 3)
	storetest.AppendN(fx.detached, 2, "detached")
	storetest.MustPersist(tb, st, fx.detached)
	if err := st.Detach(ctx, fx.detached.ID, session.DetachOptions{}); err != nil {
		tb.Fatal(err)
	}
	gone := storetest.MustFork(tb, fx.fork, 3)
	storetest.AppendN(gone, 1, "deleted")
	storetest.MustPersist(tb, st, gone)
	if err := st.Delete(ctx, gone.ID, session.DeleteOptions{}); err != nil {
		tb.Fatal(err)
	}

	tree := storetest.MustFork(tb, fx.root, 1) // deleted with its fork
	storetest.AppendN(tree, 1, "tree")
	storetest.MustPersist(tb, st, tree)
	treeKid := storetest.MustFork(tb, tree, 2)
	storetest.AppendN(treeKid, 1, "tree kid")
	storetest.MustPersist(tb, st, treeKid)
	if err := st.Delete(ctx, tree.ID, session.DeleteOptions{Cascade: true}); err != nil {
		tb.Fatal(err)
	}
	mid := storetest.Persisted(tb, st, "mid", 2) // deleted after detaching its fork
	kid := storetest.MustFork(tb, mid, 1)
	storetest.AppendN(kid, 1, "kid")
	storetest.MustPersist(tb, st, kid)
	if err := st.Delete(ctx, mid.ID, session.DeleteOptions{DetachChildren: true}); err != nil {
		tb.Fatal(err)
	}

	// Forks made by Store.Fork, which reads no history: at an index (then
	// appended to, as a tail), after an event of structured turns (with
	// event and invocation ids), and a fork of such a fork at its end.
	viaStore, err := st.Fork(ctx, fx.root.ID, 3, session.WithReason("through Store.Fork"))
	if err != nil {
		tb.Fatal(err)
	}
	viaStore.Append("user", "own turn of a fork made by Store.Fork")
	storetest.MustPersist(tb, st, viaStore)
	events := session.New("checker")
	for i := range 4 {
		events.AppendTurn(session.Turn{Role: "model", Content: "event " + storetest.Itoa(i),
			Structure: &session.Structure{EventID: "ev" + storetest.Itoa(i), InvocationID: "inv" + storetest.Itoa(i/2), Author: "agent"}})
	}
	storetest.MustPersist(tb, st, events)
	afterEvent, err := st.Fork(ctx, events.ID, -1, session.ForkAfterEvent("ev1"), session.WithTags("forked"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := st.Fork(ctx, afterEvent.ID, 2, session.ForkBeforeInvocation("inv0")); !errors.Is(err, session.ErrInvalid) {
		tb.Fatalf("an index beside a position option: got %v, want ErrInvalid", err)
	}
	if _, err := st.Fork(ctx, afterEvent.ID, 2); err != nil {
		tb.Fatal(err)
	}

	if err := clustertest.LoadQuads(ctx, tb, c, storetest.LegacyQuads(tb)); err != nil {
		tb.Fatal(err)
	}
	ofLegacy := storetest.MustFork(tb, storetest.MustLoad(tb, st, storetest.LegacyID), 3)
	storetest.AppendN(ofLegacy, 1, "of legacy")
	storetest.MustPersist(tb, st, ofLegacy)
	return st, c, fx
}

// wantFinding is a finding a case expects: its rule, its resource and a
// part of its message.
type wantFinding struct{ rule, resource, says string }

func TestCheck(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	t.Run("sound", func(t *testing.T) {
		st, _, _ := soundStore(t)
		got, err := st.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Fatalf("got %d findings on a sound store, want 0:\n%s", len(got), storetest.FindingsText(got))
		}
	})
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding
	}{
		{"cycle", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			a, b, cc, below := storetest.NewID(), storetest.NewID(), storetest.NewID(), storetest.NewID()
			var d kg.Data
			storetest.AddRawFork(&d, a, b, 0)
			storetest.AddRawFork(&d, b, cc, 0)
			storetest.AddRawFork(&d, cc, a, 0)
			storetest.AddRawFork(&d, below, a, 0) // below the cycle, not on it
			storetest.RawChange(t, c, nil, &d)
			return []wantFinding{
				{admin.RuleCycle, a, "a cycle of 3"},
				{admin.RuleCycle, b, "a cycle of 3"},
				{admin.RuleCycle, cc, "a cycle of 3"},
			}
		}},
		{"self parent", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			a := storetest.NewID()
			var d kg.Data
			storetest.AddRawFork(&d, a, a, 0)
			storetest.RawChange(t, c, nil, &d)
			return []wantFinding{{admin.RuleCycle, a, a + " → " + a}}
		}},
		{"depth", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			// Below the root: forks with 1, 2, ... 33 ancestors.
			var d kg.Data
			parent := fx.root.ID
			for range session.MaxForkDepth + 1 {
				id := storetest.NewID()
				storetest.AddRawFork(&d, id, parent, 0)
				parent = id
			}
			storetest.RawChange(t, c, nil, &d)
			return []wantFinding{{admin.RuleDepth, parent, "33 ancestors"}}
		}},
		{"fork point", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			beyond, atEnd, ofFork := storetest.NewID(), storetest.NewID(), storetest.NewID()
			var d kg.Data
			storetest.AddRawFork(&d, beyond, fx.root.ID, 5)
			storetest.AddRawFork(&d, atEnd, fx.root.ID, 4)
			storetest.AddRawFork(&d, ofFork, fx.fork.ID, 6) // fork point 2 + 3 own turns = 5
			storetest.RawChange(t, c, nil, &d)
			return []wantFinding{
				{admin.RuleForkPoint, beyond, "forked at index 5, beyond the 4 turns"},
				{admin.RuleForkPoint, ofFork, "(fork point 2 + 3 own turns)"},
				// The shapes say it too (tsh:ForkPointInHistory).
				{admin.RuleSHACL, beyond, `trails:forkedAtIndex: A fork's trails:forkedAtIndex must not lie beyond its parent's history`},
				{admin.RuleSHACL, ofFork, `(value "6")`},
			}
		}},
		{"fork point of a legacy parent", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			beyond, atEnd := storetest.NewID(), storetest.NewID()
			var d kg.Data
			storetest.AddRawFork(&d, beyond, storetest.LegacyID, 4)
			storetest.AddRawFork(&d, atEnd, storetest.LegacyID, 3)
			storetest.RawChange(t, c, nil, &d)
			return []wantFinding{{admin.RuleForkPoint, beyond, "no trails:ownTurns"}}
		}},
		{"orphan", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			if err := clustertest.DeleteGraph(ctx, t, c, storetest.SessionRef(fx.fork.ID)); err != nil {
				t.Fatal(err)
			}
			never := storetest.NewID()
			var d kg.Data
			storetest.AddRawFork(&d, never, storetest.NewID(), 0)
			storetest.RawChange(t, c, nil, &d)
			return []wantFinding{
				{admin.RuleOrphan, fx.forkOfFork.ID, "parent session " + fx.fork.ID + " is missing"},
				{admin.RuleOrphan, never, "is missing"},
			}
		}},
		{"duplicate index", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			g := storetest.SessionRef(fx.root.ID)
			dup := kg.MustIRI(storetest.TurnRef(fx.root.ID, 1).String() + "-again")
			ins := storetest.RawTriple(g, g, ontology.OwnTurns, kg.Int(5))
			for _, po := range []struct {
				p string
				o rdf.Term
			}{
				{ontology.RDFType, kg.MustIRI(ontology.Turn)}, {ontology.TurnSession, g}, {ontology.Index, kg.Int(1)},
				{ontology.Role, kg.String("user")}, {ontology.Content, kg.String("again")},
				{ontology.Branch, kg.String("main")}, {ontology.Created, kg.DateTime(time.Now())},
			} {
				ins.Add(g, dup, kg.MustIRI(po.p), po.o)
			}
			storetest.RawChange(t, c, storetest.RawTriple(g, g, ontology.OwnTurns, kg.Int(4)), ins)
			return []wantFinding{
				{admin.RuleDuplicateIndex, fx.root.ID, "2 turns at index 1: " + storetest.TurnRef(fx.root.ID, 1).String()},
				// The shapes name each of the two turns (tsh:TurnIndexUnique).
				{admin.RuleSHACL, fx.root.ID, "trails:index: The session holds more than one turn (trails:session) at this trails:index"},
				{admin.RuleUnchained, fx.root.ID, "1 turn of " + fx.root.ID + " has no trails:digest (stored before the hash chain): run trails-admin rechain"},
			}
		}},
		{"index gap", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			id := fx.forkOfFork.ID
			g := storetest.SessionRef(id)
			if err := clustertest.Update(ctx, t, c, "DELETE WHERE { GRAPH "+storetest.TermText(t, g)+" { "+storetest.TermText(t, storetest.TurnRef(id, 5))+" ?p ?o } }"); err != nil {
				t.Fatal(err)
			}
			storetest.RawChange(t, c, storetest.RawTriple(g, g, ontology.OwnTurns, kg.Int(3)), storetest.RawTriple(g, g, ontology.OwnTurns, kg.Int(2)))
			return []wantFinding{{admin.RuleIndexGap, id, "no turn at index 5: its turns hold 2 indices between 4 and 6, want 4..5 (its fork point is 4)"}}
		}},
		{"index gap at the fork point", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			id := fx.forkOfFork.ID
			g := storetest.SessionRef(id)
			// The fork point moves below the turns the fork holds.
			storetest.RawChange(t, c, storetest.RawTriple(g, g, ontology.ForkedAtIndex, kg.Int(4)), storetest.RawTriple(g, g, ontology.ForkedAtIndex, kg.Int(3)))
			return []wantFinding{{admin.RuleIndexGap, id, "no turn at index 3"}}
		}},
		{"turn count", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			g := storetest.SessionRef(fx.root.ID)
			storetest.RawChange(t, c, storetest.RawTriple(g, g, ontology.OwnTurns, kg.Int(4)), storetest.RawTriple(g, g, ontology.OwnTurns, kg.Int(7)))
			return []wantFinding{{admin.RuleTurnCount, fx.root.ID, "trails:ownTurns is 7, but 4 turns"}}
		}},
		{"missing prov", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			storetest.RawChange(t, c, storetest.RawTriple(kg.MustIRI(ontology.ProvGraph), storetest.SessionRef(fx.fork.ID), ontology.ProvWasGeneratedBy, prov.ForkActivity(fx.fork.ID)), nil)
			return []wantFinding{
				{admin.RuleMissingProv, fx.fork.ID, "no PROV record"},
				{admin.RuleSHACL, fx.fork.ID, "prov:wasGeneratedBy: A fork must be prov:wasGeneratedBy a trails:Fork activity"},
			}
		}},
		{"shacl on a session", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			g := storetest.SessionRef(fx.root.ID)
			storetest.RawChange(t, c, storetest.RawTriple(g, g, ontology.Branch, kg.String("main")), storetest.RawTriple(g, g, ontology.Branch, kg.String("Main")))
			return []wantFinding{{admin.RuleSHACL, fx.root.ID, `trails:branch: A session may have at most one trails:branch`}}
		}},
		{"shacl on a turn", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			g := storetest.SessionRef(fx.root.ID)
			storetest.RawChange(t, c, storetest.RawTriple(g, storetest.TurnRef(fx.root.ID, 0), ontology.Role, kg.String(fx.root.Turns[0].Role)), nil)
			return []wantFinding{{admin.RuleSHACL, storetest.TurnRef(fx.root.ID, 0).String(), "trails:role: A turn must have exactly one trails:role"}}
		}},
		{"cycle, missing parent and shapes at once", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			a, b := storetest.NewID(), storetest.NewID()
			var d kg.Data
			storetest.AddRawFork(&d, a, b, 0)
			storetest.AddRawFork(&d, b, a, 0)
			storetest.RawChange(t, c, nil, &d)
			if err := clustertest.DeleteGraph(ctx, t, c, storetest.SessionRef(fx.fork.ID)); err != nil {
				t.Fatal(err)
			}
			g := storetest.SessionRef(fx.detached.ID)
			storetest.RawChange(t, c, nil, storetest.RawTriple(g, g, ontology.DCTIdentifier, kg.String("a second id")))
			return []wantFinding{
				{admin.RuleCycle, a, "a cycle of 2"},
				{admin.RuleCycle, b, "a cycle of 2"},
				{admin.RuleOrphan, fx.forkOfFork.ID, fx.fork.ID},
				{admin.RuleSHACL, fx.detached.ID, "dcterms:identifier"},
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, c, fx := soundStore(t)
			want := storeRules(tc.corrupt(t, c, fx))
			got, err := st.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(want, func(a, b wantFinding) int {
				return strings.Compare(a.rule+"\x00"+a.resource, b.rule+"\x00"+b.resource)
			})
			if len(got) != len(want) {
				t.Fatalf("got %d findings, want %d:\n%s", len(got), len(want), storetest.FindingsText(got))
			}
			for i, w := range want {
				if g := got[i]; g.Rule != w.rule || g.Resource != w.resource || !strings.Contains(g.Message, w.says) {
					t.Fatalf("finding %d: got %s %s %q, want %s %s and a message with %q\nall:\n%s",
						i, g.Rule, g.Resource, g.Message, w.rule, w.resource, w.says, storetest.FindingsText(got))
				}
			}
			t.Logf("\n%s", storetest.FindingsText(got))
		})
	}
}

// TestCheckStoreError checks that a store that cannot be reached gives an
// error with the kg sentinel and no findings. Its Dataset is on an address
// where nothing listens, on every profile: nothing reaches the log.
func TestCheckStoreError(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Client(t, kg.Config{Endpoint: "http://127.0.0.1:1/trails", MaxAttempts: 1})
	got, err := storetest.Check(context.Background(), admin.New(c))
	if !errors.Is(err, kg.ErrUnavailable) || got != nil {
		t.Fatalf("got %v, %v; want no findings and ErrUnavailable", got, err)
	}
}

// TestMergeCheck: merges leave a store that Check finds sound (the merge
// turns and activities conform to the shapes).
func TestMergeCheck(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	st, _, fx := soundStore(t)
	storetest.MustMerge(t, st, fx.forkOfFork.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "deep result",
		Artifacts: []session.Artifact{{IRI: "https://example.org/a"}, {Text: "b"}}})
	storetest.MustMerge(t, st, fx.fork.ID, session.MergeResult{Status: session.MergeFailed, Summary: "fork result"})
	got, err := st.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("got %d findings after merges, want 0:\n%s", len(got), storetest.FindingsText(got))
	}
}

// storeRules drops the findings of the shacl rule from want when the test
// store has no SHACL endpoint, where Check runs every other rule.
func storeRules(want []wantFinding) []wantFinding {
	if fusekitest.TestStore() == kg.Fuseki {
		return want
	}
	return slices.DeleteFunc(want, func(w wantFinding) bool { return w.rule == admin.RuleSHACL })
}
