package witness_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/witness"
	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// cosignerServer is a witness.Cosigner served by httptest, with its public
// key as a key list's cosigner line reads it.
type cosignerServer struct {
	c     *witness.Cosigner
	url   string
	state string
	v     note.Verifier // its cosignature verifier
	vkey  string
	skey  string
}

// newCosigner starts a Cosigner witnessing the logs of keys logs, keeping
// its state in state (a new directory when ""), with key skey (a new one
// when "").
func newCosigner(tb testing.TB, state, skey string, logs ...note.Verifier) *cosignerServer {
	tb.Helper()
	if state == "" {
		state = tb.TempDir()
	}
	var vkey string // known for a new key only
	if skey == "" {
		skey, vkey = keytest.Text(tb, "cosigner.example")
	}
	signer, err := witness.NewCosignatureSigner(skey)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := witness.NewCosigner(witness.CosignerConfig{Signer: signer, Logs: logs, State: state, Logger: quietLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	hs := httptest.NewServer(c)
	tb.Cleanup(hs.Close)
	cs := &cosignerServer{c: c, url: hs.URL, state: state, vkey: vkey, skey: skey}
	if vkey != "" {
		if cs.v, err = witness.NewCosignatureVerifier(vkey); err != nil {
			tb.Fatal(err)
		}
	}
	return cs
}

// TestSplitViewCaughtByCosigner: a witness operator (who holds the
// witness key and its directory) forks its log, showing one auditor log A
// and another log B, of the same size with different roots, each with a
// valid checkpoint signed by the witness key. Without a cosigner both
// auditors accept what they see. With checkpoints required to carry a
// cosignature of an independent cosigner, the cosigner cosigns the first
// it sees and refuses the other (it cosigned another root of that size),
// so the second auditor's VerifyCosignatures fails.
func TestSplitViewCaughtByCosigner(t *testing.T) {
	ctx := context.Background()
	ws, wv, wvkey := keytest.New(t, "witness.example")
	writer, _, writerV := keytest.New(t, "agent-a.example")
	cosigner := newCosigner(t, "", "", wv)
	keyText := "witness " + wvkey + "\nwriter " + writerV + "\ncosigner " + cosigner.vkey + "\n"
	client := &witness.CosignerClient{URL: cosigner.url}

	// The honest log to size 3, cosigned; then the operator copies the
	// directory and extends each copy with a different statement.
	a := newWitnessServer(t, "", ws, wv, keyText, client)
	for i := range 3 {
		if _, err := a.d.Add(ctx, sign(t, statement(i), writer)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.s.Sign(ctx); err != nil {
		t.Fatal(err)
	}
	b := newWitnessServer(t, copyDir(t, a.dir), ws, wv, keyText, client)
	if _, err := a.d.Add(ctx, sign(t, statement(3), writer)); err != nil {
		t.Fatal(err)
	}
	forked := statement(3)
	forked.Digest = "sha256:" + strings.Repeat("f", 64)
	if _, err := b.d.Add(ctx, sign(t, forked, writer)); err != nil {
		t.Fatal(err)
	}

	cpA, err := a.s.Sign(ctx) // the cosigner sees A first
	if err != nil {
		t.Fatal(err)
	}
	cpB, err := b.s.Sign(ctx) // B's cosign request fails; Sign logs it
	if err != nil {
		t.Fatal(err)
	}
	keys, err := witness.ParseKeyList([]byte(keyText))
	if err != nil {
		t.Fatal(err)
	}

	// Each auditor reads its own view over HTTP with the public keys.
	view := func(url string) ([]byte, log.Checkpoint) {
		signed, cp, err := witness.Audit(ctx, newClient(t, url), keys.Witness, nil)
		if err != nil {
			t.Fatalf("Audit %s: %v", url, err)
		}
		return signed, cp
	}
	signedA, viewA := view(a.url)
	signedB, viewB := view(b.url)
	if viewA.Size != viewB.Size || bytes.Equal(viewA.Hash, viewB.Hash) {
		t.Fatalf("the fork: sizes %d and %d, roots equal %v; want one size, two roots", viewA.Size, viewB.Size, bytes.Equal(viewA.Hash, viewB.Hash))
	}
	if !bytes.Equal(signedA, cpA) || !bytes.Equal(signedB, cpB) {
		t.Fatal("the servers serve other checkpoints than Sign returned")
	}
	// Both checkpoints carry the witness key's valid signature: without
	// cosignatures each auditor is satisfied.
	if err := witness.VerifyCosignatures(signedA, keys.CosignerVerifiers(), 1); err != nil {
		t.Errorf("auditor of A, one cosignature required: %v", err)
	}
	if err := witness.VerifyCosignatures(signedB, keys.CosignerVerifiers(), 1); !errors.Is(err, witness.ErrCosignatures) {
		t.Errorf("auditor of B, one cosignature required: got %v, want ErrCosignatures", err)
	}

	// B's request, as the operator would retry it: the cosigner holds A's
	// root at this size.
	p, err := b.d.ConsistencyProof(ctx, viewB.Size, viewB.Size)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.AddCheckpoint(ctx, viewB.Size, p, signedB)
	var conflict *witness.ConflictError
	if !errors.As(err, &conflict) || !conflict.Fork || !errors.Is(err, witness.ErrInconsistent) {
		t.Fatalf("cosign B at its size: got %v, want a *ConflictError naming a fork", err)
	}
	// B grown past A: its consistency proof from A's size fails.
	if _, err := b.d.Add(ctx, sign(t, statement(4), writer)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.Sign(ctx); err != nil {
		t.Fatal(err)
	}
	signedB, viewB = view(b.url)
	if err := witness.VerifyCosignatures(signedB, keys.CosignerVerifiers(), 1); !errors.Is(err, witness.ErrCosignatures) {
		t.Errorf("auditor of B grown: got %v, want ErrCosignatures", err)
	}
	p, err = b.d.ConsistencyProof(ctx, viewA.Size, viewB.Size)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.AddCheckpoint(ctx, viewA.Size, p, stripSigs(t, signedB)); !errors.Is(err, witness.ErrInconsistent) {
		t.Fatalf("cosign B grown: got %v, want ErrInconsistent", err)
	}
	// The cosigner keeps what it cosigned across restarts.
	again := newCosigner(t, cosigner.state, cosigner.skey, wv)
	if _, err := again.c.AddCheckpoint(ctx, viewA.Size, p, stripSigs(t, signedB)); !errors.Is(err, witness.ErrInconsistent) {
		t.Fatalf("cosign B grown, the cosigner restarted: got %v, want ErrInconsistent", err)
	}
	// A, honest, goes on being cosigned.
	if _, err := a.d.Add(ctx, sign(t, statement(5), writer)); err != nil {
		t.Fatal(err)
	}
	cpA, err = a.s.Sign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := witness.VerifyCosignatures(cpA, keys.CosignerVerifiers(), 1); err != nil {
		t.Errorf("A grown: %v", err)
	}
}

// stripSigs returns signed with only its first signature, the witness's.
func stripSigs(tb testing.TB, signed []byte) []byte {
	tb.Helper()
	i := bytes.Index(signed, []byte("\n\n"))
	j := bytes.IndexByte(signed[i+2:], '\n')
	return signed[:i+2+j+1]
}

// encodeProof returns proof hashes as tlog-witness proof lines.
func encodeProof(p [][]byte) string {
	var b strings.Builder
	for _, h := range p {
		b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
	}
	return b.String()
}

// TestCosignerRefuses: the cosigner cosigns nothing it cannot vouch for,
// and answers with tlog-witness's statuses.
func TestCosignerRefuses(t *testing.T) {
	ctx := context.Background()
	ws, wv, _ := keytest.New(t, "witness.example")
	other, _, _ := keytest.New(t, "witness.example") // same origin, another key
	writer, _, _ := keytest.New(t, "agent-a.example")
	cs := newCosigner(t, "", "", wv)
	d := openDir(t, t.TempDir(), ws)
	for i := range 4 {
		if _, err := d.Add(ctx, sign(t, statement(i), writer)); err != nil {
			t.Fatal(err)
		}
	}
	cp4 := checkpoint(t, d)
	if _, err := cs.c.AddCheckpoint(ctx, 0, nil, cp4); err != nil {
		t.Fatalf("first checkpoint: %v", err)
	}
	forged, err := note.Sign(&note.Note{Text: noteText(t, cp4)}, other)
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := note.Sign(&note.Note{Text: "log.other.example\n4\n" + strings.Repeat("A", 43) + "=\n"}, other)
	if err != nil {
		t.Fatal(err)
	}
	emptyLog := openDir(t, t.TempDir(), ws)
	cp0 := checkpoint(t, emptyLog)
	for _, tc := range []struct {
		name   string
		body   string
		want   error
		status int
	}{
		{"checkpoint of an unknown origin", "old 4\n\n" + string(unknown), witness.ErrUnknownOrigin, http.StatusNotFound},
		{"checkpoint signed by another key of the origin's name", "old 4\n\n" + string(forged), witness.ErrUnknownKey, http.StatusForbidden},
		{"old size past the checkpoint", "old 5\n\n" + string(cp4), witness.ErrMalformed, http.StatusBadRequest},
		{"rollback to the empty log", "old 0\n\n" + string(cp0), witness.ErrConflict, http.StatusConflict},
		{"not the size last cosigned", "old 2\n" + proofLines(t, d, 2, 4) + "\n" + string(cp4), witness.ErrConflict, http.StatusConflict},
		{"no old line", string(cp4), witness.ErrMalformed, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(cs.url+"/add-checkpoint", "text/plain", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("got status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status == http.StatusConflict && resp.Header.Get("Content-Type") != "text/x.tlog.size" {
				t.Errorf("409 of Content-Type %q, want text/x.tlog.size", resp.Header.Get("Content-Type"))
			}
		})
	}
	// A forged proof for a grown log.
	if _, err := d.Add(ctx, sign(t, statement(4), writer)); err != nil {
		t.Fatal(err)
	}
	cp5 := checkpoint(t, d)
	p, err := d.ConsistencyProof(ctx, 4, 5)
	if err != nil {
		t.Fatal(err)
	}
	p[0] = bytes.Repeat([]byte{7}, 32)
	resp, err := http.Post(cs.url+"/add-checkpoint", "text/plain", strings.NewReader("old 4\n"+encodeProof(p)+"\n"+string(cp5)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("forged proof: got status %d, want 422", resp.StatusCode)
	}
	sigs, err := (&witness.CosignerClient{URL: cs.url}).AddCheckpoint(ctx, 4, mustProof(t, d, 4, 5), cp5)
	if err != nil {
		t.Fatalf("the honest request: %v", err)
	}
	if err := witness.VerifyCosignatures([]byte(noteText(t, cp5)+"\n"+string(sigs)), note.VerifierList(cs.v), 1); err != nil {
		t.Errorf("its cosignature: %v", err)
	}
}

// noteText returns the text of a signed note.
func noteText(tb testing.TB, signed []byte) string {
	tb.Helper()
	i := bytes.Index(signed, []byte("\n\n"))
	if i < 0 {
		tb.Fatalf("not a note: %q", signed)
	}
	return string(signed[:i+1])
}

// mustProof returns d's consistency proof from to.
func mustProof(tb testing.TB, d *witness.Dir, from, to uint64) [][]byte {
	tb.Helper()
	p, err := d.ConsistencyProof(context.Background(), from, to)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// proofLines returns d's consistency proof as tlog-witness proof lines.
func proofLines(tb testing.TB, d *witness.Dir, from, to uint64) string {
	return encodeProof(mustProof(tb, d, from, to))
}
