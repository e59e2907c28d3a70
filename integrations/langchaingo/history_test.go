package langchaingo_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
	"github.com/trails-kg/trails/integrations/langchaingo"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// TestConversationBuffer: langchaingo's own conversation buffer over a
// History saves and loads its context through the store (a second buffer
// over a new History reads what the first saved), and its Clear archives
// the conversation instead of deleting it.
func TestConversationBuffer(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := newStore(t)
	ctx := context.Background()
	h := langchaingo.NewHistory(st, "buffer", langchaingo.WithPrincipal("alice"), langchaingo.WithApp("shop"))
	buf := memory.NewConversationBuffer(memory.WithChatHistory(h))
	for _, qa := range [][2]string{{"hi", "hello"}, {"Name a prime.", "7 " + hostile}} {
		if err := buf.SaveContext(ctx, map[string]any{"input": qa[0]}, map[string]any{"output": qa[1]}); err != nil {
			t.Fatal(err)
		}
	}
	vars, err := buf.LoadMemoryVariables(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := vars["history"], "Human: hi\nAI: hello\nHuman: Name a prime.\nAI: 7 "+hostile; got != want {
		t.Errorf("got history %q, want %q", got, want)
	}

	// A buffer in another process: a new History of the same name and options.
	h2 := langchaingo.NewHistory(st, "buffer", langchaingo.WithPrincipal("alice"), langchaingo.WithApp("shop"))
	if h2.SessionID() != h.SessionID() {
		t.Fatalf("got session %s, want %s", h2.SessionID(), h.SessionID())
	}
	buf2 := memory.NewConversationBuffer(memory.WithChatHistory(h2), memory.WithReturnMessages(true))
	vars, err = buf2.LoadMemoryVariables(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []llms.ChatMessage{
		llms.HumanChatMessage{Content: "hi"}, llms.AIChatMessage{Content: "hello"},
		llms.HumanChatMessage{Content: "Name a prime."}, llms.AIChatMessage{Content: "7 " + hostile},
	}
	got, _ := vars["history"].([]llms.ChatMessage)
	if len(got) != len(want) {
		t.Fatalf("got %#v, want %#v", vars["history"], want)
	}
	sameMessages(t, st, h2, want)
	s, err := st.Load(ctx, h.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	if s.Principal != "alice" || s.App != "shop" {
		t.Errorf("got principal %q app %q, want alice, shop", s.Principal, s.App)
	}

	if err := buf2.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	vars, err = buf.LoadMemoryVariables(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := vars["history"]; got != "" {
		t.Errorf("after Clear: got history %q, want none", got)
	}
	archived(t, st, c, h.SessionID(), 0, "langchaingo: clear", want)
	if err := buf.SaveContext(ctx, map[string]any{"input": "again"}, map[string]any{"output": "yes"}); err != nil {
		t.Fatal(err)
	}
	sameMessages(t, st, h, []llms.ChatMessage{llms.HumanChatMessage{Content: "again"}, llms.AIChatMessage{Content: "yes"}})
}

// archived fails tb unless the latest rewind of session id went to index
// to with reason, PROV holds its record, and its archive holds msgs, the
// messages it abandoned.
func archived(tb testing.TB, st *session.Store, c *kg.Client, id string, to int, reason string, msgs []llms.ChatMessage) {
	tb.Helper()
	ctx := context.Background()
	recs, err := st.Rewinds(ctx, id)
	if err != nil {
		tb.Fatal(err)
	}
	if len(recs) == 0 {
		tb.Fatal("no rewind recorded")
	}
	r := recs[len(recs)-1]
	if r.To != to || r.Reason != reason {
		tb.Errorf("got rewind to %d (%q), want to %d (%q)", r.To, r.Reason, to, reason)
	}
	q, err := kg.Bind(`ASK { GRAPH $prov { ?a a $Rewind ; $used $s ; $generated $archive ; $rewoundTo $to ; $reason $why } }`, kg.Params{
		"prov": kg.MustIRI(ontology.ProvGraph), "Rewind": kg.MustIRI(ontology.Rewind), "used": kg.MustIRI(ontology.ProvUsed),
		"generated": kg.MustIRI(ontology.ProvGenerated), "rewoundTo": kg.MustIRI(ontology.RewoundTo), "reason": kg.MustIRI(ontology.Reason),
		"s": kg.MustIRI(ontology.SessionIRI(id)), "archive": kg.MustIRI(ontology.SessionIRI(r.Archive)), "to": kg.Int(to), "why": kg.String(reason),
	})
	if err != nil {
		tb.Fatal(err)
	}
	if ok, err := c.Ask(ctx, q); err != nil || !ok {
		tb.Errorf("PROV record of the rewind to %s: got %v (%v), want it", r.Archive, ok, err)
	}
	archive, err := langchaingo.NewHistory(st, r.Archive).Messages(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	kept, err := langchaingo.NewHistory(st, id).Messages(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if len(kept) < to || len(archive) != to+len(msgs) {
		tb.Fatalf("archive: got %d messages, want %d", len(archive), to+len(msgs))
	}
	sameMessages(tb, st, langchaingo.NewHistory(st, r.Archive), append(append([]llms.ChatMessage(nil), kept[:to]...), msgs...))
}

// TestSetMessages: SetMessages keeps the prefix the new messages share
// with the stored ones, archives the rest (a rewind in PROV, never a
// delete) and appends the new; setting what is stored, or more, rewinds
// nothing; Clear of an empty or unstored history does nothing.
func TestSetMessages(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := newStore(t)
	ctx := context.Background()
	h := langchaingo.NewHistory(st, "")
	if err := h.Clear(ctx); err != nil {
		t.Fatalf("clear of an unstored history: %v", err)
	}
	if err := h.SetMessages(ctx, nil); err != nil {
		t.Fatal(err)
	}
	a, b, x := llms.HumanChatMessage{Content: "a"}, llms.AIChatMessage{Content: "b", ReasoningContent: "r"},
		llms.AIChatMessage{Content: "x", ToolCalls: []llms.ToolCall{call("c", "f", "not json")}}
	toolMsg := llms.ToolChatMessage{ID: "c", Content: hostile}
	if err := h.SetMessages(ctx, []llms.ChatMessage{a, b, toolMsg}); err != nil {
		t.Fatal(err)
	}
	sameMessages(t, st, h, []llms.ChatMessage{a, b, toolMsg})
	if err := h.SetMessages(ctx, []llms.ChatMessage{a, x}); err != nil {
		t.Fatal(err)
	}
	sameMessages(t, st, h, []llms.ChatMessage{a, x})
	archived(t, st, c, h.SessionID(), 1, "langchaingo: set messages", []llms.ChatMessage{b, toolMsg})

	// The same messages, then more: no rewind.
	if err := h.SetMessages(ctx, []llms.ChatMessage{a, x}); err != nil {
		t.Fatal(err)
	}
	if err := h.SetMessages(ctx, []llms.ChatMessage{&a, x, b}); err != nil {
		t.Fatal(err)
	}
	sameMessages(t, st, h, []llms.ChatMessage{a, x, b})
	if recs, err := st.Rewinds(ctx, h.SessionID()); err != nil || len(recs) != 1 {
		t.Fatalf("got %d rewinds (%v), want 1", len(recs), err)
	}

	if err := h.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	sameMessages(t, st, h, nil)
	archived(t, st, c, h.SessionID(), 0, "langchaingo: clear", []llms.ChatMessage{a, x, b})
	if err := h.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if recs, err := st.Rewinds(ctx, h.SessionID()); err != nil || len(recs) != 2 {
		t.Fatalf("got %d rewinds (%v), want 2", len(recs), err)
	}
	mustAdd(t, h, b)
	sameMessages(t, st, h, []llms.ChatMessage{b})
}

// TestStaleWriter: of two History values on one session, one that writes
// from a stale view (the other wrote since it read) gets ErrConflict and
// the store keeps the other's messages; after reading again it writes. Two
// values creating the same session: one wins.
func TestStaleWriter(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	h1 := langchaingo.NewHistory(st, "shared")
	h2 := langchaingo.NewHistory(st, "shared")
	a, b, c := llms.HumanChatMessage{Content: "a"}, llms.AIChatMessage{Content: "b"}, llms.HumanChatMessage{Content: "c"}

	// Both see the session absent; the first to add creates it.
	if _, err := h2.Messages(ctx); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, h1, a)
	if err := h2.AddMessage(ctx, c); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("stale create: got %v, want %v", err, session.ErrConflict)
	}
	sameMessages(t, st, h1, []llms.ChatMessage{a})

	// h2 has read it now (the failure made it read again); h1 appends.
	if _, err := h2.Messages(ctx); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, h1, b)
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"add", func() error { return h2.AddMessage(ctx, c) }},
		{"add user", func() error { return h2.AddUserMessage(ctx, "c") }},
		{"set", func() error { return h2.SetMessages(ctx, []llms.ChatMessage{c}) }},
		{"clear", func() error { return h2.Clear(ctx) }},
	} {
		if _, err := h2.Messages(ctx); err != nil {
			t.Fatal(err)
		}
		mustAdd(t, h1, b)
		if err := w.write(); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("stale %s: got %v, want %v", w.name, err, session.ErrConflict)
		}
	}
	want := []llms.ChatMessage{a, b, b, b, b, b}
	sameMessages(t, st, h1, want)
	if recs, err := st.Rewinds(ctx, h1.SessionID()); err != nil || len(recs) != 0 {
		t.Fatalf("got %d rewinds (%v), want none", len(recs), err)
	}

	// After a conflict the value reads the store again: the retry lands.
	mustAdd(t, h2, c)
	if err := h1.AddMessage(ctx, a); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("h1 after h2's retry: got %v, want %v", err, session.ErrConflict)
	}
	sameMessages(t, st, h1, append(want, c))
}

// TestSessionID: "" gives a fresh session, a canonical UUID is the Trails
// session itself, any other string names a session by app, principal and
// name.
func TestSessionID(t *testing.T) {
	st := session.NewStore(nil)
	id := session.New("p").ID
	named := langchaingo.NewHistory(st, "chat-42").SessionID()
	for _, c := range []struct {
		name string
		got  string
		same bool // the same id as named's
	}{
		{"again", langchaingo.NewHistory(st, "chat-42").SessionID(), true},
		{"default principal", langchaingo.NewHistory(st, "chat-42", langchaingo.WithPrincipal(langchaingo.DefaultPrincipal)).SessionID(), true},
		{"other name", langchaingo.NewHistory(st, "chat-43").SessionID(), false},
		{"other principal", langchaingo.NewHistory(st, "chat-42", langchaingo.WithPrincipal("bob")).SessionID(), false},
		{"other app", langchaingo.NewHistory(st, "chat-42", langchaingo.WithApp("x")).SessionID(), false},
	} {
		if (c.got == named) != c.same {
			t.Errorf("%s: got %s, named %s, want same %v", c.name, c.got, named, c.same)
		}
		if err := session.CheckID(c.got); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if got := langchaingo.NewHistory(st, id).SessionID(); got != id {
		t.Errorf("got %s, want the Trails id %s", got, id)
	}
	a, b := langchaingo.NewHistory(st, "").SessionID(), langchaingo.NewHistory(st, "").SessionID()
	if a == b || session.CheckID(a) != nil {
		t.Errorf("got %s and %s, want two fresh ids", a, b)
	}
}

// TestNamedSession: the name a History is given is stored with the
// session it creates (it was stored nowhere: an operator could not find
// "support-chat-42"): as a tag when it is one, which trails-admin
// sessions --tag finds, and always as the value NameKey.
func TestNamedSession(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, c := range []struct {
		name   string
		tagged bool
	}{
		{"support-chat-" + suffix, true},
		{"support chat " + suffix, false}, // white space: no tag
	} {
		h := langchaingo.NewHistory(st, c.name, langchaingo.WithPrincipal("alice"))
		mustAdd(t, h, llms.HumanChatMessage{Content: "hi"})
		infos, err := st.List(ctx, session.ByTag("support-chat-"+suffix))
		if err != nil {
			t.Fatal(err)
		}
		found := len(infos) == 1 && infos[0].ID == h.SessionID()
		if found != c.tagged {
			t.Errorf("%q: found by its tag %v (%v), want %v", c.name, found, infos, c.tagged)
		}
		s, err := st.Load(ctx, h.SessionID())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(s.Values[langchaingo.NameKey]), strconv.Quote(c.name); got != want {
			t.Errorf("%q: got value %s, want %s", c.name, got, want)
		}
	}
}

// TestConcurrentWriters: goroutines sharing one History all land (its
// calls run one at a time); two History values writing at once each land
// or get ErrConflict, and the store holds exactly the messages that
// landed, each once.
func TestConcurrentWriters(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	const n = 6
	shared := langchaingo.NewHistory(st, "")
	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	for i := range n {
		wg.Go(func() { errs[i] = shared.AddUserMessage(ctx, "m"+strconv.Itoa(i)) })
	}
	wg.Wait()
	for i, err := range errs[:n] {
		if err != nil {
			t.Fatalf("writer %d of one History: %v", i, err)
		}
	}
	msgs, err := shared.Messages(ctx)
	if err != nil || len(msgs) != n {
		t.Fatalf("got %d messages (%v), want %d", len(msgs), err, n)
	}

	hs := []*langchaingo.History{langchaingo.NewHistory(st, shared.SessionID()), langchaingo.NewHistory(st, shared.SessionID())}
	for _, h := range hs {
		if _, err := h.Messages(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 * n {
		wg.Go(func() { errs[i] = hs[i%2].AddAIMessage(ctx, "w"+strconv.Itoa(i)) })
	}
	wg.Wait()
	landed := map[string]bool{}
	for i, err := range errs {
		switch {
		case err == nil:
			landed["w"+strconv.Itoa(i)] = true
		case !errors.Is(err, session.ErrConflict):
			t.Fatalf("writer %d: got %v, want nil or %v", i, err, session.ErrConflict)
		}
	}
	msgs, err = langchaingo.NewHistory(st, shared.SessionID()).Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range msgs[n:] {
		if got[m.GetContent()] || !landed[m.GetContent()] {
			t.Fatalf("stored %q twice or without its writer's success: got %v, landed %v", m.GetContent(), msgs, landed)
		}
		got[m.GetContent()] = true
	}
	if len(got) != len(landed) || len(landed) == 0 {
		t.Fatalf("got %d messages stored, want the %d that landed", len(got), len(landed))
	}
}

// TestFork: the history of a fork reads the prefix it shares with its
// parent; SetMessages rewinds only the fork's own turns, and Clear, which
// would rewind into the parent's, is refused with ErrInvalid, changing
// nothing.
func TestFork(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	parent := langchaingo.NewHistory(st, "")
	q, a1, a2 := llms.HumanChatMessage{Content: "Name a prime."}, llms.AIChatMessage{Content: "7"}, llms.AIChatMessage{Content: "13"}
	mustAdd(t, parent, q, a1)
	s, err := st.Load(ctx, parent.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Fork(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Persist(ctx, f); err != nil {
		t.Fatal(err)
	}
	fork := langchaingo.NewHistory(st, f.ID)
	mustAdd(t, fork, a2)
	sameMessages(t, st, fork, []llms.ChatMessage{q, a2})
	if err := fork.SetMessages(ctx, []llms.ChatMessage{q, a1}); err != nil {
		t.Fatal(err)
	}
	sameMessages(t, st, fork, []llms.ChatMessage{q, a1})
	if err := fork.Clear(ctx); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("clear of a fork: got %v, want %v", err, session.ErrInvalid)
	}
	sameMessages(t, st, fork, []llms.ChatMessage{q, a1})
	sameMessages(t, st, parent, []llms.ChatMessage{q, a1})
}
