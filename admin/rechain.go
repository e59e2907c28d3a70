package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// RechainStats says what a Rechain did.
type RechainStats struct {
	Sessions int              // sessions whose turns it gave the chain
	Turns    int              // turns of those sessions that had no digest
	Skipped  map[string]error // sessions it could not chain (their history does not load: a missing ancestor, a cycle), by id
	Total    int              // sessions that had turns without a digest when it began
	Signed   int              // head statements added to the witness (WithSigning)
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
// With WithSigning, each session it chains is signed once its digests
// are stored, and so is each ancestor whose head (the digest of its last
// own turn) the chaining changed, each statement replacing the head the
// session had before (RechainStats.Signed counts them); a statement that
// fails does not stop the run.
//
// It returns the stats, also with an error (the sessions done stay done;
// running Rechain again does the rest): the context's error when interrupted between sessions, or a
// store error wrapping the kg error; and, joined with any of these or
// alone, errors matching session.ErrNotWitnessed for sessions chained
// whose statements did not reach the witness. A session whose history
// does not load (ErrParentMissing, ErrCorrupt) is skipped and listed in
// Skipped.
func (ds *Dataset) Rechain(ctx context.Context, progress func(done, total int)) (_ RechainStats, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Rechain", "")
	defer func() { call.End(err) }()
	stats := RechainStats{Skipped: map[string]error{}}
	res, err := ds.c.Select(ctx, qUnchained)
	if err != nil {
		return stats, fmt.Errorf("rechain: %w", err)
	}
	stats.Total = len(res.Solutions)
	var rs *rechainSigning
	if ds.sign != nil && len(res.Solutions) > 0 {
		ids := make([]string, len(res.Solutions))
		for k, row := range res.Solutions {
			ids[k] = ontology.SessionID(row.String("s"))
		}
		if rs, err = ds.rechainSigning(ctx, ids); err != nil {
			return stats, fmt.Errorf("rechain: %w", err)
		}
	}
	var signErr error
	for k, row := range res.Solutions {
		if err := ctx.Err(); err != nil {
			return stats, fmt.Errorf("rechain: %w", errors.Join(err, signErr))
		}
		id := ontology.SessionID(row.String("s"))
		n, _ := row.Int("n")
		if _, err := ds.st.Rechain(ctx, id); err != nil {
			if errors.Is(err, session.ErrParentMissing) || errors.Is(err, session.ErrCorrupt) || errors.Is(err, session.ErrInvalid) || errors.Is(err, session.ErrNotFound) {
				stats.Skipped[id] = err
			} else {
				return stats, fmt.Errorf("rechain %s: %w", id, errors.Join(err, signErr))
			}
		} else {
			stats.Sessions++
			stats.Turns += n
			if rs != nil {
				n, err := ds.signRechained(ctx, rs, id)
				stats.Signed += n
				signErr = errors.Join(signErr, err)
			}
		}
		if progress != nil {
			progress(k+1, stats.Total)
		}
	}
	if signErr != nil {
		return stats, fmt.Errorf("rechain: %w", signErr)
	}
	return stats, nil
}

// rechainSigning is what Rechain keeps to sign (WithSigning): the head
// last known of each session it may change (the sessions it chains and
// their ancestors), as read before it began or as signed since, and the
// sessions it signed.
type rechainSigning struct {
	known  map[string]storedHead
	signed map[string]bool
}

// rechainSigning reads the heads of sessions ids and of their ancestors
// before Rechain changes them.
func (ds *Dataset) rechainSigning(ctx context.Context, ids []string) (*rechainSigning, error) {
	anc, err := ds.importAncestors(ctx, ids)
	if err != nil {
		return nil, err
	}
	all := map[string]bool{}
	for _, id := range ids {
		all[id] = true
	}
	for id := range anc {
		all[id] = true
	}
	known, err := ds.heads(ctx, all)
	if err != nil {
		return nil, err
	}
	return &rechainSigning{known: known, signed: map[string]bool{}}, nil
}

// signRechained signs, after session id was chained, its head (unless
// signed as it is already) and the head of each of its ancestors that the
// chaining changed, each replacing the head last known of it.
func (ds *Dataset) signRechained(ctx context.Context, rs *rechainSigning, id string) (int, error) {
	line := map[string]bool{}
	for x := id; x != "" && !line[x]; x = rs.known[x].parent { // a cycle ends the walk
		line[x] = true
	}
	now, err := ds.heads(ctx, line)
	if err != nil {
		return 0, fmt.Errorf("%w: reading the heads to sign: %w", session.ErrNotWitnessed, err)
	}
	sign := map[string]storedHead{}
	for x, h := range now {
		if h != rs.known[x] || x == id && !rs.signed[x] {
			sign[x] = h
		}
	}
	n, err := ds.attest(ctx, sign, rs.known)
	for x, h := range sign {
		rs.known[x], rs.signed[x] = h, true
	}
	return n, err
}
