package admin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/session"
)

// CompactStats is what Compact did, and what the database measured on
// disk before and after when its directory was given.
type CompactStats struct {
	Task Task
	// Dir is the database directory measured, "" when none was given.
	Dir string
	// Before and After are the bytes the files of Dir take on disk (their
	// allocated blocks, as du counts them, not their lengths: TDB2's files
	// are sparse, grown 8 MiB at a time), -1 when not measured.
	Before, After int64
	// From and To are the generations of the database in Dir before and
	// after (Data-0001, Data-0002): a compaction writes a new one. The
	// same name twice means Dir is not the compacted dataset's.
	From, To string
}

// Compact compacts the dataset's TDB2 database: Fuseki's POST
// /$/compact/NAME?deleteOld=true, which copies the live data into a new
// generation of the database (Data-NNNN) and deletes the old one, freeing
// what deleted and replaced data took. Readers go on while it runs;
// writers wait until it ends (TDB2 holds its one writer's lock), for a time
// that grows with the live data (docs/operations.md has figures). It waits
// for the task to end.
//
// dir, when not "", is the database's directory on this machine (the one
// holding Data-NNNN and tdb.lock: DATA/databases/trails under
// scripts/fuseki start --data DATA), measured before and after; Fuseki's
// API does not say how big a dataset is.
//
// It returns an error wrapping session.ErrInvalid for a dir that is not a
// TDB2 database; ErrUnsupported for a server without the admin API;
// ErrTaskFailed when the compaction failed (an in-memory dataset cannot be
// compacted); a *kg.Error matching kg.ErrNotFound for a dataset the server
// does not have, or another kg sentinel; or the error of ctx, after which
// the compaction may go on in the server.
func (s *Server) Compact(ctx context.Context, dir string) (_ CompactStats, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Compact", "")
	defer func() { call.End(err) }()
	st := CompactStats{Dir: dir, Before: -1, After: -1}
	if dir != "" {
		if st.From, st.Before, err = measure(dir); err != nil {
			return st, fmt.Errorf("compact: %w", err)
		}
	}
	id, err := s.start(ctx, "compact", "deleteOld=true")
	if err != nil {
		return st, fmt.Errorf("compact: %w", err)
	}
	st.Task, err = s.wait(ctx, "compact", id)
	if errors.Is(err, ErrTaskFailed) {
		return st, fmt.Errorf("compact: %w (Fuseki compacts TDB2 databases on disk only: an in-memory dataset fails so)", err)
	}
	if err != nil {
		return st, fmt.Errorf("compact: %w", err)
	}
	if dir != "" {
		if st.To, st.After, err = measure(dir); err != nil {
			return st, fmt.Errorf("compact: %w", err)
		}
	}
	return st, nil
}

// generationRE matches the directories of a TDB2 database's generations.
var generationRE = regexp.MustCompile(`^Data-\d{4,}$`)

// measure returns the newest generation of the TDB2 database in dir and
// the bytes its files take on disk.
func measure(dir string) (generation string, bytes int64, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, fmt.Errorf("%w: database directory: %v", session.ErrInvalid, err)
	}
	var gens []string
	for _, e := range entries {
		if e.IsDir() && generationRE.MatchString(e.Name()) {
			gens = append(gens, e.Name())
		}
	}
	if len(gens) == 0 {
		return "", 0, fmt.Errorf("%w: %s is not a TDB2 database (no Data-NNNN directory in it)", session.ErrInvalid, dir)
	}
	slices.Sort(gens)
	bytes, err = DiskUsage(dir)
	return gens[len(gens)-1], bytes, err
}

// DiskUsage returns the bytes the files under dir take on disk: their
// allocated blocks, as du counts them (a sparse file counts what it
// holds, not its length). A file removed while it walks (an old
// generation a compaction deletes) is skipped; any other error of the
// walk is returned.
func DiskUsage(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && path != dir {
				return nil // removed while walked: an old generation going
			}
			return err
		}
		fi, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += sys.Blocks * 512
		} else {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}
