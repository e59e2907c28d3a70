package witness_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// witnessServer is a witness.Server over a new directory, served by
// httptest, with the keys a test needs.
type witnessServer struct {
	dir      string
	d        *witness.Dir
	s        *witness.Server
	url      string
	witnessV note.Verifier // the witness's public key: all an auditor or a writer holds of it
	writer   note.Signer   // a trusted writer's key
	keys     *witness.KeyList
}

// newWitnessServer starts a Server over dir (a new directory when ""),
// signed by ws, trusting the writer keys and cosigner keys of keyText.
func newWitnessServer(tb testing.TB, dir string, ws note.Signer, wv note.Verifier, keyText string, cosigners ...*witness.CosignerClient) *witnessServer {
	tb.Helper()
	if dir == "" {
		dir = tb.TempDir()
	}
	keys, err := witness.ParseKeyList([]byte(keyText))
	if err != nil {
		tb.Fatal(err)
	}
	d := openDir(tb, dir, ws)
	s, err := witness.NewServer(d, witness.ServerConfig{Keys: keys, Cosigners: cosigners, Logger: quietLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(s)
	tb.Cleanup(hs.Close)
	return &witnessServer{dir: dir, d: d, s: s, url: hs.URL, witnessV: wv, keys: keys}
}

// quietLogger logs nothing.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newClient returns a Client of url.
func newClient(tb testing.TB, url string) *witness.Client {
	tb.Helper()
	c, err := witness.NewClient(url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestServerWriterWithoutWitnessKey: a writer that holds its own key and
// not the witness's appends statements through the HTTP witness, and
// verifies the witness's checkpoints with its public key only; an auditor
// with the public keys reads every statement back over HTTP. Before the
// Server, such a writer could not even open the witness.
func TestServerWriterWithoutWitnessKey(t *testing.T) {
	ctx := context.Background()
	ws, wv, _ := keytest.New(t, "witness.example")
	writer, _, writerV := keytest.New(t, "agent-a.example")
	srv := newWitnessServer(t, "", ws, wv, "writer "+writerV+"\n")
	if _, err := srv.s.Sign(ctx); err != nil {
		t.Fatal(err)
	}

	// What a writer with only its own key met before: the directory's
	// checkpoint is the witness's, so OpenDir with the writer's key fails.
	if _, err := witness.OpenDir(ctx, srv.dir, writer); !errors.Is(err, witness.ErrUnknownKey) {
		t.Fatalf("OpenDir with the writer's key: got %v, want ErrUnknownKey", err)
	}

	c := newClient(t, srv.url) // the writer's witness: session.WithSigning(writer, c)
	var entries [][]byte
	for i := range 5 {
		e := sign(t, statement(i), writer)
		idx, err := c.Add(ctx, e)
		if err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
		if idx != uint64(i) {
			t.Fatalf("Add %d: got index %d, want %d", i, idx, i)
		}
		entries = append(entries, e)
	}

	// The writer checks the witness's word with its public key only.
	before, err := c.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := witness.OpenCheckpoint(before, wv); err != nil || cp.Size != 0 {
		t.Fatalf("checkpoint before Sign: got size %d, %v; want 0 (no request makes the witness sign)", cp.Size, err)
	}
	if _, err := srv.s.Sign(ctx); err != nil {
		t.Fatal(err)
	}
	signed, cp, err := witness.Audit(ctx, c, wv, before)
	if err != nil {
		t.Fatalf("Audit with the witness's public key: %v", err)
	}
	if cp.Size != 5 {
		t.Fatalf("got checkpoint size %d, want 5", cp.Size)
	}
	for i, e := range entries {
		p, err := c.InclusionProof(ctx, uint64(i), cp.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := witness.VerifyInclusion(e, uint64(i), cp, p); err != nil {
			t.Errorf("entry %d: %v", i, err)
		}
	}

	// The auditor, with the public keys: every statement, over HTTP.
	latest, err := witness.LatestHeads(ctx, c, cp, srv.keys.Verifiers())
	if err != nil {
		t.Fatalf("LatestHeads: %v", err)
	}
	if len(latest) != 3 {
		t.Fatalf("got %d sessions, want 3", len(latest))
	}
	if _, _, err := witness.Audit(ctx, c, wv, signed); err != nil {
		t.Fatalf("Audit against the last checkpoint: %v", err)
	}
}

// TestServerRefusesUntrustedEntries: whoever reaches the witness without a
// trusted writer key (an attacker with the store's credentials, a writer
// whose key was retired) cannot append: each refusal names its sentinel
// and HTTP status, and the log stays empty.
func TestServerRefusesUntrustedEntries(t *testing.T) {
	ctx := context.Background()
	ws, wv, _ := keytest.New(t, "witness.example")
	writer, _, writerV := keytest.New(t, "agent-a.example")
	retired, _, retiredV := keytest.New(t, "agent-old.example")
	attacker, _, _ := keytest.New(t, "agent-a.example") // same name, another key
	srv := newWitnessServer(t, "", ws, wv, "writer "+writerV+"\nwriter "+retiredV+" until 2026-01-01T00:00:00Z\n")
	c := newClient(t, srv.url)

	good := sign(t, statement(1), writer)
	tampered := bytes.Replace(good, []byte("turns 2\n"), []byte("turns 9\n"), 1)
	plainNote, err := note.Sign(&note.Note{Text: "not a statement\n"}, writer)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		entry  []byte
		want   error
		status int
	}{
		{"attacker's own key", sign(t, statement(1), attacker), witness.ErrUnknownKey, http.StatusForbidden},
		{"statement edited after signing", tampered, witness.ErrBadSignature, http.StatusForbidden},
		{"retired key, dated after its window", sign(t, statement(1), retired), witness.ErrOutsideWindow, http.StatusForbidden},
		{"a note by a trusted key that is no statement", plainNote, witness.ErrMalformed, http.StatusBadRequest},
		{"no note", []byte("trails statement v1\n"), witness.ErrMalformed, http.StatusBadRequest},
		{"over MaxEntrySize", bytes.Repeat([]byte("x"), witness.MaxEntrySize+1), witness.ErrTooLarge, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Straight over HTTP, as an attacker would: the status.
			resp, err := http.Post(srv.url+"/add", "text/plain", bytes.NewReader(tc.entry))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status: got %d, want %d", resp.StatusCode, tc.status)
			}
			// Through the Client, with a test by errors.Is. (The Client
			// refuses an oversized entry before sending it.)
			_, err = c.Add(ctx, tc.entry)
			if !errors.Is(err, tc.want) {
				t.Errorf("Add: got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := c.Entry(ctx, 0); !errors.Is(err, witness.ErrOutOfRange) {
		t.Fatalf("Entry(0) after the refusals: got %v, want ErrOutOfRange (an empty log)", err)
	}
	if _, err := c.Add(ctx, good); err != nil {
		t.Fatalf("Add by the trusted writer: %v", err)
	}
	var m bytes.Buffer
	resp, err := http.Get(srv.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(&m, resp.Body)
	resp.Body.Close()
	for _, want := range []string{"trails_witness_entries_added_total 1\n", `trails_witness_entries_refused_total{reason="unknown-key"} 2`} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics: no %q in\n%s", want, m.String())
		}
	}
}

// TestServerSignsOnlyForItsOperator: a writer (or anyone reaching the
// witness) cannot make it sign a checkpoint: no route signs, and the
// checkpoint it serves stays the one its operator had it sign.
func TestServerSignsOnlyForItsOperator(t *testing.T) {
	ctx := context.Background()
	ws, wv, _ := keytest.New(t, "witness.example")
	writer, _, writerV := keytest.New(t, "agent-a.example")
	srv := newWitnessServer(t, "", ws, wv, "writer "+writerV+"\n")
	if _, err := srv.s.Sign(ctx); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv.url)
	if _, err := c.Add(ctx, sign(t, statement(0), writer)); err != nil {
		t.Fatal(err)
	}
	stored, err := os.ReadFile(filepath.Join(srv.dir, witness.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path string }{
		{"POST", "/checkpoint"}, {"PUT", "/checkpoint"}, {"POST", "/sign"}, {"POST", "/add-checkpoint"},
		{"GET", "/checkpoint?sign=1"}, {"GET", "/checkpoint"}, {"POST", "/add/../checkpoint"},
	} {
		req, err := http.NewRequestWithContext(ctx, r.method, srv.url+r.path, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got, err := os.ReadFile(filepath.Join(srv.dir, witness.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, stored) {
		t.Fatalf("the checkpoint changed without its operator:\n%s\nwas\n%s", got, stored)
	}
	signed, err := c.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := witness.OpenCheckpoint(signed, wv); err != nil || cp.Size != 0 {
		t.Fatalf("served checkpoint: size %d, %v; want size 0", cp.Size, err)
	}
}

// TestClientErrors: a Client's failures match the package's sentinels.
func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	ws, wv, _ := keytest.New(t, "witness.example")
	_, _, writerV := keytest.New(t, "agent-a.example")
	srv := newWitnessServer(t, "", ws, wv, "writer "+writerV+"\n")
	c := newClient(t, srv.url)
	if _, err := c.Checkpoint(ctx); !errors.Is(err, witness.ErrNoCheckpoint) {
		t.Errorf("Checkpoint before any: got %v, want ErrNoCheckpoint", err)
	}
	if _, err := c.ConsistencyProof(ctx, 2, 1); !errors.Is(err, witness.ErrOutOfRange) {
		t.Errorf("ConsistencyProof(2, 1): got %v, want ErrOutOfRange", err)
	}
	var re *witness.RemoteError
	if _, err := c.Entry(ctx, 7); !errors.As(err, &re) || re.Status != http.StatusNotFound {
		t.Errorf("Entry(7): got %v, want a *RemoteError of status 404", err)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	if _, err := newClient(t, gone.URL).Add(ctx, []byte("x")); !errors.Is(err, witness.ErrUnavailable) {
		t.Errorf("Add to a closed server: got %v, want ErrUnavailable", err)
	}
	for _, u := range []string{"", "witness.example:7380", "ftp://witness.example", "http://"} {
		if _, err := witness.NewClient(u, nil); !errors.Is(err, witness.ErrMalformed) {
			t.Errorf("NewClient(%q): got %v, want ErrMalformed", u, err)
		}
	}
	if _, err := witness.NewServer(mustReadOnly(t, srv.dir), witness.ServerConfig{Keys: srv.keys}); !errors.Is(err, witness.ErrReadOnly) {
		t.Errorf("NewServer over a read-only Dir: got %v, want ErrReadOnly", err)
	}
}

// mustReadOnly opens dir read-only.
func mustReadOnly(tb testing.TB, dir string) *witness.Dir {
	tb.Helper()
	d, err := witness.OpenDirReadOnly(context.Background(), dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	return d
}

// TestServerRun: Run signs at once and then as the log grows.
func TestServerRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ws, wv, _ := keytest.New(t, "witness.example")
	writer, _, writerV := keytest.New(t, "agent-a.example")
	srv := newWitnessServer(t, "", ws, wv, "writer "+writerV+"\n")
	done := make(chan error)
	go func() { done <- srv.s.Run(ctx, 10*time.Millisecond) }()
	c := newClient(t, srv.url)
	if _, err := c.Add(ctx, sign(t, statement(0), writer)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		signed, err := c.Checkpoint(ctx)
		if err == nil {
			if cp, err := witness.OpenCheckpoint(signed, wv); err == nil && cp.Size == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of size 1 after 10s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
