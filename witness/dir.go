package witness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// MaxEntrySize is the largest entry a Dir takes.
const MaxEntrySize = 64 << 10

// The files of a Dir. LogFile holds the entries; CheckpointFile the last
// checkpoint the Dir signed.
//
// LogFile starts with the line "trails witness log v1" and holds one record
// per entry, appended and fsynced before Add returns: the entry's length
// and the CRC-32C (Castagnoli) of its bytes, each 4 bytes big-endian, then
// its bytes. Nothing in it is ever rewritten, except that opening or
// appending truncates a torn last record (one cut short or failing its CRC
// at the end of the file, past the last checkpoint) that a crash mid-append
// left.
//
// CheckpointFile is a note whose text is a transparency-dev checkpoint
// (origin: the signer's name; the tree size; the RFC 6962 root hash in
// base64), replaced by rename when Checkpoint signs a new one.
const (
	LogFile        = "log"
	CheckpointFile = "checkpoint"
)

// logHeader is the first line of LogFile.
const logHeader = "trails witness log v1\n"

// recordHeader is the size of a record's length and CRC.
const recordHeader = 8

var (
	hasher    = rfc6962.DefaultHasher
	crcTable  = crc32.MakeTable(crc32.Castagnoli)
	rangeFact = &compact.RangeFactory{Hash: hasher.HashChildren}
)

// Dir is a witness kept in a local directory: an append-only file of
// entries and the Merkle tree over them, whose checkpoints it signs with
// its own key. Several Dirs, in one process or several, may use one
// directory: each operation takes a lock on the log file (flock) and first
// reads what others appended.
//
// A Dir keeps the tree's hashes in memory (about 64 bytes an entry) and
// reads the whole log when it is opened. It is safe for concurrent use.
type Dir struct {
	mu     sync.Mutex
	dir    string
	f      *os.File
	signer note.Signer
	closed bool

	tree    *compact.Range // over all entries read
	levels  [][][]byte     // levels[l][i]: the hash of perfect subtree (l, i)
	offsets []int64        // offsets[i]: where record i starts in LogFile
	end     int64          // where the last good record ends
}

// OpenDir opens the witness in directory dir, creating it if needed, whose
// checkpoints signer signs (its name is the checkpoints' origin). It reads
// the whole log, truncates a torn last record, and checks that the log
// extends the last checkpoint the directory holds.
//
// It returns ErrCorrupt for a damaged log, ErrRollback for a log smaller
// than its checkpoint, ErrInconsistent for one whose tree differs from it,
// ErrUnknownKey for a checkpoint signed by another key, ErrMalformed for
// one that does not parse, errors.ErrUnsupported where it cannot lock
// files, and ctx's error if ctx ends while another process holds the lock.
func OpenDir(ctx context.Context, dir string, signer note.Signer) (*Dir, error) {
	if signer == nil {
		return nil, fmt.Errorf("open witness %s: no signer (OpenDirReadOnly opens one to read)", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open witness %s: %w", dir, err)
	}
	return openDir(ctx, dir, signer, os.O_RDWR|os.O_CREATE)
}

// OpenDirReadOnly opens the witness in directory dir to read, as an
// auditor who has read access to the directory and not the witness's key
// does. The Dir's Add returns ErrReadOnly and its Checkpoint returns the
// last checkpoint the witness stored, which may cover fewer entries than
// the log holds (the auditor checks its signature with OpenCheckpoint or
// Audit); a torn last record is left for the writer to truncate.
//
// It returns the errors of OpenDir, and ErrCorrupt for a directory with no
// log.
func OpenDirReadOnly(ctx context.Context, dir string) (*Dir, error) {
	return openDir(ctx, dir, nil, os.O_RDONLY)
}

// openDir opens LogFile with flag and reads the log: to write when signer
// is not nil, to read otherwise.
func openDir(ctx context.Context, dir string, signer note.Signer, flag int) (*Dir, error) {
	f, err := os.OpenFile(filepath.Join(dir, LogFile), flag, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("open witness %s: %w: no %s", dir, ErrCorrupt, LogFile)
	}
	if err != nil {
		return nil, fmt.Errorf("open witness %s: %w", dir, err)
	}
	d := &Dir{dir: dir, f: f, signer: signer, tree: rangeFact.NewEmptyRange(0)}
	err = d.locked(ctx, signer != nil, func() error {
		if err := d.init(); err != nil {
			return err
		}
		if err := d.catchUp(signer != nil); err != nil {
			return err
		}
		_, _, err := d.stored()
		return err
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open witness %s: %w", dir, err)
	}
	return d, nil
}

// init writes the log's header to an empty log, or checks it.
func (d *Dir) init() error {
	fi, err := d.f.Stat()
	if err != nil {
		return err
	}
	head := make([]byte, len(logHeader))
	n, err := d.f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return err
	}
	if d.signer != nil && fi.Size() < int64(len(logHeader)) && string(head[:n]) == logHeader[:n] {
		// New, or a crash cut the header short: write it whole.
		if _, err := d.f.WriteAt([]byte(logHeader), 0); err != nil {
			return err
		}
		if err := d.f.Sync(); err != nil {
			return err
		}
		if err := syncDir(d.dir); err != nil {
			return err
		}
	}
	if _, err := d.f.ReadAt(head, 0); err != nil || string(head) != logHeader {
		return fmt.Errorf("%w: %s does not start with %q", ErrCorrupt, LogFile, strings.TrimSpace(logHeader))
	}
	d.end = int64(len(logHeader))
	return nil
}

// Close releases the Dir's files. Its methods then return ErrClosed.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	return d.f.Close()
}

// Add appends entry to the log and returns its index once the log file is
// synced to disk. The Dir does not read entries: whoever can call Add can
// log anything, and Heads refuses an entry no trusted key signed. On an
// I/O error the entry may or may not be in the log, as for any write.
//
// It returns ErrMalformed for an empty entry, ErrTooLarge for one over
// MaxEntrySize, and the errors of reading what other processes appended
// (ErrCorrupt, ErrRollback).
func (d *Dir) Add(ctx context.Context, entry []byte) (uint64, error) {
	switch {
	case len(entry) == 0:
		return 0, fmt.Errorf("add: %w: empty entry", ErrMalformed)
	case len(entry) > MaxEntrySize:
		return 0, fmt.Errorf("add: %w: %d bytes, at most %d", ErrTooLarge, len(entry), MaxEntrySize)
	}
	if d.signer == nil {
		return 0, fmt.Errorf("add: %w", ErrReadOnly)
	}
	var index uint64
	err := d.locked(ctx, true, func() error {
		rec := make([]byte, recordHeader+len(entry))
		binary.BigEndian.PutUint32(rec, uint32(len(entry)))
		binary.BigEndian.PutUint32(rec[4:], crc32.Checksum(entry, crcTable))
		copy(rec[recordHeader:], entry)
		_, err := d.f.WriteAt(rec, d.end)
		if err == nil {
			err = d.f.Sync()
		}
		if err != nil {
			// Best effort: a record left behind is read as any other
			// (or truncated if torn) by the next operation.
			d.f.Truncate(d.end)
			return err
		}
		index = d.size()
		return d.append(d.end, entry)
	})
	if err != nil {
		return 0, fmt.Errorf("add: %w", err)
	}
	return index, nil
}

// Checkpoint returns a checkpoint of the whole log signed by the Dir's
// signer, signing and storing a new one if the log grew since the last; a
// read-only Dir returns the last one stored, or ErrReadOnly if there is
// none. It returns the errors of reading what other processes appended
// (ErrCorrupt, ErrRollback) or of checking the stored checkpoint
// (ErrInconsistent).
func (d *Dir) Checkpoint(ctx context.Context) ([]byte, error) {
	var signed []byte
	err := d.locked(ctx, d.signer != nil, func() error {
		old, cp, err := d.stored()
		if err != nil {
			return err
		}
		if d.signer == nil {
			if old == nil {
				return fmt.Errorf("%w: no %s yet", ErrReadOnly, CheckpointFile)
			}
			signed = old
			return nil
		}
		if old != nil && cp.Size == d.size() {
			signed = old
			return nil
		}
		root, err := d.rootAt(d.size())
		if err != nil {
			return err
		}
		text := log.Checkpoint{Origin: d.signer.Name(), Size: d.size(), Hash: root}.Marshal()
		if signed, err = note.Sign(&note.Note{Text: string(text)}, d.signer); err != nil {
			return err
		}
		return writeFile(d.dir, CheckpointFile, signed)
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return signed, nil
}

// LastCheckpoint returns the last checkpoint the Dir stored, with the
// cosignatures AddCosignatures added to it, without signing a new one: it
// may cover fewer entries than the log holds. It returns ErrNoCheckpoint
// when none was signed yet, and the errors of reading what other
// processes appended (ErrCorrupt, ErrRollback) or of checking the stored
// checkpoint (ErrInconsistent).
func (d *Dir) LastCheckpoint(ctx context.Context) ([]byte, error) {
	var signed []byte
	err := d.locked(ctx, false, func() error {
		old, _, err := d.stored()
		if err != nil {
			return err
		}
		if old == nil {
			return ErrNoCheckpoint
		}
		signed = old
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("last checkpoint: %w", err)
	}
	return signed, nil
}

// AddCosignatures adds the signature lines of cosigned, the Dir's last
// checkpoint as a cosigner returned it with its cosignature (or the lines
// of several), to the stored checkpoint, which Checkpoint and
// LastCheckpoint then return. Lines already there are not repeated; the
// Dir does not verify them (VerifyCosignatures does, for its reader).
//
// It returns ErrStale when cosigned's text is not the stored checkpoint's
// (a newer checkpoint was signed meanwhile), ErrNoCheckpoint when there
// is none, ErrMalformed for a note that does not parse, and ErrReadOnly
// for a Dir opened by OpenDirReadOnly.
func (d *Dir) AddCosignatures(ctx context.Context, cosigned []byte) error {
	if d.signer == nil {
		return fmt.Errorf("add cosignatures: %w", ErrReadOnly)
	}
	text, sigs, err := splitNote(cosigned)
	if err != nil {
		return fmt.Errorf("add cosignatures: %w", err)
	}
	err = d.locked(ctx, true, func() error {
		old, _, err := d.stored()
		if err != nil {
			return err
		}
		if old == nil {
			return ErrNoCheckpoint
		}
		oldText, oldSigs, err := splitNote(old)
		if err != nil {
			return err
		}
		if oldText != text {
			return ErrStale
		}
		merged := []byte(old)
		have := map[string]bool{}
		for _, l := range oldSigs {
			have[l] = true
		}
		for _, l := range sigs {
			if !have[l] {
				have[l] = true
				merged = append(merged, l+"\n"...)
			}
		}
		if len(merged) == len(old) {
			return nil
		}
		return writeFile(d.dir, CheckpointFile, merged)
	})
	if err != nil {
		return fmt.Errorf("add cosignatures: %w", err)
	}
	return nil
}

// splitNote returns a signed note's text (ending in a newline) and its
// signature lines (without their newlines). It returns ErrMalformed for
// text that is not a note: no blank line, a signature line not starting
// with "— ", or no final newline.
func splitNote(signed []byte) (text string, sigs []string, err error) {
	i := bytes.LastIndex(signed, []byte("\n\n"))
	if i < 0 || !bytes.HasSuffix(signed, []byte("\n")) || len(signed) == i+2 {
		return "", nil, fmt.Errorf("%w: not a signed note", ErrMalformed)
	}
	for _, l := range strings.Split(string(signed[i+2:len(signed)-1]), "\n") {
		if !strings.HasPrefix(l, "— ") {
			return "", nil, fmt.Errorf("%w: signature line %q", ErrMalformed, clip(l))
		}
		sigs = append(sigs, l)
	}
	return string(signed[:i+1]), sigs, nil
}

// Entry returns the entry at index. It returns ErrOutOfRange for an index
// past the log's end, and ErrCorrupt when the entry's bytes changed since
// they were read.
func (d *Dir) Entry(ctx context.Context, index uint64) ([]byte, error) {
	var entry []byte
	err := d.locked(ctx, false, func() error {
		if index >= d.size() {
			return fmt.Errorf("%w: index %d, log size %d", ErrOutOfRange, index, d.size())
		}
		var err error
		entry, err = d.read(index)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("entry %d: %w", index, err)
	}
	return entry, nil
}

// InclusionProof returns the proof that the entry at index is in the tree
// of the first size entries (merkle/proof.VerifyInclusion, or
// VerifyInclusion, checks it). It returns ErrOutOfRange unless
// index < size <= the log's size.
func (d *Dir) InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error) {
	var p [][]byte
	err := d.locked(ctx, false, func() error {
		if index >= size || size > d.size() {
			return fmt.Errorf("%w: index %d, size %d, log size %d", ErrOutOfRange, index, size, d.size())
		}
		nodes, err := proof.Inclusion(index, size)
		if err != nil {
			return err
		}
		p, err = d.rehash(nodes)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("inclusion proof %d in %d: %w", index, size, err)
	}
	return p, nil
}

// ConsistencyProof returns the proof that the tree of the first to entries
// extends the tree of the first from entries (VerifyConsistency checks
// it). It returns ErrOutOfRange unless from <= to <= the log's size.
func (d *Dir) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	var p [][]byte
	err := d.locked(ctx, false, func() error {
		if from > to || to > d.size() {
			return fmt.Errorf("%w: from %d, to %d, log size %d", ErrOutOfRange, from, to, d.size())
		}
		nodes, err := proof.Consistency(from, to)
		if err != nil {
			return err
		}
		p, err = d.rehash(nodes)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("consistency proof %d to %d: %w", from, to, err)
	}
	return p, nil
}

// locked runs fn holding d.mu and the log file's lock (exclusive or
// shared), after reading what other processes appended.
func (d *Dir) locked(ctx context.Context, exclusive bool, fn func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if err := lockFile(ctx, d.f, exclusive); err != nil {
		return err
	}
	defer unlockFile(d.f)
	if d.end > 0 { // OpenDir runs init first
		if err := d.catchUp(exclusive); err != nil {
			return err
		}
	}
	return fn()
}

// catchUp reads the records past d.end. A torn last record (see
// readRecord) past the last checkpoint is truncated when exclusive, and
// left alone otherwise (its writer crashed; the next writer truncates it);
// a damaged record under the last checkpoint, or with more data after it,
// is ErrCorrupt.
func (d *Dir) catchUp(exclusive bool) error {
	fi, err := d.f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size < d.end {
		return fmt.Errorf("%w: %s shrank from %d to %d bytes", ErrRollback, LogFile, d.end, size)
	}
	r := bufio.NewReader(io.NewSectionReader(d.f, d.end, size-d.end))
	for d.end < size {
		entry, err := readRecord(r, size-d.end)
		if err == nil {
			if err := d.append(d.end, entry); err != nil {
				return err
			}
			continue
		}
		if errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("record %d at byte %d: %w", d.size(), d.end, err)
		}
		if !errors.Is(err, errTorn) {
			return err
		}
		// The record at d.end is damaged: torn if it is the last thing in
		// the file and no checkpoint covers it.
		_, cp, cerr := d.readStored()
		if cerr != nil {
			return cerr
		}
		if cp.Size > d.size() {
			return fmt.Errorf("%w: record %d at byte %d, under checkpoint of size %d: %w", ErrCorrupt, d.size(), d.end, cp.Size, err)
		}
		if size-d.end > recordHeader+MaxEntrySize {
			return fmt.Errorf("%w: record %d at byte %d, with %d bytes after it: %w", ErrCorrupt, d.size(), d.end, size-d.end, err)
		}
		if !exclusive {
			return nil
		}
		if err := d.f.Truncate(d.end); err != nil {
			return err
		}
		return d.f.Sync()
	}
	return nil
}

// errTorn marks a record that is cut short or fails its CRC.
var errTorn = errors.New("torn record")

// readRecord reads one record from r, which has left bytes left. A
// record that could be the last write cut short (its header or bytes run
// past the end, or its CRC fails and nothing follows it) is errTorn; one
// that fails its CRC with more records after it is ErrCorrupt.
func readRecord(r *bufio.Reader, left int64) ([]byte, error) {
	var h [recordHeader]byte
	if left < recordHeader {
		return nil, fmt.Errorf("%w: %d bytes left, a record header is %d", errTorn, left, recordHeader)
	}
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(h[:]))
	if n == 0 || n > MaxEntrySize || recordHeader+n > left {
		return nil, fmt.Errorf("%w: length %d with %d bytes left", errTorn, n, left-recordHeader)
	}
	entry := make([]byte, n)
	if _, err := io.ReadFull(r, entry); err != nil {
		return nil, err
	}
	if crc32.Checksum(entry, crcTable) != binary.BigEndian.Uint32(h[4:]) {
		if recordHeader+n < left {
			return nil, fmt.Errorf("%w: CRC mismatch with %d bytes after it", ErrCorrupt, left-recordHeader-n)
		}
		return nil, fmt.Errorf("%w: CRC mismatch", errTorn)
	}
	return entry, nil
}

// append adds entry, whose record starts at off, to the tree.
func (d *Dir) append(off int64, entry []byte) error {
	err := d.tree.Append(hasher.HashLeaf(entry), func(id compact.NodeID, h []byte) {
		for uint(len(d.levels)) <= id.Level {
			d.levels = append(d.levels, nil)
		}
		d.levels[id.Level] = append(d.levels[id.Level], h)
	})
	if err != nil {
		return err
	}
	d.offsets = append(d.offsets, off)
	d.end = off + recordHeader + int64(len(entry))
	return nil
}

// size returns the number of entries read.
func (d *Dir) size() uint64 { return uint64(len(d.offsets)) }

// read returns entry i, checked against its leaf hash.
func (d *Dir) read(i uint64) ([]byte, error) {
	var h [recordHeader]byte
	if _, err := d.f.ReadAt(h[:], d.offsets[i]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > MaxEntrySize {
		return nil, fmt.Errorf("%w: record %d changed", ErrCorrupt, i)
	}
	entry := make([]byte, n)
	if _, err := d.f.ReadAt(entry, d.offsets[i]+recordHeader); err != nil {
		return nil, err
	}
	if !bytes.Equal(hasher.HashLeaf(entry), d.levels[0][i]) {
		return nil, fmt.Errorf("%w: record %d changed", ErrCorrupt, i)
	}
	return entry, nil
}

// rootAt returns the root hash of the tree of the first size entries.
func (d *Dir) rootAt(size uint64) ([]byte, error) {
	if size == 0 {
		return hasher.EmptyRoot(), nil
	}
	ids := compact.RangeNodes(0, size, nil)
	hashes := make([][]byte, len(ids))
	for i, id := range ids {
		hashes[i] = d.levels[id.Level][id.Index]
	}
	r, err := rangeFact.NewRange(0, size, hashes)
	if err != nil {
		return nil, err
	}
	return r.GetRootHash(nil)
}

// rehash returns the proof nodes names, as copies.
func (d *Dir) rehash(nodes proof.Nodes) ([][]byte, error) {
	hashes := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		hashes[i] = bytes.Clone(d.levels[id.Level][id.Index])
	}
	return nodes.Rehash(hashes, hasher.HashChildren)
}

// stored reads CheckpointFile (nil if there is none) and checks that the
// log extends it: ErrRollback if the log is smaller, ErrInconsistent if
// its tree at that size differs, ErrUnknownKey if another key signed it.
func (d *Dir) stored() ([]byte, log.Checkpoint, error) {
	signed, cp, err := d.readStored()
	if signed == nil || err != nil {
		return nil, cp, err
	}
	if cp.Size > d.size() {
		return nil, cp, fmt.Errorf("%w: %s has %d entries, its checkpoint %d", ErrRollback, LogFile, d.size(), cp.Size)
	}
	root, err := d.rootAt(cp.Size)
	if err != nil {
		return nil, cp, err
	}
	if !bytes.Equal(root, cp.Hash) {
		return nil, cp, fmt.Errorf("%w: %s differs from its checkpoint at size %d", ErrInconsistent, LogFile, cp.Size)
	}
	return signed, cp, nil
}

// readStored reads and parses CheckpointFile (nil if there is none).
func (d *Dir) readStored() ([]byte, log.Checkpoint, error) {
	signed, err := os.ReadFile(filepath.Join(d.dir, CheckpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, log.Checkpoint{}, nil
	}
	if err != nil {
		return nil, log.Checkpoint{}, err
	}
	cp, err := parseOwnCheckpoint(signed, d.signer)
	if err != nil {
		return nil, log.Checkpoint{}, fmt.Errorf("%s: %w", CheckpointFile, err)
	}
	return signed, cp, nil
}

// parseOwnCheckpoint parses a checkpoint that signer signed. It checks the
// signature's key name and hash (none when signer is nil: a read-only Dir
// leaves that to OpenCheckpoint), not the signature: the Dir compares the
// checkpoint with the log it holds.
func parseOwnCheckpoint(signed []byte, signer note.Signer) (log.Checkpoint, error) {
	i := bytes.LastIndex(signed, []byte("\n\n"))
	if i < 0 {
		return log.Checkpoint{}, fmt.Errorf("%w: not a note", ErrMalformed)
	}
	text, sigs := signed[:i+1], string(signed[i+2:])
	var cp log.Checkpoint
	if _, err := cp.Unmarshal(text); err != nil {
		return log.Checkpoint{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if signer == nil {
		return cp, nil
	}
	if cp.Origin != signer.Name() {
		return log.Checkpoint{}, fmt.Errorf("%w: origin %q, want %q", ErrUnknownKey, clip(cp.Origin), signer.Name())
	}
	for _, line := range strings.Split(strings.TrimSuffix(sigs, "\n"), "\n") {
		b64, ok := strings.CutPrefix(line, "— "+signer.Name()+" ")
		if !ok {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && len(sig) >= 4 && binary.BigEndian.Uint32(sig) == signer.KeyHash() {
			return cp, nil
		}
	}
	return log.Checkpoint{}, fmt.Errorf("%w: no signature by %s+%08x", ErrUnknownKey, signer.Name(), signer.KeyHash())
}

// writeFile replaces dir/name with data: a temporary file synced, renamed
// over it, and the directory synced.
func writeFile(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir syncs directory dir, so that a file created or renamed in it
// stays after a crash.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
