package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// Persists repeated, watched and lost: a fork request sent twice creates
// one fork, a reader never sees part of a persist, and the loser of a
// conflict changed nothing.

// TestIdempotentForkRequests persists the same in-memory fork twice (a retry
// after a timeout), and the same fork request from two goroutines with
// separate Stores at once: each time one fork is stored, with one PROV
// Fork activity.
func TestIdempotentForkRequests(t *testing.T) {
	fusekitest.Parallel(t)
	const rounds = 20
	ctx := context.Background()
	ep := fusekitest.Endpoint(t)
	_, _, c := newStore(t)

	t.Run("twice", func(t *testing.T) {
		st := ownStore(t, ep)
		p := persisted(t, st, "retrier", 5)
		f := mustFork(t, p, 3)
		appendN(f, 2, "f")
		mustPersist(t, st, f)
		mustPersist(t, ownStore(t, ep), f) // a retry, by another client
		mustPersist(t, st, f)
		kids, err := st.Branches(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) != 1 || kids[0].ID != f.ID {
			t.Fatalf("got branches %v, want just %s", kids, f.ID)
		}
		if acts, starts, derived := forkRecords(t, c, p.ID, f.ID); acts != 1 || starts != 1 || derived != 2 {
			t.Fatalf("got %d Fork activities, %d start times, %d wasDerivedFrom; want 1, 1, 2 (session graph and PROV graph)", acts, starts, derived)
		}
		sameSession(t, mustLoad(t, st, f.ID), f)
	})

	t.Run("concurrently", func(t *testing.T) {
		st := ownStore(t, ep)
		p := persisted(t, st, "racer", 6)
		stores := [2]*session.Store{ownStore(t, ep), ownStore(t, ep)}
		var both int
		for r := range rounds {
			f := mustFork(t, p, r%7)
			appendN(f, 1+r%3, "raced")
			var errs [2]error
			var wg sync.WaitGroup
			start := make(chan struct{})
			for k := range 2 {
				req := cloneSession(f)
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[k] = stores[k].Persist(ctx, req)
				}()
			}
			close(start)
			wg.Wait()
			for k, err := range errs {
				if err != nil {
					t.Errorf("round %d: request %d: %v", r, k, err)
				}
			}
			if errs[0] == nil && errs[1] == nil {
				both++
			}
			if acts, starts, derived := forkRecords(t, c, p.ID, f.ID); acts != 1 || starts != 1 || derived != 2 {
				t.Errorf("round %d: got %d Fork activities, %d start times, %d wasDerivedFrom; want 1, 1, 2", r, acts, starts, derived)
			}
			sameSession(t, mustLoad(t, st, f.ID), f)
		}
		kids, err := st.Branches(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) != rounds {
			t.Errorf("got %d branches, want %d", len(kids), rounds)
		}
		t.Logf("%d fork requests sent twice at once by separate stores: %d forks stored, both requests succeeded %d times", rounds, len(kids), both)
	})
}

// TestReadersSeeWholePersists has readers load a session in a loop while a
// writer persists batches of 50 turns: every load returns a whole number of
// batches, each turn as written.
func TestReadersSeeWholePersists(t *testing.T) {
	fusekitest.Parallel(t)
	const batches, batch, readers = 24, 50, 2
	ctx := context.Background()
	ep := fusekitest.Endpoint(t)
	text := func(i int) string {
		return fmt.Sprintf("batch %d turn %d: %s", i/batch, i%batch, strings.Repeat("x", i%97))
	}

	s := session.New("reader-test")
	wst := ownStore(t, ep)
	mustPersist(t, wst, s)
	done := make(chan struct{})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		lengths = map[int]int{} // turns seen → loads
		loads   atomic.Int64
		errs    = &limited{what: "Load while a writer persists"}
	)
	for k := range readers {
		st := ownStore(t, ep)
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := 0
			for {
				stop := false
				select {
				case <-done:
					stop = true // one more load after the last persist
				default:
				}
				got, err := st.Load(ctx, s.ID)
				loads.Add(1)
				if err != nil {
					errs.errorf(t, "reader %d: %v", k, err)
					if !errors.Is(err, session.ErrCorrupt) {
						return
					}
				} else {
					n := len(got.Turns)
					if n%batch != 0 {
						t.Errorf("reader %d: got %d turns, not a whole number of batches of %d", k, n, batch)
					}
					if n < last {
						t.Errorf("reader %d: got %d turns after %d", k, n, last)
					}
					last = n
					for i, tn := range got.Turns {
						if tn.Index != i || tn.Content != text(i) {
							t.Errorf("reader %d: turn %d: got %d %q, want %d %q", k, i, tn.Index, tn.Content, i, text(i))
							break
						}
					}
					mu.Lock()
					lengths[n]++
					mu.Unlock()
				}
				if stop {
					return
				}
			}
		}()
	}
	t0 := time.Now()
	for b := range batches {
		for k := range batch {
			s.Append("user", text(b*batch+k))
		}
		mustPersist(t, wst, s)
	}
	close(done)
	wg.Wait()
	distinct := slices.Sorted(maps.Keys(lengths))
	t.Logf("%d readers made %d loads (%d failed) while %d batches of %d were persisted in %v; they saw %d distinct lengths: %v",
		readers, loads.Load(), errs.count(), batches, batch, time.Since(t0).Round(time.Millisecond), len(distinct), distinct)
	errs.done(t)
	if lengths[batches*batch] == 0 {
		t.Errorf("no reader saw the final %d turns", batches*batch)
	}
}

// hookTransport runs a hook once, right after the first answer to a
// request that match accepts has arrived and before the caller sees it:
// a way to put another writer's persist at an exact point of a Load or a
// Persist, against the real store.
type hookTransport struct {
	next  http.RoundTripper
	match func(*http.Request) bool
	mu    sync.Mutex
	hook  func()
}

func (h *hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(r)
	if err != nil || resp.StatusCode/100 != 2 || !h.match(r) {
		return resp, err
	}
	h.mu.Lock()
	hook := h.hook
	h.hook = nil
	h.mu.Unlock()
	if hook != nil {
		// Read the whole answer first, so that the hook cannot change it.
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		hook()
	}
	return resp, nil
}

// hookedStore returns a Store over ep whose client runs hook once after
// the first answer to a request match accepts.
func hookedStore(tb testing.TB, ep string, match func(*http.Request) bool, hook func()) *session.Store {
	tb.Helper()
	fusekitest.RequireDirect(tb, "it runs another writer inside its store's HTTP requests")
	tr := &http.Transport{}
	tb.Cleanup(tr.CloseIdleConnections)
	ht := &hookTransport{next: tr, match: match, hook: hook}
	// NoUpdateLock: hook writes from inside this client's request.
	c := fusekitest.Client(tb, kg.Config{Endpoint: ep, HTTPClient: &http.Client{Transport: ht}, NoUpdateLock: true})
	return session.NewStore(c)
}

// TestLoadDuringPersist puts a persist by another writer between the
// requests of one Load, deterministically: the Load returns the history
// before or after that persist, never an error.
func TestLoadDuringPersist(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	ep := fusekitest.Endpoint(t)
	wst := ownStore(t, ep)
	s := persisted(t, wst, "loader", 3)
	before := slices.Clone(s.Turns)
	first := func(*http.Request) bool { return true } // Load's first request
	rst := hookedStore(t, ep, first, func() {
		appendN(s, 2, "meanwhile")
		mustPersist(t, wst, s)
	})
	got, err := rst.Load(ctx, s.ID)
	if err != nil {
		t.Fatalf("load while another writer appends: got %v, want the history before or after the append", err)
	}
	if len(got.Turns) == len(before) {
		sameHistory(t, got.Turns, before)
	} else {
		sameHistory(t, got.Turns, s.Turns)
	}
}

// TestConflictLoserChangedNothing puts another writer's persist between
// Persist's update and its confirming ASK, deterministically: the update
// applied, so Persist must report success; if it reports ErrConflict, its
// turns must not be stored (the loser changes nothing), or a writer
// following the documented protocol (Load, re-append, retry) stores them
// twice.
func TestConflictLoserChangedNothing(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	ep := fusekitest.Endpoint(t)
	bst := ownStore(t, ep)
	s := persisted(t, bst, "racer", 2)
	update := isWrite
	ast := hookedStore(t, ep, update, func() {
		b := mustLoad(t, bst, s.ID) // holds A's turn now
		b.Append("user", "B's turn")
		mustPersist(t, bst, b)
	})
	a := mustLoad(t, ast, s.ID)
	mine := a.Append("assistant", "A's turn")
	err := ast.Persist(ctx, a)
	stored := mustLoad(t, bst, s.ID)
	landed := len(storedOf(stored.Turns, []session.Turn{mine})) == 1
	t.Logf("A's persist returned %v; A's turn stored: %v; the session holds %d turns", err, landed, len(stored.Turns))
	switch {
	case err == nil && !landed:
		t.Fatalf("Persist returned nil but A's turn %d is not stored", mine.Index)
	case err != nil && landed:
		t.Fatalf("Persist returned %q, but A's turn %d is stored: the loser changed something", err, mine.Index)
	case err != nil && !errors.Is(err, session.ErrConflict):
		t.Fatalf("got %v, want nil or ErrConflict", err)
	}
}

// TestCreate: Store.Create stores a new session and refuses, with
// ErrExists and nothing written, an id that is stored or was deleted;
// of Creates racing on one id exactly one succeeds. Persist, by
// contrast, takes a turnless value for the stored session it names.
func TestCreate(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	s := session.New("erin")
	s.Initial = map[string]json.RawMessage{"k": json.RawMessage(`1`)}
	if err := st.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	again := session.New("erin")
	again.ID = s.ID
	again.Initial = map[string]json.RawMessage{"k": json.RawMessage(`2`)}
	if err := st.Create(ctx, again); !errors.Is(err, session.ErrExists) {
		t.Errorf("create of a stored id: got %v, want ErrExists", err)
	}
	if err := st.Create(ctx, s); !errors.Is(err, session.ErrExists) {
		t.Errorf("create of a value stored already: got %v, want ErrExists", err)
	}
	if got := mustLoad(t, st, s.ID).Values; string(got["k"]) != `1` {
		t.Errorf("values after the refused create: got k=%s, want 1", got["k"])
	}
	if err := st.Delete(ctx, s.ID, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := session.New("erin")
	gone.ID = s.ID
	if err := st.Create(ctx, gone); !errors.Is(err, session.ErrExists) {
		t.Errorf("create of a deleted id: got %v, want ErrExists", err)
	}

	id := session.New("erin").ID
	var wg sync.WaitGroup
	var ok, exists atomic.Int32
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := session.New("erin")
			v.ID = id
			switch err := st.Create(ctx, v); {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, session.ErrExists):
				exists.Add(1)
			default:
				t.Errorf("racing create: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || exists.Load() != 5 {
		t.Errorf("racing creates: got %d created and %d ErrExists, want 1 and 5", ok.Load(), exists.Load())
	}
}
