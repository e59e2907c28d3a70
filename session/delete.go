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

// ActionOption qualifies a Delete or Detach.
type ActionOption func(*actionConfig)

type actionConfig struct{ principal string }

// By names the principal who deletes or detaches, for the PROV record
// (default: the session's own principal).
func By(principal string) ActionOption {
	return func(c *actionConfig) { c.principal = principal }
}

// Delete removes session id's own triples (its metadata and the turns it
// stored) in one atomic update, and records the deletion in PROV (a
// trails:Deletion activity). Its PROV records, the fork that generated it
// included, stay. It refuses while forks of it exist: detach or delete them
// first.
//
// It returns ErrInvalid for a bad id, ErrNotFound, ErrHasChildren (naming
// the forks), or a store error wrapping the kg error.
func (st *Store) Delete(ctx context.Context, id string, opts ...ActionOption) error {
	if err := st.delete(ctx, id, opts); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	return nil
}

func (st *Store) delete(ctx context.Context, id string, opts []ActionOption) error {
	in, err := st.Info(ctx, id)
	if err != nil {
		return err
	}
	cfg := actionConfig{principal: in.Principal}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.principal == "" {
		cfg.principal = "unknown"
	}
	if err := st.refuseChildren(ctx, id); err != nil {
		return err
	}
	g := sessionIRI(id)
	var d kg.Data
	act := kg.MustIRI(ontology.ActivityIRI("deletion", uuid.Must(uuid.NewV7()).String()))
	prov.AddDeletion(&d, act, prov.Deletion{Session: id, Principal: cfg.principal, Time: st.now()})
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
		return st.refuseChildren(ctx, id)
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
	ids := make([]string, len(kids))
	for i, k := range kids {
		ids[i] = k.ID
	}
	return fmt.Errorf("%w: %d forks (%s); detach or delete them first", ErrHasChildren, len(kids), strings.Join(ids, ", "))
}
