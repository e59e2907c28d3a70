package session_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// forkedChild returns a fork of parent at at with n turns of its own,
// stored.
func forkedChild(tb testing.TB, st *session.Store, parent *session.Session, at, n int) *session.Session {
	tb.Helper()
	c := mustFork(tb, parent, at)
	appendN(c, n, "child")
	mustPersist(tb, st, c)
	return c
}

func mustMerge(tb testing.TB, st *session.Store, childID string, r session.MergeResult) session.Turn {
	tb.Helper()
	return storetest.MustMerge(tb, st, childID, r)
}

// graphTriples returns the triples of graph g, one N-Triples-like line
// each, sorted.
func graphTriples(tb testing.TB, c *kg.Client, g string) []string {
	tb.Helper()
	q, err := kg.Bind(`SELECT ?s ?p ?o WHERE { GRAPH $g { ?s ?p ?o } }`, kg.Params{"g": kg.MustIRI(g)})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Select(context.Background(), q)
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	for _, row := range res.Solutions {
		var parts []string
		for _, v := range []string{"s", "p", "o"} {
			s, err := kg.Term(row[v])
			if err != nil {
				tb.Fatal(err)
			}
			parts = append(parts, s)
		}
		lines = append(lines, strings.Join(parts, " "))
	}
	slices.Sort(lines)
	return lines
}

// minus returns the lines of a that are not in b.
func minus(a, b []string) []string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, l)
		}
	}
	return out
}

func ask(tb testing.TB, c *kg.Client, q string, p kg.Params) bool {
	tb.Helper()
	text, err := kg.Bind(q, p)
	if err != nil {
		tb.Fatal(err)
	}
	ok, err := c.Ask(context.Background(), text)
	if err != nil {
		tb.Fatal(err)
	}
	return ok
}

// TestMerge merges a child's result into its parent: one turn at the
// parent's end, the other turns untouched, the result readable with
// Merges, PROV linking the activity to the child and the turn, and a
// second merge refused.
func TestMerge(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 4)
	child := forkedChild(t, st, root, 2, 3) // own turns 2, 3, 4
	before := mustLoad(t, st, root.ID)
	beforeTriples := graphTriples(t, c, ontology.SessionIRI(root.ID))

	r := session.MergeResult{
		Status:  session.MergeCompleted,
		Summary: "Found 13 and 17.\nBoth \"primes\".",
		Artifacts: []session.Artifact{
			{Text: "notes/primes.md"},
			{IRI: "https://example.org/doc/1"},
			{IRI: "urn:trails:memory:7"},
			{Text: "notes/primes.md"}, // a duplicate: the store keeps a set
		},
	}
	got := mustMerge(t, st, child.ID, r)
	want := session.Turn{Index: 4, Role: session.MergeRole, Content: r.Summary, Branch: session.MainBranch,
		Created: got.Created, ID: session.TurnID(root.ID, 4)}
	if got != want || got.Created.IsZero() {
		t.Fatalf("got turn %+v, want %+v", got, want)
	}

	after := mustLoad(t, st, root.ID)
	sameHistory(t, after.Turns[:4], before.Turns)
	sameHistory(t, after.Turns[4:], []session.Turn{got})
	if after.Turns[4].ID != got.ID {
		t.Fatalf("loaded merge turn: got id %s, want %s", after.Turns[4].ID, got.ID)
	}
	// Only the count and digest left the parent's graph; only the merge
	// turn and the new count and digest came in.
	afterTriples := graphTriples(t, c, ontology.SessionIRI(root.ID))
	for _, l := range minus(beforeTriples, afterTriples) {
		if !strings.Contains(l, ontology.OwnTurns) && !strings.Contains(l, ontology.HeadDigest) {
			t.Errorf("the merge removed %s", l)
		}
	}
	for _, l := range minus(afterTriples, beforeTriples) {
		if !strings.HasPrefix(l, "<"+got.ID+">") && !strings.Contains(l, ontology.OwnTurns) && !strings.Contains(l, ontology.HeadDigest) {
			t.Errorf("the merge added %s", l)
		}
	}
	// The child is unchanged.
	sameSession(t, mustLoad(t, st, child.ID), child)

	recs, err := st.Merges(ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantRec := []session.MergeRecord{{
		Index: 4, TurnID: got.ID, Child: child.ID, Status: session.MergeCompleted, Summary: r.Summary,
		First: 2, Last: 4, Created: got.Created,
		Artifacts: []session.Artifact{{IRI: "https://example.org/doc/1"}, {IRI: "urn:trails:memory:7"}, {Text: "notes/primes.md"}},
	}}
	if !reflect.DeepEqual(recs, wantRec) {
		t.Fatalf("Merges: got %+v, want %+v", recs, wantRec)
	}
	if recs, err := st.Merges(ctx, child.ID); err != nil || len(recs) != 0 {
		t.Fatalf("Merges of the child: got %v, %v; want none", recs, err)
	}

	// PROV: a Merge activity that used the child, merged into the parent,
	// generated the turn, associated with the child's principal.
	p := kg.Params{
		"prov": kg.MustIRI(ontology.ProvGraph), "child": kg.MustIRI(ontology.SessionIRI(child.ID)),
		"parent": kg.MustIRI(ontology.SessionIRI(root.ID)), "turn": kg.MustIRI(got.ID),
		"agent": kg.MustIRI(ontology.AgentIRI("alice")), "status": kg.String("completed"),
	}
	if !ask(t, c, `PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $prov {
  ?act a prov:Activity , trails:Merge ; prov:used $child ; trails:mergedInto $parent ;
       trails:mergeStatus $status ; prov:wasAssociatedWith $agent ; prov:startedAtTime ?t .
  $turn prov:wasGeneratedBy ?act .
} }`, p) {
		t.Fatal("no PROV record of the merge")
	}
	delete(p, "agent")
	delete(p, "prov")
	if !ask(t, c, `PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $parent { $turn trails:mergeOf $child ; trails:mergeStatus $status ; trails:mergeFirst 2 ; trails:mergeLast 4 ;
  trails:session $parent ; trails:role "merge" } }`, p) {
		t.Fatal("the merge turn lacks its result")
	}

	// Twice is refused, with nothing written.
	n := storetest.CountQuads(t, c, "")
	if _, err := st.Merge(ctx, child.ID, r); !errors.Is(err, session.ErrMerged) {
		t.Fatalf("merge twice: got %v, want ErrMerged", err)
	}
	if m := storetest.CountQuads(t, c, ""); m != n {
		t.Fatalf("a refused merge wrote %d triples", m-n)
	}
	// A caller holding the parent from before the merge is behind.
	before.Append("user", "late")
	if err := st.Persist(ctx, before); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("persist a copy from before the merge: got %v, want ErrConflict", err)
	}
	// The parent goes on after the merge turn.
	after.Append("user", "thanks")
	mustPersist(t, st, after)
	sameSession(t, mustLoad(t, st, root.ID), after)
}

// TestMergeRefused: bad input and a child that cannot be merged are
// refused, with nothing written.
func TestMergeRefused(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 3)
	child := forkedChild(t, st, root, 1, 2)
	empty := forkedChild(t, st, root, 3, 0)
	ok := session.MergeResult{Status: session.MergeFailed, Summary: "gave up"}
	with := func(f func(*session.MergeResult)) session.MergeResult {
		r := ok
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name  string
		child string
		r     session.MergeResult
		want  error
	}{
		{"root", root.ID, ok, session.ErrInvalid},
		{"missing child", session.New("x").ID, ok, session.ErrNotFound},
		{"bad id", "not-a-uuid", ok, session.ErrInvalid},
		{"no own turns", empty.ID, ok, session.ErrInvalid},
		{"empty summary", child.ID, with(func(r *session.MergeResult) { r.Summary = "" }), session.ErrInvalid},
		{"blank summary", child.ID, with(func(r *session.MergeResult) { r.Summary = " \n\t" }), session.ErrInvalid},
		{"summary not UTF-8", child.ID, with(func(r *session.MergeResult) { r.Summary = "a\xffb" }), session.ErrInvalid},
		{"summary too long", child.ID, with(func(r *session.MergeResult) { r.Summary = strings.Repeat("x", session.MaxTurnBytes+1) }), session.ErrInvalid},
		{"no status", child.ID, with(func(r *session.MergeResult) { r.Status = "" }), session.ErrInvalid},
		{"unknown status", child.ID, with(func(r *session.MergeResult) { r.Status = "done" }), session.ErrInvalid},
		{"relative artifact IRI", child.ID, with(func(r *session.MergeResult) { r.Artifacts = []session.Artifact{{IRI: "docs/a.md"}} }), session.ErrInvalid},
		{"artifact IRI with a space", child.ID, with(func(r *session.MergeResult) { r.Artifacts = []session.Artifact{{IRI: "http://x/a b"}} }), session.ErrInvalid},
		{"artifact IRI with a bracket", child.ID, with(func(r *session.MergeResult) { r.Artifacts = []session.Artifact{{IRI: "http://x/a> . <y"}} }), session.ErrInvalid},
		{"artifact with both", child.ID, with(func(r *session.MergeResult) { r.Artifacts = []session.Artifact{{IRI: "urn:a", Text: "a"}} }), session.ErrInvalid},
		{"artifact with neither", child.ID, with(func(r *session.MergeResult) { r.Artifacts = []session.Artifact{{}} }), session.ErrInvalid},
		{"artifact text not UTF-8", child.ID, with(func(r *session.MergeResult) { r.Artifacts = []session.Artifact{{Text: "\xc3"}} }), session.ErrInvalid},
		{"too many artifacts", child.ID, with(func(r *session.MergeResult) {
			r.Artifacts = make([]session.Artifact, session.MaxArtifacts+1)
			for i := range r.Artifacts {
				r.Artifacts[i].Text = "a" + itoa(i)
			}
		}), session.ErrInvalid},
		{"result too large", child.ID, with(func(r *session.MergeResult) {
			r.Artifacts = []session.Artifact{{Text: strings.Repeat("y", session.MaxTurnBytes)}}
		}), session.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := storetest.CountQuads(t, c, "")
			_, err := st.Merge(ctx, tc.child, tc.r)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if m := storetest.CountQuads(t, c, ""); m != n {
				t.Fatalf("a refused merge wrote %d triples", m-n)
			}
		})
	}

	t.Run("missing parent", func(t *testing.T) {
		p := persisted(t, st, "alice", 2)
		f := forkedChild(t, st, p, 2, 1)
		if err := st.Delete(ctx, p.ID, session.DeleteOptions{DetachChildren: true}); err != nil {
			t.Fatal(err)
		}
		// Detached, f is a root: nothing to merge into.
		if _, err := st.Merge(ctx, f.ID, ok); !errors.Is(err, session.ErrInvalid) {
			t.Fatalf("merge a detached fork: got %v, want ErrInvalid", err)
		}
		p = persisted(t, st, "alice", 2)
		f = forkedChild(t, st, p, 2, 1)
		del := kg.Params{"g": kg.MustIRI(ontology.SessionIRI(p.ID))}
		u, _ := kg.Bind("DROP GRAPH $g", del)
		if err := clustertest.Update(ctx, t, c, u); err != nil {
			t.Fatal(err)
		}
		n := storetest.CountQuads(t, c, "")
		_, err := st.Merge(ctx, f.ID, ok)
		var ae *session.AncestorError
		if !errors.Is(err, session.ErrParentMissing) || !errors.As(err, &ae) || ae.Missing != p.ID {
			t.Fatalf("got %v, want an AncestorError naming %s", err, p.ID)
		}
		if m := storetest.CountQuads(t, c, ""); m != n {
			t.Fatalf("a refused merge wrote %d triples", m-n)
		}
	})

	t.Run("ended parent", func(t *testing.T) {
		p := persisted(t, st, "alice", 2)
		f := forkedChild(t, st, p, 2, 1)
		if _, err := st.SetState(ctx, p.ID, session.StateCompleted, session.StateOptions{}); err != nil {
			t.Fatal(err)
		}
		n := storetest.CountQuads(t, c, "")
		if _, err := st.Merge(ctx, f.ID, ok); !errors.Is(err, session.ErrState) {
			t.Fatalf("merge into a completed parent: got %v, want ErrState", err)
		}
		if m := storetest.CountQuads(t, c, ""); m != n {
			t.Fatalf("a refused merge wrote %d triples", m-n)
		}
	})
}

// TestMergeConcurrent: of two merges of one child at once, exactly one
// wins; the other gets ErrMerged.
func TestMergeConcurrent(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	for round := range 3 {
		root := persisted(t, st, "alice", 2)
		child := forkedChild(t, st, root, 2, 2)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for k := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[k] = st.Merge(ctx, child.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "writer " + itoa(k)})
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, session.ErrMerged):
				t.Fatalf("round %d: got %v, want nil or ErrMerged", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d merges won, want 1 (errors %v)", round, won, errs)
		}
		got := mustLoad(t, st, root.ID)
		if len(got.Turns) != 3 || got.Turns[2].Role != session.MergeRole {
			t.Fatalf("round %d: got %d turns, want 2 and one merge turn", round, len(got.Turns))
		}
		if recs, err := st.Merges(ctx, root.ID); err != nil || len(recs) != 1 {
			t.Fatalf("round %d: Merges: got %v, %v; want one", round, recs, err)
		}
	}
}

// raceTransport runs before once, just before the first merge update
// goes out: another writer getting in between Merge's read and its write.
type raceTransport struct {
	next   http.RoundTripper
	before func()
	done   atomic.Bool
}

func (rt *raceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Body != nil && r.GetBody != nil && !rt.done.Load() {
		if body, err := r.GetBody(); err == nil {
			b, _ := io.ReadAll(body)
			body.Close()
			if strings.Contains(string(b), "mergeOf") && strings.Contains(string(b), "DELETE") && rt.done.CompareAndSwap(false, true) {
				rt.before()
			}
		}
	}
	return rt.next.RoundTrip(r)
}

// TestMergeAfterAppend: another writer appends to the parent between
// Merge's read and its write; the compare and swap refuses the first
// attempt, and Merge reads again and lands at the end.
func TestMergeAfterAppend(t *testing.T) {
	fusekitest.Parallel(t)
	other, _, _ := newStore(t)
	root := persisted(t, other, "alice", 3)
	child := forkedChild(t, other, root, 1, 2)
	held := mustLoad(t, other, root.ID)
	fusekitest.RequireDirect(t, "it races a writer at its store's HTTP transport")
	rt := &raceTransport{next: http.DefaultTransport}
	rt.before = func() {
		s := mustLoad(t, other, root.ID)
		s.Append("user", "meanwhile")
		mustPersist(t, other, s)
	}
	// NoUpdateLock: rt.before writes from inside this client's request.
	st := session.NewStore(fusekitest.Client(t, kg.Config{Endpoint: fusekitest.Endpoint(t), HTTPClient: &http.Client{Transport: rt}, NoUpdateLock: true}))
	got := mustMerge(t, st, child.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "done"})
	if !rt.done.Load() {
		t.Fatal("the other writer never ran")
	}
	if got.Index != 4 {
		t.Fatalf("got the merge turn at %d, want 4 (after the other writer's turn)", got.Index)
	}
	s := mustLoad(t, st, root.ID)
	sameHistory(t, s.Turns[:3], held.Turns)
	if len(s.Turns) != 5 || s.Turns[3].Content != "meanwhile" || s.Turns[4].Role != session.MergeRole {
		t.Fatalf("got %+v, want the 3 turns, meanwhile, then the merge turn", s.Turns)
	}
	held.Append("assistant", "stale")
	if err := st.Persist(context.Background(), held); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("persist a copy from before: got %v, want ErrConflict", err)
	}
}

// TestMergeScoped: a Store scoped to a principal merges only a child it
// sees, and into another principal's parent only for a fork made with
// AcrossPrincipals.
func TestMergeScoped(t *testing.T) {
	fusekitest.Parallel(t)
	all, _, _ := newStore(t)
	bob, _, _ := newStore(t, session.ForPrincipal("bob"))
	ctx := context.Background()
	r := session.MergeResult{Status: session.MergeCompleted, Summary: "ok"}

	root := persisted(t, all, "alice", 2)
	alices := forkedChild(t, all, root, 2, 1)
	if _, err := bob.Merge(ctx, alices.ID, r); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("bob merges alice's child: got %v, want ErrNotFound", err)
	}

	plain := mustFork(t, root, 2)
	plain.Principal = "bob"
	appendN(plain, 1, "bob")
	mustPersist(t, all, plain) // an operator made it: no permission recorded
	if _, err := bob.Merge(ctx, plain.ID, r); !errors.Is(err, session.ErrForbidden) {
		t.Fatalf("bob merges into alice's session: got %v, want ErrForbidden", err)
	}

	across, err := root.Fork(2, session.AcrossPrincipals())
	if err != nil {
		t.Fatal(err)
	}
	across.Principal = "bob"
	appendN(across, 1, "bob")
	mustPersist(t, bob, across)
	got := mustMerge(t, bob, across.ID, r)
	if got.Index != 2 {
		t.Fatalf("got index %d, want 2", got.Index)
	}
	if _, err := bob.Merges(ctx, root.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("bob reads alice's merges: got %v, want ErrNotFound", err)
	}
	if recs, err := all.Merges(ctx, root.ID); err != nil || len(recs) != 1 || recs[0].Child != across.ID {
		t.Fatalf("Merges: got %+v, %v; want the merge of %s", recs, err, across.ID)
	}
}

// TestMergeLegacyParent merges into a parent stored before Trails kept
// turn counts.
func TestMergeLegacyParent(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	nq, err := os.ReadFile(filepath.Join("..", "testdata", "session", "legacy", "session.nq"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "0190a000-0000-7000-8000-00000000000a"
	clustertest.DeleteGraph(ctx, t, c, kg.MustIRI(ontology.SessionIRI(id))) // another test may have used it
	if err := clustertest.LoadQuads(ctx, t, c, nq); err != nil {
		t.Fatal(err)
	}
	legacy := mustLoad(t, st, id)
	child := forkedChild(t, st, legacy, 3, 1)
	got := mustMerge(t, st, child.ID, session.MergeResult{Status: session.MergeFailed, Summary: "no luck"})
	s := mustLoad(t, st, id)
	sameHistory(t, s.Turns[:3], legacy.Turns)
	if got.Index != 3 || len(s.Turns) != 4 || s.Turns[3].Content != "no luck" {
		t.Fatalf("got %+v, want the merge turn at 3", s.Turns)
	}
}

// TestMergesIntoQuery runs the auditors' merges-into query.
func TestMergesIntoQuery(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	root := persisted(t, st, "alice", 2)
	a := forkedChild(t, st, root, 1, 2)
	b := forkedChild(t, st, root, 2, 1)
	ta := mustMerge(t, st, a.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "a done"})
	tb := mustMerge(t, st, b.ID, session.MergeResult{Status: session.MergeFailed, Summary: "b failed"})
	res, err := prov.NewReader(c).Run(context.Background(), "merges-into", map[string]string{"session": root.ID})
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ child, status, first, last, turn, summary, principal string }
	var got []row
	for _, s := range res.Solutions {
		got = append(got, row{s.String("child"), s.String("status"), s.String("first"), s.String("last"),
			s.String("turn"), s.String("summary"), s.String("principal")})
	}
	want := []row{
		{ontology.SessionIRI(a.ID), "completed", "1", "2", ta.ID, "a done", "alice"},
		{ontology.SessionIRI(b.ID), "failed", "2", "2", tb.ID, "b failed", "alice"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, s := range res.Solutions {
		if _, err := s.Time("time"); err != nil {
			t.Fatalf("time: %v", err)
		}
	}
}

// TestMergeAfterRewind: the merge turn of a rewound parent takes an IRI of
// the parent's new generation, never that of a turn the rewind moved.
func TestMergeAfterRewind(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 4)
	rewound, _, err := st.Rewind(ctx, root.ID, 2, session.RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	child := forkedChild(t, st, rewound, 2, 1)
	got := mustMerge(t, st, child.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "after the rewind"})
	want := ontology.TurnIRIGen(ontology.SessionIRI(root.ID), 2, 1)
	if got.Index != 2 || got.ID != want {
		t.Fatalf("got turn %d %s, want 2 %s", got.Index, got.ID, want)
	}
	s := mustLoad(t, st, root.ID)
	sameHistory(t, s.Turns[:2], root.Turns[:2])
	if len(s.Turns) != 3 || s.Turns[2].ID != want || s.Turns[2].Content != "after the rewind" {
		t.Fatalf("got %+v, want the 2 kept turns and the merge turn", s.Turns)
	}
	if recs, err := st.Merges(ctx, root.ID); err != nil || len(recs) != 1 || recs[0].TurnID != want {
		t.Fatalf("Merges: got %+v, %v; want the turn %s", recs, err, want)
	}
}

// TestDetachKeepsMergeResult detaches a fork whose inherited prefix holds
// a merge turn: the copy keeps the child's result (status, range,
// artifacts), so deleting the former parent loses nothing of it.
func TestDetachKeepsMergeResult(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 3)
	child := forkedChild(t, st, root, 1, 2) // own turns 1, 2
	r := session.MergeResult{Status: session.MergeFailed, Summary: "No prime found.",
		Artifacts: []session.Artifact{{Text: "log.txt"}, {IRI: "https://example.org/run/9"}}}
	merged := mustMerge(t, st, child.ID, r) // turn 3 of root
	parent := mustLoad(t, st, root.ID)
	fork := mustFork(t, parent, 4) // inherits the merge turn
	fork.Append("user", "Try again.")
	mustPersist(t, st, fork)

	want, err := st.Merges(ctx, root.ID)
	if err != nil || len(want) != 1 {
		t.Fatalf("Merges of the parent: got %+v, %v, want one", want, err)
	}
	if err := st.Detach(ctx, fork.ID, session.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Merges(ctx, fork.ID)
	if err != nil {
		t.Fatal(err)
	}
	want[0].TurnID = session.TurnID(fork.ID, merged.Index) // the copy
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Merges of the detached fork: got %+v, want %+v", got, want)
	}
	// The copy is not the merge's own turn: only the original was
	// generated by the merge activity.
	if ask(t, c, `ASK { $t <http://www.w3.org/ns/prov#wasGeneratedBy> ?a . ?a a <https://w3id.org/trails/ns#Merge> }`,
		kg.Params{"t": kg.MustIRI(session.TurnID(fork.ID, merged.Index))}) {
		t.Fatal("the copy claims to be generated by the merge")
	}
	if findings, err := storetest.Check(ctx, admin.New(c)); err != nil || len(findings) != 0 {
		t.Fatalf("Check after detach: got %v, %v, want no findings", findings, err)
	}
}

// beforeUpdate is a Querier that runs before, once, ahead of the first
// update containing match: a way to put another writer's request between
// a call's reads and its write.
type beforeUpdate struct {
	session.Querier
	match  string
	before func()
	once   sync.Once
}

func (q *beforeUpdate) Replicated() bool { return isReplicated(q.Querier) }

func (q *beforeUpdate) Update(ctx context.Context, u string, opts ...kg.UpdateOption) error {
	if strings.Contains(u, q.match) {
		q.once.Do(q.before)
	}
	return q.Querier.Update(ctx, u, opts...)
}

// TestMergeRacingRewind: a rewind of the parent below the child's fork
// point, landing between the merge's reads and its update, moves the
// child under the archive; the merge is then refused with ErrConflict and
// lands nowhere (before, it was acknowledged and its turn landed in the
// live parent, under which the child no longer hung).
func TestMergeRacingRewind(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 4)
	child := forkedChild(t, st, root, 3, 1)
	var archive string
	hooked := session.NewStore(&beforeUpdate{Querier: querier(t, c), match: ontology.MergeOf, before: func() {
		_, r, err := st.Rewind(ctx, root.ID, 1, session.RewindOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		archive = r.Archive
	}})
	_, err := hooked.Merge(ctx, child.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "done"})
	if !errors.Is(err, session.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	t.Log(err)
	if archive == "" {
		t.Fatal("the rewind did not run")
	}
	if n := len(mustLoad(t, st, root.ID).Turns); n != 1 {
		t.Errorf("root holds %d turns, want the 1 kept by the rewind", n)
	}
	if n := len(mustLoad(t, st, archive).Turns); n != 4 {
		t.Errorf("the archive holds %d turns, want the 4 rewound", n)
	}
	if recs, err := st.Merges(ctx, archive); err != nil || len(recs) != 0 {
		t.Errorf("Merges of the archive: got %+v, %v; want none", recs, err)
	}
}

// TestMergeRacingChildRewind: a rewind of the child itself to its fork
// point, landing between the merge's reads and its update, takes the
// child's own turns (the range the merge names); the merge is refused
// with ErrConflict and lands nowhere (known anomaly A10 of
// docs/reliability.md: it was acknowledged and its turn named turns the
// child no longer held).
func TestMergeRacingChildRewind(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 3)
	child := forkedChild(t, st, root, 3, 1)
	ran := false
	hooked := session.NewStore(&beforeUpdate{Querier: querier(t, c), match: ontology.MergeOf, before: func() {
		ran = true
		if _, _, err := st.Rewind(ctx, child.ID, 3, session.RewindOptions{}); err != nil {
			t.Error(err)
		}
	}})
	_, err := hooked.Merge(ctx, child.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "done"})
	if !ran {
		t.Fatal("the rewind did not run")
	}
	if !errors.Is(err, session.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	t.Log(err)
	if n := len(mustLoad(t, st, root.ID).Turns); n != 3 {
		t.Errorf("the parent holds %d turns, want its 3 (no merge turn)", n)
	}
	if recs, err := st.Merges(ctx, root.ID); err != nil || len(recs) != 0 {
		t.Errorf("Merges of the parent: got %+v, %v; want none", recs, err)
	}
}

// TestMergeAfterRewindBelowFork: a child moved under the archive by a
// rewind of its parent below its fork point is not merged into the
// archive (before, the merge was acknowledged and the caller not told
// that its turn went into the archive): ErrConflict naming the archive.
func TestMergeAfterRewindBelowFork(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 4)
	child := forkedChild(t, st, root, 3, 1)
	_, r, err := st.Rewind(ctx, root.ID, 1, session.RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Merge(ctx, child.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "done"})
	if !errors.Is(err, session.ErrConflict) || !strings.Contains(err.Error(), r.Archive) {
		t.Fatalf("got %v, want ErrConflict naming the archive %s", err, r.Archive)
	}
	if n := len(mustLoad(t, st, r.Archive).Turns); n != 4 {
		t.Errorf("the archive holds %d turns, want the 4 rewound", n)
	}
}
