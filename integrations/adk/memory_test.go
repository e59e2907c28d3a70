package adk_test

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	trails "github.com/trails-kg/trails/session"
)

// newMemory returns a memory service and a session service over tb's
// dataset, wiped.
func newMemory(tb testing.TB, opts ...adk.MemoryOption) (*adk.MemoryService, *adk.SessionService) {
	tb.Helper()
	c := fusekitest.Empty(tb)
	q := clustertest.Querier(tb, c)
	return adk.NewMemoryService(q, opts...), adk.NewSessionService(trails.NewStore(q))
}

// plainSession is an ADK session value of no service of this package,
// like the values of ADK's own session services: AddSessionToMemory
// stores it. Its state is never read.
type plainSession struct {
	app, user, id string
	events        []*session.Event
}

func (s *plainSession) ID() string                    { return s.id }
func (s *plainSession) AppName() string               { return s.app }
func (s *plainSession) UserID() string                { return s.user }
func (s *plainSession) Events() session.Events        { return s }
func (s *plainSession) All() iter.Seq[*session.Event] { return slices.Values(s.events) }
func (s *plainSession) Len() int                      { return len(s.events) }
func (s *plainSession) At(i int) *session.Event       { return s.events[i] }
func (s *plainSession) State() session.State          { panic("state read") }
func (s *plainSession) LastUpdateTime() time.Time     { panic("last update time read") }

// textEvent returns an event with text of role, by author, at minute min
// of a fixed day (the zero time when min < 0).
func textEvent(id, author, text, role string, min int) *session.Event {
	ev := &session.Event{ID: id, Author: author, LLMResponse: model.LLMResponse{Content: genai.NewContentFromText(text, genai.Role(role))}}
	if min >= 0 {
		ev.Timestamp = time.Date(2026, 10, 1, 10, min, 0, 0, time.UTC)
	}
	return ev
}

// search returns the entries of a search of user's memory in app.
func search(tb testing.TB, m *adk.MemoryService, app, user, query string) []memory.Entry {
	tb.Helper()
	got, err := m.SearchMemory(tb.(*testing.T).Context(), &memory.SearchRequest{AppName: app, UserID: user, Query: query})
	if err != nil {
		tb.Fatalf("search %q: %v", query, err)
	}
	return got.Memories
}

// entryIDs returns the ids of entries, in order.
func entryIDs(entries []memory.Entry) []string {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	return ids
}

// TestMemorySearch: the cases of ADK's in-memory memory service, each on
// a wiped dataset: events of a user's sessions found by a word each, the
// entries as ADK's service gives them, nothing of another app or user,
// nothing for words no event holds or on an empty store.
func TestMemorySearch(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.Endpoint(t) // the dataset of all the cases, wiped by each
	fox := textEvent("event1", "user1", "The Quick brown fox", "user", 0)
	fox.CustomMetadata = map[string]any{"key": "value"}
	hello := textEvent("", "test-bot", "hello world", "model", 60*24)
	three := func() []session.Session {
		return []session.Session{
			&plainSession{"app1", "user1", "sess1", []*session.Event{fox, textEvent("", "", "jumps over the lazy dog", "model", -1)}},
			&plainSession{"app1", "user1", "sess2", []*session.Event{hello}},
			&plainSession{"app1", "user1", "sess3", []*session.Event{textEvent("", "", "test text", "user", -1)}},
		}
	}
	one := func() []session.Session {
		return []session.Session{&plainSession{"app1", "user1", "sess3", []*session.Event{textEvent("", "", "test text", "user", -1)}}}
	}
	tests := []struct {
		name     string
		sessions []session.Session
		req      memory.SearchRequest
		want     []memory.Entry
	}{
		{"find events", three(), memory.SearchRequest{AppName: "app1", UserID: "user1", Query: "quick hello"}, []memory.Entry{
			{ID: "event1", Content: genai.NewContentFromText("The Quick brown fox", genai.RoleUser), Author: "user1",
				Timestamp: fox.Timestamp, CustomMetadata: map[string]any{"key": "value"}},
			{Content: genai.NewContentFromText("hello world", genai.RoleModel), Author: "test-bot", Timestamp: hello.Timestamp},
		}},
		{"no leakage for different app name", one(), memory.SearchRequest{AppName: "other_app", UserID: "user1", Query: "test text"}, nil},
		{"no leakage for different user", one(), memory.SearchRequest{AppName: "app1", UserID: "test_user", Query: "test text"}, nil},
		{"no matches", one(), memory.SearchRequest{AppName: "app1", UserID: "user1", Query: "something different"}, nil},
		{"lookup on empty store", nil, memory.SearchRequest{AppName: "app1", UserID: "test_user", Query: "something different"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newMemory(t)
			for _, s := range tt.sessions {
				if err := m.AddSessionToMemory(t.Context(), s); err != nil {
					t.Fatalf("add %s: %v", s.ID(), err)
				}
			}
			got, err := m.SearchMemory(t.Context(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			byTime := func(a, b memory.Entry) int { return a.Timestamp.Compare(b.Timestamp) }
			slices.SortFunc(got.Memories, byTime)
			if diff := cmp.Diff(tt.want, got.Memories); diff != "" {
				t.Errorf("search %q (-want +got):\n%s", tt.req.Query, diff)
			}
		})
	}
}

// TestMemoryRanking: the events holding more of the query's words come
// first, the newest first among equals; words match whole and whatever
// their case, punctuation aside; the limit keeps the best.
func TestMemoryRanking(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	m, _ := newMemory(t)
	s := &plainSession{"app", "u1", "s1", []*session.Event{
		textEvent("old-lisbon", "user", "Weather in Lisbon?", "user", 1),
		textEvent("both", "agent", "LISBON: sunny, 24°C. Porto: rain.", "model", 2),
		textEvent("new-lisbon", "user", "and lisbon tomorrow", "user", 3),
		textEvent("prefix", "user", "lisbonese porto-ish", "user", 4), // "porto" whole, "lisbon" not
		textEvent("none", "user", "Madrid", "user", 5),
	}}
	if err := m.AddSessionToMemory(ctx, s); err != nil {
		t.Fatal(err)
	}
	got := entryIDs(search(t, m, "app", "u1", "Lisbon, porto! lisbon"))
	if want := []string{"both", "prefix", "new-lisbon", "old-lisbon"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	m2 := adk.NewMemoryService(clustertest.Querier(t, fusekitest.New(t)), adk.WithSearchLimit(2))
	if got, want := entryIDs(search(t, m2, "app", "u1", "lisbon porto")), []string{"both", "prefix"}; !slices.Equal(got, want) {
		t.Errorf("limit 2: got %v, want %v", got, want)
	}
	for _, q := range []string{"", "  ,;!  ", "lisbo", "°"} {
		if got := search(t, m, "app", "u1", q); len(got) != 0 {
			t.Errorf("query %q: got %v, want nothing", q, entryIDs(got))
		}
	}
}

// appendText appends an event with text to session cur of svc.
func appendText(tb testing.TB, svc *adk.SessionService, cur session.Session, id, text string) {
	tb.Helper()
	ev := session.NewEvent(tb.(*testing.T).Context(), "inv-"+id)
	ev.ID, ev.Author = id, "agent"
	ev.Content = genai.NewContentFromText(text, genai.RoleModel)
	if err := svc.AppendEvent(tb.(*testing.T).Context(), cur, ev); err != nil {
		tb.Fatalf("append %s: %v", id, err)
	}
}

// TestMemoryOwnSessions: a session of the session service is marked, not
// copied: what is appended after it was added is found as well; a session
// not added is not searched; a fork added brings the events it shares with
// its parent, once even when the parent is added too; a session deleted
// leaves memory.
func TestMemoryOwnSessions(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	m, svc := newMemory(t)
	create := func(id string) session.Session {
		c, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1", SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		return c.Session
	}
	a, b := create("a"), create("b")
	appendText(t, svc, a, "a1", "the otter sleeps")
	appendText(t, svc, b, "b1", "the otter swims")
	if err := m.AddSessionToMemory(ctx, a); err != nil {
		t.Fatal(err)
	}
	appendText(t, svc, a, "a2", "another otter")
	if got, want := entryIDs(search(t, m, "app", "u1", "otter")), []string{"a2", "a1"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v (b not added)", got, want)
	}
	if err := m.AddSessionToMemory(ctx, a); err != nil { // twice is once
		t.Fatal(err)
	}
	fork, err := svc.Fork(ctx, adk.Key{AppName: "app", UserID: "u1", SessionID: "a"}, adk.AtEvent("a1"), "try")
	if err != nil {
		t.Fatal(err)
	}
	appendText(t, svc, fork, "f1", "a forked otter")
	if err := m.AddSessionToMemory(ctx, fork); err != nil {
		t.Fatal(err)
	}
	if got, want := entryIDs(search(t, m, "app", "u1", "otter")), []string{"f1", "a2", "a1"}; !slices.Equal(got, want) {
		t.Errorf("with the fork: got %v, want %v", got, want)
	}
	if err := svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u1", SessionID: "a"}); err != nil {
		t.Fatal(err)
	}
	// The fork was detached, given its copy of a1: it is still in memory.
	got := search(t, m, "app", "u1", "otter")
	if len(got) != 2 || got[0].ID != "f1" || got[1].ID != "a1" {
		t.Errorf("after deleting a: got %v, want [f1 a1]", entryIDs(got))
	}
}

// TestMemoryScope: two users' sessions with the same id and words, in two
// apps: each search returns its user's events of its app only.
func TestMemoryScope(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	m, _ := newMemory(t)
	for _, app := range []string{"app", "other"} {
		for _, u := range []string{"u1", "u2", "u1 "} {
			s := &plainSession{app, u, "s1", []*session.Event{textEvent(app+"/"+u, u, "secret plan", "user", 0)}}
			if err := m.AddSessionToMemory(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, app := range []string{"app", "other"} {
		for _, u := range []string{"u1", "u2", "u1 "} {
			got := entryIDs(search(t, m, app, u, "secret"))
			if want := []string{app + "/" + u}; !slices.Equal(got, want) {
				t.Errorf("%s of %q: got %v, want %v", app, u, got, want)
			}
		}
	}
	if got := search(t, m, "app", "u3", "secret"); len(got) != 0 {
		t.Errorf("u3: got %v, want nothing", entryIDs(got))
	}
}

// TestMemoryAddAgain: a session of another service added again with more
// events stores the new ones only; a value whose events differ from the
// stored ones is refused with ErrDiverged and nothing changes.
func TestMemoryAddAgain(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	m, svc := newMemory(t)
	s := &plainSession{"app", "u1", "s1", []*session.Event{textEvent("e1", "user", "first otter", "user", 1)}}
	if err := m.AddSessionToMemory(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.events = append(s.events, textEvent("e2", "agent", "second otter", "model", 2),
		&session.Event{ID: "partial", LLMResponse: model.LLMResponse{Partial: true, Content: genai.NewContentFromText("otter", "model")}})
	if err := m.AddSessionToMemory(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got, want := entryIDs(search(t, m, "app", "u1", "otter")), []string{"e2", "e1"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	ids, _ := eventIDs(t, svc, adk.Key{AppName: "app", UserID: "u1", SessionID: "s1"})
	sameIDs(t, "stored", ids, "e1", "e2")

	other := &plainSession{"app", "u1", "s1", []*session.Event{textEvent("e1", "user", "first otter", "user", 1),
		textEvent("x2", "agent", "another otter", "model", 2), textEvent("x3", "agent", "more", "model", 3)}}
	if err := m.AddSessionToMemory(ctx, other); !errors.Is(err, adk.ErrDiverged) {
		t.Fatalf("got %v, want ErrDiverged", err)
	}
	ids, _ = eventIDs(t, svc, adk.Key{AppName: "app", UserID: "u1", SessionID: "s1"})
	sameIDs(t, "after the refusal", ids, "e1", "e2")
}

// TestMemoryInvalid: requests without the fields ADK requires are
// ErrInvalid, with nothing stored; a query made to break out of the
// SPARQL string finds what its words find and changes nothing.
func TestMemoryInvalid(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	m, svc := newMemory(t)
	bad := []session.Session{nil, &plainSession{"", "u1", "s1", nil}, &plainSession{"app", "", "s1", nil}, &plainSession{"app", "u1", "", nil},
		&plainSession{"app", "u1", "s1", []*session.Event{{ID: "e", Actions: session.EventActions{StateDelta: map[string]any{"k": func() {}}}}}},
		&plainSession{"app", "u1\x00", "s1", []*session.Event{textEvent("e1", "user", "hi", "user", 1)}}}
	for i, s := range bad {
		if err := m.AddSessionToMemory(ctx, s); !errors.Is(err, adk.ErrInvalid) {
			t.Errorf("session %d: got %v, want ErrInvalid", i, err)
		}
	}
	for _, req := range []*memory.SearchRequest{nil, {UserID: "u1", Query: "x"}, {AppName: "app", Query: "x"}} {
		if _, err := m.SearchMemory(ctx, req); !errors.Is(err, adk.ErrInvalid) {
			t.Errorf("search %+v: got %v, want ErrInvalid", req, err)
		}
	}
	if l, err := svc.List(ctx, &session.ListRequest{AppName: "app"}); err != nil || len(l.Sessions) != 0 {
		t.Errorf("stored after refusals: %d sessions, %v", len(l.Sessions), err)
	}
	s := &plainSession{"app", "u1", "s1", []*session.Event{textEvent("e1", "user", `quote " brace } drop`, "user", 1)}}
	if err := m.AddSessionToMemory(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`" } ; DROP ALL ; #`, "drop\\u0022 .* (", "x\x00 drop\n"} {
		if got := entryIDs(search(t, m, "app", "u1", q)); !slices.Equal(got, []string{"e1"}) {
			t.Errorf("query %q: got %v, want [e1]", q, got)
		}
	}
	if got := entryIDs(search(t, m, `app" } #`, `u1\" .`, "drop")); len(got) != 0 {
		t.Errorf("hostile app and user: got %v, want nothing", got)
	}
}

// TestMemoryConcurrent adds and searches one user's memory from several
// goroutines (run with -race).
func TestMemoryConcurrent(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	m, _ := newMemory(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 3 {
				id := fmt.Sprintf("s%d-%d", i, j)
				if err := m.AddSessionToMemory(ctx, &plainSession{"app", "u1", id, []*session.Event{textEvent(id, "user", "busy otter", "user", j)}}); err != nil {
					t.Errorf("add %s: %v", id, err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 3 {
				if _, err := m.SearchMemory(ctx, &memory.SearchRequest{AppName: "app", UserID: "u1", Query: "otter"}); err != nil {
					t.Errorf("search: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if got := search(t, m, "app", "u1", "otter"); len(got) != 12 {
		t.Errorf("got %d entries, want 12", len(got))
	}
}
