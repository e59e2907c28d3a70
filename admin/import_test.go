package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// nqTerm is the N-Triples form of t.
func nqTerm(tb testing.TB, t rdf.Term) string {
	tb.Helper()
	s, err := kg.Term(t)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// nqWriter writes N-Quads lines for the hostile inputs of Import.
type nqWriter struct {
	tb testing.TB
}

func (w nqWriter) iri(s string) string { return nqTerm(w.tb, kg.MustIRI(s)) }
func (w nqWriter) str(s string) string { return nqTerm(w.tb, kg.String(s)) }
func (w nqWriter) num(n int) string    { return nqTerm(w.tb, kg.Int(n)) }
func (w nqWriter) time(t time.Time) string {
	return nqTerm(w.tb, kg.DateTime(t))
}

// quad returns the N-Quads line of s p o in graph g, all serialized.
func (w nqWriter) quad(s, p, o, g string) string {
	return s + " " + w.iri(p) + " " + o + " " + g + " ."
}

func (w nqWriter) session(id string) string { return w.iri(ontology.SessionIRI(id)) }
func (w nqWriter) prov() string             { return w.iri(ontology.ProvGraph) }

// fork returns the lines of a fork id of parent at at with branch label
// branch and no turns: its parent link is line 3 and its fork point line 4
// of them.
func (w nqWriter) fork(id, parent string, at int, branch string) []string {
	g := w.session(id)
	return []string{
		w.quad(g, ontology.RDFType, w.iri(ontology.Session), g),
		w.quad(g, ontology.Branch, w.str(branch), g),
		w.quad(g, ontology.ParentSession, w.session(parent), g),
		w.quad(g, ontology.ForkedAtIndex, w.num(at), g),
		w.quad(g, ontology.Principal, w.iri(ontology.AgentIRI("forger")), g),
	}
}

// turn returns the lines of turn t of session id, its digest too unless
// digest is "".
func (w nqWriter) turn(id string, t session.Turn, digest string) []string {
	g := w.session(id)
	ti := w.iri(session.TurnID(id, t.Index))
	out := []string{
		w.quad(ti, ontology.RDFType, w.iri(ontology.Turn), g),
		w.quad(ti, ontology.TurnSession, g, g),
		w.quad(ti, ontology.Index, w.num(t.Index), g),
		w.quad(ti, ontology.Role, w.str(t.Role), g),
		w.quad(ti, ontology.Content, w.str(t.Content), g),
		w.quad(ti, ontology.Branch, w.str(t.Branch), g),
		w.quad(ti, ontology.Created, w.time(t.Created), g),
	}
	if digest != "" {
		out = append(out, w.quad(ti, ontology.Digest, w.str(digest), g))
	}
	return out
}

// marked is an input with the line at fault marked by a leading '!'.
func marked(tb testing.TB, ls []string) (data []byte, line int) {
	tb.Helper()
	var b bytes.Buffer
	for i, l := range ls {
		if rest, ok := strings.CutPrefix(l, "!"); ok {
			if line != 0 {
				tb.Fatalf("two lines marked: %d and %d", line, i+1)
			}
			line, l = i+1, rest
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if line == 0 {
		tb.Fatal("no line marked")
	}
	return b.Bytes(), line
}

func mark(l string) string { return "!" + l }

// chained returns the digests of turns, each after the one before, from
// prev.
func chained(prev string, turns []session.Turn) []string {
	out := make([]string, len(turns))
	for i, t := range turns {
		prev = session.TurnDigest(prev, t)
		out[i] = prev
	}
	return out
}

// importVictim is a store an attacker imports into: a root a with a fork
// af (with its PROV record), the hash chain written on a's turns, a
// deleted session, and a valid session of the attacker's (n) exported and
// taken out again, to smuggle quads in.
type importVictim struct {
	st      *store
	c       *kg.Client
	a, af   *session.Session
	n       *session.Session
	nLines  []string // the export of n, in NQuads
	deleted []byte   // the export of a session deleted since
	digests []string // the trails:digest of a's turns
}

func newImportVictim(t *testing.T) *importVictim {
	t.Helper()
	ctx := context.Background()
	c := clustertest.Empty(t)
	v := &importVictim{st: openStore(t, c), c: c}
	w := nqWriter{t}
	v.a = storetest.Persisted(t, v.st, "alice", 3)
	v.af = storetest.MustFork(t, v.a, 2)
	storetest.AppendN(v.af, 1, "af")
	storetest.MustPersist(t, v.st, v.af)

	// The hash chain on a's turns, as Persist will write it.
	v.digests = chained("", v.a.Turns)
	var add []string
	for i, t := range v.a.Turns {
		add = append(add, w.quad(w.iri(t.ID), ontology.Digest, w.str(v.digests[i]), w.session(v.a.ID)))
	}
	if err := clustertest.LoadQuads(ctx, t, c, []byte(strings.Join(add, "\n")+"\n")); err != nil {
		t.Fatal(err)
	}

	d := storetest.Persisted(t, v.st, "dora", 1)
	v.deleted, _ = mustExport(t, v.st, admin.NQuads, d.ID)
	if err := v.st.Delete(ctx, d.ID, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	before := storetest.CountQuads(t, c, "")
	v.n = storetest.Persisted(t, v.st, "nina", 2)
	data, _ := mustExport(t, v.st, admin.NQuads, v.n.ID)
	v.nLines = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if err := clustertest.DeleteGraph(ctx, t, c, kg.MustIRI(ontology.SessionIRI(v.n.ID))); err != nil {
		t.Fatal(err)
	}
	if after := storetest.CountQuads(t, c, ""); after != before {
		t.Fatalf("n left %d quads behind", after-before)
	}
	return v
}

// withN returns the export of n followed by more.
func (v *importVictim) withN(more ...string) []string {
	return append(slices.Clone(v.nLines), more...)
}

// TestImportHostile imports inputs that break each rule Import applies:
// each is refused with an *ImportError naming the rule and the line at
// fault, wrapping the right sentinel, and nothing is written.
func TestImportHostile(t *testing.T) {
	ctx := context.Background()
	v := newImportVictim(t)
	w := nqWriter{t}
	a, n, g := w.session(v.a.ID), w.session(v.n.ID), w.session(v.n.ID)
	prov := w.prov()
	x, y := storetest.NewID(), storetest.NewID()
	act := w.iri(ontology.ActivityIRI("deletion", storetest.NewID()))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	for _, tc := range []struct {
		name  string
		input func() []string
		rule  string
		want  []error
	}{
		{
			name:  "a quad about a stored session in another session's graph",
			input: func() []string { return v.withN(mark(w.quad(a, ontology.OwnTurns, w.num(9), g))) },
			rule:  admin.RuleResource, want: []error{session.ErrInvalid},
		},
		{
			name: "a stored session's turn moved into another session's graph",
			input: func() []string {
				return v.withN(mark(w.quad(w.iri(session.TurnID(v.a.ID, 5)), ontology.TurnSession, a, g)))
			},
			rule: admin.RuleResource, want: []error{session.ErrInvalid},
		},
		{
			name: "a stored session's turn in the graph of a session that is no archive",
			input: func() []string {
				return v.withN(mark(w.quad(w.iri(session.TurnID(v.a.ID, 1)), ontology.RDFType, w.iri(ontology.Turn), g)))
			},
			rule: admin.RuleResource, want: []error{session.ErrInvalid},
		},
		{
			name: "an agent renamed",
			input: func() []string {
				return v.withN(mark(w.quad(w.iri(ontology.AgentIRI("alice")), ontology.DCTIdentifier, w.str("mallory"), g)))
			},
			rule: admin.RuleResource, want: []error{session.ErrInvalid},
		},
		{
			name:  "a PROV quad describing a stored session",
			input: func() []string { return v.withN(mark(w.quad(a, ontology.OwnTurns, w.num(9), prov))) },
			rule:  admin.RuleProv, want: []error{session.ErrInvalid},
		},
		{
			name: "a forged deletion of a stored session",
			input: func() []string {
				return v.withN(
					w.quad(act, ontology.RDFType, w.iri(ontology.ProvActivity), prov),
					w.quad(act, ontology.RDFType, w.iri(ontology.Deletion), prov),
					mark(w.quad(act, ontology.ProvInvalidated, a, prov)),
				)
			},
			rule: admin.RuleProv, want: []error{session.ErrConflict},
		},
		{
			name: "a new activity naming a stored session",
			input: func() []string {
				return v.withN(mark(w.quad(w.iri(ontology.ActivityIRI("fork", storetest.NewID())), ontology.ProvUsed, a, prov)))
			},
			rule: admin.RuleProv, want: []error{session.ErrInvalid},
		},
		{
			name: "a stored activity with a quad added",
			input: func() []string {
				return v.withN(mark(w.quad(w.iri(ontology.ActivityIRI("fork", v.af.ID)), ontology.Reason, w.str("forged"), prov)))
			},
			rule: admin.RuleProv, want: []error{session.ErrConflict},
		},
		{
			name: "a quad in the ontology graph",
			input: func() []string {
				return v.withN(mark(w.quad(w.iri(ontology.Session), ontology.RDFSLabel, w.str("forged"), w.iri(ontology.OntologyGraph))))
			},
			rule: admin.RuleGraph, want: []error{session.ErrInvalid},
		},
		{
			name: "two sessions each the other's parent",
			input: func() []string {
				xs, ys := w.fork(x, y, 0, "fork-0000000a"), w.fork(y, x, 0, "fork-0000000b")
				xs[2] = mark(xs[2])
				return append(xs, ys...)
			},
			rule: admin.RuleFork, want: []error{session.ErrInvalid, session.ErrForkCycle},
		},
		{
			name: "a chain of 33 ancestors",
			input: func() []string {
				ids := []string{v.n.ID}
				ls := v.withN()
				for i := 0; i <= session.MaxForkDepth; i++ {
					id := storetest.NewID()
					f := w.fork(id, ids[len(ids)-1], 0, fmt.Sprintf("fork-%08x", i))
					if i == session.MaxForkDepth {
						f[2] = mark(f[2])
					}
					ls = append(ls, f...)
					ids = append(ids, id)
				}
				return ls
			},
			rule: admin.RuleFork, want: []error{session.ErrInvalid, session.ErrForkDepth},
		},
		{
			name: "a fork beyond the history of its parent in the input",
			input: func() []string {
				f := w.fork(x, v.n.ID, 3, "fork-0000000c")
				f[3] = mark(f[3])
				return v.withN(f...)
			},
			rule: admin.RuleFork, want: []error{session.ErrInvalid},
		},
		{
			name: "a fork beyond the history of its stored parent",
			input: func() []string {
				f := w.fork(x, v.a.ID, 4, "fork-0000000d")
				f[3] = mark(f[3])
				return f
			},
			rule: admin.RuleFork, want: []error{session.ErrInvalid},
		},
		{
			name: "a fork of a stored worker",
			input: func() []string {
				wk, err := v.a.Fork(1, session.AsWorker())
				if err != nil {
					t.Fatal(err)
				}
				storetest.MustPersist(t, v.st, wk)
				f := w.fork(x, wk.ID, 0, "fork-00000013")
				f[2] = mark(f[2])
				return f
			},
			rule: admin.RuleFork, want: []error{session.ErrInvalid, session.ErrNotForkable},
		},
		{
			name: "a fork of a worker in the input",
			input: func() []string {
				wk := w.fork(y, v.n.ID, 1, "fork-00000014")
				wk = append(wk, w.quad(w.session(y), ontology.Kind, w.str(string(session.KindWorker)), w.session(y)))
				f := w.fork(x, y, 1, "fork-00000015")
				f[2] = mark(f[2])
				return v.withN(append(wk, f...)...)
			},
			rule: admin.RuleFork, want: []error{session.ErrInvalid, session.ErrNotForkable},
		},
		{
			name: "a fork of a session neither the input nor the store holds",
			input: func() []string {
				f := w.fork(x, storetest.NewID(), 0, "fork-0000000e")
				f[2] = mark(f[2])
				return f
			},
			rule: admin.RuleFork, want: []error{session.ErrInvalid, session.ErrParentMissing},
		},
		{
			name: "a turn over the size limit",
			input: func() []string {
				ls := w.turn(v.n.ID, session.Turn{Index: 2, Role: "user", Content: strings.Repeat("x", session.MaxTurnBytes+1), Branch: session.MainBranch, Created: t0}, "")
				ls[4] = mark(ls[4])
				return v.withN(ls...)
			},
			rule: admin.RuleTurn, want: []error{session.ErrInvalid},
		},
		{
			name: "a turn created after year 9999 (milliseconds taken for seconds)",
			input: func() []string {
				ls := w.turn(v.n.ID, session.Turn{Index: 2, Role: "user", Content: "c", Branch: session.MainBranch, Created: t0}, "")
				for i, l := range ls {
					if strings.Contains(l, "<"+ontology.Created+">") {
						ls[i] = mark(strings.Replace(l, t0.Format(time.RFC3339Nano), "57877-12-12T08:00:00Z", 1))
					}
				}
				return v.withN(ls...)
			},
			rule: admin.RuleSyntax, want: []error{session.ErrInvalid, kg.ErrInvalidTerm},
		},
		{
			name: "a role over 1 KiB",
			input: func() []string {
				ls := w.turn(v.n.ID, session.Turn{Index: 2, Role: strings.Repeat("r", 1025), Content: "c", Branch: session.MainBranch, Created: t0}, "")
				ls[3] = mark(ls[3])
				return v.withN(ls...)
			},
			rule: admin.RuleTurn, want: []error{session.ErrInvalid},
		},
		{
			name: "a turn missing from its session",
			input: func() []string {
				var ls []string
				turn0 := w.iri(session.TurnID(v.n.ID, 0)) + " "
				for _, l := range v.nLines {
					switch {
					case strings.HasPrefix(l, turn0):
					case strings.Contains(l, ontology.OwnTurns):
						ls = append(ls, mark(l))
					default:
						ls = append(ls, l)
					}
				}
				return ls
			},
			rule: admin.RuleTurn, want: []error{session.ErrInvalid},
		},
		{
			name: "a fork label another session has",
			input: func() []string {
				f := w.fork(x, v.a.ID, 1, v.af.Branch)
				f[1] = mark(f[1])
				return f
			},
			rule: admin.RuleStored, want: []error{session.ErrConflict},
		},
		{
			name: "a session with two parents",
			input: func() []string {
				f := w.fork(x, v.a.ID, 1, "fork-0000000f")
				return append(f, mark(w.quad(w.session(x), ontology.ParentSession, n, w.session(x))))
			},
			rule: admin.RuleSession, want: []error{session.ErrInvalid},
		},
		{
			name: "JSONL",
			input: func() []string {
				data, _ := mustExport(t, v.st, admin.JSONL, v.a.ID)
				ls := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
				ls[0] = mark(ls[0])
				return ls
			},
			rule: admin.RuleSyntax, want: []error{session.ErrInvalid},
		},
		{
			name: "a digest that does not follow from the chain",
			input: func() []string {
				ds := chained("", v.n.Turns)
				// n as Persist stored it, but for its digests: turn 1's is
				// that of a history without turn 0.
				ls := slices.DeleteFunc(v.withN(), func(l string) bool { return strings.Contains(l, "<"+ontology.Digest+">") })
				return append(ls,
					w.quad(w.iri(v.n.Turns[0].ID), ontology.Digest, w.str(ds[0]), g),
					mark(w.quad(w.iri(v.n.Turns[1].ID), ontology.Digest, w.str(chained("", v.n.Turns[1:])[0]), g)),
				)
			},
			rule: admin.RuleChain, want: []error{session.ErrInvalid},
		},
		{
			name: "a fork's first digest that does not follow from its stored parent",
			input: func() []string {
				turn := session.Turn{Index: 2, Role: "user", Content: "forged", Branch: "fork-00000010", Created: t0, ID: session.TurnID(x, 2)}
				f := w.fork(x, v.a.ID, 2, "fork-00000010")
				ls := append(f, w.turn(x, turn, session.TurnDigest(v.digests[2], turn))...) // the parent's turn 2, not 1
				ls[len(ls)-1] = mark(ls[len(ls)-1])
				return ls
			},
			rule: admin.RuleChain, want: []error{session.ErrInvalid},
		},
		{
			name: "a forged digest after a fork's first turn without one",
			input: func() []string {
				t2 := session.Turn{Index: 2, Role: "user", Content: "legacy", Branch: "fork-00000012", Created: t0, ID: session.TurnID(x, 2)}
				t3 := session.Turn{Index: 3, Role: "assistant", Content: "forged", Branch: "fork-00000012", Created: t0, ID: session.TurnID(x, 3)}
				ls := w.fork(x, v.a.ID, 2, "fork-00000012")
				ls = append(ls, w.turn(x, t2, "")...)
				ls = append(ls, w.turn(x, t3, session.TurnDigest("", t3))...)
				ls[len(ls)-1] = mark(ls[len(ls)-1])
				return ls
			},
			rule: admin.RuleChain, want: []error{session.ErrInvalid},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, line := marked(t, tc.input())
			before := storetest.CountQuads(t, v.c, "")
			stats, err := v.st.Import(ctx, bytes.NewReader(data), admin.NQuads, func(int, int) { t.Fatal("progress called: something was written") })
			t.Log(err)
			for _, want := range tc.want {
				if !errors.Is(err, want) {
					t.Fatalf("got %v, want %v", err, want)
				}
			}
			if got, want := importFault(err), (admin.ImportError{Line: line, Rule: tc.rule}); got != want {
				t.Fatalf("got line %d rule %q, want line %d rule %q", got.Line, got.Rule, want.Line, want.Rule)
			}
			if stats != (admin.ImportStats{}) {
				t.Fatalf("got %+v, want nothing written", stats)
			}
			if after := storetest.CountQuads(t, v.c, ""); after != before {
				t.Fatalf("got %d quads in the store, want %d as before", after, before)
			}
		})
	}
}

// TestImportRestoresDeleted imports the backup of a session deleted
// since: it is restored, as an operator's restore must allow (Persist
// alone will not bring a deleted session back).
func TestImportRestoresDeleted(t *testing.T) {
	v := newImportVictim(t)
	if stats := mustImport(t, v.st, v.deleted, admin.NQuads); stats.Sessions != 1 {
		t.Fatalf("got %+v, want the deleted session written", stats)
	}
}

// TestImportChain imports sessions whose turns carry the hash chain: the
// digests verify, a fork's first against its stored parent's turn, and
// the sessions are written; a file without digests (legacy) is taken too.
func TestImportChain(t *testing.T) {
	ctx := context.Background()
	v := newImportVictim(t)
	w := nqWriter{t}
	g := w.session(v.n.ID)
	ds := chained("", v.n.Turns)
	ls := v.withN(
		w.quad(w.iri(v.n.Turns[0].ID), ontology.Digest, w.str(ds[0]), g),
		w.quad(w.iri(v.n.Turns[1].ID), ontology.Digest, w.str(ds[1]), g),
	)
	x := uuid.Must(uuid.NewV7()).String()
	turn := session.Turn{Index: 2, Role: "user", Content: "on top of a's chain", Branch: "fork-00000011", Created: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), ID: session.TurnID(x, 2)}
	ls = append(ls, w.fork(x, v.a.ID, 2, turn.Branch)...)
	ls = append(ls, w.turn(x, turn, session.TurnDigest(v.digests[1], turn))...)
	stats, err := v.st.Import(ctx, strings.NewReader(strings.Join(ls, "\n")+"\n"), admin.NQuads, nil)
	if err != nil {
		t.Fatalf("got %v, want the chained sessions imported", err)
	}
	if stats.Sessions != 2 {
		t.Fatalf("got %+v, want 2 sessions written", stats)
	}
	got := storetest.MustLoad(t, v.st, x)
	if len(got.Turns) != 3 || got.Turns[2].Content != turn.Content {
		t.Fatalf("got %d turns, want a's first 2 and its own", len(got.Turns))
	}
}

// importFault returns the line and rule of the *ImportError in err.
func importFault(err error) admin.ImportError {
	var ie *admin.ImportError
	if !errors.As(err, &ie) {
		return admin.ImportError{}
	}
	return admin.ImportError{Line: ie.Line, Rule: ie.Rule}
}

// buildForest stores a tree with every kind of write: forks (one at an
// anchor), a worker merged back, a rewind with turns after it, a detached
// fork, tags, and a deleted fork. It returns the ids of the stored
// sessions.
func buildForest(tb testing.TB, st *store) []string {
	tb.Helper()
	ctx := context.Background()
	r := storetest.Persisted(tb, st, "planner", 4)
	storetest.MustAnchor(tb, st, r.ID, "plan", map[string]string{"step": "2"})
	r = storetest.MustLoad(tb, st, r.ID)
	f, err := r.Fork(-1, session.ForkAtAnchor("plan"), session.WithReason("try another way"))
	if err != nil {
		tb.Fatal(err)
	}
	storetest.AppendN(f, 2, "f")
	storetest.MustPersist(tb, st, f)
	wk, err := f.Fork(3, session.AsWorker())
	if err != nil {
		tb.Fatal(err)
	}
	storetest.AppendN(wk, 2, "worker")
	storetest.MustPersist(tb, st, wk)
	storetest.MustMerge(tb, st, wk.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "done", Artifacts: []session.Artifact{{Text: "notes.md"}}})

	g := storetest.MustFork(tb, r, 4)
	storetest.AppendN(g, 3, "g")
	storetest.MustPersist(tb, st, g)
	storetest.MustAnchor(tb, st, g.ID, "late", nil)
	g, rw := storetest.MustRewind(tb, st.Store, g.ID, 5)
	storetest.AppendN(g, 1, "after the rewind")
	storetest.MustPersist(tb, st, g)

	h := storetest.MustFork(tb, r, 1)
	storetest.AppendN(h, 1, "h")
	storetest.MustPersist(tb, st, h)
	if err := st.Detach(ctx, h.ID, session.DetachOptions{}); err != nil {
		tb.Fatal(err)
	}
	if err := st.Tag(ctx, r.ID, "keep", "demo"); err != nil {
		tb.Fatal(err)
	}
	doomed := storetest.MustFork(tb, r, 2)
	storetest.AppendN(doomed, 1, "doomed")
	storetest.MustPersist(tb, st, doomed)
	if err := st.Delete(ctx, doomed.ID, session.DeleteOptions{}); err != nil {
		tb.Fatal(err)
	}
	return []string{r.ID, f.ID, wk.ID, g.ID, rw.Archive, h.ID}
}

// TestImportForest exports a tree made by every writer, imports it into
// an empty store, and gets it back as it was; importing it again writes
// nothing and says every session is unchanged.
func TestImportForest(t *testing.T) {
	ctx := context.Background()
	c := clustertest.Empty(t)
	st := openStore(t, c)
	ids := buildForest(t, st)
	want := loadAll(t, st, ids)
	wantAll := snapshot(t, st)
	exports := make(map[admin.Format][]byte)
	for _, f := range []admin.Format{admin.NQuads, admin.TriG} {
		exports[f], _ = mustExport(t, st, f)
	}
	for _, f := range []admin.Format{admin.NQuads, admin.TriG} {
		t.Run(string(f), func(t *testing.T) {
			c := clustertest.Empty(t)
			st := openStore(t, c)
			stats := mustImport(t, st, exports[f], f)
			if stats.Sessions != len(ids) || stats.Unchanged != 0 || stats.Quads != len(wantAll) {
				t.Fatalf("got %+v, want %d sessions and %d quads written", stats, len(ids), len(wantAll))
			}
			for _, id := range ids {
				storetest.SameSession(t, storetest.MustLoad(t, st, id), want[id])
			}
			if got := snapshot(t, st); !slices.Equal(got, wantAll) {
				t.Fatalf("the imported store differs:\n%s", firstDiff(got, wantAll))
			}
			again, err := st.Import(ctx, bytes.NewReader(exports[f]), f, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := (admin.ImportStats{Unchanged: len(ids)}); again != want {
				t.Fatalf("again: got %+v, want %+v", again, want)
			}
		})
	}
}

// TestImportInterrupted cancels an import after its first batch: Import
// returns the context's error with the stats of what it wrote, which is
// in the store, and the same import again writes the rest.
func TestImportInterrupted(t *testing.T) {
	c := clustertest.Empty(t)
	st := openStore(t, c)
	ids := buildForest(t, st)
	wantAll := snapshot(t, st)
	data, _ := mustExport(t, st, admin.NQuads)

	c = clustertest.Empty(t)
	st = openStore(t, c)
	admin.SetImportBatchQuads(t, 10) // each session graph a batch of its own
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	stats, err := st.Import(ctx, bytes.NewReader(data), admin.NQuads, func(done, total int) {
		calls++
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if calls != 1 || stats.Batches != 1 || stats.Sessions != 1 || stats.Planned <= 1 {
		t.Fatalf("got %+v after %d batches, want 1 batch of 1 session written of several", stats, calls)
	}
	if got := storetest.CountQuads(t, c, ""); got != stats.Quads {
		t.Fatalf("got %d quads stored, want the %d the stats say", got, stats.Quads)
	}
	rest := mustImport(t, st, data, admin.NQuads)
	if rest.Unchanged != 1 || rest.Sessions != len(ids)-1 || rest.Batches != rest.Planned || stats.Quads+rest.Quads != len(wantAll) {
		t.Fatalf("second import: got %+v, want the other %d sessions and %d quads", rest, len(ids)-1, len(wantAll)-stats.Quads)
	}
	if got := snapshot(t, st); !slices.Equal(got, wantAll) {
		t.Fatalf("after the second import the store differs:\n%s", firstDiff(got, wantAll))
	}
}

// TestImportInterruptedBeforeValues: an import cut after its last batch,
// before the shared values (app: and user: keys) are set, sets them when
// run again, though every session is then stored and unchanged (before,
// the second run skipped stored sessions and the values never came).
func TestImportInterruptedBeforeValues(t *testing.T) {
	ctx := context.Background()
	c := clustertest.Empty(t)
	st := openStore(t, c)
	s := session.New("alice")
	s.App = "shop"
	s.Initial = map[string]json.RawMessage{"user:tier": json.RawMessage(`"gold"`), "app:quota": json.RawMessage(`10`)}
	storetest.AppendN(s, 2, "t")
	storetest.MustPersist(t, st.Store, s)
	data, _ := mustExport(t, st, admin.NQuads, s.ID)

	c = clustertest.Empty(t)
	st = openStore(t, c)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stats, err := st.Import(cctx, bytes.NewReader(data), admin.NQuads, func(done, total int) {
		if done == total {
			cancel() // after the last batch, before the shared values
		}
	})
	if !errors.Is(err, context.Canceled) || stats.Sessions != 1 {
		t.Fatalf("got %+v, %v; want 1 session written, then context.Canceled", stats, err)
	}
	if n := storetest.CountQuads(t, c, ontology.ValuesGraph); n != 0 {
		t.Fatalf("got %d quads of shared values after the cut import, want 0", n)
	}
	again := mustImport(t, st, data, admin.NQuads)
	if again.Unchanged != 1 {
		t.Fatalf("second import: got %+v, want the session unchanged", again)
	}
	got, err := st.Store.Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range s.Initial {
		if v := got.Values[k]; string(v) != string(want) {
			t.Errorf("value of %s after the second import: got %s, want %s", k, v, want)
		}
	}
}
