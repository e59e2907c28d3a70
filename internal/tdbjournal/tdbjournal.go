// Package tdbjournal reads, and mends, the transaction journal of an
// Apache Jena TDB2 database: the file journal.jrnl in each storage
// directory (Data-0001, ...) of a TDB2 location.
//
// A TDB2 writer commits by appending its changes to the journal (REDO
// entries, then a COMMIT entry) and syncing it; only then does it write
// the database's files, answer its client and empty the journal. Killed
// while it appends (kill -9, a crash), it leaves a torn last entry: a
// header without all of its data, part of a header, or (the disk not
// synced) an entry whose checksum fails. When the database opens again,
// Jena's recovery reads the whole journal and stops at the torn entry
// with an error ("Failed to read the journal entry data: wanted 16 bytes,
// got -1" from Jena 5.6), and Fuseki does not start at all.
//
// The torn entry belongs to a transaction whose COMMIT was not written
// and synced, so which no client was told had committed, and Jena's
// recovery drops the entries after the last COMMIT anyway: cutting the
// torn entry off (Mend) loses nothing committed, and the database opens.
// A bad entry that is not the last is corruption, not a torn append:
// Mend leaves it alone and says so (ErrCorrupt).
package tdbjournal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// The journal's layout (Jena's org.apache.jena.dboe.transaction.txn
// .journal.Journal, Jena 5.6): each entry is a header of headerLen bytes,
// its data length (-1 or 0: none), its checksum, its type and the
// component's id of 4 bytes (ComponentId.SIZE), all big-endian, then its
// data. The checksum is Adler-32 of the header, checksum zeroed, and the
// data. testdata/jena-5.6.jrnl was written by Jena's own Journal.
const (
	headerLen = 4 + 4 + 4 + 4
	redo      = 1
	undo      = 2
	commit    = 3
	abort     = 4
)

// FileName is the journal's name in a TDB2 storage directory.
const FileName = "journal.jrnl"

var (
	// ErrCorrupt: an entry that is not the journal's last is unreadable;
	// that is not what an interrupted append leaves, and the journal is
	// not changed.
	ErrCorrupt = errors.New("tdbjournal: journal corrupt before its last entry")
	// ErrInUse: the database's lock file names a process that is running;
	// its journal is not the tool's to change.
	ErrInUse = errors.New("tdbjournal: database in use")
)

// Report is what Check or Mend found in one journal.
type Report struct {
	Path    string
	Size    int64 // bytes, before any change
	Entries int   // whole entries with a good checksum
	Commits int   // of them, COMMIT entries
	// Pending counts the whole entries after the last COMMIT or ABORT: a
	// transaction that did not commit, which recovery drops.
	Pending int
	// Torn is the size in bytes of a torn last entry (0: none), from
	// offset Size-Torn; Why says what is wrong with it.
	Torn int64
	Why  string
	// Mended reports that Mend cut the torn entry off.
	Mended bool
}

// Clean reports whether Jena's recovery can read the whole journal.
func (r Report) Clean() bool { return r.Torn == 0 }

// String describes r in one line.
func (r Report) String() string {
	s := fmt.Sprintf("%s: %d bytes, %d entries (%d commits, %d not committed)", r.Path, r.Size, r.Entries, r.Commits, r.Pending)
	switch {
	case r.Mended:
		s += fmt.Sprintf("; torn last entry of %d bytes at %d (%s) cut off", r.Torn, r.Size-r.Torn, r.Why)
	case r.Torn > 0:
		s += fmt.Sprintf("; torn last entry of %d bytes at %d (%s)", r.Torn, r.Size-r.Torn, r.Why)
	}
	return s
}

// Check reads the journal at path and reports what it holds, changing
// nothing. It returns ErrCorrupt (with the report so far) when an entry
// before the last is unreadable.
func Check(path string) (Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Report{Path: path}, err
	}
	return scan(path, data)
}

// scan reads the entries of data, the journal at path.
func scan(path string, data []byte) (Report, error) {
	r := Report{Path: path, Size: int64(len(data))}
	for at := 0; at < len(data); {
		if len(data)-at < headerLen {
			r.Torn, r.Why = int64(len(data)-at), fmt.Sprintf("%d bytes of a %d-byte header", len(data)-at, headerLen)
			return r, nil
		}
		h := data[at : at+headerLen]
		n := int32(binary.BigEndian.Uint32(h[0:4]))
		sum := binary.BigEndian.Uint32(h[4:8])
		kind := int32(binary.BigEndian.Uint32(h[8:12]))
		size := 0
		if n > 0 {
			size = int(n)
		}
		last := int64(at)+headerLen+int64(size) >= int64(len(data))
		bad := ""
		switch {
		case n < -1:
			bad = fmt.Sprintf("data length %d", n)
		case int64(at)+headerLen+int64(size) > int64(len(data)):
			bad = fmt.Sprintf("%d of its %d data bytes", len(data)-at-headerLen, size)
		case kind < redo || kind > abort:
			bad = fmt.Sprintf("entry type %d", kind)
		default:
			zeroed := make([]byte, headerLen)
			copy(zeroed, h)
			clear(zeroed[4:8])
			a := adler32.New()
			a.Write(zeroed)
			a.Write(data[at+headerLen : at+headerLen+size])
			if a.Sum32() != sum {
				bad = fmt.Sprintf("checksum %08x, want %08x", sum, a.Sum32())
			}
		}
		if bad != "" {
			if !last {
				return r, fmt.Errorf("%w: %s: the entry at byte %d has %s", ErrCorrupt, path, at, bad)
			}
			r.Torn, r.Why = int64(len(data)-at), bad
			return r, nil
		}
		r.Entries++
		switch kind {
		case commit:
			r.Commits++
			r.Pending = 0
		case abort:
			r.Pending = 0
		default:
			r.Pending++
		}
		at += headerLen + size
	}
	return r, nil
}

// Entry returns a journal entry of type kind (1 REDO, 2 UNDO, 3 COMMIT,
// 4 ABORT) holding data, as Jena writes it, with a component id of zeros:
// for tests that build a journal.
func Entry(kind int32, data []byte) []byte {
	e := make([]byte, headerLen, headerLen+len(data))
	n := int32(len(data))
	if data == nil {
		n = -1
	}
	binary.BigEndian.PutUint32(e[0:4], uint32(n))
	binary.BigEndian.PutUint32(e[8:12], uint32(kind))
	e = append(e, data...)
	binary.BigEndian.PutUint32(e[4:8], adler32.Checksum(e))
	return e
}

// Mend checks the journal at path and, when its last entry is torn,
// truncates the file before it and syncs it. It changes nothing else:
// not a journal with ErrCorrupt, not a clean one.
func Mend(path string) (Report, error) {
	r, err := Check(path)
	if err != nil || r.Clean() {
		return r, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return r, err
	}
	if err := f.Truncate(r.Size - r.Torn); err != nil {
		f.Close()
		return r, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return r, err
	}
	if err := f.Close(); err != nil {
		return r, err
	}
	r.Mended = true
	return r, nil
}

// Journals returns the journals of the TDB2 database at location: the
// journal of each storage directory (location/Data-NNNN/journal.jrnl),
// or location's own when location is a storage directory. It returns
// ErrInUse when a lock file there (tdb.lock) names a running process,
// and an error when location holds no journal.
func Journals(location string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(location, "Data-*", FileName))
	if err != nil {
		return nil, err
	}
	if own := filepath.Join(location, FileName); exists(own) {
		paths = append(paths, own)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("tdbjournal: %s holds no TDB2 journal (neither Data-NNNN/%s nor %s)", location, FileName, FileName)
	}
	sort.Strings(paths)
	dirs := []string{location}
	for _, p := range paths {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if pid, ok := locker(filepath.Join(d, "tdb.lock")); ok {
			return nil, fmt.Errorf("%w: %s is locked by process %d, which is running: stop it first", ErrInUse, d, pid)
		}
	}
	return paths, nil
}

// Find returns every journal under dir, at any depth (the TDB2
// databases of a Fuseki's scratch directory), checking locks as Journals
// does.
func Find(dir string) ([]string, error) {
	var locations []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == FileName {
			locations = append(locations, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, l := range locations {
		ps, err := Journals(l)
		if err != nil {
			return nil, err
		}
		paths = append(paths, ps...)
	}
	return paths, nil
}

// locker returns the process id in the lock file at path and whether that
// process is running (signal 0 reaches it, or it exists and is not ours).
func locker(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	err = syscall.Kill(pid, 0)
	return pid, err == nil || errors.Is(err, syscall.EPERM)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
