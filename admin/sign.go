package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// signing is what WithSigning gives a Dataset.
type signing struct {
	signer note.Signer
	w      session.Witness
}

// WithSigning makes Import and Rechain sign what they write, as
// session.WithSigning makes a Store sign its writes: with signer (the
// operator's writer key, an ed25519 note key; never stored in the
// dataset) a witness.Statement of version 2 of each session whose head
// they wrote, added to w (a *witness.Client of the witness's server, so
// that the operator holds no witness key), once the store has
// acknowledged the write. Its turn count, head digest and chain digest
// are the session's as the store holds them after the write (its own
// turns, trails:headDigest, the trails:digest of its last own turn or ""
// when it has none), its fork link its stored parent and fork point:
//
//   - Import: a head statement of each session graph it wrote, once the
//     batch holding it is stored, naming no head replaced (the session is
//     new to the store); sessions the store held as in the input are not
//     written and not signed.
//   - Rechain: a head statement of each session it chained, and of each
//     ancestor whose last own turn it gave a digest, replacing the head
//     the session had before (its count and chain digest, "" for a turn
//     that had none).
//
// A session with no head (no trails:ownTurns or trails:headDigest: stored
// before Trails kept turn counts) gets no statement; a signing Store's
// next Persist of it writes and signs its first head.
//
// When signing or the witness fails, the write stays stored and the
// operation returns an error matching session.ErrNotWitnessed (a
// *session.WitnessError per statement, with the signed entry to add
// again once the witness is back). A nil signer or witness turns signing
// off, as without the option: the sessions written verify as
// "unwitnessed" (Import) or "rechained" (Rechain, for a session signed
// before).
func WithSigning(signer note.Signer, w session.Witness) Option {
	return func(ds *Dataset) {
		ds.sign = nil
		if signer != nil && w != nil {
			ds.sign = &signing{signer: signer, w: w}
		}
	}
}

// storedHead is a session's head as the store holds it (heads.rq).
type storedHead struct {
	own    int // -1 when the session has no trails:ownTurns
	digest string
	chain  string // the trails:digest of its last own turn; "" when none
	parent string // its parent's id; "" for a root
	at     int    // its fork point; 0 for a root
}

// signable reports whether h can be stated: a turn count and a head
// digest.
func (h storedHead) signable() bool { return h.own >= 0 && h.digest != "" }

// ref returns h as the head a statement replaces.
func (h storedHead) ref() witness.HeadRef {
	return witness.HeadRef{Turns: uint64(max(h.own, 0)), Chain: h.chain}
}

var qHeads = query("heads.rq")

// heads reads the stored heads of sessions ids; a session not stored has
// none in the map.
func (ds *Dataset) heads(ctx context.Context, ids map[string]bool) (map[string]storedHead, error) {
	out := make(map[string]storedHead, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err := ds.selectTable(ctx, "heads", qHeads, "sessions", sessionRows(ids), nil, func(r kg.Solution) error {
		id := ontology.SessionID(r.String("s"))
		h := storedHead{own: -1, digest: r.String("head"), chain: r.String("chain")}
		var err error
		if _, ok := r["own"]; ok {
			if h.own, err = r.Int("own"); err != nil {
				return err
			}
		}
		if p := r.String("parent"); p != "" {
			h.parent = ontology.SessionID(p)
			if _, ok := r["at"]; ok {
				if h.at, err = r.Int("at"); err != nil {
					return err
				}
			}
		}
		if h.own <= 0 {
			h.chain = "" // the last turn of its history is not its own
		}
		out[id] = h
		return nil
	})
	return out, err
}

// attest signs a head statement of each session in now (its stored head
// after a write the store acknowledged) and adds it to the Dataset's
// witness, in id order: replacing before[id] when the session had a head
// before (Rechain), else naming none (a session new to the store). A
// session without a head (signable) is skipped. It returns the number of
// statements added and, for those that were not, a *session.WitnessError
// each (joined); it goes on past a failure.
func (ds *Dataset) attest(ctx context.Context, now, before map[string]storedHead) (int, error) {
	at := ds.now()
	var errs []error
	n := 0
	for _, id := range slices.Sorted(maps.Keys(now)) {
		h := now[id]
		if !h.signable() {
			continue
		}
		s := witness.Statement{Kind: witness.KindHead, Session: id, Turns: uint64(h.own), Digest: h.digest, Chain: h.chain,
			Time: at, Position: session.LogPosition(ds.c, id), Version: 2, Parent: h.parent}
		if h.parent != "" {
			s.ForkedAt = uint64(h.at)
		}
		if b, ok := before[id]; ok && b.signable() {
			s.Replaces, s.Prev = true, b.ref()
		}
		entry, err := witness.Sign(s, ds.sign.signer)
		if err != nil {
			errs = append(errs, &session.WitnessError{Statement: s, Err: err})
			continue
		}
		if _, err := ds.sign.w.Add(ctx, entry); err != nil {
			errs = append(errs, &session.WitnessError{Statement: s, Entry: entry, Err: err})
			continue
		}
		n++
	}
	if len(errs) == 1 {
		return n, errs[0]
	}
	return n, errors.Join(errs...)
}

// signWritten reads the heads of sessions ids, just written, and signs
// them (attest), replacing before's. A failure to read them is
// session.ErrNotWitnessed too: the write is stored, its statements are
// not made.
func (ds *Dataset) signWritten(ctx context.Context, ids map[string]bool, before map[string]storedHead) (int, error) {
	now, err := ds.heads(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("%w: reading the heads to sign: %w", session.ErrNotWitnessed, err)
	}
	return ds.attest(ctx, now, before)
}
