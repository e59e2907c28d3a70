package session_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

func TestMain(m *testing.M) {
	if os.Getenv(envWriterChild) != "" {
		os.Exit(m.Run()) // the writer TestKillWriter kills: it writes to the parent's store
	}
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

// newStore returns a Store over tb's dataset, the counter of the requests
// of the client it returns, and that client. Under TRAILS_TEST_STORE=kafka
// the Store writes through the log of a replicated store (see querier),
// and the client, whose requests the counter counts, is for the test's own
// reads: a test that counts the Store's requests calls
// fusekitest.RequireDirect.
func newStore(tb testing.TB, opts ...session.StoreOption) (*session.Store, *counter, *kg.Client) {
	tb.Helper()
	ct := &counter{next: &http.Transport{MaxIdleConnsPerHost: 8}}
	c := fusekitest.Client(tb, kg.Config{Endpoint: fusekitest.Endpoint(tb), HTTPClient: &http.Client{Transport: ct}})
	return session.NewStore(querier(tb, c), opts...), ct, c
}

// isReplicated reports whether q says its updates are applied by several
// stores (cluster.Client does): the tests' wrappers of a Querier forward
// it, as a Store asks for it (and must fill in NOW() and the like then).
func isReplicated(q session.Querier) bool {
	r, ok := q.(interface{ Replicated() bool })
	return ok && r.Replicated()
}

// querier returns what a test's Store runs on, c being a client of tb's
// dataset: c, or under TRAILS_TEST_STORE=kafka the cluster.Client of a
// replicated store whose first replica is c's dataset
// (internal/clustertest), so that c reads what the Store wrote.
func querier(tb testing.TB, c *kg.Client) session.Querier {
	tb.Helper()
	return clustertest.Querier(tb, c)
}

// persisted returns a root of principal with n turns, stored.
func persisted(tb testing.TB, st *session.Store, principal string, n int) *session.Session {
	tb.Helper()
	return storetest.Persisted(tb, st, principal, n)
}

// queryInt runs query q, bound with p, and returns the integer ?n of its
// one row: what the tests' counting helpers share.
func queryInt(tb testing.TB, c *kg.Client, q string, p kg.Params) int {
	tb.Helper()
	return storetest.QueryInt(tb, c, q, p)
}

func appendN(s *session.Session, n int, tag string) { storetest.AppendN(s, n, tag) }

func itoa(i int) string { return storetest.Itoa(i) }

func mustPersist(tb testing.TB, st *session.Store, s *session.Session) {
	tb.Helper()
	storetest.MustPersist(tb, st, s)
}

func mustFork(tb testing.TB, s *session.Session, at int) *session.Session {
	tb.Helper()
	return storetest.MustFork(tb, s, at)
}

func mustLoad(tb testing.TB, st *session.Store, id string) *session.Session {
	tb.Helper()
	return storetest.MustLoad(tb, st, id)
}

// sameHistory fails tb unless got and want hold the same turns.
func sameHistory(tb testing.TB, got, want []session.Turn) {
	tb.Helper()
	storetest.SameHistory(tb, got, want)
}

// sameSession fails tb unless got is want as stored.
func sameSession(tb testing.TB, got, want *session.Session) {
	tb.Helper()
	storetest.SameSession(tb, got, want)
}

// tick returns a clock that advances a second per call, so that creation
// times order sessions deterministically.
func tick() func() time.Time {
	t := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}
