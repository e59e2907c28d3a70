package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"iter"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/note"
)

// OpenCheckpoint verifies signed, a checkpoint of the witness whose key is
// v, and returns it. Its origin must be v's name.
//
// It returns ErrUnknownKey when v did not sign it, ErrBadSignature when
// v's signature does not verify, and ErrMalformed for a note or a
// checkpoint that does not parse or names another origin.
func OpenCheckpoint(signed []byte, v note.Verifier) (log.Checkpoint, error) {
	n, err := openNote(signed, note.VerifierList(v))
	if err != nil {
		return log.Checkpoint{}, fmt.Errorf("open checkpoint: %w", err)
	}
	var cp log.Checkpoint
	if _, err := cp.Unmarshal([]byte(n.Text)); err != nil {
		return log.Checkpoint{}, fmt.Errorf("open checkpoint: %w: %w", ErrMalformed, err)
	}
	if cp.Origin != v.Name() {
		return log.Checkpoint{}, fmt.Errorf("open checkpoint: %w: origin %q, want %q", ErrMalformed, clip(cp.Origin), v.Name())
	}
	return cp, nil
}

// VerifyConsistency checks, with p (a Witness's ConsistencyProof from
// older.Size to newer.Size), that the log at newer extends the log at
// older: every entry older committed to is still there, unchanged, in
// order.
//
// It returns ErrRollback when newer is smaller than older (entries dropped
// from the end, or the log rolled back to an older copy) and
// ErrInconsistent when the proof fails (an entry edited, dropped or
// inserted, or the log forked) or the two are of different logs.
func VerifyConsistency(older, newer log.Checkpoint, p [][]byte) error {
	switch {
	case older.Origin != newer.Origin:
		return fmt.Errorf("verify consistency: %w: origin %q, then %q", ErrInconsistent, clip(older.Origin), clip(newer.Origin))
	case newer.Size < older.Size:
		return fmt.Errorf("verify consistency: %w: size %d, seen %d before", ErrRollback, newer.Size, older.Size)
	}
	if err := proof.VerifyConsistency(hasher, older.Size, newer.Size, p, older.Hash, newer.Hash); err != nil {
		// The proof library's message prints the hashes as byte arrays:
		// name the two checkpoints as their text does instead.
		return fmt.Errorf("verify consistency: %w: the log of %d entries (root %s) does not extend the checkpoint of %d entries seen before (root %s)",
			ErrInconsistent, newer.Size, base64.StdEncoding.EncodeToString(newer.Hash), older.Size, base64.StdEncoding.EncodeToString(older.Hash))
	}
	return nil
}

// VerifyInclusion checks, with p (a Witness's InclusionProof of index in
// cp.Size), that entry is at index in the log at cp. It returns
// ErrNotIncluded when it is not.
func VerifyInclusion(entry []byte, index uint64, cp log.Checkpoint, p [][]byte) error {
	if err := proof.VerifyInclusion(hasher, index, cp.Size, hasher.HashLeaf(entry), p, cp.Hash); err != nil {
		return fmt.Errorf("verify inclusion of %d in %d: %w: %w", index, cp.Size, ErrNotIncluded, err)
	}
	return nil
}

// Audit reads w's checkpoint, verifies it with v (the witness's key), and
// checks that it extends trusted, a signed checkpoint of w seen before (nil
// for none). It returns the new signed checkpoint, to trust next time, and
// its content.
//
// It returns the errors of OpenCheckpoint (for trusted or the new one),
// of VerifyConsistency (ErrRollback, ErrInconsistent) and of w.
func Audit(ctx context.Context, w Witness, v note.Verifier, trusted []byte) ([]byte, log.Checkpoint, error) {
	signed, err := w.Checkpoint(ctx)
	if err != nil {
		return nil, log.Checkpoint{}, fmt.Errorf("audit: %w", err)
	}
	cp, err := OpenCheckpoint(signed, v)
	if err != nil {
		return nil, log.Checkpoint{}, fmt.Errorf("audit: witness's %w", err)
	}
	if trusted == nil {
		return signed, cp, nil
	}
	old, err := OpenCheckpoint(trusted, v)
	if err != nil {
		return nil, log.Checkpoint{}, fmt.Errorf("audit: trusted %w", err)
	}
	if cp.Size < old.Size {
		return nil, cp, fmt.Errorf("audit: %w: size %d, seen %d before", ErrRollback, cp.Size, old.Size)
	}
	p, err := w.ConsistencyProof(ctx, old.Size, cp.Size)
	if err != nil {
		return nil, cp, fmt.Errorf("audit: %w", err)
	}
	if err := VerifyConsistency(old, cp, p); err != nil {
		return nil, cp, fmt.Errorf("audit: %w", err)
	}
	return signed, cp, nil
}

// Head is a statement read from a witness: who signed it and where it is.
type Head struct {
	Statement
	// Signature is the trusted key's signature on it (Name and Hash name
	// the key).
	Signature note.Signature
	// Index is its index in the log.
	Index uint64
}

// EntryError is an entry of a witness log that is no statement a trusted
// key signed.
type EntryError struct {
	Index uint64
	// Claimed is the statement the entry's text holds, unverified (anyone
	// may have written it); the zero Statement when the text is none.
	Claimed Statement
	Err     error // the errors of Open
}

// Error says which entry, and why.
func (e *EntryError) Error() string { return fmt.Sprintf("witness entry %d: %v", e.Index, e.Err) }

// Unwrap returns e.Err.
func (e *EntryError) Unwrap() error { return e.Err }

// Heads reads the first cp.Size entries of w in order and yields each one's
// statement, opened with the trusted keys known. For an entry that does not
// open it yields an *EntryError (wrapping Open's errors) and goes on: a
// witness that takes entries from anyone may hold statements no trusted key
// signed. It ends with an error if the entries are not those cp commits to
// (ErrInconsistent, after the last entry) or if w fails. cp should come
// from OpenCheckpoint or Audit.
func Heads(ctx context.Context, w Witness, cp log.Checkpoint, known note.Verifiers) iter.Seq2[Head, error] {
	return func(yield func(Head, error) bool) {
		tree := rangeFact.NewEmptyRange(0)
		for i := uint64(0); i < cp.Size; i++ {
			entry, err := w.Entry(ctx, i)
			if err != nil {
				yield(Head{}, fmt.Errorf("heads: %w", err))
				return
			}
			if err := tree.Append(hasher.HashLeaf(entry), nil); err != nil {
				yield(Head{}, fmt.Errorf("heads: %w", err))
				return
			}
			s, sig, err := Open(entry, known)
			if err != nil {
				if !yield(Head{}, &EntryError{Index: i, Claimed: claimed(entry), Err: err}) {
					return
				}
				continue
			}
			if !yield(Head{Statement: s, Signature: sig, Index: i}, nil) {
				return
			}
		}
		if err := checkRoot(tree, cp); err != nil {
			yield(Head{}, fmt.Errorf("heads: %w", err))
		}
	}
}

// claimed returns the statement the text of note msg holds, without
// verifying any signature; the zero Statement when it holds none.
func claimed(msg []byte) Statement {
	var s Statement
	if i := bytes.LastIndex(msg, []byte("\n\n")); i >= 0 && s.Unmarshal(msg[:i+1]) == nil {
		return s
	}
	return Statement{}
}

// checkRoot returns ErrInconsistent unless tree's root is cp's.
func checkRoot(tree *compact.Range, cp log.Checkpoint) error {
	root, err := tree.GetRootHash(nil)
	if err != nil {
		return err
	}
	if cp.Size == 0 {
		root = hasher.EmptyRoot()
	}
	if !bytes.Equal(root, cp.Hash) {
		return fmt.Errorf("%w: entries 0 to %d do not hash to the checkpoint's root", ErrInconsistent, cp.Size)
	}
	return nil
}

// LatestHeads returns, per session, the last head or deletion statement
// about it (a merge statement is no head) in the
// first cp.Size entries of w (by index, not by the statements' times), as
// Heads reads them, and the first of Heads's errors (an *EntryError too).
func LatestHeads(ctx context.Context, w Witness, cp log.Checkpoint, known note.Verifiers) (map[string]Head, error) {
	latest := make(map[string]Head)
	for h, err := range Heads(ctx, w, cp, known) {
		if err != nil {
			return nil, err
		}
		if h.Kind != KindMerge { // a merge statement is no head
			latest[h.Session] = h
		}
	}
	return latest, nil
}
