package session_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// treeRouted is a Querier that says it routes each request by the session
// tree it names (as cluster.Sharded does), and counts the updates that
// name more than one of the sessions in ids.
type treeRouted struct {
	session.Querier
	ids   []string
	mixed atomic.Int64
}

func (q *treeRouted) RoutesByTree() bool { return true }

func (q *treeRouted) Update(ctx context.Context, u string, opts ...kg.UpdateOption) error {
	n := 0
	for _, id := range q.ids {
		if strings.Contains(u, ontology.SessionIRI(id)) {
			n++
		}
	}
	if n > 1 {
		q.mixed.Add(1)
	}
	return q.Querier.Update(ctx, u, opts...)
}

// TestGroupCommitOffWhenRoutedByTree: over a Querier that routes requests
// by session tree, NewStore turns group commit off, so that no request
// carries writes of two trees (which a sharded cluster would have to
// refuse: they may live in two groups).
func TestGroupCommitOffWhenRoutedByTree(t *testing.T) {
	fusekitest.Parallel(t)
	_, _, c := newStore(t)
	const n = 16
	roots := make([]*session.Session, n)
	q := &treeRouted{Querier: querier(t, c)}
	for i := range roots {
		roots[i] = session.New("routed")
		q.ids = append(q.ids, roots[i].ID)
	}
	st := session.NewStore(q)
	ctx := context.Background()
	for round := range 3 {
		var wg sync.WaitGroup
		for _, s := range roots {
			wg.Go(func() {
				s.Append("user", "round "+itoa(round))
				if err := st.Persist(ctx, s); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if m := q.mixed.Load(); m != 0 {
		t.Fatalf("%d updates carried writes of several trees, want none", m)
	}
}
