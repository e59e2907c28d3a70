package session

import (
	"context"
	"fmt"
	"time"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// The fork's update: create-fork.ru bound with the fork's data and PROV
// record, sent conditionally, and read back when it is refused.

// The update that creates a fork, read once.
var (
	uCreateFork = query("create-fork.ru")
)

// relabel gives fork s and its own turns a fresh branch label.
func relabel(s *Session) {
	s.Branch = newBranch()
	for i := s.ForkedAt; i < len(s.Turns); i++ {
		s.Turns[i].Branch = s.Branch
	}
}

// forkUpdate returns the update that creates new fork s, created at now,
// from d, which holds its metadata, turns and head, and sg, which holds
// its long contents (staging): it adds the fork's
// PROV record (with what the fork's options asked to record) and binds
// create-fork.ru, which checks the tree limits, the fork point (never
// beyond the parent's end) and base at ForkedAt-1 again, atomically.
func (st *Store) forkUpdate(d *kg.Data, sg *staging, s *Session, row kg.Solution, now time.Time, base string) (string, error) {
	f := prov.Fork{Child: s.ID, Parent: s.ParentID, At: s.ForkedAt, Principal: s.Principal, Time: now,
		AcrossPrincipals: s.across && !st.visible(row.String("pprincipal"))}
	s.fork.describe(&f)
	prov.AddFork(d, f)
	return withStaged("create-fork", uCreateFork, sg, d, kg.Params{
		"s": sessionIRI(s.ID), "parent": sessionIRI(s.ParentID), "branch": kg.String(s.Branch), "max": kg.Int(st.maxKids),
		"at": kg.Int(s.ForkedAt), "k": kg.Int(s.ForkedAt - 1), "base": kg.String(base),
	})
}

// createFork stores new fork s (a tail with no turns, its fields set by
// Store.Fork) of a parent of principal pp whose turn at s.ForkedAt-1 has
// chain digest base, in one conditional update (create-fork.ru), and
// sets s.seen so that its next Persist appends without a read. When the
// update is refused, one read of the store's state (state.rq) says why:
// the error Persist would return, or a branch label taken meanwhile, and
// then it tries again with a new one.
func (st *Store) createFork(ctx context.Context, s *Session, pp, base string) error {
	g := sessionIRI(s.ID)
	_, head, state := digestsState(nil, 0)
	row := kg.Solution{"pprincipal": kg.String(pp)}
	for range maxPersistRounds {
		now := st.now()
		var d kg.Data
		addSession(&d, s, now)
		addExpiry(&d, s, now)
		addHead(&d, g, 0, head)
		ack, acks := st.ackGraph()
		if acks {
			d.Add(ack, ack, ack, ack) // written only if the fork is created
		}
		sg := st.newStaging()
		u, err := st.forkUpdate(&d, sg, s, row, now, base)
		if err != nil {
			return err
		}
		verify := bindOrPanic("verify-create", qVerifyCreate, kg.Params{"s": g, "created": kg.DateTime(now),
			"agent": kg.MustIRI(ontology.AgentIRI(s.Principal)), "t": g, "digest": kg.String("")})
		var ok bool
		if acks {
			ok, err = st.applyAcked(ctx, u, ack, verify, g, sg)
		} else {
			ok, err = st.apply(ctx, u, verify, g, sg)
		}
		if err != nil {
			return err
		}
		if ok {
			s.seen = seen{ok: true, head: head, state: state, chain: base}
			return nil
		}
		if err := st.whyNotForked(ctx, s, base); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: the parent kept changing under this fork", ErrConflict)
}

// whyNotForked reads the state of new fork s (state.rq) after its
// create-fork update was refused, and returns the error that says why,
// or nil when nothing stands in the way any more (a branch label taken
// meanwhile: s has a new one now).
func (st *Store) whyNotForked(ctx context.Context, s *Session, base string) error {
	q, err := bind("state", qState, kg.Params{"s": sessionIRI(s.ID), "parent": sessionIRI(s.ParentID),
		"branch": kg.String(s.Branch), "k": kg.Int(s.ForkedAt - 1), "last": kg.Int(-1)})
	if err != nil {
		return err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return err
	}
	if len(res.Solutions) != 1 {
		return fmt.Errorf("%w: %d state rows for one session", ErrCorrupt, len(res.Solutions))
	}
	row := res.Solutions[0]
	switch {
	case row["exists"] != nil:
		return fmt.Errorf("%w: a session with the fork's id is stored", ErrConflict)
	case row["deleted"] != nil:
		return fmt.Errorf("%w: a session with the fork's id was deleted", ErrConflict)
	}
	_, _, err = st.admitFork(ctx, s, row, base)
	return err
}
