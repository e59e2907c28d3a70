package admin_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
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

// openStore returns the store over c, a client of tb's dataset, through
// querier; opts configure its session.Store.
func openStore(tb testing.TB, c *kg.Client, opts ...session.StoreOption) *store {
	tb.Helper()
	q := querier(tb, c)
	return &store{Store: session.NewStore(q, opts...), Dataset: admin.New(q)}
}

// newStore returns a store over the test's dataset and its client.
func newStore(tb testing.TB, opts ...session.StoreOption) (*store, *kg.Client) {
	tb.Helper()
	c := fusekitest.Client(tb, kg.Config{Endpoint: fusekitest.Endpoint(tb), HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}})
	return openStore(tb, c, opts...), c
}

// querier returns what a test's Stores and Datasets write through, c
// being a client of tb's dataset: c, or under TRAILS_TEST_STORE=kafka the
// cluster.Client (a cluster.Sharded with TRAILS_TEST_GROUPS=2) of a
// replicated store whose first replica (audit replica) is c's dataset
// (internal/clustertest), so that the test's reads with c see what its
// writers and operators wrote. The test's own writes behind the
// library's back (damage, fixtures) go through clustertest's Update,
// LoadQuads, DeleteGraph and PutGraph, to every replica; a test that
// wipes its dataset calls clustertest.Empty and opens its stores again.
func querier(tb testing.TB, c *kg.Client) admin.Querier {
	tb.Helper()
	q, ok := clustertest.Querier(tb, c).(admin.Querier)
	if !ok {
		tb.Fatalf("the tests' Querier %T is not an admin.Querier", clustertest.Querier(tb, c))
	}
	return q
}
