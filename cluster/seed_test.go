package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// testReplicaAdded: replicas join a running cluster, one on an empty
// dataset (it applies the log from its first record), one seeded with a
// copy of a running replica (cluster.Seed) taken while writes went on;
// both converge to the same quads as the others, offsets included.
func testReplicaAdded(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	r := newRig(t, k, srv, 1)
	c := r.client(t)
	st := session.NewStore(c)
	s := session.New("erin")
	for i := range 10 {
		s.Append("user", fmt.Sprintf("turn %d before the new replicas", i))
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	fresh := fusekitest.Client(t, kg.Config{Endpoint: srv.Datasets[3], Store: kg.Fuseki})
	seeded := fusekitest.Client(t, kg.Config{Endpoint: srv.Datasets[4], Store: kg.Fuseki})
	for _, ds := range []*kg.Client{fresh, seeded} {
		if err := ds.Update(ctx, "DROP ALL", kg.Idempotent()); err != nil {
			t.Fatal(err)
		}
	}
	// The copy is taken while a writer goes on.
	done := make(chan error, 1)
	go func() {
		for i := range 10 {
			s.Append("assistant", fmt.Sprintf("turn %d while a replica is copied", i))
			if err := st.Persist(ctx, s); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	off, err := cluster.Seed(ctx, r.stores[0], seeded, r.topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded at offset %d", off)
	if _, err := cluster.Seed(ctx, r.stores[0], seeded, r.topic); !errors.Is(err, cluster.ErrNotEmpty) {
		t.Errorf("Seed into a dataset that holds data: got %v, want cluster.ErrNotEmpty", err)
	}
	empty := fusekitest.Client(t, kg.Config{Endpoint: srv.Datasets[5], Store: kg.Fuseki})
	if err := empty.Update(ctx, "DROP ALL", kg.Idempotent()); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Seed(ctx, fresh, empty, r.topic); !errors.Is(err, cluster.ErrNoOffset) {
		t.Errorf("Seed from a dataset that is no replica: got %v, want cluster.ErrNoOffset", err)
	}
	for _, ds := range []*kg.Client{fresh, seeded} {
		r.stores = append(r.stores, ds)
		r.appliers = append(r.appliers, r.start(t, ds, nil))
	}
	s.Append("user", "a turn after the new replicas joined")
	if err := st.Persist(ctx, s); err != nil {
		t.Fatal(err)
	}
	r.converged(t, c.Position()) // all four: the same quads
}
