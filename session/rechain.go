package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
)

// RechainStats says what a Rechain did.
type RechainStats struct {
	Sessions int              // sessions whose turns it gave the chain
	Turns    int              // turns of those sessions that had no digest
	Skipped  map[string]error // sessions it could not chain (their history does not load: a missing ancestor, a cycle), by id
	Total    int              // sessions that had turns without a digest when it began
}

// The queries of Rechain.
var (
	qUnchained = query("unchained.rq")
	uRechain   = query("rechain.ru")
)

// rechainBatch is how many turns one rechain update names.
const rechainBatch = 2000

// Rechain adds the hash chain (trails:digest, see chain.go) to every turn
// stored before Trails kept it, session by session: each session's
// effective history is loaded and its digests computed from the stored
// turns, then written where missing. It changes nothing else and never
// overwrites a digest (a wrong one is Check's to report). It is
// re-runnable: a second run finds nothing to do. progress, if not nil, is
// called after each session with the sessions done and the total.
//
// Persist does the same for one parent when a new fork is made over a
// turn without a digest, so Rechain is needed only for Check to verify
// old data, or ahead of time.
//
// It returns the stats, also with an error (the sessions done stay done;
// running Rechain again does the rest): ErrForbidden for a Store scoped to
// a principal, the context's error when interrupted between sessions, or a
// store error wrapping the kg error. A session whose history does not load
// (ErrParentMissing, ErrCorrupt) is skipped and listed in Skipped.
func (st *Store) Rechain(ctx context.Context, progress func(done, total int)) (RechainStats, error) {
	stats := RechainStats{Skipped: map[string]error{}}
	if err := st.operator("rechain"); err != nil {
		return stats, err
	}
	res, err := st.c.Select(ctx, qUnchained)
	if err != nil {
		return stats, fmt.Errorf("rechain: %w", err)
	}
	stats.Total = len(res.Solutions)
	for k, row := range res.Solutions {
		if err := ctx.Err(); err != nil {
			return stats, fmt.Errorf("rechain: %w", err)
		}
		id := idOf(row.String("s"))
		n, _ := row.Int("n")
		if _, err := st.rechain(ctx, id); err != nil {
			if errors.Is(err, ErrParentMissing) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
				stats.Skipped[id] = err
			} else {
				return stats, fmt.Errorf("rechain %s: %w", id, err)
			}
		} else {
			stats.Sessions++
			stats.Turns += n
		}
		if progress != nil {
			progress(k+1, stats.Total)
		}
	}
	return stats, nil
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
