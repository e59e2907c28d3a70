package witness

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// algCosignatureV1 is the note algorithm byte of an Ed25519 key that makes
// timestamped cosignatures (c2sp.org/tlog-cosignature).
const algCosignatureV1 = 4

// cosignatureSize is a cosignature/v1 signature's size: a timestamp (8
// bytes, big-endian Unix seconds) and an Ed25519 signature.
const cosignatureSize = 8 + ed25519.SignatureSize

// NewCosignatureSigner returns a note.Signer that makes cosignature/v1
// signatures (c2sp.org/tlog-cosignature, as the transparency-dev witnesses
// write them) with skey, a secret key in note's text form: an Ed25519 key
// as trails-admin keygen or note.GenerateKey make (algorithm 1), or an
// Ed25519 cosignature key (algorithm 4). A cosignature signs the lines
// "cosignature/v1", "time T" (the Unix time of signing) and then the
// checkpoint's text; its key hash is the one of the key as algorithm 4, so
// that it never verifies as a plain note signature of the same key.
//
// It returns ErrMalformed for a key that does not parse.
func NewCosignatureSigner(skey string) (note.Signer, error) {
	f := strings.SplitN(strings.TrimSpace(skey), "+", 5)
	if len(f) != 5 || f[0] != "PRIVATE" || f[1] != "KEY" {
		return nil, fmt.Errorf("new cosignature signer: %w: not a secret note key (PRIVATE+KEY+name+hash+key)", ErrMalformed)
	}
	key, err := base64.StdEncoding.DecodeString(f[4])
	if err != nil || len(key) != 1+ed25519.SeedSize || (key[0] != algEd25519 && key[0] != algCosignatureV1) {
		return nil, fmt.Errorf("new cosignature signer %q: %w: not an Ed25519 key", clip(f[2]), ErrMalformed)
	}
	if _, err := note.NewEd25519VerifierKey(f[2], make([]byte, ed25519.PublicKeySize)); err != nil {
		return nil, fmt.Errorf("new cosignature signer %q: %w: %w", clip(f[2]), ErrMalformed, err)
	}
	priv := ed25519.NewKeyFromSeed(key[1:])
	pub := priv.Public().(ed25519.PublicKey)
	return &cosigner{name: f[2], hash: cosignatureKeyHash(f[2], pub), key: priv, now: time.Now}, nil
}

// NewCosignatureVerifier returns the note.Verifier of cosignature/v1
// signatures by the public key vkey, in note's text form (name+hash+key):
// an Ed25519 key as keygen prints it (algorithm 1) or an Ed25519
// cosignature key (algorithm 4), as a transparency-dev witness publishes
// it. It returns ErrMalformed for a key that does not parse or whose hash
// is not its own.
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	f := strings.SplitN(strings.TrimSpace(vkey), "+", 3)
	if len(f) != 3 {
		return nil, fmt.Errorf("new cosignature verifier: %w: not a note key (name+hash+key)", ErrMalformed)
	}
	hash, err := strconv.ParseUint(f[1], 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(f[2])
	if err != nil || len(f[1]) != 8 || err2 != nil || len(key) != 1+ed25519.PublicKeySize || (key[0] != algEd25519 && key[0] != algCosignatureV1) {
		return nil, fmt.Errorf("new cosignature verifier %q: %w: not an Ed25519 key", clip(f[0]), ErrMalformed)
	}
	if _, err := note.NewEd25519VerifierKey(f[0], key[1:]); err != nil {
		return nil, fmt.Errorf("new cosignature verifier %q: %w: %w", clip(f[0]), ErrMalformed, err)
	}
	sum := sha256.Sum256(append([]byte(f[0]+"\n"), key...))
	if uint32(hash) != binary.BigEndian.Uint32(sum[:]) {
		return nil, fmt.Errorf("new cosignature verifier %q: %w: key hash %s is not the key's", clip(f[0]), ErrMalformed, f[1])
	}
	pub := ed25519.PublicKey(key[1:])
	return &cosignatureVerifier{name: f[0], hash: cosignatureKeyHash(f[0], pub), key: pub}, nil
}

// VerifyCosignatures checks that at least n of the keys in cosigners
// (cosignature verifiers, from NewCosignatureVerifier or a key list's
// cosigner lines: KeyList.CosignerVerifiers) cosigned signed, a
// checkpoint note. Each key counts once; signatures by other keys (the
// witness's own, unknown cosigners) are ignored. It checks the
// cosignatures only: the checkpoint's own signature is OpenCheckpoint's.
// n <= 0 asks for none.
//
// It returns ErrCosignatures when fewer than n listed keys cosigned (also
// wrapping ErrBadSignature when a listed key's signature does not
// verify: the text was changed after it was cosigned) and ErrMalformed
// for a note that does not parse.
func VerifyCosignatures(signed []byte, cosigners note.Verifiers, n int) error {
	if n <= 0 {
		return nil
	}
	got := 0
	nt, err := note.Open(signed, cosigners)
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	switch {
	case err == nil:
		seen := map[string]bool{}
		for _, s := range nt.Sigs {
			id := fmt.Sprintf("%s+%08x", s.Name, s.Hash)
			if !seen[id] {
				seen[id] = true
				got++
			}
		}
	case errors.As(err, &unverified):
	case errors.As(err, &invalid):
		return fmt.Errorf("verify cosignatures: %w: %w: %w", ErrCosignatures, ErrBadSignature, err)
	default:
		return fmt.Errorf("verify cosignatures: %w: %w", ErrMalformed, err)
	}
	if got < n {
		return fmt.Errorf("verify cosignatures: %w: %d of the %d required", ErrCosignatures, got, n)
	}
	return nil
}

// cosignatureKeyHash is the note key hash of pub as a cosignature/v1 key.
func cosignatureKeyHash(name string, pub ed25519.PublicKey) uint32 {
	sum := sha256.Sum256(append(append([]byte(name+"\n"), algCosignatureV1), pub...))
	return binary.BigEndian.Uint32(sum[:])
}

// cosignedMessage is what a cosignature/v1 signature at Unix time t signs
// of a checkpoint's text.
func cosignedMessage(t uint64, text []byte) []byte {
	return append([]byte("cosignature/v1\ntime "+strconv.FormatUint(t, 10)+"\n"), text...)
}

// cosigner is a note.Signer of cosignature/v1 signatures.
type cosigner struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
	now  func() time.Time
}

func (s *cosigner) Name() string    { return s.name }
func (s *cosigner) KeyHash() uint32 { return s.hash }
func (s *cosigner) Sign(msg []byte) ([]byte, error) {
	t := uint64(s.now().Unix())
	sig := binary.BigEndian.AppendUint64(make([]byte, 0, cosignatureSize), t)
	return append(sig, ed25519.Sign(s.key, cosignedMessage(t, msg))...), nil
}

// cosignatureVerifier is a note.Verifier of cosignature/v1 signatures.
type cosignatureVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosignatureVerifier) Name() string    { return v.name }
func (v *cosignatureVerifier) KeyHash() uint32 { return v.hash }
func (v *cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != cosignatureSize {
		return false
	}
	return ed25519.Verify(v.key, cosignedMessage(binary.BigEndian.Uint64(sig), msg), sig[8:])
}
