package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

func TestMain(m *testing.M) {
	// The Example reads its store from TRAILS_ENDPOINT and TRAILS_STORE, as a program would.
	ep, err := fusekitest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TRAILS_ENDPOINT", ep)
	os.Setenv("TRAILS_STORE", string(fusekitest.TestStore()))
	fusekitest.Main(m)
}

// counter counts the HTTP requests a client sends and the bytes it
// receives.
type counter struct {
	requests atomic.Int64
	bytes    atomic.Int64
	next     http.RoundTripper
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.bytes}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// newStore returns a Store over the test binary's dataset and the counter
// of its requests.
func newStore(tb testing.TB, opts ...session.StoreOption) (*session.Store, *counter, *kg.Client) {
	tb.Helper()
	ct := &counter{next: &http.Transport{MaxIdleConnsPerHost: 8}}
	c := fusekitest.Client(tb, kg.Config{Endpoint: fusekitest.Endpoint(tb), HTTPClient: &http.Client{Transport: ct}})
	return session.NewStore(c, opts...), ct, c
}

// persisted returns a root of principal with n turns, stored.
func persisted(tb testing.TB, st *session.Store, principal string, n int) *session.Session {
	tb.Helper()
	s := session.New(principal)
	appendN(s, n, "root")
	mustPersist(tb, st, s)
	return s
}

// queryInt runs query q, bound with p, and returns the integer ?n of its
// one row: what the tests' counting helpers share.
func queryInt(tb testing.TB, c *kg.Client, q string, p kg.Params) int {
	tb.Helper()
	bound, err := kg.Bind(q, p)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Query(context.Background(), bound)
	if err != nil {
		tb.Fatalf("count: %v", err)
	}
	if len(res.Solutions) != 1 {
		tb.Fatalf("count: got %d rows, want 1", len(res.Solutions))
	}
	n, err := res.Solutions[0].Int("n")
	if err != nil {
		tb.Fatalf("count: %v", err)
	}
	return n
}

func appendN(s *session.Session, n int, tag string) {
	for i := 0; i < n; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		s.Append(role, tag+" turn "+itoa(len(s.Turns))+": \"quoted\"\nsecond line")
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func mustPersist(tb testing.TB, st *session.Store, s *session.Session) {
	tb.Helper()
	if err := st.Persist(context.Background(), s); err != nil {
		tb.Fatalf("persist %s: %v", s.ID, err)
	}
}

func mustFork(tb testing.TB, s *session.Session, at int) *session.Session {
	tb.Helper()
	f, err := s.Fork(at)
	if err != nil {
		tb.Fatalf("fork %s at %d: %v", s.ID, at, err)
	}
	return f
}

func mustLoad(tb testing.TB, st *session.Store, id string) *session.Session {
	tb.Helper()
	s, err := st.Load(context.Background(), id)
	if err != nil {
		tb.Fatalf("load %s: %v", id, err)
	}
	return s
}

// sameHistory fails tb unless got and want hold the same turns.
func sameHistory(tb testing.TB, got, want []session.Turn) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d turns, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Index != w.Index || g.Role != w.Role || g.Content != w.Content || g.Branch != w.Branch || !g.Created.Equal(w.Created) {
			tb.Fatalf("turn %d: got %+v, want %+v", i, g, w)
		}
	}
}

// sameSession fails tb unless got is want as stored.
func sameSession(tb testing.TB, got, want *session.Session) {
	tb.Helper()
	if got.ID != want.ID || got.Principal != want.Principal || got.ParentID != want.ParentID ||
		got.ForkedAt != want.ForkedAt || got.Branch != want.Branch {
		tb.Fatalf("got session {%s %s %s %d %s}, want {%s %s %s %d %s}",
			got.ID, got.Principal, got.ParentID, got.ForkedAt, got.Branch,
			want.ID, want.Principal, want.ParentID, want.ForkedAt, want.Branch)
	}
	sameHistory(tb, got.Turns, want.Turns)
}

// check is st.Check for the tests of Check's SPARQL rules: on a store with
// no SHACL endpoint (TRAILS_TEST_STORE=oxigraph) Check returns the other
// rules' findings with session.ErrSHACLNotRun, which check drops there
// (and only there).
func check(ctx context.Context, st *session.Store) ([]session.Finding, error) {
	fs, err := st.Check(ctx)
	if errors.Is(err, session.ErrSHACLNotRun) && fusekitest.TestStore() != kg.Fuseki {
		err = nil
	}
	return fs, err
}
