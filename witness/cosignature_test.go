package witness_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// TestVerifyCosignatures: what counts as a cosignature, by the parties
// that could fake one: a witness operator who signs with its own key, or
// with the cosigner's key in plain note form, who repeats one cosigner's
// line, or who edits a cosigned checkpoint.
func TestVerifyCosignatures(t *testing.T) {
	ctx := context.Background()
	ws, wv, wvkey := keytest.New(t, "witness.example")
	writer, _, _ := keytest.New(t, "agent-a.example")
	d := openDir(t, t.TempDir(), ws)
	if _, err := d.Add(ctx, sign(t, statement(0), writer)); err != nil {
		t.Fatal(err)
	}
	signed := checkpoint(t, d)
	text := noteText(t, signed)

	c1s, c1v := keytest.Text(t, "cosigner-1.example")
	c2s, c2v := keytest.Text(t, "cosigner-2.example")
	keys, err := witness.ParseKeyList([]byte("witness " + wvkey + "\ncosigner " + c1v + "\ncosigner " + c2v + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys.Cosigners) != 2 || keys.Witness.Name() != wv.Name() {
		t.Fatalf("key list: got %d cosigners, want 2", len(keys.Cosigners))
	}
	cosign := func(skey string) string {
		s, err := witness.NewCosignatureSigner(skey)
		if err != nil {
			t.Fatal(err)
		}
		n, err := note.Sign(&note.Note{Text: text}, s)
		if err != nil {
			t.Fatal(err)
		}
		return string(n[len(text)+1:])
	}
	plain := func(skey string) string {
		s, err := note.NewSigner(skey)
		if err != nil {
			t.Fatal(err)
		}
		n, err := note.Sign(&note.Note{Text: text}, s)
		if err != nil {
			t.Fatal(err)
		}
		return string(n[len(text)+1:])
	}
	one, two := cosign(c1s), cosign(c2s)
	edited := bytes.Replace([]byte(string(signed)+one), []byte("\n1\n"), []byte("\n2\n"), 1)
	for _, tc := range []struct {
		name string
		note []byte
		n    int
		want error
	}{
		{"none required", signed, 0, nil},
		{"only the witness's signature", signed, 1, witness.ErrCosignatures},
		{"one cosigner", []byte(string(signed) + one), 1, nil},
		{"one cosigner, two required", []byte(string(signed) + one), 2, witness.ErrCosignatures},
		{"one cosigner's line twice, two required", []byte(string(signed) + one + cosign(c1s)), 2, witness.ErrCosignatures},
		{"two cosigners", []byte(string(signed) + one + two), 2, nil},
		{"the cosigner's key as a plain note signature", []byte(string(signed) + plain(c1s)), 1, witness.ErrCosignatures},
		{"a cosigned checkpoint edited", edited, 1, witness.ErrBadSignature},
		{"not a note", []byte("witness.example\n1\n"), 1, witness.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := witness.VerifyCosignatures(tc.note, keys.CosignerVerifiers(), tc.n)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	// A cosignature is no witness signature: the checkpoint's own
	// verifier does not take it.
	if _, err := witness.OpenCheckpoint([]byte(text+"\n"+one), wv); !errors.Is(err, witness.ErrUnknownKey) {
		t.Errorf("OpenCheckpoint of a cosignature alone: got %v, want ErrUnknownKey", err)
	}
}

// TestDirAddCosignatures: cosignatures join the stored checkpoint once,
// and only the checkpoint they cosign.
func TestDirAddCosignatures(t *testing.T) {
	ctx := context.Background()
	ws, _, _ := keytest.New(t, "witness.example")
	writer, _, _ := keytest.New(t, "agent-a.example")
	d := openDir(t, t.TempDir(), ws)
	signed := checkpoint(t, d)
	cs, cv := keytest.Text(t, "cosigner.example")
	s, err := witness.NewCosignatureSigner(cs)
	if err != nil {
		t.Fatal(err)
	}
	v, err := witness.NewCosignatureVerifier(cv)
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(&note.Note{Text: noteText(t, signed)}, s)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := d.AddCosignatures(ctx, cosigned); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.LastCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := string(signed) + string(cosigned[len(noteText(t, signed))+1:]); string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if err := witness.VerifyCosignatures(got, note.VerifierList(v), 1); err != nil {
		t.Fatal(err)
	}
	if cp := checkpoint(t, d); !bytes.Equal(cp, got) {
		t.Fatalf("Checkpoint of an unchanged log: got\n%s\nwant the cosigned one", cp)
	}
	if _, err := d.Add(ctx, sign(t, statement(0), writer)); err != nil {
		t.Fatal(err)
	}
	checkpoint(t, d)
	if err := d.AddCosignatures(ctx, cosigned); !errors.Is(err, witness.ErrStale) {
		t.Fatalf("cosignatures of the older checkpoint: got %v, want ErrStale", err)
	}
}

// TestKeyListCosigners: cosigner lines of a key list.
func TestKeyListCosigners(t *testing.T) {
	_, vkey := keytest.Text(t, "cosigner.example")
	// The same key as a transparency-dev witness publishes it: algorithm
	// 4, its hash over that.
	f := strings.SplitN(vkey, "+", 3)
	key, err := base64.StdEncoding.DecodeString(f[2])
	if err != nil {
		t.Fatal(err)
	}
	key[0] = 4
	h := sha256.Sum256(append([]byte(f[0]+"\n"), key...))
	vkey4 := fmt.Sprintf("%s+%08x+%s", f[0], binary.BigEndian.Uint32(h[:]), base64.StdEncoding.EncodeToString(key))
	badHash := f[0] + "+00000000+" + f[2]
	for _, tc := range []struct {
		name, text string
		want       error
	}{
		{"keygen's form", "cosigner " + vkey + "\n", nil},
		{"algorithm 4", "cosigner " + vkey4 + "\n", nil},
		{"a window", "cosigner " + vkey + " since 2026-11-20T00:00:00Z\n", witness.ErrMalformed},
		{"a hash that is not the key's", "cosigner " + badHash + "\n", witness.ErrMalformed},
		{"not a key", "cosigner cosigner.example\n", witness.ErrMalformed},
		{"listed twice", "cosigner " + vkey + "\ncosigner " + vkey4 + "\n", witness.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := witness.ParseKeyList([]byte(tc.text))
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err == nil && (len(l.Cosigners) != 1 || len(l.Writers) != 0 || l.Witness != nil) {
				t.Fatalf("got %d cosigners, %d writers, witness %v; want one cosigner", len(l.Cosigners), len(l.Writers), l.Witness)
			}
		})
	}
}
