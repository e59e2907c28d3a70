package session_test

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	"github.com/trails-kg/trails/session"
)

// Data corrupted in the store by hand: what the readers and writers do
// with it.

// corruptFixture is a small tree stored through the library, and copies of
// its sessions loaded before the store was corrupted:
//
//	r  4 turns (0..3)
//	└── f  fork of r at 2, 2 turns of its own (2..3)
//	    └── g  fork of f at 3, 1 turn of its own (3)
type corruptFixture struct {
	c         *kg.Client
	r, f, g   *session.Session // as loaded before the corruption
	principal string
	leaf      string // the end of a raw chain below g, when a case adds one
}

func newCorruptFixture(t *testing.T, st *session.Store, c *kg.Client) *corruptFixture {
	t.Helper()
	fx := &corruptFixture{c: c, principal: "corrupt-" + newID()}
	r := persisted(t, st, fx.principal, 4)
	f := mustFork(t, r, 2)
	appendN(f, 2, "f")
	mustPersist(t, st, f)
	g := mustFork(t, f, 3)
	appendN(g, 1, "g")
	mustPersist(t, st, g)
	fx.r, fx.f, fx.g = mustLoad(t, st, r.ID), mustLoad(t, st, f.ID), mustLoad(t, st, g.ID)
	t.Cleanup(func() { fx.drop(t, r.ID, f.ID, g.ID) })
	return fx
}

// drop removes the graphs of the sessions given, so that corrupt data does
// not reach the other tests of the binary.
func (fx *corruptFixture) drop(tb testing.TB, ids ...string) {
	tb.Helper()
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "DROP SILENT GRAPH %s ;\n", storetest.TermText(tb, storetest.SessionRef(id)))
	}
	if err := clustertest.Update(context.Background(), tb, fx.c, b.String()); err != nil {
		tb.Errorf("drop the corrupt graphs: %v", err)
	}
}

// replace swaps, in the graph of session id, the object of (s, p) for o;
// a nil o removes the triple.
func (fx *corruptFixture) replace(tb testing.TB, id string, s rdf.IRI, p string, o rdf.Term) {
	tb.Helper()
	g := storetest.TermText(tb, storetest.SessionRef(id))
	u := fmt.Sprintf("DELETE WHERE { GRAPH %s { %s %s ?o } }", g, storetest.TermText(tb, s), storetest.TermText(tb, kg.MustIRI(p)))
	if o != nil {
		u += fmt.Sprintf(" ;\nINSERT DATA { GRAPH %s { %s %s %s } }", g, storetest.TermText(tb, s), storetest.TermText(tb, kg.MustIRI(p)), rawTerm(tb, o))
	}
	if err := clustertest.Update(context.Background(), tb, fx.c, u); err != nil {
		tb.Fatalf("corrupt %s: %v\n%s", id, err, u)
	}
}

// add adds one triple to the graph of session id.
func (fx *corruptFixture) add(tb testing.TB, id string, s rdf.IRI, p string, o rdf.Term) {
	tb.Helper()
	storetest.RawChange(tb, fx.c, nil, storetest.RawTriple(storetest.SessionRef(id), s, p, o))
}

// typedString is a literal of xsd:string holding v, where another datatype
// belongs.
func typedString(v string) rdf.Term { return kg.String(v) }

// badLiteral is a literal of datatype dt whose lexical form is v.
func badLiteral(v, dt string) rdf.Term { return rdf.NewTypedLiteral(v, kg.MustIRI(dt)) }

// rawTerm writes o as SPARQL without the checks of kg.Term on a typed
// literal's lexical form (which refuse the date-times Trails cannot
// write): how another writer would store it.
func rawTerm(tb testing.TB, o rdf.Term) string {
	tb.Helper()
	if l, ok := o.(rdf.Literal); ok && l.DataType.String() != "" && l.Lang() == "" {
		return storetest.TermText(tb, kg.String(l.String())) + "^^<" + l.DataType.String() + ">"
	}
	return storetest.TermText(tb, o)
}

const (
	xsdInteger  = "http://www.w3.org/2001/XMLSchema#integer"
	xsdDateTime = "http://www.w3.org/2001/XMLSchema#dateTime"
)

// storeErrors are the errors a read of corrupt data may return: the
// session package's own. A kg error (a query the store refused), a context
// error (a hang) or a panic is a failure.
var storeErrors = []error{
	session.ErrCorrupt, session.ErrForkCycle, session.ErrForkDepth, session.ErrParentMissing,
	session.ErrNotFound, session.ErrConflict,
}

// outcome runs call, turning a panic into a failure, and returns its error.
func outcome(t *testing.T, what string, call func(ctx context.Context) error) (err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s: panic: %v", what, p)
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	t0 := time.Now()
	err = call(ctx)
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%s: no answer within 30 s (%v)", what, err)
	}
	t.Logf("%-28s %-8v %v", what, time.Since(t0).Round(time.Millisecond), err)
	return err
}

// typed reports whether err is nil or one of storeErrors.
func typed(err error) bool {
	if err == nil {
		return true
	}
	for _, e := range storeErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// treeSize counts the nodes under n, failing t (instead of recursing
// forever) when the children links loop.
func treeSize(t *testing.T, n *session.Node) int {
	t.Helper()
	seen := map[*session.Node]bool{}
	var walk func(n *session.Node, depth int) int
	walk = func(n *session.Node, depth int) int {
		if seen[n] || depth > 1000 {
			t.Errorf("Tree: node %s comes twice below the top: its children loop", n.ID)
			return 0
		}
		seen[n] = true
		size := 1
		for _, c := range n.Children {
			size += walk(c, depth+1)
		}
		return size
	}
	return walk(n, 0)
}

// TestCorruptData corrupts a stored tree by hand in one way per case and
// runs every read and a persist over it: each answers within its deadline,
// never panics, and either succeeds or returns one of the session
// package's errors; the reads the case names must return the error it
// names.
func TestCorruptData(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, fx *corruptFixture) (extra []string) // returns raw sessions to drop afterwards
		want    map[string]error                                        // "load r", "load f", "load g", "replay …", "persist …": the error wanted
	}{
		{
			name: "cycle",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				// r, the root, gets g as its parent: r ← f ← g ← r.
				r := storetest.SessionRef(fx.r.ID)
				fx.add(t, fx.r.ID, r, ontology.ParentSession, storetest.SessionRef(fx.g.ID))
				fx.add(t, fx.r.ID, r, ontology.ForkedAtIndex, kg.Int(0))
				return nil
			},
			want: map[string]error{"load r": session.ErrForkCycle, "load f": session.ErrForkCycle, "load g": session.ErrForkCycle,
				"replay g": session.ErrForkCycle},
		},
		{
			name: "depth-40 chain",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				var d kg.Data
				parent, ids := fx.g.ID, []string{}
				for range 40 {
					id := newID()
					storetest.AddRawFork(&d, id, parent, 4)
					parent, ids = id, append(ids, id)
				}
				storetest.RawChange(t, fx.c, nil, &d)
				fx.leaf = parent
				return ids
			},
			want: map[string]error{"load leaf": session.ErrForkDepth, "replay leaf": session.ErrForkDepth,
				"persist fork of leaf": session.ErrForkDepth},
		},
		{
			name: "forkedAtIndex beyond the parent",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				// f claims to fork r at 9; r has 4 turns.
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.ForkedAtIndex, kg.Int(9))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "replay f": session.ErrCorrupt,
				// g forks f at 3 and so inherits [0,3) from r by f's claim, but
				// f's claim is beyond r's 4 turns: the chain is corrupt.
				"load g": session.ErrCorrupt},
		},
		{
			name: "duplicate index",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				g := storetest.SessionRef(fx.r.ID)
				dup := kg.MustIRI(storetest.TurnRef(fx.r.ID, 1).String() + "-again")
				for _, po := range []struct {
					p string
					o rdf.Term
				}{
					{ontology.RDFType, kg.MustIRI(ontology.Turn)}, {ontology.TurnSession, g}, {ontology.Index, kg.Int(1)},
					{ontology.Role, kg.String("user")}, {ontology.Content, kg.String("again")},
					{ontology.Branch, kg.String("main")}, {ontology.Created, kg.DateTime(time.Now())},
				} {
					fx.add(t, fx.r.ID, dup, po.p, po.o)
				}
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "load f": session.ErrCorrupt, "load g": session.ErrCorrupt,
				"replay r": session.ErrCorrupt},
		},
		{
			name: "missing branch of a fork",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.Branch, nil)
				return nil
			},
			// A session without trails:branch is a legacy root; a fork
			// without one is corrupt, not a fork on "main".
			want: map[string]error{"load f": session.ErrCorrupt, "persist f": session.ErrConflict},
		},
		{
			name: "missing branch of a turn",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.TurnRef(fx.f.ID, 2), ontology.Branch, nil)
				return nil
			},
			want: map[string]error{"load f": nil, "load g": nil}, // the owner's branch, as for legacy turns
		},
		{
			name: "index that is not a number",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 1), ontology.Index, typedString("abc"))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "load f": session.ErrCorrupt, "load g": session.ErrCorrupt},
		},
		{
			name: "index as a string",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 1), ontology.Index, typedString("1"))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "load f": session.ErrCorrupt, "load g": session.ErrCorrupt},
		},
		{
			name: "index an ill-formed integer",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 1), ontology.Index, badLiteral("one", xsdInteger))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "load f": session.ErrCorrupt},
		},
		{
			name: "index huge",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 1), ontology.Index, badLiteral("99999999999999999999999", xsdInteger))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "load f": session.ErrCorrupt},
		},
		{
			name: "forkedAtIndex as a string",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.ForkedAtIndex, typedString("2"))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "load g": session.ErrCorrupt},
		},
		{
			name: "forkedAtIndex not a number",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.ForkedAtIndex, typedString("two"))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "load g": session.ErrCorrupt, "persist f": session.ErrCorrupt},
		},
		{
			name: "forkedAtIndex negative",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.ForkedAtIndex, kg.Int(-2))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "load g": session.ErrCorrupt},
		},
		{
			name: "forkedAtIndex huge",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.ForkedAtIndex, kg.Int(math.MaxInt))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "load g": session.ErrCorrupt},
		},
		{
			name: "ownTurns as a string",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.SessionRef(fx.r.ID), ontology.OwnTurns, typedString("4"))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt},
		},
		{
			name: "ownTurns huge",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.SessionRef(fx.r.ID), ontology.OwnTurns, kg.Int(math.MaxInt))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "persist r": session.ErrConflict},
		},
		{
			name: "created not a date-time",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.Created, badLiteral("yesterday", xsdDateTime))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt},
		},
		{
			name: "turn created as a string",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.TurnRef(fx.f.ID, 2), ontology.Created, typedString("2026-03-01T10:00:00Z"))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt},
		},
		{
			name: "role an IRI",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 0), ontology.Role, kg.MustIRI("urn:role:user"))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt},
		},
		{
			name: "two parents, one a cycle",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				// g gets a second parent, r; r gets g as its parent.
				fx.add(t, fx.g.ID, storetest.SessionRef(fx.g.ID), ontology.ParentSession, storetest.SessionRef(fx.r.ID))
				fx.add(t, fx.r.ID, storetest.SessionRef(fx.r.ID), ontology.ParentSession, storetest.SessionRef(fx.g.ID))
				return nil
			},
			want: map[string]error{"load g": session.ErrCorrupt, "load r": session.ErrCorrupt},
		},
		{
			name: "turn without content",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.TurnRef(fx.f.ID, 3), ontology.Content, nil)
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "load g": nil}, // g does not inherit f's turn 3
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newCorruptFixture(t, st, c)
			extra := tc.corrupt(t, fx)
			t.Cleanup(func() {
				if len(extra) > 0 {
					fx.drop(t, extra...)
				}
			})
			ids := map[string]string{"r": fx.r.ID, "f": fx.f.ID, "g": fx.g.ID}
			if fx.leaf != "" {
				ids["leaf"] = fx.leaf
			}
			got := map[string]error{}
			check := func(what string, err error) {
				t.Helper()
				got[what] = err
				if !typed(err) {
					t.Errorf("%s: got %v, want nil or an error of the session package", what, err)
				}
			}
			for _, name := range []string{"r", "f", "g", "leaf"} {
				id, ok := ids[name]
				if !ok {
					continue
				}
				check("load "+name, outcome(t, "load "+name, func(ctx context.Context) error {
					s, err := st.Load(ctx, id)
					if err == nil {
						for i, turn := range s.Turns {
							if turn.Index != i {
								t.Errorf("load %s: turn %d has index %d", name, i, turn.Index)
							}
						}
					}
					return err
				}))
				check("replay "+name, outcome(t, "replay "+name, func(ctx context.Context) error {
					_, err := st.Replay(ctx, id, session.UpTo(3))
					return err
				}))
				check("info "+name, outcome(t, "info "+name, func(ctx context.Context) error {
					_, err := st.Info(ctx, id)
					return err
				}))
				check("branches "+name, outcome(t, "branches "+name, func(ctx context.Context) error {
					_, err := st.Branches(ctx, id)
					return err
				}))
				check("tree "+name, outcome(t, "tree "+name, func(ctx context.Context) error {
					n, err := st.Tree(ctx, id)
					if err == nil {
						treeSize(t, n)
					}
					return err
				}))
			}
			check("list", outcome(t, "list", func(ctx context.Context) error {
				_, err := st.List(ctx, session.ByPrincipal(fx.principal))
				return err
			}))
			check("forest", outcome(t, "forest", func(ctx context.Context) error {
				trees, err := admin.New(c).Forest(ctx)
				for _, n := range trees {
					treeSize(t, n)
				}
				return err
			}))
			// Persist copies loaded before the corruption, each with a
			// turn more.
			for name, s := range map[string]*session.Session{"r": fx.r, "f": fx.f, "g": fx.g} {
				cp := *s
				cp.Turns = append([]session.Turn(nil), s.Turns...)
				cp.Append("user", "after the corruption")
				check("persist "+name, outcome(t, "persist "+name, func(ctx context.Context) error { return st.Persist(ctx, &cp) }))
			}
			if fx.leaf != "" {
				check("persist fork of leaf", outcome(t, "persist fork of leaf", func(ctx context.Context) error {
					f := &session.Session{ID: newID(), Principal: "raw", ParentID: fx.leaf, ForkedAt: 0, Branch: "fork-0badc0de"}
					f.Append("user", "too deep")
					return st.Persist(ctx, f)
				}))
			}
			for what, want := range tc.want {
				err, ran := got[what]
				if !ran {
					t.Fatalf("the case names %q, which did not run", what)
				}
				if !errors.Is(err, want) || (want == nil && err != nil) {
					t.Errorf("%s: got %v, want %v", what, err, want)
				}
			}
		})
	}
}
