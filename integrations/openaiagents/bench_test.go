package openaiagents_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/nlpodyssey/openai-agents-go/memory"
	"github.com/trails-kg/trails/integrations/openaiagents"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// The benchmarks run the same calls on the SDK's own SQLite session
// (memory.SQLiteSession: github.com/mattn/go-sqlite3, a file in a
// temporary directory, the SDK's settings) and on a Session over the test
// Fuseki (TDB2 on disk), side by side: go test -run '^$' -bench . reports
// both of each pair. Timings are this machine's; no test asserts any.

// benchHistory is the length of the session GetItems and Fork read.
const benchHistory = 200

// backend is one kind of memory.Session.
type backend struct {
	name string
	// start returns what opens session id, in one database (SQLite) or
	// dataset (Trails) of b's own, and what counts the requests sent to
	// the store so far (nil for SQLite, which sends none).
	start func(b *testing.B) (open func(id string) memory.Session, requests func() int64)
	// fork returns a session holding the first at items of s: a Trails
	// fork, a copy for SQLite, which has none.
	fork func(ctx context.Context, b *testing.B, open func(string) memory.Session, s memory.Session, at int) memory.Session
}

// backends returns SQLite's and Trails' backends.
func backends() []backend {
	return []backend{
		{
			name: "sqlite",
			start: func(b *testing.B) (func(string) memory.Session, func() int64) {
				dsn := filepath.Join(b.TempDir(), "bench.db")
				return func(id string) memory.Session {
					s, err := memory.NewSQLiteSession(context.Background(), memory.SQLiteSessionParams{SessionID: id, DBDataSourceName: dsn})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { s.Close() })
					return s
				}, nil
			},
			fork: func(ctx context.Context, b *testing.B, open func(string) memory.Session, s memory.Session, at int) memory.Session {
				items, err := s.GetItems(ctx, 0)
				if err != nil {
					b.Fatal(err)
				}
				c := open(session.New("p").ID)
				if err := c.AddItems(ctx, items[:at]); err != nil {
					b.Fatal(err)
				}
				return c
			},
		},
		{
			name: "trails",
			start: func(b *testing.B) (func(string) memory.Session, func() int64) {
				ct := &counter{next: http.DefaultTransport.(*http.Transport).Clone()}
				c := fusekitest.Client(b, kg.Config{Endpoint: fusekitest.Endpoint(b), HTTPClient: &http.Client{Transport: ct}})
				if err := c.Update(context.Background(), "DROP ALL", kg.Idempotent()); err != nil {
					b.Fatal(err)
				}
				// Forks beyond session.DefaultMaxChildren: BenchmarkFork forks one session b.N times.
				st := session.NewStore(c, session.WithMaxChildren(0))
				return func(id string) memory.Session { return openaiagents.NewSession(st, id) }, ct.n.Load
			},
			fork: func(ctx context.Context, b *testing.B, _ func(string) memory.Session, s memory.Session, at int) memory.Session {
				f, err := s.(*openaiagents.Session).Fork(ctx, at)
				if err != nil {
					b.Fatal(err)
				}
				return f
			},
		},
	}
}

// counter is an http.RoundTripper that counts the requests sent through
// it.
type counter struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// measure runs op b.N times, timed, and reports the store's requests per
// op when requests counts them.
func measure(b *testing.B, requests func() int64, op func(i int)) {
	b.Helper()
	var before int64
	if requests != nil {
		before = requests()
	}
	b.ResetTimer()
	for i := range b.N {
		op(i)
	}
	b.StopTimer()
	if requests != nil {
		b.ReportMetric(float64(requests()-before)/float64(b.N), "req/op")
	}
}

// turnItems returns the items of agent run i: the question, a function
// call, its output and the answer, as a runner adds them.
func turnItems(i int) []memory.TResponseInputItem {
	n := strconv.Itoa(i)
	return []memory.TResponseInputItem{user("Weather in city " + n + "?"), call("call_"+n, "get_weather", `{"city":"`+n+`"}`),
		output("call_"+n, `{"sky":"sunny","c":21}`), answer("msg_"+n, "Sunny, 21 °C in city "+n+".")}
}

// fill adds n items to s, four per AddItems as a runner's turns.
func fill(ctx context.Context, b *testing.B, s memory.Session, n int) {
	b.Helper()
	var items []memory.TResponseInputItem
	for i := 0; len(items) < n; i++ {
		items = append(items, turnItems(i)...)
	}
	for len(items) > 0 {
		k := min(4, len(items))
		if err := s.AddItems(ctx, items[:k]); err != nil {
			b.Fatal(err)
		}
		items = items[k:]
	}
}

// BenchmarkAddItems: one agent run's four items per op, into one session.
func BenchmarkAddItems(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			open, requests := be.start(b)
			s := open(session.New("p").ID)
			fill(ctx, b, s, 4) // created
			measure(b, requests, func(i int) {
				if err := s.AddItems(ctx, turnItems(i)); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkGetItems: all items of a session of benchHistory items, and
// its last 10 (what a runner with a session input limit reads).
func BenchmarkGetItems(b *testing.B) {
	for _, limit := range []int{0, 10} {
		for _, be := range backends() {
			b.Run("limit="+strconv.Itoa(limit)+"/"+be.name, func(b *testing.B) {
				ctx := context.Background()
				open, requests := be.start(b)
				s := open(session.New("p").ID)
				fill(ctx, b, s, benchHistory)
				measure(b, requests, func(int) {
					items, err := s.GetItems(ctx, limit)
					if err != nil {
						b.Fatal(err)
					}
					if limit == 0 && len(items) != benchHistory {
						b.Fatalf("got %d items, want %d", len(items), benchHistory)
					}
				})
			})
		}
	}
}

// BenchmarkPopItem: one PopItem per op (Trails: a one-turn rewind into an
// archive fork, recorded in PROV; SQLite: a DELETE).
func BenchmarkPopItem(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			open, requests := be.start(b)
			s := open(session.New("p").ID)
			var items []memory.TResponseInputItem
			for i := 0; len(items) < b.N; i++ {
				items = append(items, turnItems(i)...)
			}
			if err := s.AddItems(ctx, items); err != nil {
				b.Fatal(err)
			}
			measure(b, requests, func(int) {
				if it, err := s.PopItem(ctx); err != nil || it == nil {
					b.Fatalf("pop: got %v (%v)", it, err)
				}
			})
		})
	}
}

// BenchmarkFork: a session sharing the first half of a session of
// benchHistory items, then one run added to it (Trails: a fork that
// shares the prefix in the store; SQLite: a copy of the items into a new
// session, which is what it has).
func BenchmarkFork(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			open, requests := be.start(b)
			s := open(session.New("p").ID)
			fill(ctx, b, s, benchHistory)
			measure(b, requests, func(i int) {
				f := be.fork(ctx, b, open, s, benchHistory/2)
				if err := f.AddItems(ctx, turnItems(i)); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
