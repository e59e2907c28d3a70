package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/witness"
)

// The queries of Delete, read once.
var (
	uDelete = query("delete.ru")
	qStored = query("stored-sessions.rq")
	qHeads  = query("heads.rq")
)

// DeleteOptions qualify a Delete or a PlanDelete. The zero value deletes
// one session that has no forks, recorded in PROV as deleted by its own
// principal.
type DeleteOptions struct {
	// By names the principal who deletes, for the PROV records (default:
	// each session's own principal).
	By string
	// Cascade removes the session's whole fork tree, leaves first, one
	// atomic step per session.
	Cascade bool
	// DetachChildren first detaches each direct fork of the session (one
	// atomic step each), then deletes it. It excludes Cascade.
	DetachChildren bool
	// Progress, if not nil, is called after each step completes: done of
	// total steps, and the step.
	Progress func(done, total int, s Step)
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

// Error says how many of the steps were done and why the rest were not.
func (e *StepsError) Error() string {
	return fmt.Sprintf("stopped after %d of %d steps: %v", len(e.Done), len(e.Steps), e.Err)
}

// Unwrap returns the reason the steps stopped.
func (e *StepsError) Unwrap() error { return e.Err }

// PlanDelete returns the steps Delete(ctx, id, opts) would take, in
// order, without changing anything: the dry run of a delete.
//
// It returns the errors of Delete that can be known in advance:
// ErrInvalid, ErrNotFound, ErrHasChildren (no Cascade or DetachChildren
// while forks exist), or a store error.
func (st *Store) PlanDelete(ctx context.Context, id string, opts DeleteOptions) (_ []Step, err error) {
	ctx, call := telemetry.Start(ctx, "session.PlanDelete", id)
	defer func() { call.End(err) }()
	p, err := st.plan(ctx, id, opts)
	if err != nil {
		return nil, fmt.Errorf("plan delete %s: %w", id, err)
	}
	return p.steps, nil
}

// deletePlan is what a Delete will do: its steps, the principal of each
// session deleted (for the PROV record), and where the sessions of a parent
// cycle begin among the steps (len(steps) when there is none): they must go
// in one batch, since none of them is ever without a fork.
type deletePlan struct {
	steps      []Step
	principals []string
	paths      [][]forkLink // per step: the fork links from its session up to the top
	cycleFrom  int
}

// forkLink is one fork link a Delete with Cascade read: child names parent
// as its parentSession.
type forkLink struct{ child, parent string }

func (st *Store) plan(ctx context.Context, id string, opts DeleteOptions) (deletePlan, error) {
	var p deletePlan
	if opts.Cascade && opts.DetachChildren {
		return p, fmt.Errorf("%w: Cascade and DetachChildren exclude each other", ErrInvalid)
	}
	tree, err := st.tree(ctx, id)
	if err != nil {
		return p, err
	}
	add := func(action string, n *Node, turns int, path []forkLink) {
		p.steps = append(p.steps, Step{Action: action, Session: n.ID, Turns: turns})
		p.principals = append(p.principals, n.Principal)
		p.paths = append(p.paths, path)
	}
	switch {
	case opts.Cascade:
		// Leaves first. A session on a parent cycle (the top, when its
		// parent is one of its descendants) comes after every session
		// that is not: the fork on the cycle is visited last, so that
		// the cycle's sessions end the steps together. Each step keeps
		// the links that hang its session under the top, for the
		// update's guard (a session detached meanwhile is left out).
		var post func(n *Node, path []forkLink)
		post = func(n *Node, path []forkLink) {
			var onCycle *Node
			for _, c := range n.Children {
				if c.Cycle {
					onCycle = c
					continue
				}
				post(c, append([]forkLink{{c.ID, n.ID}}, path...))
			}
			if onCycle != nil {
				post(onCycle, append([]forkLink{{onCycle.ID, n.ID}}, path...))
			}
			add("delete", n, n.OwnTurns, path)
		}
		post(tree, nil)
	case opts.DetachChildren:
		for _, c := range tree.Children {
			add("detach", c, c.ForkedAt, nil)
		}
		add("delete", tree, tree.OwnTurns, nil)
	default:
		if len(tree.Children) > 0 {
			return p, childrenError(tree.Children)
		}
		add("delete", tree, tree.OwnTurns, nil)
	}
	p.cycleFrom = len(p.steps)
	if tree.Cycle && opts.Cascade {
		n := 0
		tree.Walk(func(m *Node) {
			if m.Cycle {
				n++
			}
		})
		p.cycleFrom -= n
	}
	return p, nil
}

// Batches of a Delete: a batch of deletions that starts after i steps holds
// up to i/8 sessions (the first sixteen steps go one by one, and an
// interrupted batch is at most an eighth of the work done), never more than
// deleteBatch sessions, and closes before deleteBatchTurns turns (a
// session with more goes alone).
const (
	deleteBatch      = 200
	deleteBatchTurns = 20000
)

// Delete removes session id's own triples (its metadata and the turns it
// stored) in one atomic update, and records the deletion in PROV (a
// trails:Deletion activity) in the same update. Its PROV records, the fork
// that generated it included, stay. It refuses while forks of it exist,
// unless Cascade (delete the whole tree, leaves first) or DetachChildren
// (detach each direct fork first) is given. Then the steps go in atomic
// batches: each detach alone; deletions one session per update for the
// first sixteen steps, then in batches of up to an eighth of the steps
// done so far, at most 200 sessions per update (fewer when they hold many
// turns), each batch deleted and recorded in PROV whole or not at all (a
// fork and its parent may share a batch). Progress reports each step once
// its batch is done. An interruption (ctx) stops
// between batches, leaves no session half-deleted, and the same call
// completes the rest. A parent cycle (sessions that are each other's
// ancestors, which Check reports) has no session without a fork: Cascade
// from any of its sessions deletes the cycle in one batch, with every
// fork hanging off it. PlanDelete shows the steps without taking them.
// A session of the tree other than id that another call deleted after
// the plan is skipped: it is not recorded again, and Progress does not
// report its step. So is one detached from the tree after the plan (it,
// or a fork between it and id): it is no longer part of the tree, and
// stays.
//
// Each batch's update holds only while every session of it is still
// stored and no session outside it is a fork of one of them: of Deletes
// racing on one session, one deletes it and records it, the others
// answer ErrNotFound having written nothing. When a fork made meanwhile
// held a batch back and is gone again (deleted or detached) by the time
// Delete looks, the batch is sent again.
//
// It returns ErrInvalid for a bad id, ErrNotFound (also when another call
// deleted session id first), ErrHasChildren
// (naming the forks; also for a fork made while it was being deleted),
// ErrConflict when forks of it kept appearing and going while it was
// being deleted (after several attempts), a *StepsError when a multi-step
// delete stopped early (wrapping the reason), or a store error wrapping
// the kg error.
// After a lost answer Delete fences its update before asking whether it
// applied (as Persist says): after a store error the batch in flight was
// not deleted, unless the store could not be reached to fence it.
//
// With WithSigning it signs a deletion statement of each session it
// deleted, with the head it read just before the batch's update (and a
// head statement of each fork DetachChildren detached), once each batch
// is done. A statement that does not reach the witness does not stop the
// Delete: once the steps are done it returns an error matching
// ErrNotWitnessed (joined with the step's error, if a step failed
// later): the sessions are deleted all the same.
func (st *Store) Delete(ctx context.Context, id string, opts DeleteOptions) (err error) {
	ctx, call := telemetry.Start(ctx, "session.Delete", id)
	defer func() { call.End(err) }()
	p, err := st.plan(ctx, id, opts)
	if err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	steps := p.steps
	var unwitnessed []error // statements of steps done that did not reach the witness
	for i := 0; i < len(steps); {
		if err := ctx.Err(); err != nil && len(steps) > 1 {
			return fmt.Errorf("delete %s: %w", id, withUnwitnessed(&StepsError{Done: steps[:i], Steps: steps, Err: err}, unwitnessed))
		}
		j := i + 1
		var gone map[string]bool // sessions of the batch another call deleted first
		if steps[i].Action == "detach" {
			var h ackedHead
			if _, h, err = st.detach(ctx, steps[i].Session, DetachOptions{By: opts.By}); err == nil && h.id != "" {
				if werr := st.attest(ctx, witness.KindHead, h); werr != nil {
					unwitnessed = append(unwitnessed, werr)
				}
			}
		} else {
			turns := steps[i].Turns
			size := min(max(i/8, 1), deleteBatch)
			for j < len(steps) && steps[j].Action == "delete" && (j >= p.cycleFrom && i >= p.cycleFrom ||
				j < p.cycleFrom && j-i < size && turns+steps[j].Turns <= deleteBatchTurns) {
				turns += steps[j].Turns
				j++
			}
			var deleted []ackedHead
			gone, deleted, err = st.deleteBatch(ctx, steps[i:j], p.principals[i:j], p.paths[i:j], opts.By, id)
			if werr := st.attest(ctx, witness.KindDeletion, deleted...); werr != nil {
				unwitnessed = append(unwitnessed, werr)
			}
		}
		if err != nil {
			if len(steps) > 1 {
				err = &StepsError{Done: steps[:i], Steps: steps, Err: err}
			}
			return fmt.Errorf("delete %s: %w", id, withUnwitnessed(err, unwitnessed))
		}
		if opts.Progress != nil {
			for k := i; k < j; k++ {
				if !gone[steps[k].Session] {
					opts.Progress(k+1, len(steps), steps[k])
				}
			}
		}
		i = j
	}
	if len(unwitnessed) > 0 {
		return fmt.Errorf("delete %s: %w", id, errors.Join(unwitnessed...))
	}
	return nil
}

// withUnwitnessed returns err, joined with the errors of statements that
// did not reach the witness (ErrNotWitnessed) when there are any.
func withUnwitnessed(err error, unwitnessed []error) error {
	if len(unwitnessed) == 0 {
		return err
	}
	return errors.Join(append([]error{err}, unwitnessed...)...)
}

// deleteBatch deletes the sessions of steps, whose principals are given
// (by, when not "", stands for each), in one update: all of them, or none
// when one of them is no longer stored, no longer hangs under top by the
// links of its path, or a session outside the batch is a fork of one of
// them. A session other than top (the session the Delete names) that
// another call deleted first, or detached from top's tree (itself or a
// fork between it and top), is left out of the batch and reported in
// gone: what a Cascade wanted is done, and a detached session is no
// longer part of it. top gone is
// ErrNotFound; a fork outside the batch, ErrHasChildren naming the forks.
// When the update's guard held the batch back for a fork that is gone
// again when it looks, it sends the update again, up to maxDeleteRounds
// times, then answers ErrConflict.
//
// It returns too, with signing on (WithSigning), the heads of the
// sessions it deleted, as read just before the update that deleted them.
func (st *Store) deleteBatch(ctx context.Context, steps []Step, principals []string, paths [][]forkLink, by, top string) (gone map[string]bool, deleted []ackedHead, err error) {
	named := func(id string, err error) error {
		if len(steps) > 1 {
			return fmt.Errorf("%s: %w", id, err)
		}
		return err
	}
	batch := make([]int, len(steps)) // the steps of steps still to delete
	for k := range batch {
		batch[k] = k
	}
	for range maxDeleteRounds {
		u, q, err := st.deleteUpdate(steps, principals, paths, batch, by)
		if err != nil {
			return gone, nil, err
		}
		heads, err := st.storedHeads(ctx, steps, batch)
		if err != nil {
			return gone, nil, err
		}
		// Idempotent: sent again after a lost answer, the update finds
		// the batch gone and changes nothing; its record says it applied.
		// An answer lost for good is fenced first (fence.go).
		lost, err := st.send(ctx, u)
		if err != nil {
			return gone, nil, err
		}
		res, err := st.c.Select(ctx, q)
		if err != nil {
			return gone, nil, err
		}
		stored := map[string]bool{}
		held := map[forkLink]bool{}
		for _, row := range res.Solutions {
			if _, ok := row["recorded"]; ok {
				return gone, deletedHeads(heads, steps, batch), nil // this call's records are stored: the batch was deleted
			}
			if l, ok := row["l"]; ok {
				held[forkLink{ontology.SessionID(l.String()), ontology.SessionID(row.String("lp"))}] = true
				continue
			}
			stored[ontology.SessionID(row.String("s"))] = true
		}
		if lost != nil {
			return gone, nil, lost // fenced: it did not apply, and never will
		}
		hangs := func(k int) bool {
			for _, l := range paths[k] {
				if !held[l] {
					return false
				}
			}
			return true
		}
		left := batch[:0:0]
		for _, k := range batch {
			switch id := steps[k].Session; {
			case stored[id] && hangs(k):
				left = append(left, k)
			case id == top:
				return gone, nil, named(id, ErrNotFound) // another call deleted it first
			default: // deleted by another call, or detached from the tree
				if gone == nil {
					gone = map[string]bool{}
				}
				gone[id] = true
			}
		}
		if len(left) == 0 {
			return gone, nil, nil
		}
		if len(left) < len(batch) {
			batch = left
			continue // without the sessions gone
		}
		// The guard held the batch back: a fork appeared meanwhile.
		for _, k := range batch {
			if err := st.refuseChildren(ctx, steps[k].Session); err != nil {
				return gone, nil, named(steps[k].Session, err)
			}
		}
		// The fork is gone again (deleted or detached): try again.
	}
	return gone, nil, fmt.Errorf("%w: forks of the session kept appearing while it was being deleted; retry", ErrConflict)
}

// deleteUpdate returns the update (delete.ru) that deletes the sessions
// of the steps numbered batch and records their deletions, and the query
// that tells afterwards whether it applied (stored-sessions.rq). Both
// carry the links of the steps' paths: the update holds only while each
// is stored, and the query says which are.
func (st *Store) deleteUpdate(steps []Step, principals []string, paths [][]forkLink, batch []int, by string) (update, check string, err error) {
	var d kg.Data
	var links [][]rdf.Term
	seen := map[forkLink]bool{}
	for _, k := range batch {
		for _, l := range paths[k] {
			if !seen[l] {
				seen[l] = true
				links = append(links, []rdf.Term{sessionIRI(l.child), sessionIRI(l.parent)})
			}
		}
	}
	linked := kg.Table{Vars: []string{"l", "lp"}, Rows: links}
	rows := make([][]rdf.Term, len(batch))
	now := st.now()
	var first rdf.IRI
	for i, k := range batch {
		principal := cmp.Or(by, principals[k], "unknown")
		act := kg.MustIRI(ontology.ActivityIRI("deletion", uuid.Must(uuid.NewV7()).String()))
		if i == 0 {
			first = act
		}
		prov.AddDeletion(&d, act, prov.Deletion{Session: steps[k].Session, Principal: principal, Time: now})
		rows[i] = []rdf.Term{sessionIRI(steps[k].Session)}
	}
	pg := kg.MustIRI(ontology.ProvGraph)
	update, err = withTables("delete", uDelete, &d, kg.Params{"prov": pg, "stored": kg.Int(len(batch)), "linked": kg.Int(len(links))}, map[string]kg.Table{
		"sessions": {Vars: []string{"s"}, Rows: rows},
		"guard":    {Vars: []string{"b"}, Rows: rows},
		"members":  {Vars: []string{"m"}, Rows: rows},
		"links":    linked,
	})
	if err != nil {
		return "", "", err
	}
	check, err = kg.BindTables(qStored, kg.Params{"prov": pg, "act": first}, map[string]kg.Table{
		"sessions": {Vars: []string{"s"}, Rows: rows},
		"links":    linked,
	})
	return update, check, err
}

// storedHeads returns, with signing on (WithSigning), the heads stored
// for the sessions of the steps numbered batch, by id: what their
// deletion statements say (heads.rq). Sessions stored before turn counts
// have none. With signing off it reads nothing.
func (st *Store) storedHeads(ctx context.Context, steps []Step, batch []int) (map[string]ackedHead, error) {
	if st.sign == nil {
		return nil, nil
	}
	rows := make([][]rdf.Term, len(batch))
	for i, k := range batch {
		rows[i] = []rdf.Term{sessionIRI(steps[k].Session)}
	}
	q, err := kg.BindTables(qHeads, nil, map[string]kg.Table{"sessions": {Vars: []string{"s"}, Rows: rows}})
	if err != nil {
		return nil, fmt.Errorf("heads: %w", err)
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	heads := make(map[string]ackedHead, len(res.Solutions))
	for _, row := range res.Solutions {
		id := ontology.SessionID(row.String("s"))
		n, err := row.Int("own")
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: turn count of %s: %q", ErrCorrupt, id, row.String("own"))
		}
		h := ackedHead{id: id, own: n, digest: row.String("head"), chain: row.String("chain")}
		if p := row.String("parent"); p != "" {
			h.parent = ontology.SessionID(p)
			h.at, _ = row.Int("at")
		}
		heads[id] = h.replacing(h) // a deletion replaces the head it names
	}
	return heads, nil
}

// deletedHeads returns the heads of the sessions of the steps numbered
// batch, in order, that heads holds.
func deletedHeads(heads map[string]ackedHead, steps []Step, batch []int) []ackedHead {
	var out []ackedHead
	for _, k := range batch {
		if h, ok := heads[steps[k].Session]; ok {
			out = append(out, h)
		}
	}
	return out
}

// maxDeleteRounds bounds how often a batch of a Delete is sent again
// after its guard held it back for a fork that was gone when it looked.
const maxDeleteRounds = 4

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
