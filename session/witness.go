package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// Witness is what a Store configured WithSigning needs of a witness: an
// append-only log outside the store (issue 24, docs/verify.md).
// witness.Witness has this method, and so *witness.Dir, the local
// directory log; a transparency log or a WORM bucket may implement it too.
// A Witness must be safe for concurrent use.
type Witness interface {
	// Add appends entry, a signed statement, to the log and returns its
	// index, once it is durable.
	Add(ctx context.Context, entry []byte) (index uint64, err error)
}

var (
	_ Witness = witness.Witness(nil)
	_ Witness = (*witness.Dir)(nil)
)

// signing is what WithSigning gives a Store.
type signing struct {
	signer note.Signer
	w      Witness
}

// WithSigning makes the Store sign, with signer (an ed25519 note key, see
// witness.NewSigner; held by the writing process, never stored in the
// dataset), a witness.Statement of each write it makes that changes a
// session's head (trails:ownTurns and trails:headDigest), and add it to w,
// once the store has acknowledged the write:
//
//   - Persist and Create: a head statement of the session when the call
//     wrote (a new session or fork, new turns, a first turn count for a
//     session stored before turn counts), or found the value's history
//     stored while the value did not know it was (an earlier call whose
//     answer was lost); not for a Persist with nothing to write.
//   - Fork: a head statement of the new fork (no turns of its own).
//   - Rewind: head statements of the session, at its new count, and of
//     its archive.
//   - Merge: a head statement of the parent, with the merge turn.
//   - Detach (and a Delete with DetachChildren, for each fork it
//     detaches): a head statement of the fork, its copied prefix now its
//     own turns.
//   - Delete: a deletion statement (witness.KindDeletion) of each session
//     it deleted, with the turn count and head digest read just before
//     the update that deleted it (an append landing between that read and
//     the delete is not in it; a session stored before turn counts, with
//     no head, gets none).
//
// Other writes (SetState, SetExpiry, Tag, Anchor, Rechain) leave every
// head as it was and produce none. A statement's Turns is the session's
// own turn count (trails:ownTurns, turns stored in its own graph: a fork's
// inherited prefix is not counted) and its Digest the head digest over
// them, as the store holds them after the write (see HeadDigest); its Time
// is the Store's clock when the write was acknowledged; its Position is
// "kafka:<offset>" when the Querier has a Position() int64 method (package
// cluster's Client: the offset of its last write, this one's or a later
// one's), what its PositionOf(session) says when it has that method
// (cluster's Sharded: "kafka:TOPIC/0@OFFSET" in the log of the session's
// group), else "". A call that writes several sessions adds one entry per
// statement, in order; each write of a group commit (WithGroupCommit)
// adds its own, once its own outcome is known.
//
// The store acknowledges a write before it is signed: when signing or the
// witness fails (w.Add returns an error, ctx ends), the write stays stored
// and the method returns an error matching ErrNotWitnessed, a
// *WitnessError holding the statement and, when it was signed, the signed
// entry, for the caller to add again once the witness is back; it never
// reports a stored write as not stored. A process that dies between the
// write and the Add leaves the store ahead of its witness, which verify
// reports as such. Statements of one session from concurrent writers (two
// Stores, or two values of one session) reach the witness in the order
// their Adds run, which need not be the order of their writes.
//
// A nil signer or witness turns signing off, as without the option.
func WithSigning(signer note.Signer, w Witness) StoreOption {
	return func(st *Store) {
		st.sign = nil
		if signer != nil && w != nil {
			st.sign = &signing{signer: signer, w: w}
		}
	}
}

// WitnessError reports a write the store acknowledged whose signed
// statement did not reach the Store's witness (WithSigning): the write is
// stored, the witness does not know of it. It matches ErrNotWitnessed and
// unwraps to why (the signer's or the witness's error).
type WitnessError struct {
	// Statement is what was to be witnessed: the session and its head as
	// the write left them.
	Statement witness.Statement
	// Entry is the statement signed, to add to the witness again; nil
	// when signing failed.
	Entry []byte
	// Err is the signer's or the witness's error.
	Err error
}

// Error names the session and the head that is stored but not witnessed.
func (e *WitnessError) Error() string {
	return fmt.Sprintf("session: %s of %s (%d turns, %s) stored but not witnessed: %v",
		e.Statement.Kind, e.Statement.Session, e.Statement.Turns, e.Statement.Digest, e.Err)
}

// Is reports whether target is ErrNotWitnessed.
func (e *WitnessError) Is(target error) bool { return target == ErrNotWitnessed }

// Unwrap returns e.Err.
func (e *WitnessError) Unwrap() error { return e.Err }

// ackedHead is a session's own turn count, head digest and chain digest
// (of the last turn in its own graph, "" when none) as an acknowledged
// write left them in the store.
//
// A statement of it also names the head the write replaced (replaces,
// prevOwn, prevChain; replaces false when the session is new with the
// write) and the session's fork link after it (parent, at): what verify
// chains a session's statements by (witness.Statement, version 2).
type ackedHead struct {
	id     string
	own    int
	digest string
	chain  string

	replaces  bool
	prevOwn   int
	prevChain string
	parent    string
	at        int

	// merge, for the head a Merge left, is the MergeDigest of the result
	// written beside its merge turn: attest signs a statement of kind
	// merge of it after the head's.
	merge string
}

// seenHead returns the head s.seen says the store holds for s, replacing
// the head before (before.ok: the value knew a stored head; else the
// session is new with the write).
func seenHead(s *Session, before seen) ackedHead {
	h := ackedHead{id: s.ID, own: s.seen.own, digest: s.seen.head, parent: s.ParentID, at: s.ForkedAt}
	if s.seen.own > 0 {
		h.chain = s.seen.chain // the last turn of its history is its own
	}
	if before.ok {
		h.replaces, h.prevOwn = true, before.own
		if before.own > 0 {
			h.prevChain = before.chain
		}
	}
	if s.ParentID == "" {
		h.at = 0
	}
	return h
}

// replacing returns h as replacing the head prev.
func (h ackedHead) replacing(prev ackedHead) ackedHead {
	h.replaces, h.prevOwn, h.prevChain = true, prev.own, prev.chain
	return h
}

// positioned is what a Querier may tell of the log its writes go to
// (package cluster's Client): the offset of its last write, -1 for none.
type positioned interface{ Position() int64 }

// sessionPositioned is what a Querier of several logs may tell of the log
// a session's writes go to (package cluster's Sharded): "" for none.
type sessionPositioned interface{ PositionOf(id string) string }

// LogPosition returns the Position of a signed statement about session
// id written through q: "kafka:<offset>" for a Querier with a Position()
// int64 method (package cluster's Client), what its PositionOf(id) says
// for one with that method (cluster's Sharded), else "".
func LogPosition(q Querier, id string) string {
	var c any = q
	switch p := c.(type) {
	case sessionPositioned:
		return p.PositionOf(id)
	case positioned:
		if off := p.Position(); off >= 0 {
			return "kafka:" + strconv.FormatInt(off, 10)
		}
	}
	return ""
}

// attest signs a statement of kind k of each of heads and adds it to the
// Store's witness, in order, once the store has acknowledged the writes
// that left them. With signing off it does nothing. It returns a
// *WitnessError for a statement that could not be signed or added (the
// errors of several joined), and goes on with the others.
func (st *Store) attest(ctx context.Context, k witness.Kind, heads ...ackedHead) error {
	if st.sign == nil || len(heads) == 0 {
		return nil
	}
	at := st.now()
	var errs []error
	for _, h := range heads {
		pos := LogPosition(st.c, h.id)
		s := witness.Statement{Kind: k, Session: h.id, Turns: uint64(h.own), Digest: h.digest, Chain: h.chain, Time: at, Position: pos,
			Version: 2, Replaces: h.replaces, Prev: witness.HeadRef{Turns: uint64(h.prevOwn), Chain: h.prevChain}}
		if !h.replaces {
			s.Prev = witness.HeadRef{}
		}
		if h.parent != "" {
			s.Parent, s.ForkedAt = h.parent, uint64(h.at)
		}
		all := []witness.Statement{s}
		if h.merge != "" && k == witness.KindHead {
			m := s
			m.Kind, m.Digest = witness.KindMerge, h.merge
			all = append(all, m)
		}
		for _, s := range all {
			entry, err := witness.Sign(s, st.sign.signer)
			if err != nil {
				errs = append(errs, &WitnessError{Statement: s, Err: err})
				continue
			}
			if _, err := st.sign.w.Add(ctx, entry); err != nil {
				errs = append(errs, &WitnessError{Statement: s, Entry: entry, Err: err})
			}
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
