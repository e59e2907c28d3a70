package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

// leanLoad loads id with RawOnly through st and returns it with the
// number of requests it took.
func leanLoad(t *testing.T, st *session.Store, ct *counter, id string) (*session.Session, int64) {
	t.Helper()
	before := ct.requests.Load()
	s, err := st.Load(context.Background(), id, session.RawOnly())
	if err != nil {
		t.Fatal(err)
	}
	return s, ct.requests.Load() - before
}

// TestCache: with a Cache, a RawOnly load of a history read before reads
// only its chain (one request), one that grew reads only the new turns
// (two), and every load returns what a load without the cache returns:
// after appends by this value and by another writer, a rewind, a fork of
// a parent that went on after the fork point, a detach, a deletion, and
// a change the caller made to the turns a load returned.
func TestCache(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, c := newStore(t, session.WithCache(session.NewCache(64<<20)))
	plain := session.NewStore(querier(t, c)) // no cache: what the store holds
	ctx := context.Background()
	leaf := structuredChain(t, st)

	same := func(t *testing.T, got *session.Session) {
		t.Helper()
		want, err := plain.Load(ctx, got.ID, session.RawOnly())
		if err != nil {
			t.Fatal(err)
		}
		sameLean(t, got, want)
	}
	first, n := leanLoad(t, st, ct, leaf.ID)
	if n != 2 {
		t.Errorf("first load: %d requests, want 2", n)
	}
	same(t, first)
	again, n := leanLoad(t, st, ct, leaf.ID)
	if n != 1 {
		t.Errorf("unchanged: %d requests, want 1 (the chain)", n)
	}
	same(t, again)

	// The caller's changes to what a load returned stay its own.
	again.Turns[len(again.Turns)-1].Content = "changed by the caller"
	again.Turns[len(again.Turns)-2].Structure.Raw.Data[0] = 'X'
	same(t, mustLeanLoad(t, st, leaf.ID))

	// Appended by this value: the next load reads the new turn only, and
	// the value appends in one request as after a load without cache.
	v := mustLeanLoad(t, st, leaf.ID)
	v.AppendTurn(session.Turn{Role: "assistant", Content: "more", Structure: &session.Structure{
		Raw:   &session.Raw{Format: "adk.event/v2", Data: []byte(`{"id":"more"}`)},
		Delta: map[string]json.RawMessage{"depth": json.RawMessage(`9`)},
	}})
	mustPersist(t, st, v)
	grown, n := leanLoad(t, st, ct, leaf.ID)
	if n != 2 {
		t.Errorf("grown by one turn: %d requests, want 2", n)
	}
	same(t, grown)
	if string(grown.Values["depth"]) != "9" {
		t.Errorf("got depth %s, want 9", grown.Values["depth"])
	}

	// Appended by another writer, with no cache.
	w := mustLoad(t, plain, leaf.ID)
	w.Append("user", "from elsewhere")
	mustPersist(t, plain, w)
	got, _ := leanLoad(t, st, ct, leaf.ID)
	same(t, got)
	if last := got.Turns[len(got.Turns)-1]; last.Content != "from elsewhere" {
		t.Errorf("last turn %q, want the other writer's", last.Content)
	}

	// The tail of a cached history is cut from it.
	before := ct.requests.Load()
	tail, err := st.LoadTail(ctx, leaf.ID, session.Tail{Last: 3}, session.RawOnly())
	if err != nil {
		t.Fatal(err)
	}
	if n := ct.requests.Load() - before; n != 1 {
		t.Errorf("cached tail: %d requests, want 1", n)
	}
	wantTail, err := plain.LoadTail(ctx, leaf.ID, session.Tail{Last: 3}, session.RawOnly())
	if err != nil {
		t.Fatal(err)
	}
	sameLean(t, tail, wantTail)
	// The caller's changes to a cached tail stay its own too: its turns
	// are copies, and so are the values changed before it (the last
	// turn, the other writer's, changes none: "depth" comes from before).
	for _, turn := range tail.Turns {
		if turn.Structure != nil && turn.Structure.Raw != nil {
			turn.Structure.Raw.Data[0] = 'X'
		}
	}
	last, err := st.LoadTail(ctx, leaf.ID, session.Tail{Last: 1}, session.RawOnly())
	if err != nil {
		t.Fatal(err)
	}
	if string(last.Values["depth"]) != "9" {
		t.Fatalf("last turn's values: depth %s, want 9", last.Values["depth"])
	}
	for _, v := range last.Values {
		v[0] = 'X'
	}
	for _, n := range []int{1, 3} {
		got, err := st.LoadTail(ctx, leaf.ID, session.Tail{Last: n}, session.RawOnly())
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.LoadTail(ctx, leaf.ID, session.Tail{Last: n}, session.RawOnly())
		if err != nil {
			t.Fatal(err)
		}
		sameLean(t, got, want)
		if string(got.Values["depth"]) != "9" {
			t.Errorf("tail of %d after the caller's changes: depth %s, want 9", n, got.Values["depth"])
		}
	}
	same(t, mustLeanLoad(t, st, leaf.ID))

	// Rewound: the cache must not hand back the moved turns.
	if _, _, err := st.Rewind(ctx, leaf.ID, len(got.Turns)-2, session.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ = leanLoad(t, st, ct, leaf.ID)
	same(t, got)
	if len(got.Turns) != len(grown.Turns)-1 {
		t.Errorf("after the rewind: %d turns, want %d", len(got.Turns), len(grown.Turns)-1)
	}

	// A fork whose parent went on after the fork point reads the
	// parent's turns below it only.
	p := mustLeanLoad(t, st, leaf.ID)
	f := mustFork(t, p, len(p.Turns)-1)
	f.Append("user", "fork's own")
	mustPersist(t, st, f)
	same(t, mustLeanLoad(t, st, f.ID))
	p.Append("user", "parent goes on")
	mustPersist(t, st, p)
	same(t, mustLeanLoad(t, st, f.ID))
	same(t, mustLeanLoad(t, st, p.ID))

	// Detached: the fork holds the prefix itself now.
	if err := st.Detach(ctx, f.ID, session.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	d := mustLeanLoad(t, st, f.ID)
	same(t, d)
	if d.ParentID != "" {
		t.Errorf("detached fork has parent %s", d.ParentID)
	}

	// Deleted: not found, whatever the cache holds.
	one := persisted(t, st, "agent", 2)
	mustLeanLoad(t, st, one.ID)
	if err := st.Delete(ctx, one.ID, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, one.ID, session.RawOnly()); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("deleted: got %v, want ErrNotFound", err)
	}
}

// TestCacheBound: a Cache holds about its size: a session larger than it
// is not kept (each load reads it whole), and the least recently used
// session leaves first.
func TestCacheBound(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, _ := newStore(t, session.WithCache(session.NewCache(16<<10)))
	big, small := persisted(t, st, "agent", 100), persisted(t, st, "agent", 2)
	for range 2 {
		if _, n := leanLoad(t, st, ct, big.ID); n != 2 {
			t.Errorf("a session larger than the cache: %d requests, want 2 at each load", n)
		}
	}
	leanLoad(t, st, ct, small.ID)
	if _, n := leanLoad(t, st, ct, small.ID); n != 1 {
		t.Errorf("small session read again: %d requests, want 1", n)
	}
}

// mustLeanLoad loads id with RawOnly.
func mustLeanLoad(t *testing.T, st *session.Store, id string) *session.Session {
	t.Helper()
	s, err := st.Load(context.Background(), id, session.RawOnly())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
