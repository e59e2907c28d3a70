package tdbjournal_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/trails-kg/trails/internal/tdbjournal"
)

func TestCheckAndMend(t *testing.T) {
	redo := tdbjournal.Entry(1, bytes.Repeat([]byte{7}, 16))
	commit := tdbjournal.Entry(3, nil)
	whole := cat(redo, redo, commit, redo)
	for _, c := range []struct {
		name             string
		journal          []byte
		entries, commits int
		pending          int
		torn             int64
		corrupt          bool
	}{
		{name: "empty"},
		{name: "whole", journal: whole, entries: 4, commits: 1, pending: 1},
		{name: "torn data", journal: cat(whole, redo[:16]), entries: 4, commits: 1, pending: 1, torn: 16},
		{name: "torn data, some written", journal: cat(whole, redo[:23]), entries: 4, commits: 1, pending: 1, torn: 23},
		{name: "torn header", journal: cat(whole, redo[:11]), entries: 4, commits: 1, pending: 1, torn: 11},
		{name: "torn commit", journal: cat(redo, commit[:10]), entries: 1, pending: 1, torn: 10},
		{name: "last checksum bad", journal: cat(whole, flip(redo, 20)), entries: 4, commits: 1, pending: 1, torn: int64(len(redo))},
		{name: "checksum bad before the last", journal: cat(redo, flip(redo, 20), commit), entries: 1, pending: 1, corrupt: true},
		{name: "type bad before the last", journal: cat(redo, flip(redo, 11), commit), entries: 1, pending: 1, corrupt: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tdbjournal.FileName)
			if err := os.WriteFile(path, c.journal, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := tdbjournal.Check(path)
			if c.corrupt != errors.Is(err, tdbjournal.ErrCorrupt) {
				t.Fatalf("Check: %v, corrupt %v", err, c.corrupt)
			}
			if r.Entries != c.entries || r.Commits != c.commits || r.Pending != c.pending || r.Torn != c.torn || r.Size != int64(len(c.journal)) {
				t.Errorf("Check: %+v, want %d entries, %d commits, %d pending, %d torn", r, c.entries, c.commits, c.pending, c.torn)
			}
			m, err := tdbjournal.Mend(path)
			if c.corrupt != errors.Is(err, tdbjournal.ErrCorrupt) {
				t.Fatalf("Mend: %v, corrupt %v", err, c.corrupt)
			}
			got, _ := os.ReadFile(path)
			want := c.journal
			if !c.corrupt {
				want = c.journal[:int64(len(c.journal))-c.torn]
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Mend left %d bytes, want %d (%+v)", len(got), len(want), m)
			}
			if m.Mended != (c.torn > 0 && !c.corrupt) {
				t.Errorf("Mend: %+v", m)
			}
			if after, err := tdbjournal.Check(path); !c.corrupt && (err != nil || !after.Clean() || after.Entries != c.entries) {
				t.Errorf("Check after Mend: %+v, %v", after, err)
			}
		})
	}
}

// TestJenaJournal reads a journal that Jena 5.6's own Journal class wrote
// (a REDO entry of 16 bytes, then a COMMIT), whole and torn.
func TestJenaJournal(t *testing.T) {
	jena, err := os.ReadFile(filepath.Join("testdata", "jena-5.6.jrnl"))
	if err != nil {
		t.Fatal(err)
	}
	for cut, want := range map[int]tdbjournal.Report{
		0:  {Entries: 2, Commits: 1},
		8:  {Entries: 1, Pending: 1, Torn: 8}, // half the COMMIT's header
		16: {Entries: 1, Pending: 1},          // no COMMIT: whole, not committed
		20: {Torn: 28},                        // the REDO less 4 of its data bytes
	} {
		path := filepath.Join(t.TempDir(), tdbjournal.FileName)
		os.WriteFile(path, jena[:len(jena)-cut], 0o644)
		r, err := tdbjournal.Check(path)
		if err != nil || r.Entries != want.Entries || r.Commits != want.Commits || r.Pending != want.Pending || r.Torn != want.Torn {
			t.Errorf("Jena's journal less its last %d bytes: %+v, %v; want %+v", cut, r, err, want)
		}
	}
	if !bytes.Equal(jena[:4], tdbjournal.Entry(1, make([]byte, 16))[:4]) {
		t.Errorf("Entry's data length differs from Jena's")
	}
}

func TestJournals(t *testing.T) {
	loc := t.TempDir()
	if _, err := tdbjournal.Journals(loc); err == nil {
		t.Error("Journals of a directory with none: no error")
	}
	for _, d := range []string{"Data-0001", "Data-0002"} {
		os.MkdirAll(filepath.Join(loc, d), 0o755)
		if err := os.WriteFile(filepath.Join(loc, d, tdbjournal.FileName), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := tdbjournal.Journals(loc)
	if err != nil || len(got) != 2 || filepath.Base(filepath.Dir(got[1])) != "Data-0002" {
		t.Errorf("Journals: %v, %v", got, err)
	}
	found, err := tdbjournal.Find(filepath.Dir(loc))
	if err != nil || len(found) != 2 {
		t.Errorf("Find: %v, %v", found, err)
	}
	// A lock naming a dead process (a killed server's) is no obstacle;
	// one naming a running process is.
	lock := filepath.Join(loc, "tdb.lock")
	os.WriteFile(lock, []byte("999999999"), 0o644)
	if _, err := tdbjournal.Journals(loc); err != nil {
		t.Errorf("Journals with a stale lock: %v", err)
	}
	os.WriteFile(lock, []byte(strconv.Itoa(os.Getpid())), 0o644)
	if _, err := tdbjournal.Journals(loc); !errors.Is(err, tdbjournal.ErrInUse) {
		t.Errorf("Journals locked by a running process: %v, want ErrInUse", err)
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// flip returns b with its byte i changed.
func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x5a
	return c
}
