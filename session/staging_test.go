package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// Turns over the 64 KiB a SPARQL literal may hold go through a staging
// graph (session/staging.go): these tests hold Persist, Fork, Detach and
// the clean-up of staging graphs to the promise that nothing acknowledged
// differs from what was sent.

// bigContent returns size bytes of valid UTF-8 made of what a SPARQL or
// N-Triples string must escape, and non-ASCII, tagged by tag.
func bigContent(tag string, size int) string {
	piece := tag + ` "quoted" """long""" '''single''' line\ with } and # and $x ?y <z>` + "\n\r\t\x00\x7f\u0085\u2028 café 🎉 — "
	c := strings.Repeat(piece, size/len(piece)+1)[:size]
	for !strings.HasSuffix(c, " ") { // do not cut a character in two
		c = c[:len(c)-1]
	}
	return c
}

// methods counts the HTTP requests of a client by method.
type methods struct {
	mu   sync.Mutex
	n    map[string]int
	next http.RoundTripper
}

func (m *methods) RoundTrip(r *http.Request) (*http.Response, error) {
	m.mu.Lock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[r.Method]++
	m.mu.Unlock()
	return m.next.RoundTrip(r)
}

func (m *methods) count(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[method]
}

// newCountingStore is newStore counting requests by method.
func newCountingStore(tb testing.TB) (*session.Store, *methods, *kg.Client) {
	tb.Helper()
	fusekitest.RequireDirect(tb, "it counts its store's HTTP requests by method")
	m := &methods{next: &http.Transport{MaxIdleConnsPerHost: 8}}
	c := fusekitest.Client(tb, kg.Config{Endpoint: fusekitest.Endpoint(tb), HTTPClient: &http.Client{Transport: m}})
	return session.NewStore(c), m, c
}

// countStaging counts the staging graphs in c's dataset.
func countStaging(tb testing.TB, c *kg.Client) int {
	tb.Helper()
	return queryInt(tb, c, `SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?x <https://w3id.org/trails/ns#stagedContent> ?c } }`, nil)
}

// clean fails tb unless c holds no staging graph and admin.Check finds
// nothing.
func clean(tb testing.TB, c *kg.Client) {
	tb.Helper()
	if n := countStaging(tb, c); n != 0 {
		tb.Errorf("staging graphs left: got %d, want 0", n)
	}
	fs, err := storetest.Check(context.Background(), admin.New(c))
	if err != nil || len(fs) != 0 {
		tb.Errorf("check: got %v %s, want no findings", err, storetest.FindingsText(fs))
	}
}

// TestBigTurnRoundTrip persists turns of 1, 5 and 16 MiB as a root's
// first write, as an append and as a fork's own turn, and loads each back
// byte for byte.
func TestBigTurnRoundTrip(t *testing.T) {
	fusekitest.Parallel(t)
	st, m, c := newCountingStore(t)
	for _, size := range []int{1 << 20, 5 << 20, 16 << 20} {
		t.Run(fmt.Sprintf("%d MiB", size>>20), func(t *testing.T) {
			s := session.New("big")
			s.Append("user", "short question")
			s.Append("tool", bigContent("root", size)) // created with the root
			puts := m.count(http.MethodPut)
			t0 := time.Now()
			mustPersist(t, st, s)
			created := time.Since(t0)
			if got := m.count(http.MethodPut) - puts; got != 1 {
				t.Errorf("PUT requests of the create: got %d, want 1 (the staging graph)", got)
			}
			s.Append("assistant", bigContent("append", size)) // appended
			s.Append("user", "and after it")
			t0 = time.Now()
			mustPersist(t, st, s)
			appended := time.Since(t0)
			got := mustLoad(t, st, s.ID)
			sameSession(t, got, s)

			f := mustFork(t, got, 3)
			f.Append("tool", bigContent("fork", size)) // created with the fork
			mustPersist(t, st, f)
			sameSession(t, mustLoad(t, st, f.ID), f)
			t.Logf("a %.1f MB turn: create %v, append %v", float64(size)/1e6, created.Round(time.Millisecond), appended.Round(time.Millisecond))
		})
	}
	clean(t, c)
}

// TestBigTurnInvalid: a content over MaxTurnBytes, or not UTF-8 (a lone
// surrogate's bytes), is refused with ErrInvalid before any request.
func TestBigTurnInvalid(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	for _, tc := range []struct{ name, content string }{
		{"over MaxTurnBytes", strings.Repeat("x", session.MaxTurnBytes+1)},
		{"lone surrogate", bigContent("s", 2<<20) + "\xed\xa0\x80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := session.New("big")
			s.Append("tool", tc.content)
			n := ct.requests.Load()
			err := st.Persist(context.Background(), s)
			if !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("got %v, want %v", err, session.ErrInvalid)
			}
			if got := ct.requests.Load() - n; got != 0 {
				t.Errorf("requests: got %d, want 0", got)
			}
		})
	}
}

// TestBigTurnRefused: an append whose compare and swap is refused after
// its content was staged leaves no staging graph and no partial turn.
func TestBigTurnRefused(t *testing.T) {
	fusekitest.Parallel(t)
	st, m, c := newCountingStore(t)
	ctx := context.Background()
	s := persisted(t, st, "big", 1)
	other := mustLoad(t, st, s.ID)
	other.Append("user", "first")
	mustPersist(t, st, other)
	before := storetest.CountQuads(t, c, "")

	s.Append("tool", bigContent("late", 5<<20)) // s still holds 1 turn: the update's condition fails
	puts := m.count(http.MethodPut)
	if err := st.Persist(ctx, s); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("got %v, want %v", err, session.ErrConflict)
	}
	if got := m.count(http.MethodPut) - puts; got != 1 {
		t.Errorf("PUT requests: got %d, want 1 (staged, then refused)", got)
	}
	if got := storetest.CountQuads(t, c, ""); got != before {
		t.Errorf("quads: got %d, want %d", got, before)
	}
	sameSession(t, mustLoad(t, st, s.ID), other)
	clean(t, c)
}

// failingUpdates is a client whose updates that insert fail, unsent.
type failingUpdates struct {
	*kg.Client
	failed atomic.Int64
}

func (f *failingUpdates) Update(ctx context.Context, u string, opts ...kg.UpdateOption) error {
	if !strings.Contains(u, "INSERT") {
		return f.Client.Update(ctx, u, opts...)
	}
	f.failed.Add(1)
	return &kg.Error{Op: "update", Status: http.StatusServiceUnavailable, Body: "test: the store went away"}
}

// TestBigTurnFailedUpdate: when the update fails after the content was
// staged, Persist removes the staging graph itself.
func TestBigTurnFailedUpdate(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it fails the updates of a client that stages turns through its Graph Store, which the log has none of")
	_, _, c := newStore(t)
	f := &failingUpdates{Client: c}
	st := session.NewStore(f)
	s := session.New("big")
	s.Append("tool", bigContent("lost", 2<<20))
	if err := st.Persist(context.Background(), s); err == nil || f.failed.Load() == 0 {
		t.Fatalf("got %v after %d updates, want the update's error", err, f.failed.Load())
	}
	if got := storetest.CountQuads(t, c, ""); got != 0 {
		t.Errorf("quads: got %d, want 0", got)
	}
}

// querierOnly is a Querier without the Graph Store methods.
type querierOnly struct{ session.Querier }

func (q querierOnly) Replicated() bool { return isReplicated(q.Querier) }

// TestBigTurnWithoutGraphStore: through a Querier without a Graph Store a
// turn of up to 1 MiB is stored inline, a larger one refused before any
// request.
func TestBigTurnWithoutGraphStore(t *testing.T) {
	fusekitest.Parallel(t)
	_, ct, c := newStore(t)
	st := session.NewStore(querierOnly{querier(t, c)})
	s := session.New("big")
	s.Append("tool", bigContent("inline", 1<<20))
	mustPersist(t, st, s)
	sameSession(t, mustLoad(t, st, s.ID), s)
	s.Append("tool", bigContent("inline", 1<<20+1024))
	n := ct.requests.Load()
	if err := st.Persist(context.Background(), s); !errors.Is(err, session.ErrInvalid) || ct.requests.Load() != n {
		t.Fatalf("got %v after %d requests, want %v before any", err, ct.requests.Load()-n, session.ErrInvalid)
	}
}

// TestBigTurnRace: two writers append big turns to one session at once:
// exactly one wins, and the loser's staging graph is gone.
func TestBigTurnRace(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	s := persisted(t, st, "big", 1)
	writers := []*session.Session{mustLoad(t, st, s.ID), mustLoad(t, st, s.ID)}
	errs := make([]error, len(writers))
	var wg sync.WaitGroup
	for i, w := range writers {
		w.Append("tool", bigContent(fmt.Sprintf("writer %d", i), 5<<20))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = st.Persist(context.Background(), w)
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case errors.Is(err, session.ErrConflict):
		default:
			t.Fatalf("writer %d: got %v, want nil for one writer, %v for the other", i, err, session.ErrConflict)
		}
	}
	if won < 0 {
		t.Fatalf("got %v, want one writer to win", errs)
	}
	sameSession(t, mustLoad(t, st, s.ID), writers[won])
	clean(t, c)
}

// TestDetachBigTurn detaches a fork whose inherited prefix holds a 16 MiB
// turn: the copy is made inside the store, byte for byte.
func TestDetachBigTurn(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	s := session.New("big")
	s.Append("user", "read the file")
	s.Append("tool", bigContent("file", 16<<20))
	s.Append("assistant", "done")
	mustPersist(t, st, s)
	f := mustFork(t, s, 3)
	f.Append("user", "go on")
	mustPersist(t, st, f)

	t0 := time.Now()
	if err := st.Detach(ctx, f.ID, session.DetachOptions{}); err != nil {
		t.Fatalf("detach: %v", err)
	}
	t.Logf("detach of a fork over a 16 MiB turn: %v", time.Since(t0).Round(time.Millisecond))
	got := mustLoad(t, st, f.ID)
	if got.ParentID != "" {
		t.Fatalf("parent after detach: got %q, want none", got.ParentID)
	}
	sameHistory(t, got.Turns, f.Turns)
	if err := st.Delete(ctx, s.ID, session.DeleteOptions{}); err != nil {
		t.Fatalf("delete the former parent: %v", err)
	}
	sameHistory(t, mustLoad(t, st, f.ID).Turns, f.Turns)
	clean(t, c)
}

// TestBigStructuredTurn: a tool's long result and a file's bytes in a
// structured turn go through the staging graph as a long content does
// (one PUT, not the update's text), come back byte for byte, and a fork
// over them detaches with copies made inside the store.
func TestBigStructuredTurn(t *testing.T) {
	fusekitest.Parallel(t)
	st, m, c := newCountingStore(t)
	ctx := context.Background()
	result, err := json.Marshal(map[string]string{"page": bigContent("result", 3<<20)})
	if err != nil {
		t.Fatal(err)
	}
	s := session.New("big")
	s.AppendTurn(session.Turn{Role: "assistant", Content: "fetch the page and the file", Structure: &session.Structure{Parts: []session.Part{
		{Kind: session.PartToolCall, CallID: "c1", ToolName: "fetch", Arguments: json.RawMessage(`{"url":"https://example.org/page"}`)},
	}}})
	s.AppendTurn(session.Turn{Role: "tool", Content: "fetched", Structure: &session.Structure{Parts: []session.Part{
		{Kind: session.PartToolResult, CallID: "c1", ToolName: "fetch", Result: result},
		{Kind: session.PartData, MIMEType: "application/octet-stream", Data: []byte(bigContent("file", 2<<20))},
	}}})
	puts := m.count(http.MethodPut)
	mustPersist(t, st, s)
	if got := m.count(http.MethodPut) - puts; got != 1 {
		t.Errorf("PUT requests of the create: got %d, want 1 (the staging graph)", got)
	}
	sameSession(t, mustLoad(t, st, s.ID), s)
	f := mustFork(t, s, 2)
	f.Append("user", "go on")
	mustPersist(t, st, f)
	if err := st.Detach(ctx, f.ID, session.DetachOptions{}); err != nil {
		t.Fatalf("detach: %v", err)
	}
	got := mustLoad(t, st, f.ID)
	if got.ParentID != "" {
		t.Fatalf("parent after detach: got %q, want none", got.ParentID)
	}
	sameHistory(t, got.Turns, f.Turns)
	clean(t, c)
}
