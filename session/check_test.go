package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// legacyFixtureID is the session of testdata/session/legacy.
const legacyFixtureID = "0190a000-0000-7000-8000-00000000000a"

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
func soundStore(tb testing.TB) (*session.Store, *kg.Client, checkFixture) {
	tb.Helper()
	ctx := context.Background()
	c := fusekitest.Empty(tb)
	st := session.NewStore(c)
	if _, err := st.Init(ctx); err != nil { // the vocabulary and shapes are in the union graph too
		tb.Fatal(err)
	}
	var fx checkFixture
	fx.root = persisted(tb, st, "checker", 4)
	persisted(tb, st, "other", 1)
	empty := session.New("other")
	mustPersist(tb, st, empty)

	fx.fork = mustFork(tb, fx.root, 2)
	appendN(fx.fork, 3, "fork")
	mustPersist(tb, st, fx.fork)
	fx.forkOfFork = mustFork(tb, fx.fork, 4)
	appendN(fx.forkOfFork, 3, "fork of fork")
	mustPersist(tb, st, fx.forkOfFork)
	atZero := mustFork(tb, fx.root, 0)
	appendN(atZero, 1, "at zero")
	mustPersist(tb, st, atZero)
	atEnd := mustFork(tb, fx.root, 4) // no turns of its own
	mustPersist(tb, st, atEnd)

	fx.detached = mustFork(tb, fx.root, 3)
	appendN(fx.detached, 2, "detached")
	mustPersist(tb, st, fx.detached)
	if err := st.Detach(ctx, fx.detached.ID); err != nil {
		tb.Fatal(err)
	}
	gone := mustFork(tb, fx.fork, 3)
	appendN(gone, 1, "deleted")
	mustPersist(tb, st, gone)
	if err := st.Delete(ctx, gone.ID); err != nil {
		tb.Fatal(err)
	}

	tree := mustFork(tb, fx.root, 1) // deleted with its fork
	appendN(tree, 1, "tree")
	mustPersist(tb, st, tree)
	treeKid := mustFork(tb, tree, 2)
	appendN(treeKid, 1, "tree kid")
	mustPersist(tb, st, treeKid)
	if err := st.Delete(ctx, tree.ID, session.Cascade()); err != nil {
		tb.Fatal(err)
	}
	mid := persisted(tb, st, "mid", 2) // deleted after detaching its fork
	kid := mustFork(tb, mid, 1)
	appendN(kid, 1, "kid")
	mustPersist(tb, st, kid)
	if err := st.Delete(ctx, mid.ID, session.DetachChildren()); err != nil {
		tb.Fatal(err)
	}

	nq, err := os.ReadFile(filepath.Join("..", "testdata", "session", "legacy", "session.nq"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.LoadQuads(ctx, nq); err != nil {
		tb.Fatal(err)
	}
	ofLegacy := mustFork(tb, mustLoad(tb, st, legacyFixtureID), 3)
	appendN(ofLegacy, 1, "of legacy")
	mustPersist(tb, st, ofLegacy)
	return st, c, fx
}

// sessionRef is the IRI of session id.
func sessionRef(id string) rdf.IRI { return kg.MustIRI(ontology.SessionIRI(id)) }

// addRawFork adds to d a fork id of parent at index at with no turns of its
// own, complete with its PROV record (so that it satisfies the shapes), but
// written without any of the library's checks: how cycles, over-deep chains
// and bad fork points get into a store.
func addRawFork(d *kg.Data, id, parent string, at int) {
	g := sessionRef(id)
	p := func(s string) rdf.IRI { return kg.MustIRI(s) }
	d.Add(g, g, p(ontology.RDFType), p(ontology.Session))
	d.Add(g, g, p(ontology.DCTIdentifier), kg.String(id))
	d.Add(g, g, p(ontology.Branch), kg.String("fork-"+id[len(id)-8:]))
	d.Add(g, g, p(ontology.Created), kg.DateTime(time.Now()))
	d.Add(g, g, p(ontology.Principal), prov.AddAgent(d, g, "raw"))
	d.Add(g, g, p(ontology.ParentSession), sessionRef(parent))
	d.Add(g, g, p(ontology.ProvWasDerivedFrom), sessionRef(parent))
	d.Add(g, g, p(ontology.ForkedAtIndex), kg.Int(at))
	d.Add(g, g, p(ontology.OwnTurns), kg.Int(0))
	prov.AddFork(d, prov.Fork{Child: id, Parent: parent, At: at, Principal: "raw", Time: time.Now()})
}

// rawChange deletes the triples of del and then inserts those of ins, in one
// update, behind the library's back.
func rawChange(tb testing.TB, c *kg.Client, del, ins *kg.Data) {
	tb.Helper()
	var u string
	if del != nil {
		q, err := del.Quads()
		if err != nil {
			tb.Fatal(err)
		}
		u = "DELETE DATA {\n" + q + "} ;\n"
	}
	if ins != nil {
		q, err := ins.InsertData()
		if err != nil {
			tb.Fatal(err)
		}
		u += q
	}
	if err := c.Update(context.Background(), u); err != nil {
		tb.Fatalf("%v\n%s", err, u)
	}
}

// rawTriple returns Data holding the one triple (s, p, o) in graph g.
func rawTriple(g, s rdf.IRI, p string, o rdf.Term) *kg.Data {
	var d kg.Data
	d.Add(g, s, kg.MustIRI(p), o)
	return &d
}

// wantFinding is a finding a case expects: its rule, its resource and a
// part of its message.
type wantFinding struct{ rule, resource, says string }

// turnRef is the IRI of the turn at index i of session id.
func turnRef(id string, i int) rdf.IRI {
	return kg.MustIRI(ontology.TurnIRI(ontology.SessionIRI(id), i))
}

func TestCheck(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	t.Run("sound", func(t *testing.T) {
		st, _, _ := soundStore(t)
		got, err := check(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Fatalf("got %d findings on a sound store, want 0:\n%s", len(got), findingsText(got))
		}
	})
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding
	}{
		{"cycle", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			a, b, cc, below := newID(), newID(), newID(), newID()
			var d kg.Data
			addRawFork(&d, a, b, 0)
			addRawFork(&d, b, cc, 0)
			addRawFork(&d, cc, a, 0)
			addRawFork(&d, below, a, 0) // below the cycle, not on it
			rawChange(t, c, nil, &d)
			return []wantFinding{
				{session.RuleCycle, a, "a cycle of 3"},
				{session.RuleCycle, b, "a cycle of 3"},
				{session.RuleCycle, cc, "a cycle of 3"},
			}
		}},
		{"self parent", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			a := newID()
			var d kg.Data
			addRawFork(&d, a, a, 0)
			rawChange(t, c, nil, &d)
			return []wantFinding{{session.RuleCycle, a, a + " → " + a}}
		}},
		{"depth", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			// Below the root: forks with 1, 2, ... 33 ancestors.
			var d kg.Data
			parent := fx.root.ID
			for range session.MaxForkDepth + 1 {
				id := newID()
				addRawFork(&d, id, parent, 0)
				parent = id
			}
			rawChange(t, c, nil, &d)
			return []wantFinding{{session.RuleDepth, parent, "33 ancestors"}}
		}},
		{"fork point", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			beyond, atEnd, ofFork := newID(), newID(), newID()
			var d kg.Data
			addRawFork(&d, beyond, fx.root.ID, 5)
			addRawFork(&d, atEnd, fx.root.ID, 4)
			addRawFork(&d, ofFork, fx.fork.ID, 6) // fork point 2 + 3 own turns = 5
			rawChange(t, c, nil, &d)
			return []wantFinding{
				{session.RuleForkPoint, beyond, "forked at index 5, beyond the 4 turns"},
				{session.RuleForkPoint, ofFork, "(fork point 2 + 3 own turns)"},
				// The shapes say it too (tsh:ForkPointInHistory).
				{session.RuleSHACL, beyond, `trails:forkedAtIndex: A fork's trails:forkedAtIndex must not lie beyond its parent's history`},
				{session.RuleSHACL, ofFork, `(value "6")`},
			}
		}},
		{"fork point of a legacy parent", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			beyond, atEnd := newID(), newID()
			var d kg.Data
			addRawFork(&d, beyond, legacyFixtureID, 4)
			addRawFork(&d, atEnd, legacyFixtureID, 3)
			rawChange(t, c, nil, &d)
			return []wantFinding{{session.RuleForkPoint, beyond, "no trails:ownTurns"}}
		}},
		{"orphan", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			if err := c.DeleteGraph(ctx, sessionRef(fx.fork.ID)); err != nil {
				t.Fatal(err)
			}
			never := newID()
			var d kg.Data
			addRawFork(&d, never, newID(), 0)
			rawChange(t, c, nil, &d)
			return []wantFinding{
				{session.RuleOrphan, fx.forkOfFork.ID, "parent session " + fx.fork.ID + " is missing"},
				{session.RuleOrphan, never, "is missing"},
			}
		}},
		{"duplicate index", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			g := sessionRef(fx.root.ID)
			dup := kg.MustIRI(turnRef(fx.root.ID, 1).String() + "-again")
			ins := rawTriple(g, g, ontology.OwnTurns, kg.Int(5))
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
			rawChange(t, c, rawTriple(g, g, ontology.OwnTurns, kg.Int(4)), ins)
			return []wantFinding{
				{session.RuleDuplicateIndex, fx.root.ID, "2 turns at index 1: " + turnRef(fx.root.ID, 1).String()},
				// The shapes name each of the two turns (tsh:TurnIndexUnique).
				{session.RuleSHACL, fx.root.ID, "trails:index: The session holds more than one turn (trails:session) at this trails:index"},
				{session.RuleUnchained, fx.root.ID, "1 turn of " + fx.root.ID + " has no trails:digest (stored before the hash chain): run trails-admin rechain"},
			}
		}},
		{"index gap", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			id := fx.forkOfFork.ID
			g := sessionRef(id)
			if err := c.Update(ctx, "DELETE WHERE { GRAPH "+termText(t, g)+" { "+termText(t, turnRef(id, 5))+" ?p ?o } }"); err != nil {
				t.Fatal(err)
			}
			rawChange(t, c, rawTriple(g, g, ontology.OwnTurns, kg.Int(3)), rawTriple(g, g, ontology.OwnTurns, kg.Int(2)))
			return []wantFinding{{session.RuleIndexGap, id, "no turn at index 5: its turns hold 2 indices between 4 and 6, want 4..5 (its fork point is 4)"}}
		}},
		{"index gap at the fork point", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			id := fx.forkOfFork.ID
			g := sessionRef(id)
			// The fork point moves below the turns the fork holds.
			rawChange(t, c, rawTriple(g, g, ontology.ForkedAtIndex, kg.Int(4)), rawTriple(g, g, ontology.ForkedAtIndex, kg.Int(3)))
			return []wantFinding{{session.RuleIndexGap, id, "no turn at index 3"}}
		}},
		{"turn count", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			g := sessionRef(fx.root.ID)
			rawChange(t, c, rawTriple(g, g, ontology.OwnTurns, kg.Int(4)), rawTriple(g, g, ontology.OwnTurns, kg.Int(7)))
			return []wantFinding{{session.RuleTurnCount, fx.root.ID, "trails:ownTurns is 7, but 4 turns"}}
		}},
		{"missing prov", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			rawChange(t, c, rawTriple(kg.MustIRI(ontology.ProvGraph), sessionRef(fx.fork.ID), ontology.ProvWasGeneratedBy, prov.ForkActivity(fx.fork.ID)), nil)
			return []wantFinding{
				{session.RuleMissingProv, fx.fork.ID, "no PROV record"},
				{session.RuleSHACL, fx.fork.ID, "prov:wasGeneratedBy: A fork must be prov:wasGeneratedBy a trails:Fork activity"},
			}
		}},
		{"shacl on a session", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			g := sessionRef(fx.root.ID)
			rawChange(t, c, rawTriple(g, g, ontology.Branch, kg.String("main")), rawTriple(g, g, ontology.Branch, kg.String("Main")))
			return []wantFinding{{session.RuleSHACL, fx.root.ID, `trails:branch: A session may have at most one trails:branch`}}
		}},
		{"shacl on a turn", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			g := sessionRef(fx.root.ID)
			rawChange(t, c, rawTriple(g, turnRef(fx.root.ID, 0), ontology.Role, kg.String(fx.root.Turns[0].Role)), nil)
			return []wantFinding{{session.RuleSHACL, turnRef(fx.root.ID, 0).String(), "trails:role: A turn must have exactly one trails:role"}}
		}},
		{"cycle, missing parent and shapes at once", func(t *testing.T, c *kg.Client, fx checkFixture) []wantFinding {
			a, b := newID(), newID()
			var d kg.Data
			addRawFork(&d, a, b, 0)
			addRawFork(&d, b, a, 0)
			rawChange(t, c, nil, &d)
			if err := c.DeleteGraph(ctx, sessionRef(fx.fork.ID)); err != nil {
				t.Fatal(err)
			}
			g := sessionRef(fx.detached.ID)
			rawChange(t, c, nil, rawTriple(g, g, ontology.DCTIdentifier, kg.String("a second id")))
			return []wantFinding{
				{session.RuleCycle, a, "a cycle of 2"},
				{session.RuleCycle, b, "a cycle of 2"},
				{session.RuleOrphan, fx.forkOfFork.ID, fx.fork.ID},
				{session.RuleSHACL, fx.detached.ID, "dcterms:identifier"},
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, c, fx := soundStore(t)
			want := storeRules(tc.corrupt(t, c, fx))
			got, err := check(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(want, func(a, b wantFinding) int {
				return strings.Compare(a.rule+"\x00"+a.resource, b.rule+"\x00"+b.resource)
			})
			if len(got) != len(want) {
				t.Fatalf("got %d findings, want %d:\n%s", len(got), len(want), findingsText(got))
			}
			for i, w := range want {
				if g := got[i]; g.Rule != w.rule || g.Resource != w.resource || !strings.Contains(g.Message, w.says) {
					t.Fatalf("finding %d: got %s %s %q, want %s %s and a message with %q\nall:\n%s",
						i, g.Rule, g.Resource, g.Message, w.rule, w.resource, w.says, findingsText(got))
				}
			}
			t.Logf("\n%s", findingsText(got))
		})
	}
}

// TestCheckStoreError checks that a store that cannot be reached gives an
// error with the kg sentinel and no findings.
func TestCheckStoreError(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Client(t, kg.Config{Endpoint: "http://127.0.0.1:1/trails", MaxAttempts: 1})
	got, err := session.NewStore(c).Check(context.Background())
	if !errors.Is(err, kg.ErrUnavailable) || got != nil {
		t.Fatalf("got %v, %v; want no findings and ErrUnavailable", got, err)
	}
}

func termText(tb testing.TB, t rdf.Term) string {
	tb.Helper()
	s, err := kg.Term(t)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func findingsText(fs []session.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s\t%s\t%s\n", f.Rule, f.Resource, f.Message)
	}
	return b.String()
}

// storeRules drops the findings of the shacl rule from want when the test
// store has no SHACL endpoint, where Check runs every other rule.
func storeRules(want []wantFinding) []wantFinding {
	if fusekitest.TestStore() == kg.Fuseki {
		return want
	}
	return slices.DeleteFunc(want, func(w wantFinding) bool { return w.rule == session.RuleSHACL })
}
