// Package witness keeps signed history outside the store: statements that a
// writer signs with its own key (a session's turn count and head digest after
// each acknowledged write, or its deletion), and an append-only log of them
// whose Merkle tree checkpoints let an auditor prove that nothing was dropped,
// edited or rolled back since a checkpoint it saw before.
//
// Statements and checkpoints are signed notes (golang.org/x/mod/sumdb/note);
// the log is an RFC 6962 Merkle tree (github.com/transparency-dev/merkle) and
// its checkpoints are in the transparency-dev checkpoint format
// (github.com/transparency-dev/formats/log). [Dir] is a witness kept in a
// local directory; [Server] serves one over HTTP as a process of its own,
// the only one holding the witness key, and [Client] is how writers and
// auditors reach it; [Cosigner] is an independent witness that cosigns
// its checkpoints (c2sp.org/tlog-witness), so that a witness operator
// who forks the log is caught ([VerifyCosignatures]). A transparency log
// or a WORM bucket can be another implementation of [Witness].
package witness

import (
	"context"
	"errors"
)

// Witness is an append-only log of entries (signed statements) kept outside
// the store, whose signed checkpoints commit to all the entries before them.
// Implementations are safe for concurrent use.
type Witness interface {
	// Add appends entry (a signed note) to the log and returns its index,
	// once it is durable.
	Add(ctx context.Context, entry []byte) (index uint64, err error)
	// Checkpoint returns a signed checkpoint (transparency-dev format, as a
	// note) of the whole log as it is now.
	Checkpoint(ctx context.Context) ([]byte, error)
	// Entry returns the entry at index.
	Entry(ctx context.Context, index uint64) ([]byte, error)
	// InclusionProof returns the RFC 6962 proof that the entry at index is
	// in the tree of the first size entries.
	InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error)
	// ConsistencyProof returns the RFC 6962 proof that the tree of the first
	// to entries extends the tree of the first from entries.
	ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error)
}

var _ Witness = (*Dir)(nil)

// Errors returned by this package, wrapped with what failed; test them
// with errors.Is.
var (
	// ErrMalformed: a statement, a note or a checkpoint that does not parse,
	// or is not in canonical form.
	ErrMalformed = errors.New("witness: malformed")
	// ErrUnknownKind: a statement of a kind this version does not know.
	ErrUnknownKind = errors.New("witness: unknown statement kind")
	// ErrUnknownKey: a note signed by no trusted key.
	ErrUnknownKey = errors.New("witness: signed by no trusted key")
	// ErrBadSignature: a trusted key's signature that does not verify (the
	// text was changed after signing).
	ErrBadSignature = errors.New("witness: signature does not verify")
	// ErrRollback: a log smaller than a checkpoint seen before: entries
	// were dropped from its end, or it was rolled back to an older copy.
	ErrRollback = errors.New("witness: log is smaller than a checkpoint seen before")
	// ErrInconsistent: a log that does not extend a checkpoint seen before:
	// an entry was edited, dropped or inserted, or the log was forked.
	ErrInconsistent = errors.New("witness: log does not extend a checkpoint seen before")
	// ErrNotIncluded: an entry that is not at its index in the tree of a
	// checkpoint.
	ErrNotIncluded = errors.New("witness: entry not in the log at the checkpoint")
	// ErrCorrupt: a log file damaged other than by a torn last write.
	ErrCorrupt = errors.New("witness: log file corrupt")
	// ErrOutOfRange: an index or a tree size beyond the log.
	ErrOutOfRange = errors.New("witness: index or size beyond the log")
	// ErrTooLarge: an entry over MaxEntrySize.
	ErrTooLarge = errors.New("witness: entry too large")
	// ErrReadOnly: a Dir opened by OpenDirReadOnly asked to write.
	ErrReadOnly = errors.New("witness: read-only")
	// ErrClosed: a Dir used after Close.
	ErrClosed = errors.New("witness: closed")
	// ErrOutsideWindow: a statement by a trusted writer key dated outside
	// the key's window (KeyList.Trusts), which a Server refuses.
	ErrOutsideWindow = errors.New("witness: writer key not trusted at the statement's time")
	// ErrNoCheckpoint: a witness that has signed no checkpoint yet.
	ErrNoCheckpoint = errors.New("witness: no checkpoint yet")
	// ErrStale: cosignatures for a checkpoint that is no longer the
	// witness's latest (a newer one was signed meanwhile).
	ErrStale = errors.New("witness: checkpoint is not the latest")
	// ErrUnavailable: a witness or cosigner server that cannot be reached,
	// or answered with a server error (HTTP 5xx).
	ErrUnavailable = errors.New("witness: server unavailable")
	// ErrUnknownOrigin: a checkpoint of a log a cosigner does not know.
	ErrUnknownOrigin = errors.New("witness: unknown log origin")
	// ErrConflict: a cosign request whose old size is not the size the
	// cosigner last cosigned for the log (a *ConflictError says which).
	ErrConflict = errors.New("witness: old size is not the cosigner's latest")
	// ErrCosignatures: a checkpoint cosigned by fewer trusted cosigners
	// than required (VerifyCosignatures).
	ErrCosignatures = errors.New("witness: too few trusted cosignatures")
)
