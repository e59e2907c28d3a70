package witness

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
)

// Kind says what a Statement states.
type Kind string

// The kinds of statement this version writes and reads. Others (a fork, a
// rewind) may come; Open refuses a kind it does not know with
// ErrUnknownKind.
const (
	// KindHead: after an acknowledged write, the session has Turns turns
	// and head digest Digest.
	KindHead Kind = "head"
	// KindDeletion: the session, last at Turns turns and head digest Digest,
	// was deleted on purpose by the key's holder.
	KindDeletion Kind = "deletion"
)

// known reports whether this version reads statements of kind k.
func (k Kind) known() bool { return k == KindHead || k == KindDeletion }

// statementHeader is the first line of every statement: it keeps a
// statement from being taken for another note signed by the same key.
const statementHeader = "trails statement v1"

// timeLayout is how a Statement's time is written: UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z"

// Statement is what a writer signs about one session: its turn count,
// head digest (trails:headDigest, as the store holds it, e.g.
// "sha256:<hex>") and chain digest (the trails:digest of the last turn in
// its own graph, which covers every field of every turn of its history;
// empty when it has no turn of its own) at Time, after the write at log
// position Position (opaque to this package, e.g. "kafka:trails/0@123";
// empty for a single store).
//
// Its canonical text, which Marshal writes and Unmarshal alone accepts, is
// eight lines, each ending in a newline:
//
//	trails statement v1
//	kind head
//	session 0f8a6c1e-2b1d-4a57-9d7e-6c1f2f1f0b1e
//	turns 12
//	digest sha256:5f1c...
//	chain sha256:9a0e...
//	time 2026-11-26T11:30:02.123Z
//	position kafka:trails/0@123
//
// An empty chain or position is the line "chain" or "position" alone.
// Session, Digest, Chain and Position are printable UTF-8 with no spaces;
// Turns is decimal without leading zeros; Time is UTC to the millisecond.
type Statement struct {
	Kind     Kind
	Session  string
	Turns    uint64
	Digest   string
	Chain    string
	Time     time.Time
	Position string
}

// Marshal returns s's canonical text, with its time rounded down to the
// millisecond in UTC. It returns ErrMalformed (or ErrUnknownKind) for a
// field that cannot be written canonically.
func (s Statement) Marshal() ([]byte, error) {
	if !s.Kind.known() {
		return nil, fmt.Errorf("marshal statement: %w: %q", ErrUnknownKind, string(s.Kind))
	}
	for _, f := range []struct {
		name, v  string
		optional bool
	}{{"session", s.Session, false}, {"digest", s.Digest, false}, {"chain", s.Chain, true}, {"position", s.Position, true}} {
		if err := checkWord(f.v, f.optional); err != nil {
			return nil, fmt.Errorf("marshal statement: %w: %s %w", ErrMalformed, f.name, err)
		}
	}
	if y := s.Time.UTC().Year(); s.Time.IsZero() || y < 1 || y > 9999 {
		return nil, fmt.Errorf("marshal statement: %w: time %v, want one in years 1 to 9999", ErrMalformed, s.Time)
	}
	var b bytes.Buffer
	b.WriteString(statementHeader + "\n")
	b.WriteString("kind " + string(s.Kind) + "\n")
	b.WriteString("session " + s.Session + "\n")
	b.WriteString("turns " + strconv.FormatUint(s.Turns, 10) + "\n")
	b.WriteString("digest " + s.Digest + "\n")
	if s.Chain == "" {
		b.WriteString("chain\n")
	} else {
		b.WriteString("chain " + s.Chain + "\n")
	}
	b.WriteString("time " + s.Time.UTC().Truncate(time.Millisecond).Format(timeLayout) + "\n")
	if s.Position == "" {
		b.WriteString("position\n")
	} else {
		b.WriteString("position " + s.Position + "\n")
	}
	return b.Bytes(), nil
}

// Unmarshal parses text in canonical form into s. It returns ErrMalformed
// for text that is not, and ErrUnknownKind for a kind this version does not
// read.
func (s *Statement) Unmarshal(text []byte) error {
	if !utf8.Valid(text) || !bytes.HasSuffix(text, []byte("\n")) {
		return fmt.Errorf("unmarshal statement: %w: not UTF-8 text ending in a newline", ErrMalformed)
	}
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	if len(lines) != 8 {
		return fmt.Errorf("unmarshal statement: %w: %d lines, want 8", ErrMalformed, len(lines))
	}
	if lines[0] != statementHeader {
		return fmt.Errorf("unmarshal statement: %w: first line %q, want %q", ErrMalformed, clip(lines[0]), statementHeader)
	}
	keys := []string{"kind", "session", "turns", "digest", "chain", "time", "position"}
	vals := make([]string, len(keys))
	for i, k := range keys {
		line := lines[i+1]
		v, ok := strings.CutPrefix(line, k+" ")
		switch {
		case ok:
			vals[i] = v
		case (k == "chain" || k == "position") && line == k:
			// An empty chain or position.
		default:
			return fmt.Errorf("unmarshal statement: %w: line %d %q, want %q", ErrMalformed, i+2, clip(line), k+" ...")
		}
	}
	var t Statement
	t.Kind = Kind(vals[0])
	if !t.Kind.known() {
		return fmt.Errorf("unmarshal statement: %w: %q", ErrUnknownKind, clip(vals[0]))
	}
	t.Session, t.Digest, t.Chain, t.Position = vals[1], vals[3], vals[4], vals[6]
	n, err := strconv.ParseUint(vals[2], 10, 64)
	if err != nil {
		return fmt.Errorf("unmarshal statement: %w: turns %q", ErrMalformed, clip(vals[2]))
	}
	t.Turns = n
	if t.Time, err = time.Parse(timeLayout, vals[5]); err != nil {
		return fmt.Errorf("unmarshal statement: %w: time %q", ErrMalformed, clip(vals[5]))
	}
	// Marshal checks every field; a text it would not write the same way
	// (leading zeros, a space in a field) is not canonical.
	back, err := t.Marshal()
	if err != nil {
		return fmt.Errorf("unmarshal statement: %w", err)
	}
	if !bytes.Equal(back, text) {
		return fmt.Errorf("unmarshal statement: %w: not in canonical form", ErrMalformed)
	}
	*s = t
	return nil
}

// Sign returns s as a note signed by signer (see NewSigner, or
// note.NewSigner for a key in note's text form). It returns the errors of
// Marshal, or the signer's.
func Sign(s Statement, signer note.Signer) ([]byte, error) {
	text, err := s.Marshal()
	if err != nil {
		return nil, err
	}
	msg, err := note.Sign(&note.Note{Text: string(text)}, signer)
	if err != nil {
		return nil, fmt.Errorf("sign statement: %w", err)
	}
	return msg, nil
}

// Open verifies msg, a note signed by Sign, against the trusted keys known
// (note.VerifierList) and returns its statement and the first
// trusted signature on it (its Name and Hash name the key).
//
// It returns ErrUnknownKey when no trusted key signed msg, ErrBadSignature
// when a trusted key's signature does not verify (the text was changed),
// ErrMalformed for a note or a statement that does not parse, and
// ErrUnknownKind for a kind this version does not read. The note package's
// own error is wrapped too (errors.As to *note.UnverifiedNoteError or
// *note.InvalidSignatureError).
func Open(msg []byte, known note.Verifiers) (Statement, note.Signature, error) {
	n, err := openNote(msg, known)
	if err != nil {
		return Statement{}, note.Signature{}, fmt.Errorf("open statement: %w", err)
	}
	var s Statement
	if err := s.Unmarshal([]byte(n.Text)); err != nil {
		return Statement{}, note.Signature{}, fmt.Errorf("open statement: %w", err)
	}
	return s, n.Sigs[0], nil
}

// openNote is note.Open with its errors mapped to this package's.
func openNote(msg []byte, known note.Verifiers) (*note.Note, error) {
	n, err := note.Open(msg, known)
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	var unknown *note.UnknownVerifierError
	switch {
	case err == nil:
		return n, nil
	case errors.As(err, &unverified), errors.As(err, &unknown):
		return nil, fmt.Errorf("%w: %w", ErrUnknownKey, err)
	case errors.As(err, &invalid):
		return nil, fmt.Errorf("%w: %w", ErrBadSignature, err)
	default:
		// note.Open's other errors are a malformed note, or a Verifiers
		// that found two keys of one name and hash.
		return nil, fmt.Errorf("%w: note: %w", ErrMalformed, err)
	}
}

// checkWord returns an error unless v is printable UTF-8 with no spaces,
// of at most 1024 bytes, and not empty unless optional.
func checkWord(v string, optional bool) error {
	switch {
	case v == "" && !optional:
		return errors.New("is empty")
	case len(v) > 1024:
		return errors.New("is over 1024 bytes")
	case !utf8.ValidString(v):
		return errors.New("is not UTF-8")
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("%q has a space or a control character", clip(v))
	}
	return nil
}

// clip cuts s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
