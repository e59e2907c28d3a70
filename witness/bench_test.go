package witness_test

import (
	"context"
	"testing"

	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// BenchmarkSign measures what a writer adds to each acknowledged write to
// sign its head.
func BenchmarkSign(b *testing.B) {
	writer, _, _ := keytest.New(b, "writer.example")
	s := statement(1)
	for b.Loop() {
		if _, err := witness.Sign(s, writer); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen measures what verify spends per statement.
func BenchmarkOpen(b *testing.B) {
	writer, v, _ := keytest.New(b, "writer.example")
	msg := sign(b, statement(1), writer)
	known := note.VerifierList(v)
	for b.Loop() {
		if _, _, err := witness.Open(msg, known); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDirAdd measures one Add to a local directory witness, fsync
// included.
func BenchmarkDirAdd(b *testing.B) {
	writer, _, _ := keytest.New(b, "writer.example")
	ws, _, _ := keytest.New(b, "witness.example")
	d := openDir(b, b.TempDir(), ws)
	msg := sign(b, statement(1), writer)
	ctx := context.Background()
	for b.Loop() {
		if _, err := d.Add(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDirCheckpoint measures a checkpoint after each Add.
func BenchmarkDirCheckpoint(b *testing.B) {
	writer, _, _ := keytest.New(b, "writer.example")
	ws, _, _ := keytest.New(b, "witness.example")
	d := openDir(b, b.TempDir(), ws)
	msg := sign(b, statement(1), writer)
	ctx := context.Background()
	for b.Loop() {
		if _, err := d.Add(ctx, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Checkpoint(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerAdd measures one Client.Add to a Server on the loopback
// interface: the round trip, the server's signature check, the write and
// the fsync.
func BenchmarkServerAdd(b *testing.B) {
	ws, wv, _ := keytest.New(b, "witness.example")
	writer, _, writerV := keytest.New(b, "agent-a.example")
	srv := newWitnessServer(b, "", ws, wv, "writer "+writerV+"\n")
	c := newClient(b, srv.url)
	msg := sign(b, statement(1), writer)
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Add(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}
