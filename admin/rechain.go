package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// RechainStats says what a Rechain did.
type RechainStats struct {
	Sessions int              // sessions whose turns it gave the chain
	Turns    int              // turns of those sessions that had no digest
	Skipped  map[string]error // sessions it could not chain (their history does not load: a missing ancestor, a cycle), by id
	Total    int              // sessions that had turns without a digest when it began
}

// qUnchained lists the sessions holding turns without a digest.
var qUnchained = query("unchained.rq")

// Rechain adds the hash chain (trails:digest, see session.TurnDigest) to
// every turn stored before Trails kept it, session by session: for each
// session holding such turns, session.Store.Rechain loads its effective
// history, computes its digests from the stored turns and writes them
// where missing. It changes nothing else and never
// overwrites a digest (a wrong one is Check's to report). It is
// re-runnable: a second run finds nothing to do. progress, if not nil, is
// called after each session with the sessions done and the total.
//
// Persist does the same for one parent when a new fork is made over a
// turn without a digest, so Rechain is needed only for Check to verify
// old data, or ahead of time.
//
// It returns the stats, also with an error (the sessions done stay done;
// running Rechain again does the rest): the context's error when interrupted between sessions, or a
// store error wrapping the kg error. A session whose history does not load
// (ErrParentMissing, ErrCorrupt) is skipped and listed in Skipped.
func (ds *Dataset) Rechain(ctx context.Context, progress func(done, total int)) (RechainStats, error) {
	stats := RechainStats{Skipped: map[string]error{}}
	res, err := ds.c.Select(ctx, qUnchained)
	if err != nil {
		return stats, fmt.Errorf("rechain: %w", err)
	}
	stats.Total = len(res.Solutions)
	for k, row := range res.Solutions {
		if err := ctx.Err(); err != nil {
			return stats, fmt.Errorf("rechain: %w", err)
		}
		id := ontology.SessionID(row.String("s"))
		n, _ := row.Int("n")
		if _, err := ds.st.Rechain(ctx, id); err != nil {
			if errors.Is(err, session.ErrParentMissing) || errors.Is(err, session.ErrCorrupt) || errors.Is(err, session.ErrInvalid) || errors.Is(err, session.ErrNotFound) {
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
