package cluster_test

import (
	"context"
	"testing"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/session"
)

// testReadsMoveForward: a Client whose reads move to another replica (its
// preferred one changed: another replica answered its write's outcome,
// or the last one failed) never reads less than it read before. Replica
// 1's applier is stopped, so it stays behind while replica 0 applies a
// second turn; the reader loads the session from replica 0, then comes to
// prefer replica 1. Before, it read replica 1 at once and the second turn
// was gone: a Load whose two queries went to the two replicas was torn
// (ErrCorrupt on the kafka profile's TestConcurrentWriters, whose writers
// share one Client).
func testReadsMoveForward(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	r := newRig(t, k, srv, 1)
	ctx := context.Background()
	wc := r.client(t)
	w := session.NewStore(wc)
	s := session.New("forward")
	s.Append("user", "one")
	if err := w.Persist(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitPosition(t, r.appliers[1].srv.URL, wc.Position())
	rc := r.client(t)
	rs := session.NewStore(rc)
	turns := func(when string, want int) {
		t.Helper()
		got, err := rs.Load(ctx, s.ID)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if len(got.Turns) != want {
			t.Fatalf("%s: %d turns, want %d", when, len(got.Turns), want)
		}
	}
	turns("first read", 1)

	r.appliers[1].stop(t)
	s.Append("assistant", "two")
	if err := w.Persist(ctx, s); err != nil {
		t.Fatal(err)
	}
	turns("read from replica 0 after the second turn", 2)
	cluster.Prefer(rc, 1) // replica 1 answered an outcome: behind replica 0
	turns("read once replica 1 is preferred, its applier stopped", 2)

	// Replica 1 applies again: the reader's reads may go there once it has
	// applied the log up to its end.
	r.appliers[1] = r.start(t, r.stores[1], r.appliers[1].srv)
	cluster.Prefer(rc, 1)
	turns("read once replica 1 applies again", 2)
}
