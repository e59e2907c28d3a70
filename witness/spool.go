package witness

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Files of a Spool's directory.
const (
	// SpoolFile holds the entries added, after a header line, in the
	// records of LogFile; it is emptied each time all were forwarded.
	SpoolFile = "spool.log"
	// SpoolSentFile holds the byte offset in SpoolFile of the first entry
	// not yet forwarded, as 8 bytes big-endian.
	SpoolSentFile = "spool.sent"
	// SpoolRefusedFile keeps, in the records of LogFile, the entries the
	// witness refused (an unknown or retired key, a bad signature, a
	// malformed statement), for the operator to look at: they are in no
	// witness's log.
	SpoolRefusedFile = "spool.refused"
)

const spoolHeader = "trails witness spool v1\n"

// ErrLocked: a Spool directory another open Spool holds, in this process
// or another.
var ErrLocked = errors.New("witness: spool in use")

// An Appender is what a Spool forwards to: a witness's Add (a Client, a
// Dir, any Witness).
type Appender interface {
	Add(ctx context.Context, entry []byte) (index uint64, err error)
}

// Spool is a writer's outbox in front of a witness that is a process of
// its own: Add writes the entry to a file of the writer's and syncs it to
// disk, then returns, and a goroutine forwards the entries to the witness
// in the order they were added, retrying while the witness cannot be
// reached. A signing Store (session.WithSigning) given a Spool waits for
// its local fsync, not for a round trip to the witness: the witness's
// round trip, its signature check and its fsync leave the write's
// latency.
//
// What changes for an auditor: an acknowledged write's statement is on
// the writer's disk when the write returns, and in the witness's log a
// round trip later (longer while the witness is down: Stats says how many
// wait). Until then the store is ahead of its witness, as it is anyway
// until the witness's next checkpoint covers the entry. Whoever holds only
// the store's credentials cannot reach the spool; whoever controls the
// writer's host can drop entries from it, and holds the writer's key
// anyway. A statement the witness refuses for good (ErrUnknownKey,
// ErrBadSignature, ErrOutsideWindow, ErrMalformed, ErrUnknownKind,
// ErrTooLarge) is logged, counted and kept in SpoolRefusedFile; the
// entries after it are forwarded.
//
// Entries left when the process stops (Close, or a crash) are forwarded by
// the next Spool opened on the directory; one forwarded just before a
// crash may be forwarded twice, and a witness log holding a statement
// twice verifies as holding it once. A Spool is safe for concurrent use;
// one process at a time opens a directory.
type Spool struct {
	dir  string
	to   Appender
	log  *slog.Logger
	f    *os.File // SpoolFile, flock'd for the Spool's life
	sf   *os.File // SpoolSentFile
	stop context.CancelFunc
	done chan struct{}
	wake chan struct{}

	mu       sync.Mutex
	end      int64 // bytes of f
	sent     int64 // offset in f of the first entry not forwarded
	added    uint64
	handled  uint64        // entries forwarded or refused, of added
	progress chan struct{} // closed and replaced when handled grows
	stats    SpoolStats
	closed   bool
	failed   error // why forwarding stopped before Close
}

// SpoolStats is what a Spool has done since it was opened.
type SpoolStats struct {
	Pending   int    // entries added (or found at open) and not yet forwarded
	Forwarded uint64 // entries the witness took
	Refused   uint64 // entries the witness refused for good (see SpoolRefusedFile)
	// LastError is the witness's last error (nil once an entry went
	// through after it): why entries are pending.
	LastError error
}

// OpenSpool opens the spool in directory dir, creating it if needed, and
// starts forwarding its entries, those a former Spool left first, to to.
// logger logs the witness's refusals and outages (slog.Default() when
// nil). It truncates a torn last record (a crash during an Add, which
// returned no success).
//
// It returns ErrLocked when another Spool holds dir, ErrCorrupt for a
// damaged spool file, and errors.ErrUnsupported where it cannot lock
// files.
func OpenSpool(dir string, to Appender, logger *slog.Logger) (*Spool, error) {
	if to == nil {
		return nil, fmt.Errorf("open spool %s: %w: no witness to forward to", dir, ErrMalformed)
	}
	if logger == nil {
		logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open spool %s: %w", dir, err)
	}
	s := &Spool{dir: dir, to: to, log: logger, done: make(chan struct{}), wake: make(chan struct{}, 1), progress: make(chan struct{})}
	if err := s.open(); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("open spool %s: %w", dir, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go s.forward(ctx)
	return s, nil
}

// open opens and locks the files and reads where forwarding resumes.
func (s *Spool) open() error {
	var err error
	if s.f, err = os.OpenFile(filepath.Join(s.dir, SpoolFile), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return err
	}
	now, cancel := context.WithCancel(context.Background())
	cancel() // try once: a held spool is an error, not a wait
	if err := lockFile(now, s.f, true); err != nil {
		if errors.Is(err, context.Canceled) {
			return ErrLocked
		}
		return err
	}
	if s.sf, err = os.OpenFile(filepath.Join(s.dir, SpoolSentFile), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return err
	}
	fi, err := s.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < int64(len(spoolHeader)) {
		if err := s.f.Truncate(0); err != nil {
			return err
		}
		if _, err := s.f.WriteAt([]byte(spoolHeader), 0); err != nil {
			return err
		}
		if err := s.f.Sync(); err != nil {
			return err
		}
		if err := syncDir(s.dir); err != nil {
			return err
		}
		fi, err = s.f.Stat()
		if err != nil {
			return err
		}
	}
	head := make([]byte, len(spoolHeader))
	if _, err := s.f.ReadAt(head, 0); err != nil || string(head) != spoolHeader {
		return fmt.Errorf("%w: %s does not start with %q", ErrCorrupt, SpoolFile, spoolHeader[:len(spoolHeader)-1])
	}
	var off [8]byte
	s.sent = int64(len(spoolHeader))
	if n, _ := s.sf.ReadAt(off[:], 0); n == len(off) {
		s.sent = max(s.sent, int64(binary.BigEndian.Uint64(off[:])))
	}
	// Read every record to find the end, and count those not forwarded.
	size := fi.Size()
	s.end = int64(len(spoolHeader))
	r := bufio.NewReader(io.NewSectionReader(s.f, s.end, size-s.end))
	for s.end < size {
		entry, err := readRecord(r, size-s.end)
		if errors.Is(err, errTorn) {
			if err := s.f.Truncate(s.end); err != nil {
				return err
			}
			break
		}
		if err != nil {
			return fmt.Errorf("%s: record at byte %d: %w", SpoolFile, s.end, err)
		}
		if s.end >= s.sent {
			s.added++
		}
		s.end += recordHeader + int64(len(entry))
	}
	// A sent offset past the end: the file was emptied after every entry
	// was forwarded, and the offset not yet reset.
	s.sent = min(s.sent, s.end)
	s.stats.Pending = int(s.added)
	return nil
}

// Add writes entry to the spool and returns once it is on disk; it
// reaches the witness in the background. The index it returns is the
// entry's number in this Spool (from 0, after the entries it found
// pending when it was opened), not its index in the witness's log.
//
// It returns ErrMalformed for an empty entry, ErrTooLarge for one over
// MaxEntrySize, ErrClosed after Close, and the error of writing or
// syncing the file (the entry may then be in the spool or not).
func (s *Spool) Add(ctx context.Context, entry []byte) (uint64, error) {
	switch {
	case len(entry) == 0:
		return 0, fmt.Errorf("spool add: %w: empty entry", ErrMalformed)
	case len(entry) > MaxEntrySize:
		return 0, fmt.Errorf("spool add: %w: %d bytes, at most %d", ErrTooLarge, len(entry), MaxEntrySize)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("spool add: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("spool add: %w", ErrClosed)
	}
	if err := appendRecord(s.f, s.end, entry); err != nil {
		return 0, fmt.Errorf("spool add: %w", err)
	}
	s.end += recordHeader + int64(len(entry))
	i := s.added
	s.added++
	s.stats.Pending++
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return i, nil
}

// appendRecord writes entry's record at off in f and syncs f; on an error
// it truncates f back to off (best effort).
func appendRecord(f *os.File, off int64, entry []byte) error {
	rec := make([]byte, recordHeader+len(entry))
	binary.BigEndian.PutUint32(rec, uint32(len(entry)))
	binary.BigEndian.PutUint32(rec[4:], crc32.Checksum(entry, crcTable))
	copy(rec[recordHeader:], entry)
	_, err := f.WriteAt(rec, off)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Truncate(off)
	}
	return err
}

// Flush waits until the witness has taken (or refused) every entry added
// before the call. It returns ctx's error if ctx ends first (the entries
// stay pending; Stats' LastError says why), and ErrClosed if the Spool is
// closed meanwhile.
func (s *Spool) Flush(ctx context.Context) error {
	s.mu.Lock()
	want := s.added
	s.mu.Unlock()
	for {
		s.mu.Lock()
		handled, closed, failed, p := s.handled, s.closed, s.failed, s.progress
		s.mu.Unlock()
		switch {
		case handled >= want:
			return nil
		case closed:
			return fmt.Errorf("spool flush: %w", ErrClosed)
		case failed != nil:
			return fmt.Errorf("spool flush: forwarding stopped: %w", failed)
		}
		select {
		case <-p:
		case <-s.done: // closed or failed: the next round says which
		case <-ctx.Done():
			return fmt.Errorf("spool flush: %d entries not forwarded: %w", s.Stats().Pending, ctx.Err())
		}
	}
}

// Stats returns what the Spool has done since it was opened.
func (s *Spool) Stats() SpoolStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close stops forwarding and releases the files; entries not forwarded
// stay for the next Spool opened on the directory. Call Flush first to
// wait for them. Add then returns ErrClosed.
func (s *Spool) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stop()
	<-s.done
	return s.closeFiles()
}

// closeFiles closes the files open.
func (s *Spool) closeFiles() error {
	var errs []error
	if s.sf != nil {
		errs = append(errs, s.sf.Close())
	}
	if s.f != nil {
		unlockFile(s.f)
		errs = append(errs, s.f.Close())
	}
	return errors.Join(errs...)
}

// forward sends the entries past s.sent to the witness, in order, until
// ctx ends.
func (s *Spool) forward(ctx context.Context) {
	defer close(s.done)
	for {
		s.mu.Lock()
		from, to := s.sent, s.end
		s.mu.Unlock()
		if from == to {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
				continue
			}
		}
		r := bufio.NewReader(io.NewSectionReader(s.f, from, to-from))
		for off := from; off < to; {
			entry, err := readRecord(r, to-off)
			if err != nil { // the file changed under us: nothing else writes it
				s.fail(fmt.Errorf("reading the entry at byte %d of %s: %w", off, SpoolFile, err))
				return
			}
			refused, ok := s.send(ctx, entry)
			if !ok {
				return
			}
			if refused != nil {
				s.keepRefused(entry, refused)
			}
			off += recordHeader + int64(len(entry))
			if err := s.advance(off, refused != nil); err != nil {
				s.fail(fmt.Errorf("recording what was forwarded: %w", err))
				return
			}
		}
	}
}

// fail stops forwarding for err, which Flush then returns: a spool whose
// files fail is for its operator to look at (the entries stay in it).
func (s *Spool) fail(err error) {
	s.log.Error("witness spool: forwarding stopped", "dir", s.dir, "err", err)
	s.mu.Lock()
	s.failed, s.stats.LastError = err, err
	s.mu.Unlock()
}

// send adds entry to the witness, retrying while it fails for a reason
// that may pass. It returns the witness's refusal when it refused the
// entry for good, and false when ctx ended first.
func (s *Spool) send(ctx context.Context, entry []byte) (refused error, ok bool) {
	wait := 50 * time.Millisecond
	for {
		_, err := s.to.Add(ctx, entry)
		if err == nil {
			return nil, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		if permanent(err) {
			return err, true
		}
		s.mu.Lock()
		first := s.stats.LastError == nil
		s.stats.LastError = err
		s.mu.Unlock()
		if first {
			s.log.Warn("witness spool: the witness cannot take entries; retrying", "dir", s.dir, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// permanent reports whether err is a witness's refusal that retrying
// cannot change.
func permanent(err error) bool {
	for _, e := range []error{ErrUnknownKey, ErrBadSignature, ErrOutsideWindow, ErrMalformed, ErrUnknownKind, ErrTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// keepRefused logs a refused entry and appends it to SpoolRefusedFile.
func (s *Spool) keepRefused(entry []byte, why error) {
	s.log.Error("witness spool: the witness refused an entry; kept in "+SpoolRefusedFile, "dir", s.dir, "err", why)
	f, err := os.OpenFile(filepath.Join(s.dir, SpoolRefusedFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			err = appendRecord(f, fi.Size(), entry)
		}
		f.Close()
	}
	if err != nil {
		s.log.Error("witness spool: keeping a refused entry", "dir", s.dir, "err", err)
	}
}

// advance records that the entries before off were forwarded (or
// refused), emptying the spool file when it holds no other.
func (s *Spool) advance(off int64, refused bool) error {
	s.mu.Lock()
	locked := true
	defer func() {
		if locked {
			s.mu.Unlock()
		}
	}()
	s.sent = off
	s.handled++
	s.stats.Pending--
	if refused {
		s.stats.Refused++
	} else {
		s.stats.Forwarded++
		s.stats.LastError = nil
	}
	close(s.progress)
	s.progress = make(chan struct{})
	if s.sent == s.end {
		// Empty the file first: a crash before the offset's reset leaves an
		// offset past the end, which open reads as all forwarded. Add waits
		// (s.mu) until the reset is on disk, so that no entry lands below a
		// stale offset.
		if err := s.f.Truncate(int64(len(spoolHeader))); err != nil {
			return err
		}
		s.sent, s.end = int64(len(spoolHeader)), int64(len(spoolHeader))
		off = s.sent
	} else {
		// Only this goroutine writes the offset: Add need not wait for it.
		s.mu.Unlock()
		locked = false
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(off))
	if _, err := s.sf.WriteAt(b[:], 0); err != nil {
		return err
	}
	return s.sf.Sync()
}
