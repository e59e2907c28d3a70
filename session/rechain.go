package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
)

// uRechain writes the missing digests of a batch of turns.
var uRechain = query("rechain.ru")

// rechainBatch is how many turns one rechain update names.
const rechainBatch = 2000

// Rechain adds the hash chain (trails:digest, see TurnDigest) to the turns
// of session id's effective history (its own and its ancestors') stored
// before Trails kept it: the history is loaded, its digests computed from
// the stored turns and written where missing, in updates of up to 2,000
// turns. It changes nothing else and never overwrites a digest (a wrong
// one is Check's to report), so running it again is harmless. Persist does
// this for a parent when a new fork is made over a turn without a digest;
// the operators' Rechain of the whole dataset (package admin) calls it for
// each session that needs it.
//
// It returns the number of turns the history holds. Its errors are Load's,
// unwrapped (ErrInvalid, ErrNotFound, ErrParentMissing, ErrCorrupt: the
// history does not load), ErrCorrupt for a turn whose IRI lies outside its
// session, or a store error wrapping the kg error.
func (st *Store) Rechain(ctx context.Context, id string) (_ int, err error) {
	ctx, call := telemetry.Start(ctx, "session.Rechain", id)
	defer func() { call.End(err) }()
	return st.rechain(ctx, id)
}

// rechain writes the chain digests of session id's effective history
// where its turns (its own and its ancestors') have none, and returns how
// many turns the history holds.
func (st *Store) rechain(ctx context.Context, id string) (int, error) {
	s, owners, err := st.load(ctx, id, -1)
	if err != nil {
		return 0, err
	}
	chain := chainDigests("", s.Turns)
	for lo := 0; lo < len(s.Turns); lo += rechainBatch {
		hi := min(lo+rechainBatch, len(s.Turns))
		rows := make([][]rdf.Term, 0, hi-lo)
		for i := lo; i < hi; i++ {
			if !strings.HasPrefix(s.Turns[i].ID, owners[i]) {
				return 0, fmt.Errorf("%w: turn %d: IRI %s outside its session %s", ErrCorrupt, i, s.Turns[i].ID, owners[i])
			}
			rows = append(rows, []rdf.Term{kg.MustIRI(owners[i]), kg.MustIRI(s.Turns[i].ID), kg.String(chain[i])})
		}
		u, err := kg.BindTables(uRechain, nil, map[string]kg.Table{"turns": {Vars: []string{"g", "t", "d"}, Rows: rows}})
		if err != nil {
			return 0, err
		}
		if err := st.c.Update(ctx, u, kg.Idempotent()); err != nil {
			return 0, err
		}
	}
	return len(s.Turns), nil
}
