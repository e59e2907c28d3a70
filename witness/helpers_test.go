package witness_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// openDir opens the witness in dir, closed when the test ends.
func openDir(tb testing.TB, dir string, s note.Signer) *witness.Dir {
	tb.Helper()
	d, err := witness.OpenDir(context.Background(), dir, s)
	if err != nil {
		tb.Fatalf("OpenDir: %v", err)
	}
	tb.Cleanup(func() { d.Close() })
	return d
}

// statement returns the i-th statement of a test: one of three sessions,
// at turn i.
func statement(i int) witness.Statement {
	return witness.Statement{
		Kind:     witness.KindHead,
		Session:  fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i%3),
		Turns:    uint64(i + 1),
		Digest:   fmt.Sprintf("sha256:%064x", i),
		Chain:    fmt.Sprintf("sha256:%064x", 100+i),
		Time:     time.Date(2026, 11, 26, 12, 0, i, 0, time.UTC),
		Position: fmt.Sprintf("kafka:trails/0@%d", i),
	}
}

// sign returns s signed by signer.
func sign(tb testing.TB, s witness.Statement, signer note.Signer) []byte {
	tb.Helper()
	msg, err := witness.Sign(s, signer)
	if err != nil {
		tb.Fatalf("Sign: %v", err)
	}
	return msg
}

// addRange adds statements from to to (exclusive) signed by writer, and
// checks their indexes.
func addRange(tb testing.TB, d *witness.Dir, writer note.Signer, from, to int) {
	tb.Helper()
	for i := from; i < to; i++ {
		idx, err := d.Add(context.Background(), sign(tb, statement(i), writer))
		if err != nil {
			tb.Fatalf("Add %d: %v", i, err)
		}
		if idx != uint64(i) {
			tb.Fatalf("Add %d: got index %d, want %d", i, idx, i)
		}
	}
}

// checkpoint returns d's signed checkpoint.
func checkpoint(tb testing.TB, d *witness.Dir) []byte {
	tb.Helper()
	cp, err := d.Checkpoint(context.Background())
	if err != nil {
		tb.Fatalf("Checkpoint: %v", err)
	}
	return cp
}

// logHeader is the first line of witness.LogFile.
const logHeader = "trails witness log v1\n"

// readRecords returns the records of dir's log file, each with its length
// and CRC, as the file format (witness.LogFile) says.
func readRecords(tb testing.TB, dir string) [][]byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, witness.LogFile))
	if err != nil {
		tb.Fatal(err)
	}
	if string(b[:len(logHeader)]) != logHeader {
		tb.Fatalf("log starts %q", b[:len(logHeader)])
	}
	b = b[len(logHeader):]
	var recs [][]byte
	for len(b) > 0 {
		n := 8 + int(binary.BigEndian.Uint32(b))
		recs = append(recs, b[:n])
		b = b[n:]
	}
	return recs
}

// writeRecords replaces dir's log file with records.
func writeRecords(tb testing.TB, dir string, recs [][]byte) {
	tb.Helper()
	b := []byte(logHeader)
	for _, r := range recs {
		b = append(b, r...)
	}
	if err := os.WriteFile(filepath.Join(dir, witness.LogFile), b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// record returns entry as a record of the log file.
func record(entry []byte) []byte {
	r := binary.BigEndian.AppendUint32(nil, uint32(len(entry)))
	r = binary.BigEndian.AppendUint32(r, crc32.Checksum(entry, crc32.MakeTable(crc32.Castagnoli)))
	return append(r, entry...)
}

// copyDir copies the files of directory from into a new directory.
func copyDir(tb testing.TB, from string) string {
	tb.Helper()
	to := tb.TempDir()
	files, err := os.ReadDir(from)
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(from, f.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, f.Name()), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return to
}
