package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// structuredChain stores a root and three forks below it (depth 3), each
// adding structured turns with raw copies and state changes of every
// scope, and returns the leaf as stored.
func structuredChain(t *testing.T, st *session.Store) *session.Session {
	t.Helper()
	root := session.New("agent")
	root.App = "weather"
	root.Initial = map[string]json.RawMessage{"k": json.RawMessage(`"v"`), "gone": json.RawMessage(`1`)}
	agentLoop(root)
	mustPersist(t, st, root)
	s := root
	for d := range 3 {
		f := mustFork(t, s, len(s.Turns)-d%2) // forks inside and at the end of the parent
		f.AppendTurn(session.Turn{Role: "assistant", Content: "step " + storetest.Itoa(d), Structure: &session.Structure{
			Author: "agent", Model: "m", Parts: []session.Part{{Kind: session.PartText, Text: "step"}},
			Raw: &session.Raw{Format: "adk.event/v2", Data: []byte(`{"id":"` + storetest.Itoa(d) + `"}`)},
			Delta: map[string]json.RawMessage{
				"depth": json.RawMessage(storetest.Itoa(d)), "gone": nil,
				"user:units": json.RawMessage(`"C"`), "app:calls": json.RawMessage(storetest.Itoa(d + 1)),
			},
		}})
		f.Append("user", "and then?")
		mustPersist(t, st, f)
		s = f
	}
	return s
}

// sameLean fails t unless got, read with RawOnly, holds the turns of
// want (a full load) with their raw copies and state changes only.
func sameLean(t *testing.T, got, want *session.Session) {
	t.Helper()
	if got.From != want.From || len(got.Turns) != len(want.Turns) {
		t.Fatalf("got From %d and %d turns, want %d and %d", got.From, len(got.Turns), want.From, len(want.Turns))
	}
	for k, g := range got.Turns {
		w := want.Turns[k]
		if g.Index != w.Index || g.ID != w.ID || g.Role != w.Role || g.Content != w.Content || g.Branch != w.Branch || !g.Created.Equal(w.Created) {
			t.Fatalf("turn %d: got %+v, want %+v", w.Index, g, w)
		}
		var wantRaw *session.Raw
		var wantDelta map[string]json.RawMessage
		if w.Structure != nil {
			wantRaw, wantDelta = w.Structure.Raw, w.Structure.Delta
		}
		if wantRaw == nil && len(wantDelta) == 0 {
			if g.Structure != nil {
				t.Errorf("turn %d: got structure %+v, want none", w.Index, g.Structure)
			}
			continue
		}
		x := g.Structure
		if x == nil {
			t.Fatalf("turn %d: no structure, want its raw copy and changes", w.Index)
		}
		if (x.Raw == nil) != (wantRaw == nil) || (wantRaw != nil && (x.Raw.Format != wantRaw.Format || !bytes.Equal(x.Raw.Data, wantRaw.Data))) {
			t.Errorf("turn %d: got raw %+v, want %+v", w.Index, x.Raw, wantRaw)
		}
		if !maps.EqualFunc(x.Delta, wantDelta, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Errorf("turn %d: got delta %s, want %s", w.Index, x.Delta, wantDelta)
		}
		if len(x.Parts) > 0 || x.Author != "" || x.Model != "" || x.Usage != nil || len(x.Metadata) > 0 {
			t.Errorf("turn %d: got typed fields %+v, want raw copy and changes only", w.Index, x)
		}
	}
	if !maps.EqualFunc(got.Values, want.Values, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		t.Errorf("got values %s, want %s", got.Values, want.Values)
	}
	if got.ID != want.ID || got.ParentID != want.ParentID || got.ForkedAt != want.ForkedAt || got.Branch != want.Branch || got.App != want.App {
		t.Errorf("got header %s %s %d %s %s, want %s %s %d %s %s", got.ID, got.ParentID, got.ForkedAt, got.Branch, got.App,
			want.ID, want.ParentID, want.ForkedAt, want.Branch, want.App)
	}
}

// TestRawOnlyLoad: a Load with RawOnly of a structured session at depth
// 3 makes two requests (the chain, then the turns with their raw copies
// and state changes), where a full load makes three, and returns the
// turns, raw copies, changes and values of the full load.
func TestRawOnlyLoad(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, _ := newStore(t)
	ctx := context.Background()
	leaf := structuredChain(t, st)

	before := ct.requests.Load()
	full := mustLoad(t, st, leaf.ID)
	if n := ct.requests.Load() - before; n != 3 {
		t.Errorf("full load: got %d requests, want 3", n)
	}
	if full.Depth() != 3 {
		t.Fatalf("got depth %d, want 3", full.Depth())
	}
	before = ct.requests.Load()
	lean, err := st.Load(ctx, leaf.ID, session.RawOnly())
	if err != nil {
		t.Fatal(err)
	}
	if n := ct.requests.Load() - before; n != 2 {
		t.Errorf("RawOnly load: got %d requests, want 2", n)
	}
	sameLean(t, lean, full)
	if string(lean.Values["depth"]) != "2" || lean.Values["gone"] != nil || string(lean.Values["k"]) != `"v"` || string(lean.Values["app:calls"]) != "3" {
		t.Errorf("got values %s", lean.Values)
	}

	// LoadStructure makes it what the full load returned.
	if err := st.LoadStructure(ctx, lean); err != nil {
		t.Fatal(err)
	}
	sameHistory(t, lean.Turns, full.Turns)
}

// TestRawOnlyTail: a tail read with RawOnly makes two requests whatever
// the depth, with the values the full tail has (changes before the tail
// included).
func TestRawOnlyTail(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	leaf := structuredChain(t, st)
	for _, last := range []int{1, 2, 3, 5, 100} {
		full, err := st.LoadTail(ctx, leaf.ID, session.Tail{Last: last})
		if err != nil {
			t.Fatal(err)
		}
		before := ct.requests.Load()
		lean, err := st.LoadTail(ctx, leaf.ID, session.Tail{Last: last}, session.RawOnly())
		if err != nil {
			t.Fatal(err)
		}
		if n := ct.requests.Load() - before; n > 2 {
			t.Errorf("last %d: got %d requests, want at most 2", last, n)
		}
		sameLean(t, lean, full)
	}
	// With Since: one request more, to find the first turn.
	whole := mustLoad(t, st, leaf.ID)
	since := whole.Turns[len(whole.Turns)-2].Created
	full, err := st.LoadTail(ctx, leaf.ID, session.Tail{Since: since})
	if err != nil {
		t.Fatal(err)
	}
	lean, err := st.LoadTail(ctx, leaf.ID, session.Tail{Since: since}, session.RawOnly())
	if err != nil {
		t.Fatal(err)
	}
	sameLean(t, lean, full)
}

// TestRawOnlyAppend: a whole history loaded with RawOnly appends its next
// turns in one request, with the hash chain and the links of tool
// results intact; a tail, a fork and a value another writer overtook
// persist as after a full load.
func TestRawOnlyAppend(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, c := newStore(t)
	ctx := context.Background()
	leaf := structuredChain(t, st)
	result := func(call string) session.Turn {
		return session.Turn{Role: "tool", Content: "done", Structure: &session.Structure{Parts: []session.Part{
			{Kind: session.PartToolResult, CallID: call, Result: json.RawMessage(`true`)}},
			Delta: map[string]json.RawMessage{"depth": json.RawMessage(`9`)}}}
	}
	load := func() *session.Session {
		t.Helper()
		s, err := st.Load(ctx, leaf.ID, session.RawOnly())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	s := load()
	s.AppendTurn(session.Turn{Role: "assistant", Content: "ok", Structure: &session.Structure{Author: "agent",
		Raw: &session.Raw{Format: "adk.event/v2", Data: []byte(`{}`)}}})
	before := ct.requests.Load()
	mustPersist(t, st, s)
	if n := ct.requests.Load() - before; n != 1 {
		t.Errorf("first append after a RawOnly load: got %d requests, want 1", n)
	}
	sameHistory(t, mustLoad(t, st, leaf.ID).Turns[len(s.Turns)-1:], s.Turns[len(s.Turns)-1:])

	// A tool result answering a call made in a turn read without its
	// parts: Persist reads them, and links the result to its call.
	s = load()
	res := s.AppendTurn(result("call_2"))
	mustPersist(t, st, s)
	q := "ASK { GRAPH ?g { <" + res.ID + "> <" + ontology.ProvWasGeneratedBy + "> <" + ontology.ToolCallIRI(s.Turns[1].ID, 3) + "> } }"
	if ok, err := c.Ask(ctx, q); err != nil || !ok {
		t.Errorf("the result is not linked to its call: got %v (%v), want true", ok, err)
	}
	if got := mustLoad(t, st, leaf.ID); string(got.Values["depth"]) != "9" {
		t.Errorf("got depth %s, want 9", got.Values["depth"])
	}

	// A tail, and a fork of a lean value inside its inherited turns.
	tail, err := st.LoadTail(ctx, leaf.ID, session.Tail{Last: 2}, session.RawOnly())
	if err != nil {
		t.Fatal(err)
	}
	tail.Append("user", "from the tail")
	mustPersist(t, st, tail)
	f := mustFork(t, load(), 3)
	f.AppendTurn(result("call_1 " + hostileText))
	mustPersist(t, st, f)
	sameHistory(t, mustLoad(t, st, f.ID).Turns, f.Turns)

	// Overtaken: another writer appended since the load.
	stale, other := load(), load()
	other.Append("user", "first")
	mustPersist(t, st, other)
	stale.Append("user", "second")
	if err := st.Persist(ctx, stale); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("stale append: got %v, want ErrConflict", err)
	}
	sameLean(t, other, mustLoad(t, st, leaf.ID))

	fs, err := storetest.Check(ctx, admin.New(c))
	if err != nil || len(fs) != 0 {
		t.Fatalf("check: got %v (%v), want no findings", storetest.FindingsText(fs), err)
	}
}
