package session_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// timedTurns appends n turns to s, the turn at index i created at base plus i
// seconds, so that a Tail.Since test knows every turn's time.
func timedTurns(s *session.Session, n int, base time.Time, tag string) {
	for range n {
		i := s.From + len(s.Turns)
		t := s.Append("user", tag+" turn "+itoa(i))
		s.Turns[len(s.Turns)-1].Created = base.Add(time.Duration(t.Index) * time.Second)
	}
}

var tailBase = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// at returns the creation time timedTurns gives the turn at index i.
func at(i int) time.Time { return tailBase.Add(time.Duration(i) * time.Second) }

// sameTail fails tb unless got is the tail of whole from index from.
func sameTail(tb testing.TB, got *session.Session, whole *session.Session, from int) {
	tb.Helper()
	if got.From != from {
		tb.Fatalf("got From %d, want %d", got.From, from)
	}
	if got.ID != whole.ID || got.ParentID != whole.ParentID || got.ForkedAt != whole.ForkedAt || got.Branch != whole.Branch || got.Kind != whole.Kind {
		tb.Fatalf("got header %+v, want that of %+v", got, whole)
	}
	sameHistory(tb, got.Turns, whole.Turns[from:])
}

// tailChain stores a root of 10 turns, a fork f1 of it at 6 with 4 turns
// of its own and a fork f2 of f1 at 8 with 3 of its own: f2's history is
// root 0-5, f1 6-7, f2 8-10. Turn i is created at at(i).
func tailChain(tb testing.TB, st *session.Store) (root, f1, f2 *session.Session) {
	tb.Helper()
	root = session.New("tail-agent")
	timedTurns(root, 10, tailBase, "root")
	mustPersist(tb, st, root)
	f1 = mustFork(tb, root, 6)
	timedTurns(f1, 4, tailBase, "f1")
	mustPersist(tb, st, f1)
	f2 = mustFork(tb, f1, 8)
	timedTurns(f2, 3, tailBase, "f2")
	mustPersist(tb, st, f2)
	return root, f1, f2
}

func TestLoadTail(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, _ := newStore(t)
	ctx := context.Background()
	root, f1, f2 := tailChain(t, st)
	tests := []struct {
		name string
		id   string
		tail session.Tail
		from int
	}{
		{"root last 3", root.ID, session.Tail{Last: 3}, 7},
		{"root last all", root.ID, session.Tail{Last: 10}, 0},
		{"root last more than the history", root.ID, session.Tail{Last: 1000}, 0},
		{"fork last within its own turns", f2.ID, session.Tail{Last: 2}, 9},
		{"fork last into the parent", f2.ID, session.Tail{Last: 4}, 7},
		{"fork last into the grandparent", f2.ID, session.Tail{Last: 6}, 5},
		{"fork since into the grandparent", f2.ID, session.Tail{Since: at(4)}, 4},
		{"fork since between two turns", f2.ID, session.Tail{Since: at(7).Add(time.Millisecond)}, 8},
		{"since before the history", f1.ID, session.Tail{Since: at(-5)}, 0},
		{"since after the history", f1.ID, session.Tail{Since: at(50)}, 10},
		{"last and since: since starts later", f2.ID, session.Tail{Last: 6, Since: at(9)}, 9},
		{"last and since: last starts later", f2.ID, session.Tail{Last: 2, Since: at(3)}, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole := mustLoad(t, st, tt.id)
			before := ct.requests.Load()
			got, err := st.LoadTail(ctx, tt.id, tt.tail)
			if err != nil {
				t.Fatal(err)
			}
			if n := ct.requests.Load() - before; n != 2 {
				t.Errorf("got %d requests, want 2", n)
			}
			sameTail(t, got, whole, tt.from)
			if len(got.Anchors) != len(whole.Anchors) {
				t.Errorf("got %d anchors, want %d", len(got.Anchors), len(whole.Anchors))
			}
			replayed, err := st.Replay(ctx, tt.id, session.WithTail(tt.tail))
			if err != nil {
				t.Fatal(err)
			}
			sameHistory(t, replayed, whole.Turns[tt.from:])
		})
	}
}

func TestLoadTailInvalid(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	s := persisted(t, st, "tail-agent", 3)
	before := ct.requests.Load()
	for _, tail := range []session.Tail{{}, {Last: -1}, {Last: -5, Since: at(0)}} {
		if _, err := st.LoadTail(ctx, s.ID, tail); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("LoadTail %+v: got %v, want ErrInvalid", tail, err)
		}
		if _, err := st.Replay(ctx, s.ID, session.WithTail(tail)); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("Replay %+v: got %v, want ErrInvalid", tail, err)
		}
	}
	if n := ct.requests.Load() - before; n != 0 {
		t.Errorf("got %d requests, want none", n)
	}
	if _, err := st.LoadTail(ctx, "not-a-uuid", session.Tail{Last: 1}); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("got %v, want ErrInvalid", err)
	}
	if _, err := st.LoadTail(ctx, session.New("x").ID, session.Tail{Last: 1}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("got %v, want ErrNotFound", err)
	}
}

// TestLoadTailSinceUnordered: with creation times that do not grow along
// the history, Since keeps every turn from the first created at or after
// it: a tail has no gaps.
func TestLoadTailSinceUnordered(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	s := session.New("tail-agent")
	timedTurns(s, 10, tailBase, "root")
	s.Turns[8].Created = at(1) // older than the turns before it
	mustPersist(t, st, s)
	got, err := st.LoadTail(ctx, s.ID, session.Tail{Since: at(6)})
	if err != nil {
		t.Fatal(err)
	}
	sameTail(t, got, mustLoad(t, st, s.ID), 6)
}

func TestLoadTailUpTo(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	_, _, f2 := tailChain(t, st)
	got, err := st.Replay(ctx, f2.ID, session.UpTo(8), session.WithTail(session.Tail{Last: 3}))
	if err != nil {
		t.Fatal(err)
	}
	sameHistory(t, got, mustLoad(t, st, f2.ID).Turns[5:8])
}

func TestLoadTailRewound(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := session.New("tail-agent")
	timedTurns(root, 8, tailBase, "root")
	mustPersist(t, st, root)
	s, _ := storetest.MustRewind(t, st, root.ID, 5)
	timedTurns(s, 4, tailBase, "again")
	mustPersist(t, st, s)
	whole := mustLoad(t, st, root.ID)
	for _, tt := range []struct {
		tail session.Tail
		from int
	}{{session.Tail{Last: 5}, 4}, {session.Tail{Since: at(3)}, 3}} {
		got, err := st.LoadTail(ctx, root.ID, tt.tail)
		if err != nil {
			t.Fatal(err)
		}
		sameTail(t, got, whole, tt.from)
	}
	// The rewound session appends after its tail in its new generation.
	tl, err := st.LoadTail(ctx, root.ID, session.Tail{Last: 2})
	if err != nil {
		t.Fatal(err)
	}
	timedTurns(tl, 1, tailBase, "after")
	mustPersist(t, st, tl)
	whole.Turns = append(whole.Turns, tl.Turns[len(tl.Turns)-1])
	sameSession(t, mustLoad(t, st, root.ID), whole)
	checkClean(t, c)
}

func TestLoadTailLegacy(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	id := storetest.LoadLegacy(t, c)
	whole := mustLoad(t, st, id)
	got, err := st.LoadTail(ctx, id, session.Tail{Last: 2})
	if err != nil {
		t.Fatal(err)
	}
	sameTail(t, got, whole, 1)
	got, err = st.LoadTail(ctx, id, session.Tail{Since: whole.Turns[2].Created})
	if err != nil {
		t.Fatal(err)
	}
	sameTail(t, got, whole, 2)
	// It appends after its tail, and gets its count and digest then.
	tl, err := st.LoadTail(ctx, id, session.Tail{Last: 1})
	if err != nil {
		t.Fatal(err)
	}
	tl.Append("user", "after a tail of a legacy session")
	mustPersist(t, st, tl)
	whole.Turns = append(whole.Turns, tl.Turns[len(tl.Turns)-1])
	sameSession(t, mustLoad(t, st, id), whole)
}

// TestPersistTail: turns appended to a tail are stored after it, with the
// compare and swap and the hash chain of any append; the whole history
// then loads as if it had been loaded whole, and Check finds nothing.
func TestPersistTail(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, c := newStore(t)
	ctx := context.Background()
	_, _, f2 := tailChain(t, st)
	whole := mustLoad(t, st, f2.ID)
	for _, last := range []int{2, 5} { // from own turns; from the parent's
		tl, err := st.LoadTail(ctx, f2.ID, session.Tail{Last: last})
		if err != nil {
			t.Fatal(err)
		}
		tl.Append("user", "after the tail")
		mustPersist(t, st, tl)
		tl.Append("assistant", "and again")
		before := ct.requests.Load()
		mustPersist(t, st, tl) // what the first Persist learned: one append
		if n := ct.requests.Load() - before; n != 1 {
			t.Errorf("second persist: got %d requests, want 1 (the update, its success answer its acknowledgement)", n)
		}
		whole.Turns = append(whole.Turns, tl.Turns[len(tl.Turns)-2:]...)
		if tl.From != whole.Turns[len(whole.Turns)-1].Index+1-len(tl.Turns) {
			t.Errorf("got From %d after persist", tl.From)
		}
		sameSession(t, mustLoad(t, st, f2.ID), whole)
	}
	// A stale tail conflicts, and writes nothing.
	stale, err := st.LoadTail(ctx, f2.ID, session.Tail{Last: 1})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := st.LoadTail(ctx, f2.ID, session.Tail{Last: 1})
	if err != nil {
		t.Fatal(err)
	}
	fresh.Append("user", "first")
	mustPersist(t, st, fresh)
	stale.Append("user", "second")
	if err := st.Persist(ctx, stale); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	whole.Turns = append(whole.Turns, fresh.Turns[len(fresh.Turns)-1])
	sameSession(t, mustLoad(t, st, f2.ID), whole)
	checkClean(t, c)
}

// TestForkTail: a fork of a tail is a tail, persisted with the prefix it
// inherits.
func TestForkTail(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	_, _, f2 := tailChain(t, st)
	tl, err := st.LoadTail(ctx, f2.ID, session.Tail{Last: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Fork(tl.From - 1); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("fork below the tail: got %v, want ErrInvalid", err)
	}
	f3, err := tl.Fork(9)
	if err != nil {
		t.Fatal(err)
	}
	if f3.From != tl.From || len(f3.Turns) != 9-tl.From {
		t.Fatalf("got a fork from %d holding %d turns, want from %d holding %d", f3.From, len(f3.Turns), tl.From, 9-tl.From)
	}
	f3.Append("user", "a fork of a tail")
	mustPersist(t, st, f3)
	want := mustLoad(t, st, f2.ID).Turns[:9]
	got := mustLoad(t, st, f3.ID)
	if got.ParentID != f2.ID || got.ForkedAt != 9 {
		t.Fatalf("got parent %s at %d, want %s at 9", got.ParentID, got.ForkedAt, f2.ID)
	}
	sameHistory(t, got.Turns[:9], want)
	sameHistory(t, got.Turns[9:], f3.Turns[9-f3.From:])
	checkClean(t, c)
}

// TestForkTailParentDeleted: Persist of a fork of a tail whose parent was
// deleted meanwhile answers ErrParentMissing (an *AncestorError naming
// the parent), as for any fork, not ErrNotFound.
func TestForkTailParentDeleted(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	r := persisted(t, st, "tail-parent-deleted", 2)
	f, err := st.Fork(ctx, r.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.Fork(1)
	if err != nil {
		t.Fatal(err)
	}
	g.Append("user", "a fork of a deleted tail")
	if err := st.Delete(ctx, f.ID, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = st.Persist(ctx, g)
	var ae *session.AncestorError
	if !errors.As(err, &ae) || ae.Missing != f.ID {
		t.Fatalf("persist: got %v, want an *AncestorError naming %s", err, f.ID)
	}
}

// checkClean fails tb when Check finds a problem in the store.
func checkClean(tb testing.TB, c *kg.Client) {
	tb.Helper()
	fs, err := storetest.Check(context.Background(), admin.New(c))
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range fs {
		tb.Errorf("check: %v", f)
	}
}

// TestLoadTailCost: a tail costs its turns, not the history: the bytes a
// tail load receives grow with the tail. A tail longer than what is read
// by index is read by range, the same turns.
func TestLoadTailCost(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	s := session.New("tail-agent")
	pad := strings.Repeat("x", 500)
	for i := range 1100 {
		s.Append("user", itoa(i)+pad)
		s.Turns[i].Created = at(i)
	}
	mustPersist(t, st, s)
	whole := mustLoad(t, st, s.ID)
	bytes := func(tail session.Tail, from int) int64 {
		t.Helper()
		before := ct.bytes.Load()
		got, err := st.LoadTail(ctx, s.ID, tail)
		if err != nil {
			t.Fatal(err)
		}
		sameTail(t, got, whole, from)
		return ct.bytes.Load() - before
	}
	// The history holds 550 KB of content; 10 turns hold 5 KB.
	if n := bytes(session.Tail{Last: 10}, 1090); n > 50_000 {
		t.Errorf("a tail of 10 turns received %d bytes, want under 50000", n)
	}
	if n := bytes(session.Tail{Since: at(1090)}, 1090); n > 50_000 {
		t.Errorf("a tail since turn 1090 received %d bytes, want under 50000", n)
	}
	bytes(session.Tail{Last: 1050}, 50) // by range
	bytes(session.Tail{Last: 1050, Since: at(60)}, 60)
}

// An agent that keeps a long conversation loads only its recent turns,
// and goes on from there.
func ExampleStore_LoadTail() {
	ctx := context.Background()
	c, err := kg.New(kg.Config{Endpoint: os.Getenv("TRAILS_ENDPOINT"), Store: kg.Store(os.Getenv("TRAILS_STORE"))})
	if err != nil {
		log.Fatal(err)
	}
	st := session.NewStore(c)
	s := session.New("agent-7")
	for i := range 100 {
		s.Append("user", fmt.Sprintf("message %d", i))
	}
	if err := st.Persist(ctx, s); err != nil {
		log.Fatal(err)
	}

	recent, err := st.LoadTail(ctx, s.ID, session.Tail{Last: 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("from", recent.From)
	for _, t := range recent.Turns {
		fmt.Println(t.Index, t.Content)
	}
	recent.Append("assistant", "the next turn")
	if err := st.Persist(ctx, recent); err != nil { // stored after the tail
		log.Fatal(err)
	}
	// Output:
	// from 98
	// 98 message 98
	// 99 message 99
}
