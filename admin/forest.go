package admin

import (
	"context"
	"fmt"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/session"
)

// Forest returns every stored session as fork trees: one per root, newest
// root first, then one per orphan (a fork whose parent is missing, marked
// ParentMissing). The sessions of a parent cycle, which no root leads to,
// head a tree too, under the oldest of them; each is marked Cycle. It reads
// what session.Store.List reads (one query, two more for old data) and
// links the trees with session.Trees.
//
// It returns ErrCorrupt when stored metadata cannot be read, or a store
// error wrapping the kg error.
func (ds *Dataset) Forest(ctx context.Context) (_ []*session.Node, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Forest", "")
	defer func() { call.End(err) }()
	infos, err := ds.st.List(ctx) // every session, Cycle marked
	if err != nil {
		return nil, fmt.Errorf("forest: %w", err)
	}
	// Oldest first, so that children come out oldest first.
	for i, j := 0, len(infos)-1; i < j; i, j = i+1, j-1 {
		infos[i], infos[j] = infos[j], infos[i]
	}
	stored := make(map[string]bool, len(infos))
	for _, in := range infos {
		stored[in.ID] = true
	}
	cycleTop := cycleTops(infos)
	// A top is a root, an orphan or the oldest session of a cycle.
	trees := session.Trees(infos, func(in session.Info) bool { return in.ParentID == "" || !stored[in.ParentID] || cycleTop[in.ID] })
	var roots, orphans []*session.Node
	for _, t := range trees {
		t.ParentMissing = t.ParentID != "" && !stored[t.ParentID]
		if t.ParentMissing {
			orphans = append(orphans, t)
		} else {
			roots = append(roots, t)
		}
	}
	for i, j := 0, len(roots)-1; i < j; i, j = i+1, j-1 { // newest root first
		roots[i], roots[j] = roots[j], roots[i]
	}
	return append(roots, orphans...), nil
}

// cycleTops returns the oldest session of each parent cycle among infos
// (oldest first, Cycle set).
func cycleTops(infos []session.Info) map[string]bool {
	parent := make(map[string]string, len(infos))
	for _, in := range infos {
		if in.Cycle {
			parent[in.ID] = in.ParentID
		}
	}
	tops := make(map[string]bool)
	seen := make(map[string]bool)
	for _, in := range infos {
		if !in.Cycle || seen[in.ID] {
			continue
		}
		tops[in.ID] = true
		for cur := in.ID; !seen[cur]; cur = parent[cur] {
			seen[cur] = true
		}
	}
	return tops
}
