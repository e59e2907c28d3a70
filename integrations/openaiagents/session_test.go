package openaiagents_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/nlpodyssey/openai-agents-go/memory"
	"github.com/trails-kg/trails/integrations/openaiagents"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

// TestGetItems (the SDK's SQLite test of GetItems): items come back as
// added, in order, across AddItems calls and from a new Session value;
// ClearSession empties the session.
func TestGetItems(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	s := openaiagents.NewSession(st, "get-items")
	if got := mustGet(t, s, 0); len(got) != 0 {
		t.Fatalf("unstored session: got %d items, want none", len(got))
	}
	items := []memory.TResponseInputItem{user("Hello"), assistant("Hi there! " + hostile), user("How are you?")}
	mustAdd(t, s, items[:2]...)
	stored(t, st, s, items[:2])
	mustAdd(t, s, items[2:]...)
	stored(t, st, s, items)
	if err := s.AddItems(ctx, nil); err != nil {
		t.Fatalf("add no items: %v", err)
	}
	if err := s.ClearSession(ctx); err != nil {
		t.Fatal(err)
	}
	stored(t, st, s, nil)
}

// TestGetItemsLimit (the SDK's SQLite test of a limit): a limit returns
// the latest items in order, all of them when it is at least their
// number, all of them when it is zero or negative.
func TestGetItemsLimit(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	s := openaiagents.NewSession(st, "")
	var items []memory.TResponseInputItem
	for i := 1; i <= 3; i++ {
		n := strconv.Itoa(i)
		items = append(items, user("Message "+n), answer("msg_"+n, "Response "+n))
	}
	mustAdd(t, s, items...)
	for _, c := range []struct {
		name  string
		limit int
		want  []memory.TResponseInputItem
	}{
		{"all", 0, items},
		{"latest 2", 2, items[4:]},
		{"latest 4", 4, items[2:]},
		{"more than stored", 10, items},
		{"negative", -123, items},
		{"one", 1, items[5:]},
	} {
		t.Run(c.name, func(t *testing.T) {
			sameItems(t, mustGet(t, s, c.limit), c.want)
			sameItems(t, mustGet(t, openaiagents.NewSession(st, s.SessionID(context.Background())), c.limit), c.want)
		})
	}
}

// TestGetItemsLimitOrphanOutput: a window that would start with a
// function call's output, its call left out, starts one item later (the
// SDK's SQLite session does so, as the model refuses such an output);
// with no limit the output is returned as stored.
func TestGetItemsLimitOrphanOutput(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	s := openaiagents.NewSession(st, "")
	items := []memory.TResponseInputItem{user("Weather?"), call("c1", "get_weather", `{"city":"Paris"}`), output("c1", `{"sky":"clear"}`), answer("msg_1", "Clear.")}
	mustAdd(t, s, items...)
	sameItems(t, mustGet(t, s, 2), items[3:])
	sameItems(t, mustGet(t, s, 3), items[1:])
	o := openaiagents.NewSession(st, "")
	mustAdd(t, o, items[2:]...)
	sameItems(t, mustGet(t, o, 0), items[2:])
}

// TestPopItem (the SDK's SQLite test of PopItem): PopItem returns the
// latest item and removes it, nil on an empty session, until none is
// left; each pop is a rewind whose archive holds the popped item.
func TestPopItem(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := newStore(t)
	ctx := context.Background()
	s := openaiagents.NewSession(st, "pop_test")
	if got, err := s.PopItem(ctx); err != nil || got != nil {
		t.Fatalf("pop of an unstored session: got %v (%v), want nil", got, err)
	}
	items := []memory.TResponseInputItem{user("Hello"), answer("msg_1", "Hi there!"), user("How are you?")}
	mustAdd(t, s, items...)
	stored(t, st, s, items)
	for n := len(items) - 1; n >= 0; n-- {
		got, err := s.PopItem(ctx)
		if err != nil {
			t.Fatalf("pop %d: %v", n, err)
		}
		if got == nil {
			t.Fatalf("pop %d: got nil, want %s", n, jsonOf(items[n]))
		}
		sameItems(t, []memory.TResponseInputItem{*got}, items[n:n+1])
		stored(t, st, s, items[:n])
		archived(t, st, c, s.SessionID(ctx), n, openaiagents.ReasonPop, items[n:n+1])
	}
	if got, err := s.PopItem(ctx); err != nil || got != nil {
		t.Fatalf("pop of an empty session: got %v (%v), want nil", got, err)
	}
	if recs, err := st.Rewinds(ctx, s.SessionID(ctx)); err != nil || len(recs) != len(items) {
		t.Fatalf("got %d rewinds (%v), want %d", len(recs), err, len(items))
	}
	// The session goes on after its pops.
	mustAdd(t, s, items[2])
	stored(t, st, s, items[2:])
}

// TestPopItemSessions (the SDK's SQLite test of PopItem on two sessions
// of one database): a pop changes only its own session.
func TestPopItemSessions(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	s1 := openaiagents.NewSession(st, "session_1")
	s2 := openaiagents.NewSession(st, "session_2")
	items1 := []memory.TResponseInputItem{user("Session 1 message")}
	items2 := []memory.TResponseInputItem{user("Session 2 message 1"), user("Session 2 message 2")}
	mustAdd(t, s1, items1...)
	mustAdd(t, s2, items2...)
	got, err := s2.PopItem(ctx)
	if err != nil || got == nil {
		t.Fatalf("pop: got %v (%v), want an item", got, err)
	}
	sameItems(t, []memory.TResponseInputItem{*got}, items2[1:])
	stored(t, st, s1, items1)
	stored(t, st, s2, items2[:1])
}

// TestOutputMessage (the SDK's test of its fix for output messages): an
// output message, which the SDK's JSON decoding of the union reads as an
// EasyInputMessage without its text, comes back as the output message it
// was, its text included.
func TestOutputMessage(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	s := openaiagents.NewSession(st, "")
	items := []memory.TResponseInputItem{answer("msg_123", "Foo"), answer("msg_124", hostile)}
	mustAdd(t, s, items...)
	stored(t, st, s, items)
	got := mustGet(t, s, 1)
	if len(got) != 1 || got[0].OfOutputMessage == nil || got[0].OfOutputMessage.Content[0].OfOutputText.Text != hostile {
		t.Fatalf("got %s, want the output message %s", jsonOf(got), jsonOf(items[1]))
	}
}

// TestSessionID: "" gives a fresh session, a canonical UUID is the Trails
// session itself, any other string names a session by app, principal and
// name.
func TestSessionID(t *testing.T) {
	ctx := context.Background()
	st := session.NewStore(nil)
	id := session.New("p").ID
	named := openaiagents.NewSession(st, "chat-42").SessionID(ctx)
	for _, c := range []struct {
		name string
		got  string
		same bool // the same id as named's
	}{
		{"again", openaiagents.NewSession(st, "chat-42").SessionID(ctx), true},
		{"default principal", openaiagents.NewSession(st, "chat-42", openaiagents.WithPrincipal(openaiagents.DefaultPrincipal)).SessionID(ctx), true},
		{"other name", openaiagents.NewSession(st, "chat-43").SessionID(ctx), false},
		{"other principal", openaiagents.NewSession(st, "chat-42", openaiagents.WithPrincipal("bob")).SessionID(ctx), false},
		{"other app", openaiagents.NewSession(st, "chat-42", openaiagents.WithApp("x")).SessionID(ctx), false},
	} {
		if (c.got == named) != c.same {
			t.Errorf("%s: got %s, named %s, want same %v", c.name, c.got, named, c.same)
		}
		if err := session.CheckID(c.got); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if got := openaiagents.NewSession(st, id).SessionID(ctx); got != id {
		t.Errorf("got %s, want the Trails id %s", got, id)
	}
	a, b := openaiagents.NewSession(st, "").SessionID(ctx), openaiagents.NewSession(st, "").SessionID(ctx)
	if a == b || session.CheckID(a) != nil {
		t.Errorf("got %s and %s, want two fresh ids", a, b)
	}
}

// TestPrincipalApp: the session a Session creates has its principal and
// app.
func TestPrincipalApp(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	s := openaiagents.NewSession(st, "chat", openaiagents.WithPrincipal("alice"), openaiagents.WithApp("shop"))
	mustAdd(t, s, user("hi"))
	ts, err := st.Load(ctx, s.SessionID(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if ts.Principal != "alice" || ts.App != "shop" {
		t.Errorf("got principal %q app %q, want alice, shop", ts.Principal, ts.App)
	}
}

// TestStaleWriter: of two Session values on one session, one that writes
// from a stale view (the other wrote since it read) gets ErrConflict and
// the store keeps the other's items; after reading again it writes.
func TestStaleWriter(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	s1 := openaiagents.NewSession(st, "shared")
	s2 := openaiagents.NewSession(st, "shared")
	a, b, c := user("a"), assistant("b"), user("c")

	// Both see the session absent; the first to add creates it.
	mustGet(t, s2, 0)
	mustAdd(t, s1, a)
	if err := s2.AddItems(ctx, []memory.TResponseInputItem{c}); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("stale create: got %v, want %v", err, session.ErrConflict)
	}
	stored(t, st, s1, []memory.TResponseInputItem{a})

	want := []memory.TResponseInputItem{a}
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"add", func() error { return s2.AddItems(ctx, []memory.TResponseInputItem{c}) }},
		{"pop", func() error { _, err := s2.PopItem(ctx); return err }},
		{"clear", func() error { return s2.ClearSession(ctx) }},
	} {
		mustGet(t, s2, 1)
		mustAdd(t, s1, b)
		want = append(want, b)
		if err := w.write(); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("stale %s: got %v, want %v", w.name, err, session.ErrConflict)
		}
	}
	stored(t, st, s1, want)
	if recs, err := st.Rewinds(ctx, s1.SessionID(ctx)); err != nil || len(recs) != 0 {
		t.Fatalf("got %d rewinds (%v), want none", len(recs), err)
	}

	// After a conflict the value reads the store again: the retry lands.
	mustAdd(t, s2, c)
	if err := s1.AddItems(ctx, []memory.TResponseInputItem{a}); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("s1 after s2's retry: got %v, want %v", err, session.ErrConflict)
	}
	stored(t, st, s1, append(want, c))
}

// TestConcurrentWriters: goroutines sharing one Session all land (its
// calls run one at a time), reads among them included; two Session values
// writing at once each land or get ErrConflict, and the store holds
// exactly the items that landed, each once, in the order they landed.
func TestConcurrentWriters(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	const n = 6
	shared := openaiagents.NewSession(st, "")
	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	for i := range n {
		wg.Go(func() {
			errs[i] = shared.AddItems(ctx, []memory.TResponseInputItem{user("m" + strconv.Itoa(i)), assistant("r" + strconv.Itoa(i))})
		})
		wg.Go(func() { _, errs[n+i] = shared.GetItems(ctx, 3) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d of one Session: %v", i, err)
		}
	}
	items := mustGet(t, shared, 0)
	if len(items) != 2*n {
		t.Fatalf("got %d items, want %d", len(items), 2*n)
	}
	for i := 0; i < len(items); i += 2 { // each call's two items side by side
		m, r := items[i].OfMessage.Content.OfString.Value, items[i+1].OfMessage.Content.OfString.Value
		if m[1:] != r[1:] {
			t.Fatalf("items %d and %d: got %q and %q, want one call's pair", i, i+1, m, r)
		}
	}

	ss := []*openaiagents.Session{openaiagents.NewSession(st, shared.SessionID(ctx)), openaiagents.NewSession(st, shared.SessionID(ctx))}
	for _, s := range ss {
		mustGet(t, s, 0)
	}
	for i := range 2 * n {
		wg.Go(func() { errs[i] = ss[i%2].AddItems(ctx, []memory.TResponseInputItem{assistant("w" + strconv.Itoa(i))}) })
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
	items = mustGet(t, openaiagents.NewSession(st, shared.SessionID(ctx)), 0)
	got := map[string]bool{}
	for _, it := range items[2*n:] {
		text := it.OfMessage.Content.OfString.Value
		if got[text] || !landed[text] {
			t.Fatalf("stored %q twice or without its writer's success: got %s, landed %v", text, jsonOf(items), landed)
		}
		got[text] = true
	}
	if len(got) != len(landed) || len(landed) == 0 {
		t.Fatalf("got %d items stored, want the %d that landed", len(got), len(landed))
	}
}

// TestConcurrentPops: goroutines sharing one Session pop and add at once;
// each pop is one rewind, and the items left are those added less those
// popped.
func TestConcurrentPops(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	s := openaiagents.NewSession(st, "")
	var start []memory.TResponseInputItem
	for i := range 6 {
		start = append(start, user("s"+strconv.Itoa(i)))
	}
	mustAdd(t, s, start...)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	popped := make([]*memory.TResponseInputItem, n)
	for i := range n {
		wg.Go(func() { popped[i], errs[i] = s.PopItem(ctx) })
		wg.Go(func() { errs[n+i] = s.AddItems(ctx, []memory.TResponseInputItem{assistant("a" + strconv.Itoa(i))}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	for i, p := range popped {
		if p == nil {
			t.Fatalf("pop %d: got nil, want an item", i)
		}
	}
	items := mustGet(t, openaiagents.NewSession(st, s.SessionID(ctx)), 0)
	if want := len(start) + n - n; len(items) != want {
		t.Fatalf("got %d items, want %d", len(items), want)
	}
	recs, err := st.Rewinds(ctx, s.SessionID(ctx))
	if err != nil || len(recs) != n {
		t.Fatalf("got %d rewinds (%v), want %d", len(recs), err, n)
	}
	// Each archive ends with an item a pop returned, each returned once.
	left := map[string]int{}
	for _, p := range popped {
		left[jsonOf(*p)]++
	}
	for _, r := range recs {
		if r.Reason != openaiagents.ReasonPop {
			t.Errorf("got rewind reason %q, want %q", r.Reason, openaiagents.ReasonPop)
		}
		a := mustGet(t, openaiagents.NewSession(st, r.Archive), 0)
		if len(a) != r.To+1 || left[jsonOf(a[r.To])] == 0 {
			t.Fatalf("archive %s: got %s, want %d items ending with a popped one", r.Archive, jsonOf(a), r.To+1)
		}
		left[jsonOf(a[r.To])]--
	}
}
