package session

import (
	"context"
	"fmt"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
)

// The queries of List and Branches, read once.
var (
	qList      = query("list.rq")
	qListBy    = query("list-by-principal.rq")
	qListRoots = query("list-roots.rq")
	qBranches  = query("branches.rq")
	// qBranchesWhole reads the forks that have every column in one basic
	// graph pattern (infosWhole), the common case, faster than qBranches.
	qBranchesWhole = query("branches-whole.rq")
)

// ListOption narrows a List.
type ListOption func(*listConfig)

type listConfig struct {
	principal string
	roots     bool
	tags      []string // ByTag
	pending   bool     // CancelPending
}

// ByPrincipal keeps the sessions of principal p.
func ByPrincipal(p string) ListOption { return func(c *listConfig) { c.principal = p } }

// Roots keeps the root sessions (those with no parent).
func Roots() ListOption { return func(c *listConfig) { c.roots = true } }

// List returns the stored sessions, newest first, narrowed by opts.
//
// It returns ErrInvalid for a ByTag that no tag can match (empty, white
// space), a store error wrapping the kg error, or ErrCorrupt when stored
// metadata cannot be read.
func (st *Store) List(ctx context.Context, opts ...ListOption) (_ []Info, err error) {
	ctx, call := telemetry.Start(ctx, "session.List", "")
	defer func() { call.End(err) }()
	var cfg listConfig
	for _, o := range opts {
		o(&cfg)
	}
	if st.scope != "" {
		if cfg.principal != "" && cfg.principal != st.scope {
			return []Info{}, nil
		}
		cfg.principal = st.scope
	}
	var infos []Info
	switch {
	case len(cfg.tags) > 0:
		infos, err = st.listByTag(ctx, cfg.tags, cfg.principal)
	case cfg.principal != "":
		var q string
		if q, err = bind("list-by-principal", qListBy, kg.Params{"principal": kg.String(cfg.principal)}); err == nil {
			infos, err = st.infos(ctx, q)
		}
	case cfg.roots:
		infos, err = st.infos(ctx, qListRoots)
	default:
		infos, err = st.infos(ctx, qList)
	}
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	if cfg.roots {
		kept := infos[:0]
		for _, in := range infos {
			if in.ParentID == "" {
				kept = append(kept, in)
			}
		}
		infos = kept
	}
	if cfg.pending {
		infos = cancelPending(infos)
	}
	markCycles(infos)
	return infos, nil
}

// markCycles sets Cycle on the infos on a parent cycle among infos.
func markCycles(infos []Info) {
	at := make(map[string]int, len(infos))
	for i, in := range infos {
		at[in.ID] = i
	}
	const (
		unseen = iota
		walking
		done
	)
	state := make([]byte, len(infos))
	for i := range infos {
		// Walk up from i until a root, a session not listed, a session
		// an earlier walk settled, or one of this walk: a cycle.
		var walk []int
		for j := i; state[j] == unseen; {
			state[j] = walking
			walk = append(walk, j)
			p, ok := at[infos[j].ParentID]
			if !ok {
				break
			}
			if state[p] == walking {
				for k := len(walk) - 1; k >= 0; k-- {
					infos[walk[k]].Cycle = true
					if walk[k] == p {
						break
					}
				}
				break
			}
			j = p
		}
		for _, k := range walk {
			state[k] = done
		}
	}
}

// Branches returns the direct forks of session id, oldest first, in two
// requests (id's Info, then its forks); in three when a fork lacks a
// column a session stored by Persist has (written by hand, or by an older
// Trails).
//
// It returns ErrInvalid for a bad id, ErrNotFound when id is not stored
// (forks of a missing session are orphans: see the prov queries), or a
// store error wrapping the kg error.
func (st *Store) Branches(ctx context.Context, id string) (_ []Info, err error) {
	ctx, call := telemetry.Start(ctx, "session.Branches", id)
	defer func() { call.End(err) }()
	if _, err := st.Info(ctx, id); err != nil {
		return nil, fmt.Errorf("branches: %w", err)
	}
	return st.children(ctx, id)
}

// children returns the direct forks of id, oldest first, whether or not id
// is stored.
func (st *Store) children(ctx context.Context, id string) ([]Info, error) {
	parent := sessionIRI(id)
	infos, err := st.infosWhole(ctx, "branches", qBranchesWhole, qBranches, kg.Params{"parent": parent}, parent.String())
	if err != nil {
		return nil, fmt.Errorf("branches of %s: %w", id, err)
	}
	return st.scoped(infos), nil
}

// ByTag keeps the sessions tagged t; given several times, the sessions
// with every tag given.
func ByTag(t string) ListOption { return func(c *listConfig) { c.tags = append(c.tags, t) } }

// CancelPending keeps the sessions flagged for cancellation that are still
// active or suspended: those whose ancestor ended and whose runtime has
// yet to stop them. It filters what List reads, so it costs a List; a
// runtime watching one session reads its Info (or Load) instead.
func CancelPending() ListOption { return func(c *listConfig) { c.pending = true } }
