package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
)

// The query of Tree, read once.
var (
	qDescendants = query("descendants.rq")
	// qDescendantsWhole reads the sessions that have every column in one
	// basic graph pattern (infosWhole), the common case, faster than
	// qDescendants.
	qDescendantsWhole = query("descendants-whole.rq")
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
// and so on, in one query; in two when a session of the tree lacks a
// column a session stored by Persist has (written by hand, or by an older
// Trails).
//
// It returns ErrInvalid for a bad id, ErrNotFound, or a store error
// wrapping the kg error.
func (st *Store) Tree(ctx context.Context, id string) (_ *Node, err error) {
	ctx, call := telemetry.Start(ctx, "session.Tree", id)
	defer func() { call.End(err) }()
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
	infos, err := st.infosWhole(ctx, "descendants", qDescendantsWhole, qDescendants, kg.Params{"root": sessionIRI(id)}, "")
	if err != nil {
		return nil, err
	}
	infos = st.scoped(infos)
	markCycles(infos) // a cycle through id is among its descendants
	roots := Trees(infos, func(in Info) bool { return in.ID == id })
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

// Trees links infos (oldest first) into fork trees whose top nodes are
// the sessions top accepts: every other session hangs under its parent
// when its parent is among infos, so children come oldest first. Sessions
// in a parent cycle none of which is a top are reachable from no top and
// are left out. Tree builds its tree with it, and so does the operators'
// Forest (package admin).
func Trees(infos []Info, top func(Info) bool) []*Node {
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
