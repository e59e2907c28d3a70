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
	// KindMerge: the merge turn whose chain digest is Chain, which left the
	// session at Turns turns, holds the merge result whose digest is Digest
	// (session.MergeDigest: the merged child, its status, range and
	// artifacts, which are written beside the turn and not in its chain
	// digest). It comes after the head statement of the same write, and
	// is no head: verify compares it with the stored result.
	KindMerge Kind = "merge"
)

// known reports whether this version reads statements of kind k.
func (k Kind) known() bool { return k == KindHead || k == KindDeletion || k == KindMerge }

// statementHeader and statementHeaderV2 are the first line of a
// statement of version 1 and 2: it keeps a statement from being taken for
// another note signed by the same key.
const (
	statementHeader   = "trails statement v1"
	statementHeaderV2 = "trails statement v2"
)

// HeadRef names a session's head as a statement's prev line does: its own
// turn count and the chain digest of its last own turn ("" when it has
// none).
type HeadRef struct {
	Turns uint64
	Chain string
}

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
//
// Version 2 (Version 2; what Trails signs since issue 37) adds two lines
// after chain, so that each session's statements form a chain and a fork's
// link is signed even when it has no turn of its own:
//
//	trails statement v2
//	kind head
//	session 0f8a6c1e-2b1d-4a57-9d7e-6c1f2f1f0b1e
//	turns 12
//	digest sha256:5f1c...
//	chain sha256:9a0e...
//	prev 11 sha256:77b2...
//	parent 3c9d0e4f-1a2b-4c3d-8e5f-6a7b8c9d0e1f 4
//	time 2026-11-26T11:30:02.123Z
//	position kafka:trails/0@123
//
// "prev TURNS CHAIN" is the head the write replaced (Replaces, Prev; "prev
// TURNS" when it had no chain, "prev" alone when the session is new with
// this write: a new session, fork or archive); "parent ID AT" is the fork
// link the write left (Parent, ForkedAt; "parent" alone for a root or a
// detached fork).
type Statement struct {
	Kind     Kind
	Session  string
	Turns    uint64
	Digest   string
	Chain    string
	Time     time.Time
	Position string

	// Version is 2 for a statement of version 2; 0 for version 1, the
	// eight lines without Prev and Parent that Trails signed before.
	Version int
	// Replaces says that the write replaced head Prev (version 2); false
	// when the session is new with it.
	Replaces bool
	Prev     HeadRef
	// Parent and ForkedAt are the session's fork link after the write
	// (version 2): its parent's id and its fork point; "" and 0 for a
	// root.
	Parent   string
	ForkedAt uint64
}

// Marshal returns s's canonical text, with its time rounded down to the
// millisecond in UTC. It returns ErrMalformed (or ErrUnknownKind) for a
// field that cannot be written canonically.
func (s Statement) Marshal() ([]byte, error) {
	if !s.Kind.known() {
		return nil, fmt.Errorf("marshal statement: %w: %q", ErrUnknownKind, string(s.Kind))
	}
	v2 := s.Version == 2
	if !v2 && (s.Version != 0 || s.Replaces || s.Prev != (HeadRef{}) || s.Parent != "" || s.ForkedAt != 0) {
		return nil, fmt.Errorf("marshal statement: %w: version %d with the fields of version 2", ErrMalformed, s.Version)
	}
	if !s.Replaces && s.Prev != (HeadRef{}) {
		return nil, fmt.Errorf("marshal statement: %w: a previous head without Replaces", ErrMalformed)
	}
	if s.Parent == "" && s.ForkedAt != 0 {
		return nil, fmt.Errorf("marshal statement: %w: a fork point without a parent", ErrMalformed)
	}
	for _, f := range []struct {
		name, v  string
		optional bool
	}{{"session", s.Session, false}, {"digest", s.Digest, false}, {"chain", s.Chain, true}, {"position", s.Position, true}, {"prev chain", s.Prev.Chain, true}, {"parent", s.Parent, true}} {
		if err := checkWord(f.v, f.optional); err != nil {
			return nil, fmt.Errorf("marshal statement: %w: %s %w", ErrMalformed, f.name, err)
		}
	}
	if y := s.Time.UTC().Year(); s.Time.IsZero() || y < 1 || y > 9999 {
		return nil, fmt.Errorf("marshal statement: %w: time %v, want one in years 1 to 9999", ErrMalformed, s.Time)
	}
	var b bytes.Buffer
	if v2 {
		b.WriteString(statementHeaderV2 + "\n")
	} else {
		b.WriteString(statementHeader + "\n")
	}
	b.WriteString("kind " + string(s.Kind) + "\n")
	b.WriteString("session " + s.Session + "\n")
	b.WriteString("turns " + strconv.FormatUint(s.Turns, 10) + "\n")
	b.WriteString("digest " + s.Digest + "\n")
	if s.Chain == "" {
		b.WriteString("chain\n")
	} else {
		b.WriteString("chain " + s.Chain + "\n")
	}
	if v2 {
		b.WriteString("prev")
		if s.Replaces {
			b.WriteString(" " + strconv.FormatUint(s.Prev.Turns, 10))
			if s.Prev.Chain != "" {
				b.WriteString(" " + s.Prev.Chain)
			}
		}
		b.WriteString("\nparent")
		if s.Parent != "" {
			b.WriteString(" " + s.Parent + " " + strconv.FormatUint(s.ForkedAt, 10))
		}
		b.WriteString("\n")
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
	var t Statement
	keys := []string{"kind", "session", "turns", "digest", "chain", "time", "position"}
	switch {
	case lines[0] == statementHeader && len(lines) == 8:
	case lines[0] == statementHeaderV2 && len(lines) == 10:
		t.Version = 2
		keys = []string{"kind", "session", "turns", "digest", "chain", "prev", "parent", "time", "position"}
	case lines[0] == statementHeader || lines[0] == statementHeaderV2:
		return fmt.Errorf("unmarshal statement: %w: %d lines, want %d", ErrMalformed, len(lines), map[string]int{statementHeader: 8, statementHeaderV2: 10}[lines[0]])
	default:
		return fmt.Errorf("unmarshal statement: %w: first line %q, want %q or %q", ErrMalformed, clip(lines[0]), statementHeader, statementHeaderV2)
	}
	vals := make([]string, len(keys))
	for i, k := range keys {
		line := lines[i+1]
		v, ok := strings.CutPrefix(line, k+" ")
		switch {
		case ok:
			vals[i] = v
		case (k == "chain" || k == "position" || k == "prev" || k == "parent") && line == k:
			// An empty chain or position, no head replaced, no parent.
		default:
			return fmt.Errorf("unmarshal statement: %w: line %d %q, want %q", ErrMalformed, i+2, clip(line), k+" ...")
		}
	}
	if t.Version == 2 {
		// prev and parent: read, then taken out so that the rest reads
		// as version 1's.
		prev, parent := vals[5], vals[6]
		vals = append(vals[:5], vals[7:]...)
		if prev != "" {
			n, chain, _ := strings.Cut(prev, " ")
			turns, err := strconv.ParseUint(n, 10, 64)
			if err != nil {
				return fmt.Errorf("unmarshal statement: %w: prev %q", ErrMalformed, clip(prev))
			}
			t.Replaces, t.Prev = true, HeadRef{Turns: turns, Chain: chain}
		}
		if parent != "" {
			id, at, ok := strings.Cut(parent, " ")
			n, err := strconv.ParseUint(at, 10, 64)
			if !ok || err != nil {
				return fmt.Errorf("unmarshal statement: %w: parent %q", ErrMalformed, clip(parent))
			}
			t.Parent, t.ForkedAt = id, n
		}
	}
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
