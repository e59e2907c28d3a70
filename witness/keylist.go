package witness

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// KeyList says which keys an auditor trusts: the witness's, which signs
// its checkpoints, the writers', each for statements dated in its window,
// and the cosigners', independent witnesses that cosign the witness's
// checkpoints (VerifyCosignatures). Rotating a writer key is closing the old key's window (until)
// where the new key's opens (since): statements signed before stay valid.
//
// Its text form, which ParseKeyList reads, is one key per line, in note's
// verifier key text form (name+hash+base64, as note.GenerateKey or
// trails-admin keygen print it); blank lines and lines starting with '#'
// are ignored:
//
//	# trails key list
//	witness witness.example+8f3c5a21+AZ0...
//	writer agent-a+01b2c3d4+AQx... until 2026-11-20T00:00:00Z
//	writer agent-a-2+5e6f7a8b+Ab9... since 2026-11-20T00:00:00Z
//	cosigner cosigner.example+3c2a1f0e+AT4...
//
// A cosigner line takes the cosigner's key as keygen prints it, or as a
// transparency-dev witness publishes it (an Ed25519 cosignature/v1 key);
// its signatures are read as cosignature/v1 (NewCosignatureVerifier).
// A writer line may give "since T" and "until T" (RFC 3339), in that
// order: the key is trusted for statements dated at or after since and
// before until. A key listed twice, or two keys with one name and hash,
// is an error.
type KeyList struct {
	// Witness verifies the witness's checkpoints; nil when none is listed.
	Witness note.Verifier
	// Writers are the writer keys, in the order listed.
	Writers []TrustedKey
	// Cosigners verify the cosignatures of independent witnesses on the
	// witness's checkpoints, in the order listed.
	Cosigners []note.Verifier
}

// TrustedKey is a writer key and the window it is trusted in.
type TrustedKey struct {
	note.Verifier
	// Since and Until bound the statements' times it is trusted for:
	// Since <= time < Until; a zero bound is open.
	Since, Until time.Time
}

// ParseKeyList reads a key list in its text form (see KeyList). It
// returns ErrMalformed, naming the line, for a line that is not a key
// line, a key note does not read, a time that is not RFC 3339, a window
// that ends before it starts, two witness keys or a key listed twice.
func ParseKeyList(text []byte) (*KeyList, error) {
	l := &KeyList{}
	seen := map[string]bool{}
	for n, line := range bytes.Split(text, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("key list line %d: %w: %s", n+1, ErrMalformed, fmt.Sprintf(format, args...))
		}
		f := strings.Fields(s)
		if len(f) < 2 || (f[0] != "witness" && f[0] != "writer" && f[0] != "cosigner") {
			return nil, bad("want \"witness KEY\", \"writer KEY [since TIME] [until TIME]\" or \"cosigner KEY\"")
		}
		var v note.Verifier
		var err error
		if f[0] == "cosigner" {
			v, err = NewCosignatureVerifier(f[1])
		} else {
			v, err = note.NewVerifier(f[1])
		}
		if err != nil {
			return nil, bad("key %q: %v", clip(f[1]), err)
		}
		id := fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash())
		if seen[id] {
			return nil, bad("key %s listed twice", id)
		}
		seen[id] = true
		if f[0] == "witness" {
			if len(f) != 2 {
				return nil, bad("a witness key has no window")
			}
			if l.Witness != nil {
				return nil, bad("a second witness key")
			}
			l.Witness = v
			continue
		}
		if f[0] == "cosigner" {
			if len(f) != 2 {
				return nil, bad("a cosigner key has no window")
			}
			l.Cosigners = append(l.Cosigners, v)
			continue
		}
		k := TrustedKey{Verifier: v}
		rest := f[2:]
		for _, bound := range []struct {
			word string
			t    *time.Time
		}{{"since", &k.Since}, {"until", &k.Until}} {
			if len(rest) >= 2 && rest[0] == bound.word {
				t, err := time.Parse(time.RFC3339Nano, rest[1])
				if err != nil {
					return nil, bad("%s %q: want an RFC 3339 time", bound.word, clip(rest[1]))
				}
				*bound.t, rest = t, rest[2:]
			}
		}
		if len(rest) > 0 {
			return nil, bad("unexpected %q (want since TIME, then until TIME)", clip(rest[0]))
		}
		if !k.Since.IsZero() && !k.Until.IsZero() && !k.Since.Before(k.Until) {
			return nil, bad("the window ends (until %s) before it starts (since %s)", k.Until.Format(time.RFC3339), k.Since.Format(time.RFC3339))
		}
		l.Writers = append(l.Writers, k)
	}
	return l, nil
}

// Verifiers returns the writer keys, for Open and Heads, whatever their
// windows: a statement they open is then checked with Trusts.
func (l *KeyList) Verifiers() note.Verifiers {
	vs := make([]note.Verifier, len(l.Writers))
	for i, k := range l.Writers {
		vs[i] = k.Verifier
	}
	return note.VerifierList(vs...)
}

// CosignerVerifiers returns the cosigner keys, for VerifyCosignatures.
func (l *KeyList) CosignerVerifiers() note.Verifiers {
	return note.VerifierList(l.Cosigners...)
}

// Trusts reports whether the writer key that made sig (by name and hash)
// is trusted for a statement dated at.
func (l *KeyList) Trusts(sig note.Signature, at time.Time) bool {
	for _, k := range l.Writers {
		if k.Name() == sig.Name && k.KeyHash() == sig.Hash {
			return (k.Since.IsZero() || !at.Before(k.Since)) && (k.Until.IsZero() || at.Before(k.Until))
		}
	}
	return false
}
