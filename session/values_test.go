package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// values is shorthand for a state map: "key", "json", ...; a value "-"
// stands for nil (a removal in a delta).
func values(kv ...string) map[string]json.RawMessage {
	m := make(map[string]json.RawMessage)
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "-" {
			m[kv[i]] = nil
			continue
		}
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

// sameValues fails unless got holds exactly want, byte for byte (a nil
// value and JSON null told apart).
func sameValues(tb testing.TB, what string, got, want map[string]json.RawMessage) {
	tb.Helper()
	eq := maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return (a == nil) == (b == nil) && string(a) == string(b) })
	if !eq || len(got) != len(want) {
		show := func(m map[string]json.RawMessage) string {
			var s string
			for _, k := range slices.Sorted(maps.Keys(m)) {
				v := string(m[k])
				if m[k] == nil {
					v = "<nil>"
				}
				s += k + "=" + v + " "
			}
			return s
		}
		tb.Fatalf("%s: got %s, want %s", what, show(got), show(want))
	}
}

// deltaTurn is a turn that changes the state by d.
func deltaTurn(content string, d map[string]json.RawMessage) session.Turn {
	return session.Turn{Role: "assistant", Content: content, Structure: &session.Structure{Delta: d}}
}

// TestValues: the state of a session through Persist, Load, a tail, a
// fork before a state change, a rewind and a detach; temp: keys never
// stored; the values of user: and app: keys shared.
func TestValues(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := session.New("alice")
	root.App = "shop"
	root.Initial = values("a", `1`, "user:name", `"Al"`, "app:quota", `10`, "temp:scratch", `1`)
	root.AppendTurn(deltaTurn("t0", values("a", `2`, "b", `{"x": [1, 2]}`, "temp:t", `true`)))
	root.AppendTurn(session.Turn{Role: "user", Content: "plain"})
	root.AppendTurn(deltaTurn("t2", values("a", "-", "c", `null`)))
	mustPersist(t, st, root)
	if _, ok := root.Initial["temp:scratch"]; ok {
		t.Errorf("Persist left temp:scratch in Initial")
	}
	if _, ok := root.Turns[0].Structure.Delta["temp:t"]; ok {
		t.Errorf("Persist left temp:t in the turn's delta")
	}
	want := values("b", `{"x": [1, 2]}`, "c", `null`, "user:name", `"Al"`, "app:quota", `10`)
	got := mustLoad(t, st, root.ID)
	sameValues(t, "root loaded", got.Values, want)
	sameValues(t, "root in memory", root.Values, values("b", `{"x": [1, 2]}`, "c", `null`))
	sameValues(t, "turn 2's delta loaded", got.Turns[2].Structure.Delta, values("a", "-", "c", `null`))
	if got.App != "shop" {
		t.Errorf("app: got %q, want shop", got.App)
	}

	// A fork before the change at turn 2 sees the state as of turn 1.
	fork := mustFork(t, got, 2)
	asOf1 := values("a", `2`, "b", `{"x": [1, 2]}`, "user:name", `"Al"`, "app:quota", `10`)
	sameValues(t, "fork in memory", fork.Values, asOf1)
	fork.AppendTurn(deltaTurn("f2", values("d", `4`, "user:name", `"Alice"`)))
	mustPersist(t, st, fork)
	asOfFork := values("a", `2`, "b", `{"x": [1, 2]}`, "d", `4`, "user:name", `"Alice"`, "app:quota", `10`)
	sameValues(t, "fork loaded", mustLoad(t, st, fork.ID).Values, asOfFork)
	// The principal's key is shared: the root sees the fork's change.
	want["user:name"] = json.RawMessage(`"Alice"`)
	sameValues(t, "root after the fork's user: change", mustLoad(t, st, root.ID).Values, want)

	// A tail has the values of its last turn.
	for _, n := range []int{1, 2, 3} {
		tail, err := st.LoadTail(ctx, root.ID, session.Tail{Last: n})
		if err != nil {
			t.Fatal(err)
		}
		sameValues(t, "tail of the root", tail.Values, want)
		ft, err := st.LoadTail(ctx, fork.ID, session.Tail{Last: n})
		if err != nil {
			t.Fatal(err)
		}
		sameValues(t, "tail of the fork", ft.Values, asOfFork)
	}

	// Another principal's session of the same app shares app: keys only.
	other := session.New("bob")
	other.App = "shop"
	other.AppendTurn(deltaTurn("o0", values("app:quota", `9`, "user:name", `"Bob"`)))
	mustPersist(t, st, other)
	want["app:quota"] = json.RawMessage(`9`)
	sameValues(t, "root after bob's app: change", mustLoad(t, st, root.ID).Values, want)
	sameValues(t, "bob", mustLoad(t, st, other.ID).Values, values("app:quota", `9`, "user:name", `"Bob"`))

	// Rewind to 2 undoes the session's own change at turn 2; detach keeps
	// the fork's values.
	rew, _ := storetest.MustRewind(t, st, root.ID, 2)
	wantRew := values("a", `2`, "b", `{"x": [1, 2]}`, "user:name", `"Alice"`, "app:quota", `9`)
	sameValues(t, "rewound (returned)", rew.Values, wantRew)
	sameValues(t, "rewound (loaded)", mustLoad(t, st, root.ID).Values, wantRew)
	if err := st.Detach(ctx, fork.ID, session.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	asOfFork["app:quota"] = json.RawMessage(`9`)
	sameValues(t, "detached fork", mustLoad(t, st, fork.ID).Values, asOfFork)
	assertCheckClean(t, c)
}

// TestValuesLateChange: a shared key holds the change the store
// acknowledged last, whatever the turns' creation times (before, a turn
// dated 2099 outranked every later write of its key), and a change sent
// again (a retry, an import run again) does not undo a newer one.
func TestValuesLateChange(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	a := session.New("carol")
	tu := deltaTurn("future", values("user:mood", `"future"`))
	tu.Created = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC) // a client's clock far ahead
	a.AppendTurn(tu)
	mustPersist(t, st, a)
	b := session.New("carol")
	tu = deltaTurn("old", values("user:mood", `"old"`))
	tu.Created = time.Now().UTC().Add(-time.Hour) // one behind
	b.AppendTurn(tu)
	mustPersist(t, st, b)
	sameValues(t, "b, stored last", mustLoad(t, st, b.ID).Values, values("user:mood", `"old"`))
	sameValues(t, "a", mustLoad(t, st, a.ID).Values, values("user:mood", `"old"`))

	// a's change sent again, as a retry or an import would: nothing
	// changes, whether the store or the writer (a time far ahead) stamps
	// it. Through the log only the writer's time is taken: NOW() would
	// differ from replica to replica.
	if !fusekitest.OnCluster() {
		if err := clustertest.Update(ctx, t, c, session.SharedValuesUpdate(a, time.Time{}, a.Turns)); err != nil {
			t.Fatal(err)
		}
		sameValues(t, "a's change sent again", mustLoad(t, st, a.ID).Values, values("user:mood", `"old"`))
	}
	if err := clustertest.Update(ctx, t, c, session.SharedValuesUpdateAt(a, time.Time{}, a.Turns, time.Date(2099, 1, 2, 0, 0, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	sameValues(t, "a's change sent again at the writer's time", mustLoad(t, st, a.ID).Values, values("user:mood", `"old"`))

	// A removal is a change too.
	r := session.New("carol")
	r.AppendTurn(deltaTurn("gone", values("user:mood", "-")))
	mustPersist(t, st, r)
	sameValues(t, "a after the removal", mustLoad(t, st, a.ID).Values, nil)
	assertCheckClean(t, c)
}

// TestValuesInvalid: a bad delta or initial value is refused with
// ErrInvalid and nothing is stored.
func TestValuesInvalid(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	for name, mod := range map[string]func(s *session.Session){
		"app key without app":  func(s *session.Session) { s.AppendTurn(deltaTurn("x", values("app:k", `1`))) },
		"invalid JSON":         func(s *session.Session) { s.AppendTurn(deltaTurn("x", values("k", `{`))) },
		"empty key":            func(s *session.Session) { s.AppendTurn(deltaTurn("x", values("", `1`))) },
		"initial invalid JSON": func(s *session.Session) { s.Initial = values("k", `nope`) },
		"app not UTF-8":        func(s *session.Session) { s.App = "\xff" },
	} {
		s := session.New("dave")
		mod(s)
		if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
		if _, err := st.Load(ctx, s.ID); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%s: load after the refused persist: got %v, want ErrNotFound", name, err)
		}
	}
}

// TestValuesRoundTrips: Load of a depth-32 chain whose sessions change
// the state costs three requests: the chain (with the values sessions
// start with and the shared values), the turns, their structure.
func TestValuesRoundTrips(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, _ := newStore(t)
	ctx := context.Background()
	s := session.New("erin")
	s.App = "deep"
	s.Initial = values("depth", `0`)
	for d := range session.MaxForkDepth + 1 {
		if d > 0 {
			s = mustFork(t, s, len(s.Turns))
		}
		s.AppendTurn(deltaTurn("d", values("depth", storetest.Itoa(d), "app:last", storetest.Itoa(d))))
		mustPersist(t, st, s)
	}
	before := ct.requests.Load()
	got, err := st.Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := ct.requests.Load() - before; n != 3 {
		t.Errorf("requests: got %d, want 3", n)
	}
	sameValues(t, "depth 32", got.Values, values("depth", "32", "app:last", "32"))
}

// assertCheckClean fails when the operators' check finds a problem.
func assertCheckClean(tb testing.TB, c admin.Querier) {
	tb.Helper()
	fs, err := storetest.Check(context.Background(), admin.New(c))
	if err != nil {
		tb.Fatal(err)
	}
	if len(fs) > 0 {
		tb.Fatalf("check: %s", storetest.FindingsText(fs))
	}
}

// TestStateAtQuery: the auditors' state-at query gives the state of a
// session as of turn k, inherited changes included as of the fork point,
// as Load gives it for the whole history.
func TestStateAtQuery(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := session.New("frank")
	root.Initial = values("a", `1`)
	root.AppendTurn(deltaTurn("t0", values("a", `2`, "b", `1`)))
	root.Append("user", "t1")
	root.AppendTurn(deltaTurn("t2", values("a", `3`, "b", "-")))
	mustPersist(t, st, root)
	fork := mustFork(t, root, 2)
	fork.Initial = values("c", `1`)
	fork.AppendTurn(deltaTurn("f2", values("b", `5`)))
	mustPersist(t, st, fork)
	q, ok := prov.Lookup("state-at")
	if !ok {
		t.Fatal("no state-at query")
	}
	for _, tc := range []struct {
		id   string
		k    int
		want map[string]json.RawMessage
	}{
		{root.ID, 0, values("a", `2`, "b", `1`)},
		{root.ID, 2, values("a", `3`, "b", "-")},
		{fork.ID, 1, values("a", `2`, "b", `1`)},
		{fork.ID, 2, values("a", `2`, "b", `5`, "c", `1`)},
	} {
		text, err := q.Bind(map[string]string{"session": tc.id, "k": storetest.Itoa(tc.k)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Select(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		got := make(map[string]json.RawMessage)
		for _, row := range res.Solutions {
			if _, ok := row["value"]; ok {
				got[row.String("key")] = json.RawMessage(row.String("value"))
			} else {
				got[row.String("key")] = nil
			}
		}
		sameValues(t, "state-at "+storetest.Itoa(tc.k), got, tc.want)
	}
	sameValues(t, "fork loaded", mustLoad(t, st, fork.ID).Values, values("a", `2`, "b", `5`, "c", `1`))
}

// TestValuesExportImport: sessions with state (an app, start values, a
// removal, a fork) survive an N-Quads or TriG export and import into an
// empty store, the shared values rebuilt from the imported changes; a
// forged start value is refused.
func TestValuesExportImport(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	c := fusekitest.Empty(t)
	st := session.NewStore(querier(t, c))
	root := session.New("gina")
	root.App = "bank/ü"
	root.Initial = values("k", `"v"`, "user:lang", `"it"`, "app:rate", `0.5`)
	root.AppendTurn(deltaTurn("t0", values("k", "-", "n", `[1,{"a":"\u00e9\n"}]`)))
	mustPersist(t, st, root)
	fork := mustFork(t, root, 1)
	fork.AppendTurn(deltaTurn("f1", values("user:lang", `"de"`)))
	mustPersist(t, st, fork)
	want := map[string]*session.Session{root.ID: mustLoad(t, st, root.ID), fork.ID: mustLoad(t, st, fork.ID)}
	sameValues(t, "root", want[root.ID].Values, values("n", `[1,{"a":"\u00e9\n"}]`, "user:lang", `"de"`, "app:rate", `0.5`))
	fusekitest.RequireDirect(t, "it wipes its whole dataset (the replicas' applied offsets with it) before it imports with admin.Dataset")
	for _, f := range []admin.Format{admin.NQuads, admin.TriG} {
		var b bytes.Buffer
		if _, err := admin.New(c).Export(ctx, &b, f); err != nil {
			t.Fatal(err)
		}
		c2 := fusekitest.Empty(t)
		for range 2 { // a second import changes nothing
			if _, err := admin.New(c2).Import(ctx, bytes.NewReader(b.Bytes()), f, nil); err != nil {
				t.Fatalf("%s: import: %v", f, err)
			}
		}
		st2 := session.NewStore(querier(t, c2))
		for id, w := range want {
			got := mustLoad(t, st2, id)
			sameSession(t, got, w)
			sameValues(t, string(f)+" "+id, got.Values, w.Values)
			if got.App != w.App {
				t.Errorf("%s: app: got %q, want %q", f, got.App, w.App)
			}
		}
		assertCheckClean(t, c2)
	}

	// A forged start value is refused, and nothing is written.
	var b bytes.Buffer
	if _, err := admin.New(c).Export(ctx, &b, admin.NQuads, root.ID); err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(b.String(), `"\"v\""^^<`+ontology.RDFJSON+`>`, `"\"w\"" `, 1)
	if forged == b.String() {
		t.Fatal("the export holds no start value to forge")
	}
	c3 := fusekitest.Empty(t)
	if _, err := admin.New(c3).Import(ctx, strings.NewReader(forged), admin.NQuads, nil); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("forged start value: got %v, want ErrInvalid", err)
	}
	if n := storetest.CountQuads(t, c3, ""); n != 0 {
		t.Fatalf("forged import wrote %d quads", n)
	}
}

// TestValuesDetach: a detached fork keeps its state at every turn, the
// values its ancestors started with included (copied, each where it
// applied), and keeps it through an export and import.
func TestValuesDetach(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	c := fusekitest.Empty(t)
	st := session.NewStore(querier(t, c))
	root := session.New("hana")
	root.Initial = values("w", `1`, "x", `1`)
	root.AppendTurn(deltaTurn("t0", values("x", `2`)))
	root.Append("user", "t1")
	mustPersist(t, st, root)
	f1 := mustFork(t, root, 2)
	f1.Initial = values("x", `3`, "y", `1`)
	f1.AppendTurn(deltaTurn("t2", values("z", `1`)))
	mustPersist(t, st, f1)
	f2 := mustFork(t, mustLoad(t, st, f1.ID), 3)
	f2.Initial = values("y", `2`)
	f2.AppendTurn(deltaTurn("t3", values("x", `4`)))
	mustPersist(t, st, f2)
	want := values("w", `1`, "x", `4`, "y", `2`, "z", `1`)
	sameValues(t, "before the detach", mustLoad(t, st, f2.ID).Values, want)
	atTurn := func(st *session.Store, k int) map[string]json.RawMessage {
		s, err := st.Load(ctx, f2.ID)
		if err != nil {
			t.Fatal(err)
		}
		fork, err := s.Fork(k)
		if err != nil {
			t.Fatal(err)
		}
		return fork.Values
	}
	var before []map[string]json.RawMessage
	for k := range 5 {
		before = append(before, atTurn(st, k))
	}
	if err := st.Detach(ctx, f2.ID, session.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	sameValues(t, "after the detach", mustLoad(t, st, f2.ID).Values, want)
	for k := range 5 {
		sameValues(t, "detached, as of turn "+storetest.Itoa(k), atTurn(st, k), before[k])
	}
	assertCheckClean(t, c)
	fusekitest.RequireDirect(t, "it wipes its whole dataset (the replicas' applied offsets with it) before it imports with admin.Dataset")
	var b bytes.Buffer
	if _, err := admin.New(c).Export(ctx, &b, admin.NQuads, f2.ID); err != nil {
		t.Fatal(err)
	}
	c2 := fusekitest.Empty(t)
	if _, err := admin.New(c2).Import(ctx, bytes.NewReader(b.Bytes()), admin.NQuads, nil); err != nil {
		t.Fatalf("import: %v", err)
	}
	sameValues(t, "imported", mustLoad(t, session.NewStore(querier(t, c2)), f2.ID).Values, want)
	assertCheckClean(t, c2)
}

// TestValuesJSONL: a JSONL export carries each turn's changes, removals
// apart from JSON null.
func TestValuesJSONL(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	st, _, c := newStore(t)
	s := session.New("ivan")
	s.AppendTurn(deltaTurn("t0", values("a", `null`, "b", "-", "user:c", `{"d":1}`)))
	mustPersist(t, st, s)
	var b bytes.Buffer
	if _, err := admin.New(c).Export(ctx, &b, admin.JSONL, s.ID); err != nil {
		t.Fatal(err)
	}
	var line struct {
		Delta   map[string]json.RawMessage `json:"state_delta"`
		Removed []string                   `json:"state_removed"`
	}
	if err := json.Unmarshal(b.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	sameValues(t, "state_delta", line.Delta, values("a", `null`, "user:c", `{"d":1}`))
	if !slices.Equal(line.Removed, []string{"b"}) {
		t.Fatalf("state_removed: got %v, want [b]", line.Removed)
	}
}

// TestValuesRewindArchive: the archive a rewind makes belongs to the
// rewound session's app, as any fork does, so that its app: keys are the
// app's. Before, the archive was stored without the app: Load gave it
// none, and its state lacked the app's values.
func TestValuesRewindArchive(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	s := session.New("dora")
	s.App = "shop"
	s.AppendTurn(deltaTurn("t0", values("app:open", `true`, "k", `1`)))
	s.AppendTurn(deltaTurn("t1", values("k", `2`)))
	mustPersist(t, st, s)
	_, r := storetest.MustRewind(t, st, s.ID, 1)
	a := mustLoad(t, st, r.Archive)
	if a.App != "shop" {
		t.Errorf("archive's app: got %q, want shop", a.App)
	}
	sameValues(t, "archive", a.Values, values("app:open", `true`, "k", `2`))
	// A fork of the archive is the app's too.
	f := mustFork(t, a, 2)
	f.AppendTurn(deltaTurn("f2", values("app:open", `false`)))
	mustPersist(t, st, f)
	sameValues(t, "rewound session", mustLoad(t, st, s.ID).Values, values("app:open", `false`, "k", `1`))
	assertCheckClean(t, c)
}

// TestValuesRewindMovesChanges: the state changes of the turns a rewind
// moves go with them into the archive's graph, as their parts do, so that
// the archive keeps them when the rewound session is deleted. Before, the
// changes stayed in the rewound session's graph: deleting it took them,
// and the archive's turns lost their deltas and its state.
func TestValuesRewindMovesChanges(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	s := session.New("fay")
	s.AppendTurn(deltaTurn("t0", values("k", `0`)))
	s.AppendTurn(deltaTurn("t1", values("k", `1`, "gone", `true`)))
	s.AppendTurn(deltaTurn("t2", values("gone", "-")))
	mustPersist(t, st, s)
	_, r := storetest.MustRewind(t, st, s.ID, 1)
	if err := st.Delete(ctx, s.ID, session.DeleteOptions{DetachChildren: true}); err != nil {
		t.Fatal(err)
	}
	a := mustLoad(t, st, r.Archive)
	sameValues(t, "archive after its parent's deletion", a.Values, values("k", `1`))
	sameValues(t, "archive's turn 1 delta", a.Turns[1].Structure.Delta, values("k", `1`, "gone", `true`))
	sameValues(t, "archive's turn 2 delta", a.Turns[2].Structure.Delta, values("gone", "-"))
	assertCheckClean(t, c)
}
