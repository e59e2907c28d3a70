package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// ActionOption qualifies a Delete, Detach or Expire (state.go).
type ActionOption func(*actionConfig)

type actionConfig struct {
	principal      string
	cascade        bool
	detachChildren bool
	progress       func(done, total int, s Step)
}

// By names the principal who deletes, detaches or expires, for the PROV
// record (default: the session's own principal).
func By(principal string) ActionOption {
	return func(c *actionConfig) { c.principal = principal }
}

// Cascade makes Delete remove the session's whole fork tree, leaves first,
// one atomic step per session.
func Cascade() ActionOption { return func(c *actionConfig) { c.cascade = true } }

// DetachChildren makes Delete first detach each direct fork of the session
// (one atomic step each), then delete it.
func DetachChildren() ActionOption { return func(c *actionConfig) { c.detachChildren = true } }

// Progress makes Delete (and Expire) call fn after each step it
// completes: done of total steps, and the step.
func Progress(fn func(done, total int, s Step)) ActionOption {
	return func(c *actionConfig) { c.progress = fn }
}

// Step is one atomic step of a Delete, or one session of an Expire.
type Step struct {
	Action  string // "delete" or "detach"; "expire" for Expire and PlanExpire
	Session string // the session's id
	Turns   int    // turns the session holds (delete) or would copy (detach)
}

// StepsError reports a Delete with several steps that stopped early: Done
// of Steps were completed. It unwraps to the reason (a context error when
// interrupted). Running the same Delete again completes the rest.
type StepsError struct {
	Done  []Step
	Steps []Step
	Err   error
}

func (e *StepsError) Error() string {
	return fmt.Sprintf("stopped after %d of %d steps: %v", len(e.Done), len(e.Steps), e.Err)
}

// Unwrap returns the reason the steps stopped.
func (e *StepsError) Unwrap() error { return e.Err }

// PlanDelete returns the steps Delete(ctx, id, opts...) would take, in
// order, without changing anything: the dry run of a delete.
//
// It returns the errors of Delete that can be known in advance:
// ErrInvalid, ErrNotFound, ErrHasChildren (no Cascade or DetachChildren
// while forks exist), or a store error.
func (st *Store) PlanDelete(ctx context.Context, id string, opts ...ActionOption) ([]Step, error) {
	steps, err := st.plan(ctx, id, opts)
	if err != nil {
		return nil, fmt.Errorf("plan delete %s: %w", id, err)
	}
	return steps, nil
}

func (st *Store) plan(ctx context.Context, id string, opts []ActionOption) ([]Step, error) {
	var cfg actionConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.cascade && cfg.detachChildren {
		return nil, fmt.Errorf("%w: Cascade and DetachChildren exclude each other", ErrInvalid)
	}
	tree, err := st.tree(ctx, id)
	if err != nil {
		return nil, err
	}
	var steps []Step
	switch {
	case cfg.cascade:
		var post func(n *Node)
		post = func(n *Node) {
			for _, c := range n.Children {
				post(c)
			}
			steps = append(steps, Step{Action: "delete", Session: n.ID, Turns: n.OwnTurns})
		}
		post(tree)
	case cfg.detachChildren:
		for _, c := range tree.Children {
			steps = append(steps, Step{Action: "detach", Session: c.ID, Turns: c.ForkedAt})
		}
		steps = append(steps, Step{Action: "delete", Session: id, Turns: tree.OwnTurns})
	default:
		if len(tree.Children) > 0 {
			return nil, childrenError(tree.Children)
		}
		steps = []Step{{Action: "delete", Session: id, Turns: tree.OwnTurns}}
	}
	return steps, nil
}

// Delete removes session id's own triples (its metadata and the turns it
// stored) in one atomic update, and records the deletion in PROV (a
// trails:Deletion activity). Its PROV records, the fork that generated it
// included, stay. It refuses while forks of it exist, unless Cascade
// (delete the whole tree, leaves first) or DetachChildren (detach each
// direct fork first) is given; then each session is one atomic step, so an
// interruption leaves no session half-deleted and the same call completes
// the rest. PlanDelete shows the steps without taking them.
//
// It returns ErrInvalid for a bad id, ErrNotFound, ErrHasChildren (naming
// the forks), a *StepsError when a multi-step delete stopped early
// (wrapping the reason), or a store error wrapping the kg error.
func (st *Store) Delete(ctx context.Context, id string, opts ...ActionOption) error {
	steps, err := st.plan(ctx, id, opts)
	if err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	var cfg actionConfig
	for _, o := range opts {
		o(&cfg)
	}
	for i, s := range steps {
		if err := ctx.Err(); err != nil && len(steps) > 1 {
			return fmt.Errorf("delete %s: %w", id, &StepsError{Done: steps[:i], Steps: steps, Err: err})
		}
		if s.Action == "detach" {
			_, err = st.detach(ctx, s.Session, opts)
		} else {
			err = st.deleteOne(ctx, s.Session, cfg.principal)
		}
		if err != nil {
			if len(steps) > 1 {
				err = &StepsError{Done: steps[:i], Steps: steps, Err: err}
			}
			return fmt.Errorf("delete %s: %w", id, err)
		}
		if cfg.progress != nil {
			cfg.progress(i+1, len(steps), s)
		}
	}
	return nil
}

// deleteOne deletes one session with no forks, in one update.
func (st *Store) deleteOne(ctx context.Context, id, principal string) error {
	if principal == "" {
		in, err := st.Info(ctx, id)
		if err != nil {
			return err
		}
		principal = in.Principal
	}
	if principal == "" {
		principal = "unknown"
	}
	g := sessionIRI(id)
	var d kg.Data
	act := kg.MustIRI(ontology.ActivityIRI("deletion", uuid.Must(uuid.NewV7()).String()))
	prov.AddDeletion(&d, act, prov.Deletion{Session: id, Principal: principal, Time: st.now()})
	u, err := withData("delete", uDelete, &d, kg.Params{"s": g, "prov": kg.MustIRI(ontology.ProvGraph)})
	if err != nil {
		return err
	}
	if err := st.c.Update(ctx, u, kg.Idempotent()); err != nil {
		return err
	}
	q, err := bind("info", qInfo, kg.Params{"s": g})
	if err != nil {
		return err
	}
	res, err := st.c.Query(ctx, q)
	if err != nil {
		return err
	}
	if len(res.Solutions) > 0 {
		// The guard held the delete back: a fork appeared meanwhile.
		if err := st.refuseChildren(ctx, id); err != nil {
			return err
		}
		return fmt.Errorf("%w: the session changed while it was being deleted; retry", ErrConflict)
	}
	return nil
}

// refuseChildren returns ErrHasChildren naming the forks of id, if any.
func (st *Store) refuseChildren(ctx context.Context, id string) error {
	kids, err := st.children(ctx, id)
	if err != nil {
		return err
	}
	if len(kids) == 0 {
		return nil
	}
	nodes := make([]*Node, len(kids))
	for i := range kids {
		nodes[i] = &Node{Info: kids[i]}
	}
	return childrenError(nodes)
}

// childrenError is ErrHasChildren naming the forks.
func childrenError(kids []*Node) error {
	ids := make([]string, len(kids))
	for i, k := range kids {
		ids[i] = k.ID
	}
	return fmt.Errorf("%w: %d (%s)", ErrHasChildren, len(kids), strings.Join(ids, ", "))
}
