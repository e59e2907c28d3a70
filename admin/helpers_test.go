package admin_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

func TestMain(m *testing.M) { fusekitest.Main(m) }

// store is what the tests work with: a session.Store to write and read
// sessions as an agent does, and the admin.Dataset of the same client to
// check, export and import them. Store.Rechain (one session) and
// Dataset.Rechain (all of them) share a name: call them through the field.
type store struct {
	*session.Store
	*admin.Dataset
}

// openStore returns the store over c; opts configure its session.Store.
func openStore(c *kg.Client, opts ...session.StoreOption) *store {
	return &store{Store: session.NewStore(c, opts...), Dataset: admin.New(c)}
}

// newStore returns a store over the test's dataset and its client.
func newStore(tb testing.TB, opts ...session.StoreOption) (*store, *kg.Client) {
	tb.Helper()
	c := fusekitest.Client(tb, kg.Config{Endpoint: fusekitest.Endpoint(tb), HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}})
	return openStore(c, opts...), c
}

// persisted returns a root of principal with n turns, stored.
func persisted(tb testing.TB, st *store, principal string, n int) *session.Session {
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

func mustPersist(tb testing.TB, st *store, s *session.Session) {
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

func mustLoad(tb testing.TB, st *store, id string) *session.Session {
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

// benchServer is one Fuseki on TDB2 on disk (the production layout) shared
// by the benchmarks of this binary.
var (
	benchOnce sync.Once
	benchEP   string
	benchErr  error
)

// diskEndpoint returns the endpoint of benchServer, starting it once.
func diskEndpoint(b *testing.B) string {
	b.Helper()
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trails-bench-")
		if err != nil {
			benchErr = err
			return
		}
		srv, err := fusekitest.StartServer(fusekitest.Options{DataDir: dir})
		if err != nil {
			benchErr = err
			return
		}
		benchEP = srv.Endpoint
		fusekitest.OnStop(func() { srv.Close() })
	})
	if benchErr != nil {
		b.Fatalf("Fuseki on disk: %v", benchErr)
	}
	return benchEP
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

func mustAnchor(tb testing.TB, st *store, id, name string, state map[string]string) session.Anchor {
	tb.Helper()
	a, err := st.Anchor(context.Background(), id, name, state)
	if err != nil {
		tb.Fatalf("anchor %s %q: %v", id, name, err)
	}
	return a
}

func mustMerge(tb testing.TB, st *store, childID string, r session.MergeResult) session.Turn {
	tb.Helper()
	t, err := st.Merge(context.Background(), childID, r)
	if err != nil {
		tb.Fatalf("merge %s: %v", childID, err)
	}
	return t
}

func mustRewind(tb testing.TB, st *store, id string, to int, opts ...session.RewindOption) (*session.Session, session.RewindResult) {
	tb.Helper()
	s, r, err := st.Rewind(context.Background(), id, to, opts...)
	if err != nil {
		tb.Fatalf("rewind %s to %d: %v", id, to, err)
	}
	return s, r
}

// realistic returns turn content of 200–2,000 characters of mixed text with
// quotes and newlines.
func realistic(rng *rand.Rand) string {
	words := []string{"the", "agent", "\"quoted\"", "fork", "session", "SPARQL", "turn,", "history.", "It's", "graph", "prefix", "café", "→", "branch\n"}
	n := 200 + rng.IntN(1801)
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	out := b.String()[:n]
	for !utf8.ValidString(out) { // do not cut a character in two
		out = out[:len(out)-1]
	}
	return out
}
