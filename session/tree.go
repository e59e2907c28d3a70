package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/trails-kg/trails/kg"
)

// The query of Tree, read once.
var (
	qDescendants = query("descendants.rq")
)

// Node is a session in a fork tree, with its direct forks, oldest first.
type Node struct {
	Info
	// ParentMissing is set on the top node of a Tree or Forest whose
	// parent is not stored (an orphan).
	ParentMissing bool
	Children      []*Node
}

// Walk calls fn for n and every node below it, parents before children.
func (n *Node) Walk(fn func(*Node)) {
	fn(n)
	for _, c := range n.Children {
		c.Walk(fn)
	}
}

// Tree returns the fork tree under session id: id, its forks, their forks
// and so on, in one query.
//
// It returns ErrInvalid for a bad id, ErrNotFound, or a store error
// wrapping the kg error.
func (st *Store) Tree(ctx context.Context, id string) (*Node, error) {
	t, err := st.tree(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", id, err)
	}
	return t, nil
}

func (st *Store) tree(ctx context.Context, id string) (*Node, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	q, err := bind("descendants", qDescendants, kg.Params{"root": sessionIRI(id)})
	if err != nil {
		return nil, err
	}
	infos, err := st.infos(ctx, q)
	if err != nil {
		return nil, err
	}
	infos = st.scoped(infos)
	markCycles(infos) // a cycle through id is among its descendants
	roots := grow(infos, func(in Info) bool { return in.ID == id })
	if len(roots) == 0 {
		return nil, ErrNotFound
	}
	top := roots[0]
	if top.ParentID != "" {
		if _, err := st.unscoped().Info(ctx, top.ParentID); errors.Is(err, ErrNotFound) {
			top.ParentMissing = true
		} else if err != nil {
			return nil, err
		}
	}
	return top, nil
}

// Forest returns every stored session as fork trees: one per root, newest
// root first, then one per orphan (a fork whose parent is missing, marked
// ParentMissing). In a scoped Store a fork of another principal's session
// heads a tree of its own. The sessions of a parent cycle, which no root
// leads to, head a tree too, under the oldest of them; each is marked
// Cycle.
//
// It returns a store error wrapping the kg error.
func (st *Store) Forest(ctx context.Context) ([]*Node, error) {
	infos, err := st.infos(ctx, qList)
	if err != nil {
		return nil, fmt.Errorf("forest: %w", err)
	}
	stored := make(map[string]bool, len(infos))
	for _, in := range infos {
		stored[in.ID] = true
	}
	infos = st.scoped(infos)
	// Oldest first, so that children come out oldest first.
	for i, j := 0, len(infos)-1; i < j; i, j = i+1, j-1 {
		infos[i], infos[j] = infos[j], infos[i]
	}
	visible := make(map[string]bool, len(infos))
	for _, in := range infos {
		visible[in.ID] = true
	}
	markCycles(infos) // list.go
	cycleTop := cycleTops(infos)
	// A top is a root, an orphan, (in a scoped Store) a fork of another
	// principal's session, or the oldest session of a cycle.
	trees := grow(infos, func(in Info) bool { return in.ParentID == "" || !visible[in.ParentID] || cycleTop[in.ID] })
	var roots, orphans []*Node
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
// (oldest first, Cycle set by markCycles).
func cycleTops(infos []Info) map[string]bool {
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

// grow links infos (oldest first) into trees whose tops satisfy top.
// Sessions in a parent cycle none of which is a top are reachable from no
// top and are left out.
func grow(infos []Info, top func(Info) bool) []*Node {
	nodes := make(map[string]*Node, len(infos))
	for _, in := range infos {
		nodes[in.ID] = &Node{Info: in}
	}
	var tops []*Node
	for _, in := range infos {
		n := nodes[in.ID]
		if top(in) {
			tops = append(tops, n)
			continue
		}
		if p, ok := nodes[in.ParentID]; ok {
			p.Children = append(p.Children, n)
		}
	}
	return tops
}
