// Package keytest gives tests fresh note keys (golang.org/x/mod/sumdb/note,
// Ed25519), as a writer, a witness or a cosigner holds them: the signer,
// its verifier, and the keys' text forms a key list or a command reads.
//
// It is test support only: no non-test code may import it. It imports no
// package of Trails', so that any package's tests, internal or external,
// can use it without a cycle.
package keytest

import (
	"crypto/rand"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// New returns a new key pair named name: its signer, its verifier and the
// verifier key's text (as a key list's line holds it). It fails tb if a
// key cannot be made.
func New(tb testing.TB, name string) (note.Signer, note.Verifier, string) {
	tb.Helper()
	skey, vkey := Text(tb, name)
	s, err := note.NewSigner(skey)
	if err != nil {
		tb.Fatalf("keytest: signer %s: %v", name, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		tb.Fatalf("keytest: verifier %s: %v", name, err)
	}
	return s, v, vkey
}

// Text returns a new key pair named name in note's text forms: the
// signer key (PRIVATE+KEY+...) and the verifier key. It fails tb if a key
// cannot be made.
func Text(tb testing.TB, name string) (skey, vkey string) {
	tb.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		tb.Fatalf("keytest: generate %s: %v", name, err)
	}
	return skey, vkey
}
