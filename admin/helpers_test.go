package admin_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
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

// Check is Dataset.Check, less admin.ErrSHACLNotRun on a test store with
// no SHACL endpoint (storetest.Check).
func (s *store) Check(ctx context.Context) ([]admin.Finding, error) {
	return storetest.Check(ctx, s.Dataset)
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
