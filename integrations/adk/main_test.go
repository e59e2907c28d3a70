package adk_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	trails "github.com/trails-kg/trails/session"
)

func TestMain(m *testing.M) { fusekitest.Main(m) }

// newService returns a service over tb's dataset, wiped, and its store.
// Under TRAILS_TEST_STORE=kafka the store writes through the log of a
// replicated store whose first replica is that dataset
// (internal/clustertest).
func newService(tb testing.TB) (*adk.SessionService, *trails.Store) {
	tb.Helper()
	st := trails.NewStore(clustertest.Querier(tb, fusekitest.Empty(tb)))
	return adk.NewSessionService(st), st
}

// counting counts the HTTP requests a client sends and the bytes it
// receives.
type counting struct {
	requests atomic.Int64
	bytes    atomic.Int64
	next     http.RoundTripper
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = &countedBody{ReadCloser: resp.Body, n: &c.bytes}
	}
	return resp, err
}

// countedBody counts the bytes read from a response body.
type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// countedService returns a service over tb's dataset, wiped, its store
// and the counter of its requests.
func countedService(tb testing.TB) (*adk.SessionService, *trails.Store, *counting) {
	tb.Helper()
	fusekitest.RequireDirect(tb, "it counts its store's HTTP requests")
	ct := &counting{next: &http.Transport{}}
	c := fusekitest.Client(tb, kg.Config{Endpoint: fusekitest.Endpoint(tb), HTTPClient: &http.Client{Transport: ct}})
	if err := c.Update(context.Background(), "DROP ALL", kg.Idempotent()); err != nil {
		tb.Fatal(err)
	}
	st := trails.NewStore(c)
	return adk.NewSessionService(st), st, ct
}
