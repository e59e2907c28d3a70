package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// provValues returns the values of predicate p on the Fork activity that
// generated session child, as the PROV graph holds them.
func provValues(tb testing.TB, c *kg.Client, child, p string) []string {
	tb.Helper()
	q, err := kg.Bind(`SELECT ?v WHERE { GRAPH $prov {
		$child <http://www.w3.org/ns/prov#wasGeneratedBy> ?act . ?act $p ?v } }`, kg.Params{
		"prov": kg.MustIRI(ontology.ProvGraph), "child": kg.MustIRI(ontology.SessionIRI(child)), "p": kg.MustIRI(p),
	})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Select(context.Background(), q)
	if err != nil {
		tb.Fatal(err)
	}
	var vs []string
	for _, row := range res.Solutions {
		vs = append(vs, row.String("v"))
	}
	return vs
}

// TestForkMetadata: a fork's type, initiator, reason and intention are
// written on its PROV activity, and read back by prov.Reader.ForkRecord;
// a fork made without them records none and reads as an explicit fork by
// a user.
func TestForkMetadata(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 4)
	mustAnchor(t, st, root.ID, "task_start", map[string]string{"context": "Working on feature X"})

	f, err := st.Fork(ctx, root.ID, -1,
		session.ForkAtAnchor("task_start"),
		session.WithIntention("Implement feature X", "Parent needs feature X implemented\nwith \"quotes\""),
		session.WithForkType(session.ForkAutoRegenerate),
		session.WithCreatedBy(session.CreatedBySystem),
		session.WithReason("try another model"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, st, f.ID); got.ForkedAt != 4 || len(got.Turns) != 4 || got.ParentID != root.ID {
		t.Fatalf("got fork of %s at %d with %d turns, want of %s at 4 with 4", got.ParentID, got.ForkedAt, len(got.Turns), root.ID)
	}
	for _, tc := range []struct {
		pred string
		want string
	}{
		{ontology.NextSteps, "Implement feature X"},
		{ontology.ContextSummary, "Parent needs feature X implemented\nwith \"quotes\""},
		{ontology.ForkType, "auto-regenerate"},
		{ontology.CreatedBy, "system"},
		{ontology.Reason, "try another model"},
		{ontology.FromAnchor, ontology.AnchorIRI(ontology.SessionIRI(root.ID), "task_start")},
		{ontology.ForkPoint, "4"},
	} {
		if got := provValues(t, c, f.ID, tc.pred); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("<%s>: got %q, want [%q]", tc.pred, got, tc.want)
		}
	}
	r := prov.NewReader(c)
	rec, err := r.ForkRecord(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Parent != root.ID || rec.At != 4 || rec.Type != "auto-regenerate" || rec.CreatedBy != "system" ||
		rec.Reason != "try another model" || rec.NextSteps != "Implement feature X" ||
		rec.ContextSummary != "Parent needs feature X implemented\nwith \"quotes\"" || rec.Branch != f.Branch ||
		rec.Anchor != ontology.AnchorIRI(ontology.SessionIRI(root.ID), "task_start") || rec.Turn != "" {
		t.Fatalf("got record %+v", rec)
	}

	// No options: nothing recorded, read as the defaults.
	plain := mustFork(t, root, 2)
	mustPersist(t, st, plain)
	for _, p := range []string{ontology.ForkType, ontology.CreatedBy, ontology.Reason, ontology.NextSteps,
		ontology.ContextSummary, ontology.FromAnchor, ontology.BeforeTurn} {
		if got := provValues(t, c, plain.ID, p); len(got) != 0 {
			t.Errorf("<%s>: got %q, want nothing for a fork without metadata", p, got)
		}
	}
	rec, err = r.ForkRecord(ctx, plain.ID)
	if err != nil || rec.Type != prov.DefaultForkType || rec.CreatedBy != prov.DefaultCreatedBy || rec.At != 2 {
		t.Fatalf("got %+v, %v; want an explicit fork by a user at 2", rec, err)
	}
	if _, err := r.ForkRecord(ctx, root.ID); !errors.Is(err, prov.ErrNotFound) {
		t.Fatalf("fork record of a root: got %v, want prov.ErrNotFound", err)
	}

	// Values that cannot be used are refused before anything is sent.
	for _, tc := range []struct {
		name string
		opt  session.ForkOption
	}{
		{"fork type", session.WithForkType("sideways")},
		{"creator", session.WithCreatedBy("robot")},
		{"reason", session.WithReason("\xff")},
		{"intention", session.WithIntention("ok", "\xfe")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := root.Fork(1, tc.opt); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			before := ct.requests.Load()
			// Store.Fork refuses before it sends anything.
			if _, err := st.Fork(ctx, root.ID, 1, tc.opt); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("Store.Fork: got %v, want ErrInvalid", err)
			}
			if sent := ct.requests.Load() - before; sent != 0 {
				t.Fatalf("Store.Fork: got %d requests, want none", sent)
			}
		})
	}
	if _, err := st.Fork(ctx, newID(), 0); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Store.Fork of an unknown session: got %v, want ErrNotFound", err)
	}
	if _, err := st.Fork(ctx, root.ID, -1, session.ForkAtAnchor("nope")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Store.Fork at an unknown anchor: got %v, want ErrNotFound", err)
	}
}

// The tree limits of design note 002 are tested here: how many forks a
// session may have. The depth limit (32 ancestors fine, 33 refused in
// memory, at Persist and at Load) is TestDepthLimit's.

func TestForkPoints(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	root := persisted(t, st, "alice", 6)
	for _, tc := range []struct {
		name string
		at   int
	}{
		{"at 0", 0},
		{"in the middle", 3},
		{"at the end", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustFork(t, root, tc.at)
			appendN(f, 2, "fork")
			mustPersist(t, st, f)
			got := mustLoad(t, st, f.ID)
			sameSession(t, got, f)
			if got.Depth() != 1 {
				t.Fatalf("got depth %d, want 1", got.Depth())
			}
			for i, turn := range got.Turns {
				want := root.Branch
				if i >= tc.at {
					want = f.Branch
				}
				if turn.Branch != want {
					t.Fatalf("turn %d: got branch %q, want %q", i, turn.Branch, want)
				}
			}
		})
	}
	// The parent is untouched by its forks.
	sameSession(t, mustLoad(t, st, root.ID), root)
}

func TestForkOfFork(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	root := persisted(t, st, "alice", 10)
	mid := mustFork(t, root, 6)
	appendN(mid, 4, "mid")
	mustPersist(t, st, mid)
	for _, tc := range []struct {
		name string
		at   int
	}{
		// root [0,6) mid [6,8) leaf [8,…)
		{"after the first fork point", 8},
		// root [0,4) leaf [4,…): the middle session contributes nothing.
		{"before the first fork point", 4},
		{"at the first fork point", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaf := mustFork(t, mid, tc.at)
			appendN(leaf, 3, "leaf")
			mustPersist(t, st, leaf)
			got := mustLoad(t, st, leaf.ID)
			sameSession(t, got, leaf)
			if got.Depth() != 2 {
				t.Fatalf("got depth %d, want 2", got.Depth())
			}
			for i := 0; i < min(tc.at, 6); i++ {
				if got.Turns[i].Branch != session.MainBranch {
					t.Fatalf("turn %d: got branch %q, want main", i, got.Turns[i].Branch)
				}
			}
		})
	}
}

func TestForkRange(t *testing.T) {
	fusekitest.Parallel(t)
	s := session.New("alice")
	appendN(s, 3, "r")
	for _, at := range []int{-1, 4} {
		if _, err := s.Fork(at); !errors.Is(err, session.ErrInvalid) {
			t.Fatalf("fork at %d: got %v, want ErrInvalid", at, err)
		}
	}
}

func TestParentNotStored(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	p := session.New("alice")
	appendN(p, 2, "p")
	f := mustFork(t, p, 1)
	err := st.Persist(context.Background(), f)
	var ae *session.AncestorError
	if !errors.Is(err, session.ErrParentMissing) || !errors.As(err, &ae) || ae.Missing != p.ID {
		t.Fatalf("got %v, want ErrParentMissing naming %s", err, p.ID)
	}
}

func TestBranchLabelCollision(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	root := persisted(t, st, "alice", 3)
	a := mustFork(t, root, 1)
	appendN(a, 1, "a")
	mustPersist(t, st, a)
	b := mustFork(t, root, 2)
	appendN(b, 2, "b")
	// Force b onto a's label, as a 1-in-4-billion draw would.
	b.Branch = a.Branch
	for i := b.ForkedAt; i < len(b.Turns); i++ {
		b.Turns[i].Branch = a.Branch
	}
	mustPersist(t, st, b)
	if b.Branch == a.Branch {
		t.Fatalf("got branch %q for both forks, want a fresh label for the second", b.Branch)
	}
	got := mustLoad(t, st, b.ID)
	sameSession(t, got, b)
	if mustLoad(t, st, a.ID).Branch != a.Branch {
		t.Fatal("the first fork's label changed")
	}
}

// longParent stores a root of alice with n turns, every
// tenth turn i changing state key "step" to i and every hundredth key
// "hundred": a history whose state depends on where it is cut.
func longParent(tb testing.TB, st *session.Store, n int) *session.Session {
	tb.Helper()
	s := session.New("alice")
	for i := range n {
		t := session.Turn{Role: "user", Content: "turn " + itoa(i)}
		if i%10 == 0 {
			t.Structure = &session.Structure{Delta: map[string]json.RawMessage{"step": json.RawMessage(itoa(i))}}
		}
		if i%100 == 0 {
			t.Structure.Delta["hundred"] = json.RawMessage(itoa(i))
		}
		s.AppendTurn(t)
		if (i+1)%500 == 0 || i == n-1 {
			mustPersist(tb, st, s) // 500 turns to a request
		}
	}
	return s
}

// TestStoreForkReadsConstant: Store.Fork of a 5,000-turn parent sends at
// most 3 requests and receives at most 20 KB, at 0, inside and at the
// end, and the fork holds the parent's prefix with the state as of its
// fork point. Before, it loaded the whole parent (megabytes).
func TestStoreForkReadsConstant(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	const n = 5000
	root := longParent(t, st, n)
	for _, at := range []int{0, 1, 4321, n} {
		t.Run("at "+itoa(at), func(t *testing.T) {
			reqs, bytes := ct.requests.Load(), ct.bytes.Load()
			f, err := st.Fork(ctx, root.ID, at)
			if err != nil {
				t.Fatal(err)
			}
			sent, recv := ct.requests.Load()-reqs, ct.bytes.Load()-bytes
			t.Logf("%d requests, %d bytes received", sent, recv)
			if sent > 3 {
				t.Errorf("got %d requests, want at most 3", sent)
			}
			if recv > 20_000 {
				t.Errorf("got %d bytes received, want at most 20,000", recv)
			}
			if f.ForkedAt != at || f.From != at || len(f.Turns) != 0 || f.ParentID != root.ID || f.Principal != "alice" {
				t.Fatalf("got fork of %s at %d (from %d, %d turns) of %q, want a tail of %s at %d of alice",
					f.ParentID, f.ForkedAt, f.From, len(f.Turns), f.Principal, root.ID, at)
			}
			var want map[string]json.RawMessage
			if at > 0 {
				want = map[string]json.RawMessage{"step": json.RawMessage(itoa((at - 1) / 10 * 10)), "hundred": json.RawMessage(itoa((at - 1) / 100 * 100))}
			}
			sameValues(t, "fork's values", f.Values, want)
			// The fork appends like a tail, and loads whole.
			f.Append("user", "own")
			mustPersist(t, st, f)
			got := mustLoad(t, st, f.ID)
			if len(got.Turns) != at+1 || got.Turns[at].Content != "own" || (at > 0 && got.Turns[at-1].Content != root.Turns[at-1].Content) {
				t.Fatalf("got %d turns, want the parent's %d and the fork's own", len(got.Turns), at)
			}
			sameValues(t, "loaded fork's values", got.Values, want)
		})
	}
	// A position found nowhere costs as little.
	reqs, bytes := ct.requests.Load(), ct.bytes.Load()
	if _, err := st.Fork(ctx, root.ID, -1, session.ForkAfterEvent("nope")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("fork after an unknown event: got %v, want ErrNotFound", err)
	}
	if sent, recv := ct.requests.Load()-reqs, ct.bytes.Load()-bytes; sent > 2 || recv > 20_000 {
		t.Errorf("fork after an unknown event: got %d requests and %d bytes received, want at most 2 and 20,000", sent, recv)
	}
}

// TestStoreForkOfForks: Store.Fork along a chain of forks, each made at
// a point before, at or after the fork point above it, gives the history
// and state Load gives, in at most 3 requests, to the depth limit.
func TestStoreForkOfForks(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	root := longParent(t, st, 300)
	cur := root.ID
	length := 300
	for k := range session.MaxForkDepth {
		at := length - 1 - k%3*7 // inside the last session's own turns or its parent's
		if k%5 == 0 {
			at = length // at the end
		}
		reqs := ct.requests.Load()
		f, err := st.Fork(ctx, cur, at)
		if err != nil {
			t.Fatalf("fork %d of %s at %d: %v", k, cur, at, err)
		}
		if got := ct.requests.Load() - reqs; got > 3 {
			t.Errorf("fork %d: got %d requests, want at most 3", k, got)
		}
		f.AppendTurn(session.Turn{Role: "user", Content: "own " + itoa(k), Structure: &session.Structure{Delta: map[string]json.RawMessage{"step": json.RawMessage(`"f` + itoa(k) + `"`)}}})
		mustPersist(t, st, f)
		parent := mustLoad(t, st, cur)
		got := mustLoad(t, st, f.ID)
		sameHistory(t, got.Turns[:at], parent.Turns[:at])
		want := mustFork(t, parent, at)
		if f.Values["hundred"] == nil || string(f.Values["hundred"]) != string(want.Values["hundred"]) {
			t.Errorf("fork %d: got hundred %s, want %s", k, f.Values["hundred"], want.Values["hundred"])
		}
		if got.Depth() != k+1 {
			t.Fatalf("fork %d: got depth %d, want %d", k, got.Depth(), k+1)
		}
		cur, length = f.ID, at+1
	}
	if _, err := st.Fork(ctx, cur, 1); !errors.Is(err, session.ErrForkDepth) {
		t.Fatalf("fork beyond the depth limit: got %v, want ErrForkDepth", err)
	}
}

// TestStoreForkPositions: ForkAtTurn, ForkBeforeInvocation and
// ForkAfterEvent find their turn in the parent's history through the
// store's index, also in an ancestor's share, and say ErrNotFound for a
// turn outside it.
func TestStoreForkPositions(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := session.New("alice")
	for i := range 6 {
		root.AppendTurn(session.Turn{Role: "user", Content: "t" + itoa(i),
			Structure: &session.Structure{InvocationID: "inv" + itoa(i/2), EventID: "e" + itoa(i)}})
	}
	mustPersist(t, st, root)
	mid, err := st.Fork(ctx, root.ID, 4)
	if err != nil {
		t.Fatal(err)
	}
	mid.AppendTurn(session.Turn{Role: "user", Content: "m", Structure: &session.Structure{InvocationID: "inv9", EventID: "m"}})
	mustPersist(t, st, mid)
	for _, tc := range []struct {
		name   string
		opt    session.ForkOption
		at     int
		before string // the turn PROV records
	}{
		{"turn", session.ForkAtTurn(root.Turns[3].ID), 3, root.Turns[3].ID},
		{"invocation", session.ForkBeforeInvocation("inv1"), 2, root.Turns[2].ID},
		{"own invocation", session.ForkBeforeInvocation("inv9"), 4, mustLoad(t, st, mid.ID).Turns[4].ID},
		{"event", session.ForkAfterEvent("e1"), 2, root.Turns[2].ID},
		{"last event", session.ForkAfterEvent("m"), 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := st.Fork(ctx, mid.ID, -1, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if f.ForkedAt != tc.at {
				t.Fatalf("got fork point %d, want %d", f.ForkedAt, tc.at)
			}
			var want []string
			if tc.before != "" {
				want = []string{tc.before}
			}
			if got := provValues(t, c, f.ID, ontology.BeforeTurn); !slices.Equal(got, want) {
				t.Errorf("trails:beforeTurn: got %q, want %q", got, want)
			}
			got := mustLoad(t, st, f.ID)
			inMemory, err := mustLoad(t, st, mid.ID).Fork(-1, tc.opt)
			if err != nil || inMemory.ForkedAt != tc.at {
				t.Fatalf("Session.Fork: got %v at %d, want %d", err, inMemory.ForkedAt, tc.at)
			}
			sameHistory(t, got.Turns, inMemory.Turns)
		})
	}
	for _, opt := range []session.ForkOption{
		session.ForkAtTurn(root.Turns[5].ID), // the root's, beyond mid's fork point
		session.ForkBeforeInvocation("nope"),
		session.ForkAfterEvent("e5"),
	} {
		if _, err := st.Fork(ctx, mid.ID, -1, opt); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	}
}

// afterReads runs before, once, when the answer to the reads-th request
// it carries has come: for Store.Fork's two reads, between them and its
// update (not inside the update's request, which on a store whose client
// sends one update at a time would wait for the rewind, and it for it).
type afterReads struct {
	next   http.RoundTripper
	reads  int64
	n      atomic.Int64
	before func()
}

func (r *afterReads) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if r.n.Add(1) == r.reads && err == nil {
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		if rerr != nil {
			return nil, rerr
		}
		r.before()
	}
	return resp, err
}

// TestStoreForkRacingRewind: a rewind of the parent that lands between
// Store.Fork's reads and its update either leaves the prefix the fork
// inherits whole (the fork is stored, with that prefix) or cuts it (the
// fork is refused with ErrConflict and nothing of it is stored), never a
// fork of a prefix that no longer exists.
func TestStoreForkRacingRewind(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	other, _, c := newStore(t)
	for _, tc := range []struct {
		name   string
		to     int // where the rewind goes back to
		refuse bool
	}{
		{"below the fork point", 3, true},
		{"at the fork point", 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fusekitest.RequireDirect(t, "it races a rewind at its store's HTTP transport")
			root := persisted(t, other, "alice", 10)
			rt := &afterReads{next: http.DefaultTransport, reads: 2, before: func() {
				if _, _, err := other.Rewind(ctx, root.ID, tc.to, session.RewindOptions{}); err != nil {
					t.Errorf("rewind: %v", err)
				}
			}}
			st := session.NewStore(fusekitest.Client(t, kg.Config{Endpoint: fusekitest.Endpoint(t), HTTPClient: &http.Client{Transport: rt}}))
			f, err := st.Fork(ctx, root.ID, 6)
			if tc.refuse {
				if !errors.Is(err, session.ErrConflict) {
					t.Fatalf("got %v, want ErrConflict", err)
				}
				n := queryInt(t, c, `SELECT (COUNT(*) AS ?n) WHERE { ?s <`+ontology.ParentSession+`> $p }`, kg.Params{"p": kg.MustIRI(ontology.SessionIRI(root.ID))})
				if n != 1 { // the rewind's archive only
					t.Fatalf("got %d forks of the parent, want the rewind's archive only", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sameHistory(t, mustLoad(t, st, f.ID).Turns, root.Turns[:6])
		})
	}
}
