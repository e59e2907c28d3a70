package witness

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"

	"golang.org/x/mod/sumdb/note"
)

// algEd25519 is the note package's algorithm byte for Ed25519 keys.
const algEd25519 = 1

// NewSigner returns a note.Signer for key under name (a note key name: no
// spaces, no '+'), the same signer as note.NewSigner of the key's text
// form. note.GenerateKey makes a new key pair in text form. It returns
// ErrMalformed for a key of the wrong size or a name note refuses.
func NewSigner(name string, key ed25519.PrivateKey) (note.Signer, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("new signer: %w: private key of %d bytes, want %d", ErrMalformed, len(key), ed25519.PrivateKeySize)
	}
	pub := append([]byte{algEd25519}, key.Public().(ed25519.PublicKey)...)
	h := sha256.Sum256(append([]byte(name+"\n"), pub...))
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, binary.BigEndian.Uint32(h[:]),
		base64.StdEncoding.EncodeToString(append([]byte{algEd25519}, key.Seed()...)))
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("new signer %q: %w: %w", clip(name), ErrMalformed, err)
	}
	return s, nil
}

// NewVerifier returns the note.Verifier of the public key under name, as
// note.NewVerifier of its text form (note.NewEd25519VerifierKey) would. It
// returns ErrMalformed for a key of the wrong size or a name note refuses.
func NewVerifier(name string, key ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := note.NewEd25519VerifierKey(name, key)
	if err != nil {
		return nil, fmt.Errorf("new verifier: %w: %w", ErrMalformed, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("new verifier %q: %w: %w", clip(name), ErrMalformed, err)
	}
	return v, nil
}
