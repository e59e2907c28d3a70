package witness_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/witness"
	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

func TestDirProofs(t *testing.T) {
	ctx := context.Background()
	writer, _, _ := keytest.New(t, "writer.example")
	ws, wv, _ := keytest.New(t, "witness.example")
	d := openDir(t, t.TempDir(), ws)

	const n = 37
	cps := []log.Checkpoint{mustOpenCheckpoint(t, checkpoint(t, d), wv)}
	entries := make([][]byte, n)
	for i := range n {
		entries[i] = sign(t, statement(i), writer)
		if _, err := d.Add(ctx, entries[i]); err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
		cps = append(cps, mustOpenCheckpoint(t, checkpoint(t, d), wv))
	}
	for size, cp := range cps {
		if cp.Size != uint64(size) {
			t.Fatalf("checkpoint %d: got size %d", size, cp.Size)
		}
	}
	for i, older := range cps {
		for _, newer := range cps[i:] {
			p, err := d.ConsistencyProof(ctx, older.Size, newer.Size)
			if err != nil {
				t.Fatalf("ConsistencyProof(%d, %d): %v", older.Size, newer.Size, err)
			}
			if err := witness.VerifyConsistency(older, newer, p); err != nil {
				t.Errorf("VerifyConsistency(%d, %d): %v", older.Size, newer.Size, err)
			}
		}
	}
	for i, e := range entries {
		got, err := d.Entry(ctx, uint64(i))
		if err != nil || !bytes.Equal(got, e) {
			t.Fatalf("Entry(%d): got %q, %v; want %q", i, got, err, e)
		}
		for _, cp := range cps[i+1:] {
			p, err := d.InclusionProof(ctx, uint64(i), cp.Size)
			if err != nil {
				t.Fatalf("InclusionProof(%d, %d): %v", i, cp.Size, err)
			}
			if err := witness.VerifyInclusion(e, uint64(i), cp, p); err != nil {
				t.Errorf("VerifyInclusion(%d, %d): %v", i, cp.Size, err)
			}
			if err := witness.VerifyInclusion(entries[(i+1)%n], uint64(i), cp, p); !errors.Is(err, witness.ErrNotIncluded) {
				t.Errorf("VerifyInclusion of another entry at %d in %d: got %v, want ErrNotIncluded", i, cp.Size, err)
			}
		}
	}
}

func TestDirReopen(t *testing.T) {
	writer, _, _ := keytest.New(t, "writer.example")
	ws, _, _ := keytest.New(t, "witness.example")
	dir := t.TempDir()
	d := openDir(t, dir, ws)
	addRange(t, d, writer, 0, 10)
	before := checkpoint(t, d)
	addRange(t, d, writer, 10, 13) // appended after the last checkpoint
	want := checkpoint(t, d)
	d.Close()

	d = openDir(t, dir, ws)
	if got := checkpoint(t, d); !bytes.Equal(got, want) {
		t.Errorf("reopened: got checkpoint\n%s\nwant\n%s", got, want)
	}
	// A checkpoint file older than the log (a crash before Checkpoint) is
	// fine: the log extends it.
	d.Close()
	if err := os.WriteFile(filepath.Join(dir, witness.CheckpointFile), before, 0o644); err != nil {
		t.Fatal(err)
	}
	d = openDir(t, dir, ws)
	if got := checkpoint(t, d); !bytes.Equal(got, want) {
		t.Errorf("reopened with an older checkpoint: got\n%s\nwant\n%s", got, want)
	}
	addRange(t, d, writer, 13, 14)
}

func TestDirTornWrite(t *testing.T) {
	ctx := context.Background()
	writer, _, _ := keytest.New(t, "writer.example")
	ws, _, _ := keytest.New(t, "witness.example")
	next := record(sign(t, statement(5), writer))
	for _, tc := range []struct {
		name string
		tail []byte // what a crashed Add left after record 4
	}{
		{"header cut", next[:5]},
		{"entry cut", next[:len(next)/2]},
		{"entry whole, CRC wrong", append(bytes.Clone(next[:len(next)-1]), next[len(next)-1]^1)},
		{"zeros", make([]byte, len(next))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := openDir(t, dir, ws)
			addRange(t, d, writer, 0, 5)
			want := checkpoint(t, d)
			d.Close()
			path := filepath.Join(dir, witness.LogFile)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(tc.tail)
			f.Close()

			d = openDir(t, dir, ws)
			if got := checkpoint(t, d); !bytes.Equal(got, want) {
				t.Errorf("got checkpoint\n%s\nwant\n%s", got, want)
			}
			if fi2, _ := os.Stat(path); fi2.Size() != fi.Size() {
				t.Errorf("got log of %d bytes, want %d (torn record truncated)", fi2.Size(), fi.Size())
			}
			if i, err := d.Add(ctx, sign(t, statement(5), writer)); err != nil || i != 5 {
				t.Errorf("Add: got %d, %v; want 5, nil", i, err)
			}
		})
	}
}

// TestDirReadOnly reads a witness directory as an auditor without the
// witness's key, while the witness goes on writing.
func TestDirReadOnly(t *testing.T) {
	ctx := context.Background()
	writer, v, _ := keytest.New(t, "writer.example")
	ws, wv, _ := keytest.New(t, "witness.example")
	dir := t.TempDir()
	if _, err := witness.OpenDirReadOnly(ctx, dir); !errors.Is(err, witness.ErrCorrupt) {
		t.Errorf("OpenDirReadOnly of an empty directory: got %v, want ErrCorrupt", err)
	}
	d := openDir(t, dir, ws)
	addRange(t, d, writer, 0, 5)

	r, err := witness.OpenDirReadOnly(ctx, dir)
	if err != nil {
		t.Fatalf("OpenDirReadOnly: %v", err)
	}
	defer r.Close()
	if _, err := r.Checkpoint(ctx); !errors.Is(err, witness.ErrReadOnly) {
		t.Errorf("Checkpoint before the witness signed one: got %v, want ErrReadOnly", err)
	}
	checkpoint(t, d)
	addRange(t, d, writer, 5, 7) // past the last checkpoint
	trusted, cp, err := witness.Audit(ctx, r, wv, nil)
	if err != nil || cp.Size != 5 {
		t.Fatalf("Audit: got size %d, %v; want 5", cp.Size, err)
	}
	heads, err := witness.LatestHeads(ctx, r, cp, note.VerifierList(v))
	if err != nil || len(heads) != 3 {
		t.Errorf("LatestHeads: got %d sessions, %v; want 3", len(heads), err)
	}
	if _, err := r.Add(ctx, sign(t, statement(7), writer)); !errors.Is(err, witness.ErrReadOnly) {
		t.Errorf("Add: got %v, want ErrReadOnly", err)
	}
	checkpoint(t, d)
	if _, cp, err := witness.Audit(ctx, r, wv, trusted); err != nil || cp.Size != 7 {
		t.Errorf("Audit after the witness's next checkpoint: got size %d, %v; want 7", cp.Size, err)
	}
}

func TestDirHeader(t *testing.T) {
	ws, _, _ := keytest.New(t, "witness.example")
	for _, tc := range []struct {
		name, log string
		want      error
	}{
		{"cut short by a crash", logHeader[:9], nil},
		{"another file", "PK\x03\x04 not a log at all\n", witness.ErrCorrupt},
		{"another version", "trails witness log v2\n", witness.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, witness.LogFile), []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := witness.OpenDir(context.Background(), dir, ws)
			if !errors.Is(err, tc.want) {
				t.Errorf("OpenDir: got %v, want %v", err, tc.want)
			}
			if err == nil {
				d.Close()
			}
		})
	}
}

func TestDirDamage(t *testing.T) {
	writer, _, _ := keytest.New(t, "writer.example")
	ws, _, _ := keytest.New(t, "witness.example")
	for _, tc := range []struct {
		name       string
		checkpoint bool // whether a checkpoint covers all 5 records
		damage     int  // the record whose last byte is flipped
		want       error
	}{
		{"last record under a checkpoint", true, 4, witness.ErrCorrupt},
		{"middle record", false, 2, witness.ErrCorrupt},
		{"middle record under a checkpoint", true, 2, witness.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := openDir(t, dir, ws)
			addRange(t, d, writer, 0, 5)
			if tc.checkpoint {
				checkpoint(t, d)
			}
			d.Close()
			recs := readRecords(t, dir)
			recs[tc.damage][len(recs[tc.damage])-1] ^= 1
			writeRecords(t, dir, recs)
			_, err := witness.OpenDir(context.Background(), dir, ws)
			if !errors.Is(err, tc.want) {
				t.Errorf("OpenDir: got %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDirTamper changes a witness directory after an auditor saw its
// checkpoint of 10 entries, as someone who can write the directory but
// does not hold the witness's key could, and checks that the auditor's
// next Audit names it.
func TestDirTamper(t *testing.T) {
	ctx := context.Background()
	writer, _, _ := keytest.New(t, "writer.example")
	ws, wv, _ := keytest.New(t, "witness.example")
	edit := func(recs [][]byte, i int) {
		e := bytes.Replace(recs[i][8:], []byte("turns "), []byte("turns 1"), 1)
		recs[i] = record(e)
	}
	for _, tc := range []struct {
		name     string
		tamper   func(t *testing.T, dir, older string)
		keepCP   bool  // leave the directory's own checkpoint file
		openErr  error // what OpenDir says, if it refuses
		then     func(t *testing.T, d *witness.Dir)
		auditErr error
	}{
		{name: "truncate", tamper: func(t *testing.T, dir, _ string) {
			writeRecords(t, dir, readRecords(t, dir)[:7])
		}, auditErr: witness.ErrRollback},
		{name: "truncate, own checkpoint kept", keepCP: true, tamper: func(t *testing.T, dir, _ string) {
			writeRecords(t, dir, readRecords(t, dir)[:7])
		}, openErr: witness.ErrRollback},
		{name: "truncate and regrow", tamper: func(t *testing.T, dir, _ string) {
			writeRecords(t, dir, readRecords(t, dir)[:7])
		}, then: func(t *testing.T, d *witness.Dir) { addOthers(t, d, writer, 7, 10) }, auditErr: witness.ErrInconsistent},
		{name: "edit an entry", tamper: func(t *testing.T, dir, _ string) {
			recs := readRecords(t, dir)
			edit(recs, 3)
			writeRecords(t, dir, recs)
		}, auditErr: witness.ErrInconsistent},
		{name: "edit an entry, own checkpoint kept", keepCP: true, tamper: func(t *testing.T, dir, _ string) {
			recs := readRecords(t, dir)
			edit(recs, 3)
			writeRecords(t, dir, recs)
		}, openErr: witness.ErrInconsistent},
		{name: "edit an entry, CRC not fixed", keepCP: true, tamper: func(t *testing.T, dir, _ string) {
			recs := readRecords(t, dir)
			recs[3][len(recs[3])-2] ^= 1
			writeRecords(t, dir, recs)
		}, openErr: witness.ErrCorrupt},
		{name: "drop an entry", tamper: func(t *testing.T, dir, _ string) {
			recs := readRecords(t, dir)
			writeRecords(t, dir, append(recs[:3:3], recs[4:]...))
		}, auditErr: witness.ErrRollback},
		{name: "drop an entry and add one", tamper: func(t *testing.T, dir, _ string) {
			recs := readRecords(t, dir)
			writeRecords(t, dir, append(recs[:3:3], recs[4:]...))
		}, then: func(t *testing.T, d *witness.Dir) { addOthers(t, d, writer, 9, 10) }, auditErr: witness.ErrInconsistent},
		{name: "swap two entries", tamper: func(t *testing.T, dir, _ string) {
			recs := readRecords(t, dir)
			recs[3], recs[4] = recs[4], recs[3]
			writeRecords(t, dir, recs)
		}, auditErr: witness.ErrInconsistent},
		{name: "roll back to an older copy", keepCP: true, tamper: func(t *testing.T, dir, older string) {
			for _, f := range []string{witness.LogFile, witness.CheckpointFile} {
				b, err := os.ReadFile(filepath.Join(older, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}, auditErr: witness.ErrRollback},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := openDir(t, dir, ws)
			addRange(t, d, writer, 0, 6)
			checkpoint(t, d)
			older := copyDir(t, dir)
			addRange(t, d, writer, 6, 10)
			trusted, cp, err := witness.Audit(ctx, d, wv, nil)
			if err != nil || cp.Size != 10 {
				t.Fatalf("Audit: got size %d, %v", cp.Size, err)
			}
			d.Close()

			tc.tamper(t, dir, older)
			if !tc.keepCP {
				os.Remove(filepath.Join(dir, witness.CheckpointFile))
			}
			d, err = witness.OpenDir(ctx, dir, ws)
			if tc.openErr != nil {
				if !errors.Is(err, tc.openErr) {
					t.Errorf("OpenDir: got %v, want %v", err, tc.openErr)
				}
				if err == nil {
					d.Close()
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenDir: %v", err)
			}
			defer d.Close()
			if tc.then != nil {
				tc.then(t, d)
			}
			if _, _, err := witness.Audit(ctx, d, wv, trusted); !errors.Is(err, tc.auditErr) {
				t.Errorf("Audit: got %v, want %v", err, tc.auditErr)
			}
		})
	}
}

func TestDirConcurrent(t *testing.T) {
	ctx := context.Background()
	writer, _, _ := keytest.New(t, "writer.example")
	ws, wv, _ := keytest.New(t, "witness.example")
	dir := t.TempDir()
	// Two Dirs on one directory stand for two processes: each has its own
	// open file, so they exclude each other by flock as processes do.
	dirs := []*witness.Dir{openDir(t, dir, ws), openDir(t, dir, ws)}
	const goroutines, each = 8, 25
	var wg sync.WaitGroup
	seen := make([][]uint64, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			d := dirs[g%len(dirs)]
			for i := range each {
				idx, err := d.Add(ctx, sign(t, statement(g*each+i), writer))
				if err != nil {
					t.Errorf("Add: %v", err)
					return
				}
				seen[g] = append(seen[g], idx)
				if i%10 == 0 {
					if _, err := d.Checkpoint(ctx); err != nil {
						t.Errorf("Checkpoint: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	used := make(map[uint64]bool)
	for _, s := range seen {
		for _, idx := range s {
			if used[idx] {
				t.Errorf("index %d given twice", idx)
			}
			used[idx] = true
		}
	}
	if len(used) != goroutines*each {
		t.Errorf("got %d indexes, want %d", len(used), goroutines*each)
	}
	a, b := checkpoint(t, dirs[0]), checkpoint(t, dirs[1])
	if !bytes.Equal(a, b) {
		t.Errorf("the two Dirs' checkpoints differ:\n%s\n%s", a, b)
	}
	reopened := openDir(t, dir, ws)
	if c := checkpoint(t, reopened); !bytes.Equal(a, c) {
		t.Errorf("reopened: got checkpoint\n%s\nwant\n%s", c, a)
	}
	cp := mustOpenCheckpoint(t, a, wv)
	if cp.Size != goroutines*each {
		t.Errorf("got size %d, want %d", cp.Size, goroutines*each)
	}
}

func TestDirErrors(t *testing.T) {
	ctx := context.Background()
	writer, _, _ := keytest.New(t, "writer.example")
	ws, _, _ := keytest.New(t, "witness.example")
	other, _, _ := keytest.New(t, "witness.example")
	dir := t.TempDir()
	d := openDir(t, dir, ws)
	addRange(t, d, writer, 0, 3)
	checkpoint(t, d)
	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"empty entry", func() error { _, err := d.Add(ctx, nil); return err }, witness.ErrMalformed},
		{"large entry", func() error { _, err := d.Add(ctx, make([]byte, witness.MaxEntrySize+1)); return err }, witness.ErrTooLarge},
		{"entry past the end", func() error { _, err := d.Entry(ctx, 3); return err }, witness.ErrOutOfRange},
		{"inclusion past the end", func() error { _, err := d.InclusionProof(ctx, 1, 4); return err }, witness.ErrOutOfRange},
		{"inclusion of index = size", func() error { _, err := d.InclusionProof(ctx, 2, 2); return err }, witness.ErrOutOfRange},
		{"consistency past the end", func() error { _, err := d.ConsistencyProof(ctx, 1, 4); return err }, witness.ErrOutOfRange},
		{"consistency backwards", func() error { _, err := d.ConsistencyProof(ctx, 3, 2); return err }, witness.ErrOutOfRange},
		{"another witness key", func() error {
			d2, err := witness.OpenDir(ctx, dir, other)
			if err == nil {
				d2.Close()
			}
			return err
		}, witness.ErrUnknownKey},
		{"closed", func() error {
			d2 := openDir(t, dir, ws)
			d2.Close()
			_, err := d2.Checkpoint(ctx)
			return err
		}, witness.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// addOthers adds, at indexes from to to, statements other than those
// addRange adds there.
func addOthers(tb testing.TB, d *witness.Dir, writer note.Signer, from, to int) {
	tb.Helper()
	for i := from; i < to; i++ {
		idx, err := d.Add(context.Background(), sign(tb, statement(i+100), writer))
		if err != nil || idx != uint64(i) {
			tb.Fatalf("Add: got %d, %v; want %d", idx, err, i)
		}
	}
}

// mustOpenCheckpoint opens a checkpoint signed by v.
func mustOpenCheckpoint(tb testing.TB, signed []byte, v note.Verifier) log.Checkpoint {
	tb.Helper()
	cp, err := witness.OpenCheckpoint(signed, v)
	if err != nil {
		tb.Fatalf("OpenCheckpoint: %v", err)
	}
	return cp
}
