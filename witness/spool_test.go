package witness_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// gate is a witness server that can be taken down: while down it answers
// 503, as a server restarting behind a proxy does.
type gate struct {
	h    http.Handler
	down atomic.Bool
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.down.Load() {
		http.Error(w, "restarting", http.StatusServiceUnavailable)
		return
	}
	g.h.ServeHTTP(w, r)
}

// spoolWorld is a witness Server behind a gate, a writer key it trusts,
// and a Client of it.
type spoolWorld struct {
	srv    *witnessServer
	gate   *gate
	client *witness.Client
	writer note.Signer // a writer key the server trusts
}

func newSpoolWorld(tb testing.TB) *spoolWorld {
	tb.Helper()
	ws, wv, _ := keytest.New(tb, "witness.example")
	writer, _, writerV := keytest.New(tb, "agent-a.example")
	srv := newWitnessServer(tb, "", ws, wv, "writer "+writerV+"\n")
	g := &gate{h: srv.s}
	hs := httptest.NewServer(g)
	tb.Cleanup(hs.Close)
	return &spoolWorld{srv: srv, gate: g, client: newClient(tb, hs.URL), writer: writer}
}

// entry returns statement i signed by the world's writer.
func (w *spoolWorld) entry(tb testing.TB, i int) []byte {
	tb.Helper()
	return sign(tb, statement(i), w.writer)
}

// openSpool opens a Spool on dir forwarding to the world's witness, closed
// when the test ends.
func (w *spoolWorld) openSpool(tb testing.TB, dir string) *witness.Spool {
	tb.Helper()
	sp, err := witness.OpenSpool(dir, w.client, quietLogger())
	if err != nil {
		tb.Fatalf("OpenSpool: %v", err)
	}
	tb.Cleanup(func() { sp.Close() })
	return sp
}

// wantLog fails tb unless the witness's log holds exactly entries, in order.
func (w *spoolWorld) wantLog(tb testing.TB, entries [][]byte) {
	tb.Helper()
	ctx := context.Background()
	for i, e := range entries {
		got, err := w.srv.d.Entry(ctx, uint64(i))
		if err != nil {
			tb.Fatalf("witness entry %d: %v", i, err)
		}
		if !bytes.Equal(got, e) {
			tb.Fatalf("witness entry %d: got %q, want %q", i, got, e)
		}
	}
	if _, err := w.srv.d.Entry(ctx, uint64(len(entries))); !errors.Is(err, witness.ErrOutOfRange) {
		tb.Fatalf("witness entry %d: got %v, want ErrOutOfRange (the log holds %d entries)", len(entries), err, len(entries))
	}
}

func flush(tb testing.TB, sp *witness.Spool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sp.Flush(ctx); err != nil {
		tb.Fatalf("Flush: %v (stats %+v)", err, sp.Stats())
	}
}

// TestSpoolForwardsInOrder: entries added to a Spool reach the witness
// server in the order added, and the spool file is emptied once they have.
func TestSpoolForwardsInOrder(t *testing.T) {
	w := newSpoolWorld(t)
	dir := t.TempDir()
	sp := w.openSpool(t, dir)
	var entries [][]byte
	for i := range 10 {
		e := w.entry(t, i)
		idx, err := sp.Add(context.Background(), e)
		if err != nil || idx != uint64(i) {
			t.Fatalf("Add %d: got %d, %v", i, idx, err)
		}
		entries = append(entries, e)
	}
	flush(t, sp)
	w.wantLog(t, entries)
	if st := sp.Stats(); st.Forwarded != 10 || st.Pending != 0 || st.Refused != 0 || st.LastError != nil {
		t.Errorf("stats: got %+v, want 10 forwarded", st)
	}
	if fi, err := os.Stat(filepath.Join(dir, witness.SpoolFile)); err != nil || fi.Size() > 64 {
		t.Errorf("spool file after forwarding everything: %v, %v; want its header only", fi.Size(), err)
	}
}

// TestSpoolWitnessDown: while the witness answers 503 a writer's Add still
// returns at once, Flush waits and says why, and once the witness is back
// every entry reaches it in order.
func TestSpoolWitnessDown(t *testing.T) {
	w := newSpoolWorld(t)
	sp := w.openSpool(t, t.TempDir())
	w.gate.down.Store(true)
	var entries [][]byte
	for i := range 3 {
		e := w.entry(t, i)
		if _, err := sp.Add(context.Background(), e); err != nil {
			t.Fatalf("Add %d with the witness down: %v", i, err)
		}
		entries = append(entries, e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := sp.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with the witness down: got %v, want DeadlineExceeded", err)
	}
	if st := sp.Stats(); st.Pending != 3 || !errors.Is(st.LastError, witness.ErrUnavailable) {
		t.Fatalf("stats with the witness down: got %+v, want 3 pending, ErrUnavailable", st)
	}
	w.wantLog(t, nil)
	w.gate.down.Store(false)
	flush(t, sp)
	w.wantLog(t, entries)
	if st := sp.Stats(); st.Pending != 0 || st.LastError != nil {
		t.Errorf("stats once back: got %+v", st)
	}
}

// TestSpoolResumesAfterCrash: the files a writer killed with entries not
// forwarded leaves (its last record torn by the crash) are forwarded, in
// order, by the next Spool opened on them.
func TestSpoolResumesAfterCrash(t *testing.T) {
	w := newSpoolWorld(t)
	dir := t.TempDir()
	sp := w.openSpool(t, dir)
	w.gate.down.Store(true)
	var entries [][]byte
	for i := range 4 {
		e := w.entry(t, i)
		if _, err := sp.Add(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	// The crash: the files as they are on disk, the process gone, and an
	// Add cut short (half a record at the end; that Add returned no
	// success).
	crashed := t.TempDir()
	for _, name := range []string{witness.SpoolFile, witness.SpoolSentFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == witness.SpoolFile {
			b = append(b, 0, 0, 1, 0, 7, 7)
		}
		if err := os.WriteFile(filepath.Join(crashed, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sp.Close()
	w.gate.down.Store(false)
	again := w.openSpool(t, crashed)
	flush(t, again)
	w.wantLog(t, entries)
	if st := again.Stats(); st.Forwarded != 4 {
		t.Errorf("stats: got %+v, want the 4 entries the crash left forwarded", st)
	}
}

// TestSpoolRefused: an entry the witness refuses for good (signed by a key
// it does not trust) is counted and kept aside, and the entries after it
// still reach the witness.
func TestSpoolRefused(t *testing.T) {
	w := newSpoolWorld(t)
	dir := t.TempDir()
	sp := w.openSpool(t, dir)
	stranger, _, _ := keytest.New(t, "stranger.example")
	bad := sign(t, statement(0), stranger)
	good := w.entry(t, 1)
	for _, e := range [][]byte{bad, good} {
		if _, err := sp.Add(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, sp)
	w.wantLog(t, [][]byte{good})
	if st := sp.Stats(); st.Refused != 1 || st.Forwarded != 1 {
		t.Errorf("stats: got %+v, want 1 refused, 1 forwarded", st)
	}
	kept, err := os.ReadFile(filepath.Join(dir, witness.SpoolRefusedFile))
	if err != nil || !bytes.Contains(kept, bad) {
		t.Errorf("%s: got %q, %v; want the refused entry", witness.SpoolRefusedFile, kept, err)
	}
}

// TestSpoolErrors: what a Spool refuses to take, and a directory already
// in use.
func TestSpoolErrors(t *testing.T) {
	w := newSpoolWorld(t)
	dir := t.TempDir()
	sp := w.openSpool(t, dir)
	ctx := context.Background()
	if _, err := sp.Add(ctx, nil); !errors.Is(err, witness.ErrMalformed) {
		t.Errorf("Add of nothing: got %v, want ErrMalformed", err)
	}
	if _, err := sp.Add(ctx, make([]byte, witness.MaxEntrySize+1)); !errors.Is(err, witness.ErrTooLarge) {
		t.Errorf("Add of too much: got %v, want ErrTooLarge", err)
	}
	if _, err := witness.OpenSpool(dir, w.client, quietLogger()); !errors.Is(err, witness.ErrLocked) {
		t.Errorf("second OpenSpool of one directory: got %v, want ErrLocked", err)
	}
	if _, err := witness.OpenSpool(t.TempDir(), nil, nil); !errors.Is(err, witness.ErrMalformed) {
		t.Errorf("OpenSpool with no witness: got %v, want ErrMalformed", err)
	}
	sp.Close()
	if _, err := sp.Add(ctx, w.entry(t, 0)); !errors.Is(err, witness.ErrClosed) {
		t.Errorf("Add after Close: got %v, want ErrClosed", err)
	}
	if err := os.WriteFile(filepath.Join(dir, witness.SpoolFile), []byte("not a spool at all, longer than a header\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := witness.OpenSpool(dir, w.client, quietLogger()); !errors.Is(err, witness.ErrCorrupt) {
		t.Errorf("OpenSpool of a foreign file: got %v, want ErrCorrupt", err)
	}
}
