package session_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

func mustAnchor(tb testing.TB, st *session.Store, id, name string, state map[string]string) session.Anchor {
	tb.Helper()
	return storetest.MustAnchor(tb, st, id, name, state)
}

// anchorAt fails tb unless s has an anchor named name at index at, named by
// session owner.
func anchorAt(tb testing.TB, s *session.Session, name string, at int, owner string) {
	tb.Helper()
	a, ok := s.Anchors[name]
	if !ok {
		tb.Fatalf("session %s: no anchor %q; got %v", s.ID, name, s.Anchors)
	}
	if a.Index != at || a.Session != owner || a.Name != name {
		tb.Fatalf("anchor %q: got index %d of %s, want %d of %s", name, a.Index, a.Session, at, owner)
	}
}

// noAnchor fails tb if s has an anchor named name.
func noAnchor(tb testing.TB, s *session.Session, name string) {
	tb.Helper()
	if a, ok := s.Anchors[name]; ok {
		tb.Fatalf("session %s: got anchor %q at %d of %s, want none", s.ID, name, a.Index, a.Session)
	}
}

func TestAnchorRoundTrip(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 4)
	state := map[string]string{"context": "Working on feature X", "quote": "say \"hi\"\n", "é": ""}
	a := mustAnchor(t, st, root.ID, "task_start", state)
	if a.Name != "task_start" || a.Index != 4 || a.Session != root.ID || !maps.Equal(a.State, state) || a.Created.IsZero() {
		t.Fatalf("got %+v, want task_start at 4 of %s with the state given", a, root.ID)
	}
	// Turns appended in memory do not count: the position is the store's.
	appendN(root, 2, "root")
	if a := mustAnchor(t, st, root.ID, "stored-only", nil); a.Index != 4 || a.State != nil {
		t.Fatalf("got %+v, want index 4 and no state", a)
	}
	mustPersist(t, st, root)
	if a := mustAnchor(t, st, root.ID, "later", nil); a.Index != 6 {
		t.Fatalf("got index %d, want 6", a.Index)
	}

	got := mustLoad(t, st, root.ID)
	if len(got.Anchors) != 3 {
		t.Fatalf("got %d anchors, want 3: %v", len(got.Anchors), got.Anchors)
	}
	anchorAt(t, got, "task_start", 4, root.ID)
	anchorAt(t, got, "stored-only", 4, root.ID)
	anchorAt(t, got, "later", 6, root.ID)
	if l := got.Anchors["task_start"]; !maps.Equal(l.State, state) || !l.Created.Equal(a.Created) {
		t.Fatalf("loaded anchor: got state %v created %v, want %v %v", l.State, l.Created, state, a.Created)
	}

	// A name is unique in a session: the anchor stays where it was.
	if _, err := st.Anchor(ctx, root.ID, "task_start", nil); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("anchor an existing name: got %v, want ErrConflict", err)
	}
	anchorAt(t, mustLoad(t, st, root.ID), "task_start", 4, root.ID)
}

func TestAnchorErrors(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 2)
	tests := []struct {
		name    string
		id      string
		anchor  string
		state   map[string]string
		want    error
		network bool // the store is asked
	}{
		{"unknown session", newID(), "x", nil, session.ErrNotFound, true},
		{"bad id", "not-a-uuid", "x", nil, session.ErrInvalid, false},
		{"empty name", root.ID, "", nil, session.ErrInvalid, false},
		{"space in name", root.ID, "task start", nil, session.ErrInvalid, false},
		{"newline in name", root.ID, "task\n", nil, session.ErrInvalid, false},
		{"long name", root.ID, strings.Repeat("a", 129), nil, session.ErrInvalid, false},
		{"invalid UTF-8 name", root.ID, "a\xff", nil, session.ErrInvalid, false},
		{"empty state key", root.ID, "x", map[string]string{"": "v"}, session.ErrInvalid, false},
		{"invalid UTF-8 state", root.ID, "x", map[string]string{"k": "\xff"}, session.ErrInvalid, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := ct.requests.Load()
			_, err := st.Anchor(ctx, tc.id, tc.anchor, tc.state)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if sent := ct.requests.Load() - before; !tc.network && sent != 0 {
				t.Fatalf("got %d requests, want none", sent)
			}
		})
	}
	if got := mustLoad(t, st, root.ID); len(got.Anchors) != 0 {
		t.Fatalf("got anchors %v after refused anchors, want none", got.Anchors)
	}
	// A name with characters an IRI cannot hold raw is percent-encoded.
	odd := `50%<"{}|^>/?#ü`
	mustAnchor(t, st, root.ID, odd, nil)
	anchorAt(t, mustLoad(t, st, root.ID), odd, 2, root.ID)
}

// TestAnchorInheritance: a fork sees its own anchors and those of its
// ancestors inside the prefix it inherits, the nearest session winning a
// shared name; an ancestor's anchor beyond the fork point is not seen.
func TestAnchorInheritance(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	root := persisted(t, st, "alice", 2)
	mustAnchor(t, st, root.ID, "early", nil) // 2
	appendN(root, 2, "root")
	mustPersist(t, st, root)
	mustAnchor(t, st, root.ID, "mid", nil) // 4
	appendN(root, 2, "root")
	mustPersist(t, st, root)
	mustAnchor(t, st, root.ID, "late", nil) // 6

	// root [0,4) fork [4,…)
	fork := mustFork(t, mustLoad(t, st, root.ID), 4)
	anchorAt(t, fork, "mid", 4, root.ID) // Fork carries the anchors in memory too
	noAnchor(t, fork, "late")
	mustPersist(t, st, fork)
	appendN(fork, 1, "fork")
	mustPersist(t, st, fork)
	mustAnchor(t, st, fork.ID, "early", nil) // 5: shadows the root's
	got := mustLoad(t, st, fork.ID)
	anchorAt(t, got, "early", 5, fork.ID)
	anchorAt(t, got, "mid", 4, root.ID) // at the fork point: inside the prefix
	noAnchor(t, got, "late")            // beyond the fork point
	if len(got.Anchors) != 2 {
		t.Fatalf("got anchors %v, want early and mid", got.Anchors)
	}

	// root [0,3) leaf [3,…): the fork's "early" (5) is beyond the leaf's
	// fork point, so the root's (2) is the one the leaf sees; the root's
	// "mid" (4) is beyond it too.
	leaf := mustFork(t, got, 3)
	mustPersist(t, st, leaf)
	gotLeaf := mustLoad(t, st, leaf.ID)
	anchorAt(t, gotLeaf, "early", 2, root.ID)
	noAnchor(t, gotLeaf, "mid")
	noAnchor(t, gotLeaf, "late")

	// A session that contributes no turn still passes on an anchor at
	// its fork point: root [0,4) mid (no turns, anchor "m" at 4) tip [4,…).
	mid := mustFork(t, mustLoad(t, st, root.ID), 4)
	mustPersist(t, st, mid)
	mustAnchor(t, st, mid.ID, "m", nil)
	tip := mustFork(t, mustLoad(t, st, mid.ID), 4)
	mustPersist(t, st, tip)
	gotTip := mustLoad(t, st, tip.ID)
	anchorAt(t, gotTip, "m", 4, mid.ID)
	anchorAt(t, gotTip, "mid", 4, root.ID)
	anchorAt(t, gotTip, "early", 2, root.ID)
	noAnchor(t, gotTip, "late")
}

// TestTurnIDs: each turn's ID is the IRI of the stored turn, that of the
// session that wrote it, from Append, Persist, Load and Replay alike.
func TestTurnIDs(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	root := persisted(t, st, "alice", 3)
	fork := mustFork(t, root, 2)
	appendN(fork, 2, "fork")
	for i, tn := range fork.Turns { // in memory, before Persist
		owner := root.ID
		if i >= 2 {
			owner = fork.ID
		}
		if want := session.TurnID(owner, i); tn.ID != want {
			t.Fatalf("turn %d in memory: got ID %q, want %q", i, tn.ID, want)
		}
	}
	mustPersist(t, st, fork)
	replayed, err := st.Replay(context.Background(), fork.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, turns := range [][]session.Turn{mustLoad(t, st, fork.ID).Turns, replayed} {
		for i, tn := range turns {
			if tn.ID != fork.Turns[i].ID {
				t.Fatalf("turn %d: got ID %q, want %q", i, tn.ID, fork.Turns[i].ID)
			}
		}
	}
	if want := ontology.SessionIRI(root.ID) + "/turn/1"; fork.Turns[1].ID != want {
		t.Fatalf("got %q, want %q", fork.Turns[1].ID, want)
	}
}

func TestForkAtAnchorAndTurn(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 3)
	mustAnchor(t, st, root.ID, "task_start", nil) // 3
	appendN(root, 3, "root")
	mustPersist(t, st, root)
	mid := mustFork(t, root, 5)
	appendN(mid, 2, "mid")
	mustPersist(t, st, mid)
	s := mustLoad(t, st, mid.ID)         // root [0,5) mid [5,7)
	beyond := session.TurnID(root.ID, 5) // the root's, not in mid's history

	tests := []struct {
		name   string
		at     int
		opts   []session.ForkOption
		wantAt int
		want   error
	}{
		{"index", 4, nil, 4, nil},
		{"anchor of the parent's ancestor", -1, []session.ForkOption{session.ForkAtAnchor("task_start")}, 3, nil},
		{"own turn", -1, []session.ForkOption{session.ForkAtTurn(session.TurnID(mid.ID, 6))}, 6, nil},
		{"inherited turn", -1, []session.ForkOption{session.ForkAtTurn(session.TurnID(root.ID, 1))}, 1, nil},
		{"first turn: fork from the start", -1, []session.ForkOption{session.ForkAtTurn(s.Turns[0].ID)}, 0, nil},
		{"unknown anchor", -1, []session.ForkOption{session.ForkAtAnchor("nope")}, 0, session.ErrNotFound},
		{"unknown turn", -1, []session.ForkOption{session.ForkAtTurn(session.TurnID(mid.ID, 99))}, 0, session.ErrNotFound},
		{"turn beyond the fork point", -1, []session.ForkOption{session.ForkAtTurn(beyond)}, 0, session.ErrNotFound},
		{"empty turn id", -1, []session.ForkOption{session.ForkAtTurn("")}, 0, session.ErrNotFound},
		{"index beside an anchor", 2, []session.ForkOption{session.ForkAtAnchor("task_start")}, 0, session.ErrInvalid},
		{"anchor and turn", -1, []session.ForkOption{session.ForkAtAnchor("task_start"), session.ForkAtTurn(s.Turns[0].ID)}, 0, session.ErrInvalid},
		{"-1 alone", -1, nil, 0, session.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := s.Fork(tc.at, tc.opts...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			if f.ForkedAt != tc.wantAt || len(f.Turns) != tc.wantAt {
				t.Fatalf("got fork point %d and %d turns, want %d", f.ForkedAt, len(f.Turns), tc.wantAt)
			}
			sameHistory(t, f.Turns, s.Turns[:tc.wantAt])
		})
	}

	// Persisted, a fork at an anchor or before a turn says so in PROV.
	byAnchor, err := s.Fork(-1, session.ForkAtAnchor("task_start"))
	if err != nil {
		t.Fatal(err)
	}
	byTurn, err := s.Fork(-1, session.ForkAtTurn(session.TurnID(root.ID, 1)))
	if err != nil {
		t.Fatal(err)
	}
	mustPersist(t, st, byAnchor)
	mustPersist(t, st, byTurn)
	sameHistory(t, mustLoad(t, st, byAnchor.ID).Turns, s.Turns[:3])
	anchorIRI := ontology.AnchorIRI(ontology.SessionIRI(root.ID), "task_start")
	for _, tc := range []struct {
		fork      *session.Session
		pred, obj string
		point     int
	}{
		{byAnchor, ontology.FromAnchor, anchorIRI, 3},
		{byTurn, ontology.BeforeTurn, session.TurnID(root.ID, 1), 1},
	} {
		q, err := kg.Bind(`ASK { GRAPH $prov { $child <http://www.w3.org/ns/prov#wasGeneratedBy> ?act .
			?act $pred $obj ; $point $n } }`, kg.Params{
			"prov": kg.MustIRI(ontology.ProvGraph), "child": kg.MustIRI(ontology.SessionIRI(tc.fork.ID)),
			"pred": kg.MustIRI(tc.pred), "obj": kg.MustIRI(tc.obj),
			"point": kg.MustIRI(ontology.ForkPoint), "n": kg.Int(tc.point),
		})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := c.Ask(ctx, q); err != nil || !ok {
			t.Fatalf("fork %s: no <%s> <%s> at %d in PROV (%v)", tc.fork.ID, tc.pred, tc.obj, tc.point, err)
		}
	}
}

// TestDetachKeepsAnchors: Detach materializes the anchors inside the
// prefix with the turns, so the detached session can still be forked at
// them.
func TestDetachKeepsAnchors(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 4)
	mustAnchor(t, st, root.ID, "two", nil)
	fork := mustFork(t, mustLoad(t, st, root.ID), 4)
	appendN(fork, 1, "fork")
	mustPersist(t, st, fork)
	mustAnchor(t, st, fork.ID, "own", map[string]string{"k": "v"})
	if err := st.Detach(ctx, fork.ID, session.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	got := mustLoad(t, st, fork.ID)
	anchorAt(t, got, "two", 4, fork.ID) // now its own copy
	anchorAt(t, got, "own", 5, fork.ID)
	if len(got.Anchors) != 2 || got.Anchors["own"].State["k"] != "v" {
		t.Fatalf("got anchors %v, want two and own (with its state)", got.Anchors)
	}
	f, err := got.Fork(-1, session.ForkAtAnchor("two"))
	if err != nil || f.ForkedAt != 4 {
		t.Fatalf("fork at the copied anchor: got %v, %v; want a fork at 4", f, err)
	}
}

// TestAnchorScoped: a Store scoped to a principal anchors only its own
// sessions.
func TestAnchorScoped(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	theirs := persisted(t, st, "bob-"+newID(), 2)
	mine := session.NewStore(querier(t, c), session.ForPrincipal("carol-"+newID()))
	if _, err := mine.Anchor(context.Background(), theirs.ID, "x", nil); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
	if got := mustLoad(t, st, theirs.ID); len(got.Anchors) != 0 {
		t.Fatalf("got anchors %v written through another principal's store, want none", got.Anchors)
	}
}

// TestAnchorsAndTagsConform: a session graph with anchors and tags
// conforms to the SHACL shapes.
func TestAnchorsAndTagsConform(t *testing.T) {
	fusekitest.RequireFuseki(t, "the SHACL endpoint")
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	s := persisted(t, st, "alice", 2)
	mustAnchor(t, st, s.ID, "task_start", map[string]string{"context": "x"})
	mustAnchor(t, st, s.ID, "bare", nil)
	if err := st.Tag(ctx, s.ID, "experiment", "ünïcode"); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Validate(ctx, ontology.Shapes, ontology.SessionIRI(s.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Conforms {
		t.Fatalf("got violations: %+v", rep.Results)
	}
}
