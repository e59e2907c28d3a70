package storetest

import (
	"context"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// The helpers below take the few methods of a session.Store they call, so
// that a test may pass a Store or a type that embeds one.

type persister interface {
	Persist(ctx context.Context, s *session.Session) error
}

type loader interface {
	Load(ctx context.Context, id string, opts ...session.LoadOption) (*session.Session, error)
}

// NewID returns a new session id (a UUIDv7).
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// Itoa is strconv.Itoa for the small non-negative numbers of test texts.
func Itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return Itoa(i/10) + digits[i%10:i%10+1]
}

// AppendN appends n turns to s, user and assistant in turn, each naming
// tag and its index, with a quote and a line break in it.
func AppendN(s *session.Session, n int, tag string) {
	for i := 0; i < n; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		s.Append(role, tag+" turn "+Itoa(len(s.Turns))+": \"quoted\"\nsecond line")
	}
}

// MustPersist persists s with st, failing tb on an error.
func MustPersist(tb testing.TB, st persister, s *session.Session) {
	tb.Helper()
	if err := st.Persist(context.Background(), s); err != nil {
		tb.Fatalf("persist %s: %v", s.ID, err)
	}
}

// Persisted returns a root of principal with n turns, stored with st.
func Persisted(tb testing.TB, st persister, principal string, n int) *session.Session {
	tb.Helper()
	s := session.New(principal)
	AppendN(s, n, "root")
	MustPersist(tb, st, s)
	return s
}

// MustFork forks s at index at, failing tb on an error.
func MustFork(tb testing.TB, s *session.Session, at int) *session.Session {
	tb.Helper()
	f, err := s.Fork(at)
	if err != nil {
		tb.Fatalf("fork %s at %d: %v", s.ID, at, err)
	}
	return f
}

// MustLoad loads session id with st, failing tb on an error.
func MustLoad(tb testing.TB, st loader, id string) *session.Session {
	tb.Helper()
	s, err := st.Load(context.Background(), id)
	if err != nil {
		tb.Fatalf("load %s: %v", id, err)
	}
	return s
}

// MustInfo returns the Info of session id, failing tb on an error.
func MustInfo(tb testing.TB, st interface {
	Info(ctx context.Context, id string) (session.Info, error)
}, id string) session.Info {
	tb.Helper()
	in, err := st.Info(context.Background(), id)
	if err != nil {
		tb.Fatalf("info %s: %v", id, err)
	}
	return in
}

// MustAnchor anchors session id at its current position under name,
// failing tb on an error.
func MustAnchor(tb testing.TB, st interface {
	Anchor(ctx context.Context, id, name string, state map[string]string) (session.Anchor, error)
}, id, name string, state map[string]string) session.Anchor {
	tb.Helper()
	a, err := st.Anchor(context.Background(), id, name, state)
	if err != nil {
		tb.Fatalf("anchor %s %q: %v", id, name, err)
	}
	return a
}

// MustMerge merges the result r of fork childID into its parent, failing
// tb on an error.
func MustMerge(tb testing.TB, st interface {
	Merge(ctx context.Context, childID string, r session.MergeResult) (session.Turn, error)
}, childID string, r session.MergeResult) session.Turn {
	tb.Helper()
	t, err := st.Merge(context.Background(), childID, r)
	if err != nil {
		tb.Fatalf("merge %s: %v", childID, err)
	}
	return t
}

// MustRewind rewinds session id to index to, with the options given (at
// most one; none: the defaults), failing tb on an error.
func MustRewind(tb testing.TB, st *session.Store, id string, to int, opts ...session.RewindOptions) (*session.Session, session.RewindResult) {
	tb.Helper()
	var o session.RewindOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	s, r, err := st.Rewind(context.Background(), id, to, o)
	if err != nil {
		tb.Fatalf("rewind %s to %d: %v", id, to, err)
	}
	return s, r
}

// SameHistory fails tb unless got and want hold the same turns.
func SameHistory(tb testing.TB, got, want []session.Turn) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d turns, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Index != w.Index || g.Role != w.Role || g.Content != w.Content || g.Branch != w.Branch || !g.Created.Equal(w.Created) {
			tb.Fatalf("turn %d: got %+v, want %+v", i, g, w)
		}
		if gs, ws := Structure(g), Structure(w); !reflect.DeepEqual(gs, ws) {
			tb.Fatalf("turn %d: structured fields: got %#v, want %#v", i, gs, ws)
		}
	}
}

// SameSession fails tb unless got is want as stored.
func SameSession(tb testing.TB, got, want *session.Session) {
	tb.Helper()
	if got.ID != want.ID || got.Principal != want.Principal || got.ParentID != want.ParentID ||
		got.ForkedAt != want.ForkedAt || got.Branch != want.Branch {
		tb.Fatalf("got session {%s %s %s %d %s}, want {%s %s %s %d %s}",
			got.ID, got.Principal, got.ParentID, got.ForkedAt, got.Branch,
			want.ID, want.Principal, want.ParentID, want.ForkedAt, want.Branch)
	}
	SameHistory(tb, got.Turns, want.Turns)
}

// QueryInt runs query q, bound with p, and returns the integer ?n of its
// one row.
func QueryInt(tb testing.TB, c *kg.Client, q string, p kg.Params) int {
	tb.Helper()
	bound, err := kg.Bind(q, p)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Select(context.Background(), bound)
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

// Realistic returns turn content of 200–2,000 characters of mixed text
// with quotes and newlines.
func Realistic(rng *rand.Rand) string {
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

// diskServer is one Fuseki on TDB2 on disk (the production layout) shared
// by the benchmarks of a test binary.
var (
	diskOnce sync.Once
	diskEP   string
	diskErr  error
)

// DiskEndpoint returns the endpoint of the test binary's Fuseki on disk,
// starting it the first time.
func DiskEndpoint(b *testing.B) string {
	b.Helper()
	diskOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trails-bench-")
		if err != nil {
			diskErr = err
			return
		}
		srv, err := fusekitest.StartServer(fusekitest.Options{DataDir: dir})
		if err != nil {
			diskErr = err
			return
		}
		diskEP = srv.Endpoint
		fusekitest.OnStop(func() { srv.Close() })
	})
	if diskErr != nil {
		b.Fatalf("Fuseki on disk: %v", diskErr)
	}
	return diskEP
}

// Structure returns the structured fields of t, nil for a plain turn, for
// comparing with reflect.DeepEqual.
func Structure(t session.Turn) *session.Structure {
	if !t.Structured() {
		return nil
	}
	return t.Structure
}
