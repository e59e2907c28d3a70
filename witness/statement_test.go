package witness_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

func TestSignOpen(t *testing.T) {
	writer, v, _ := keytest.New(t, "writer.example")
	_, other, _ := keytest.New(t, "other.example")
	known := note.VerifierList(other, v)
	for _, tc := range []struct {
		name string
		s    witness.Statement
	}{
		{"head", statement(4)},
		{"no position", func() witness.Statement { s := statement(1); s.Position = ""; return s }()},
		{"no chain", func() witness.Statement { s := statement(3); s.Chain = ""; return s }()},
		{"deletion", func() witness.Statement { s := statement(2); s.Kind = witness.KindDeletion; return s }()},
		{"zero turns", func() witness.Statement { s := statement(0); s.Turns = 0; return s }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := sign(t, tc.s, writer)
			got, sig, err := witness.Open(msg, known)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if got != tc.s {
				t.Errorf("got %+v, want %+v", got, tc.s)
			}
			if sig.Name != v.Name() || sig.Hash != v.KeyHash() {
				t.Errorf("got signer %s+%08x, want %s+%08x", sig.Name, sig.Hash, v.Name(), v.KeyHash())
			}
		})
	}
}

func TestStatementText(t *testing.T) {
	s := statement(4)
	s.Time = time.Date(2026, 11, 26, 13, 30, 2, 123456789, time.FixedZone("CET", 3600))
	got, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := "trails statement v1\n" +
		"kind head\n" +
		"session 00000000-0000-4000-8000-000000000001\n" +
		"turns 5\n" +
		"digest sha256:0000000000000000000000000000000000000000000000000000000000000004\n" +
		"chain sha256:0000000000000000000000000000000000000000000000000000000000000068\n" +
		"time 2026-11-26T12:30:02.123Z\n" +
		"position kafka:trails/0@4\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestOpenRefuses(t *testing.T) {
	writer, v, _ := keytest.New(t, "writer.example")
	impostor, _, _ := keytest.New(t, "writer.example") // same name, another key
	stranger, _, _ := keytest.New(t, "stranger.example")
	known := note.VerifierList(v)
	good := sign(t, statement(4), writer)
	signText := func(text string) []byte {
		msg, err := note.Sign(&note.Note{Text: text}, writer)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	text, _ := statement(4).Marshal()
	for _, tc := range []struct {
		name string
		msg  []byte
		want error
	}{
		{"wrong key of the same name", sign(t, statement(4), impostor), witness.ErrUnknownKey},
		{"unknown key", sign(t, statement(4), stranger), witness.ErrUnknownKey},
		{"tampered turns", bytes.Replace(good, []byte("turns 5\n"), []byte("turns 4\n"), 1), witness.ErrBadSignature},
		{"tampered digest", bytes.Replace(good, []byte("sha256:0000"), []byte("sha256:0001"), 1), witness.ErrBadSignature},
		{"tampered signature", func() []byte {
			b := bytes.Clone(good)
			i := bytes.LastIndex(b, []byte(" ")) + 10
			// Another base64 letter, not a flipped bit: that may give a
			// character base64 does not have ('z' ^ 1 is '{'), a
			// malformed note instead of a bad signature.
			if b[i] == 'A' {
				b[i] = 'B'
			} else {
				b[i] = 'A'
			}
			return b
		}(), witness.ErrBadSignature},
		{"not a note", []byte("hello\n"), witness.ErrMalformed},
		{"signed non-statement", signText("go.sum database tree\n5\nAAAA\n"), witness.ErrMalformed},
		{"signed non-canonical", signText(strings.Replace(string(text), "turns 5", "turns 05", 1)), witness.ErrMalformed},
		{"signed unknown kind", signText(strings.Replace(string(text), "kind head", "kind fork", 1)), witness.ErrUnknownKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := witness.Open(tc.msg, known)
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestUnmarshalRefuses(t *testing.T) {
	good, err := statement(4).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string { return strings.Replace(string(good), old, new, 1) }
	for _, tc := range []struct {
		name, text string
		want       error
	}{
		{"no final newline", strings.TrimSuffix(string(good), "\n"), witness.ErrMalformed},
		{"header", edit("trails statement v1", "trails statement v2"), witness.ErrMalformed},
		{"missing line", edit("turns 5\n", ""), witness.ErrMalformed},
		{"extra line", string(good) + "note hi\n", witness.ErrMalformed},
		{"blank line", string(good) + "\n", witness.ErrMalformed},
		{"lines out of order", edit("kind head\nsession 00000000-0000-4000-8000-000000000001\n", "session 00000000-0000-4000-8000-000000000001\nkind head\n"), witness.ErrMalformed},
		{"leading zero", edit("turns 5", "turns 05"), witness.ErrMalformed},
		{"negative turns", edit("turns 5", "turns -5"), witness.ErrMalformed},
		{"two spaces", edit("turns 5", "turns  5"), witness.ErrMalformed},
		{"carriage return", edit("turns 5\n", "turns 5\r\n"), witness.ErrMalformed},
		{"space in session", edit("session 0000", "session 00 00"), witness.ErrMalformed},
		{"empty session", edit("session 00000000-0000-4000-8000-000000000001", "session "), witness.ErrMalformed},
		{"empty digest", edit("digest sha256:0000000000000000000000000000000000000000000000000000000000000004", "digest"), witness.ErrMalformed},
		{"chain with a trailing space", edit("chain sha256:0000000000000000000000000000000000000000000000000000000000000068", "chain "), witness.ErrMalformed},
		{"chain and digest swapped", edit("digest sha256:0000000000000000000000000000000000000000000000000000000000000004\nchain sha256:0000000000000000000000000000000000000000000000000000000000000068", "chain sha256:0000000000000000000000000000000000000000000000000000000000000068\ndigest sha256:0000000000000000000000000000000000000000000000000000000000000004"), witness.ErrMalformed},
		{"time zone", edit("12:00:04.000Z", "13:00:04.000+01:00"), witness.ErrMalformed},
		{"time in seconds", edit("12:00:04.000Z", "12:00:04Z"), witness.ErrMalformed},
		{"position with a trailing space", edit("position kafka:trails/0@4", "position "), witness.ErrMalformed},
		{"control character", edit("kafka:trails", "kafka:\x01trails"), witness.ErrMalformed},
		{"unknown kind", edit("kind head", "kind rewind"), witness.ErrUnknownKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s witness.Statement
			err := s.Unmarshal([]byte(tc.text))
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMarshalRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*witness.Statement)
		want error
	}{
		{"no kind", func(s *witness.Statement) { s.Kind = "" }, witness.ErrUnknownKind},
		{"no session", func(s *witness.Statement) { s.Session = "" }, witness.ErrMalformed},
		{"newline in session", func(s *witness.Statement) { s.Session += "\nturns 9" }, witness.ErrMalformed},
		{"no digest", func(s *witness.Statement) { s.Digest = "" }, witness.ErrMalformed},
		{"no time", func(s *witness.Statement) { s.Time = time.Time{} }, witness.ErrMalformed},
		{"time past 9999", func(s *witness.Statement) { s.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, witness.ErrMalformed},
		{"space in position", func(s *witness.Statement) { s.Position = "a b" }, witness.ErrMalformed},
		{"space in chain", func(s *witness.Statement) { s.Chain = "sha256: 0" }, witness.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := statement(1)
			tc.edit(&s)
			if _, err := s.Marshal(); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzUnmarshal checks that a text Unmarshal accepts is the one Marshal
// writes.
func FuzzUnmarshal(f *testing.F) {
	for i := range 3 {
		b, _ := statement(i).Marshal()
		f.Add(b)
	}
	f.Add([]byte("trails statement v1\nkind deletion\nsession x\nturns 0\ndigest d\nchain\ntime 2026-01-01T00:00:00.000Z\nposition\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		var s witness.Statement
		if s.Unmarshal(text) != nil {
			return
		}
		back, err := s.Marshal()
		if err != nil || !bytes.Equal(back, text) {
			t.Errorf("got %q, %v; want %q", back, err, text)
		}
	})
}

// TestStatementV2: version 2 names the head a statement replaces and the
// session's fork link; its text is canonical, and version 1 still reads.
func TestStatementV2(t *testing.T) {
	writer, v, _ := keytest.New(t, "writer.example")
	known := note.VerifierList(v)
	s := statement(4)
	s.Version, s.Replaces, s.Prev = 2, true, witness.HeadRef{Turns: 4, Chain: "sha256:77"}
	s.Parent, s.ForkedAt = "00000000-0000-4000-8000-000000000009", 2
	got, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := "trails statement v2\n" +
		"kind head\n" +
		"session 00000000-0000-4000-8000-000000000001\n" +
		"turns 5\n" +
		"digest sha256:0000000000000000000000000000000000000000000000000000000000000004\n" +
		"chain sha256:0000000000000000000000000000000000000000000000000000000000000068\n" +
		"prev 4 sha256:77\n" +
		"parent 00000000-0000-4000-8000-000000000009 2\n" +
		"time 2026-11-26T12:00:04.000Z\n" +
		"position kafka:trails/0@4\n"
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	for _, tc := range []struct {
		name string
		s    witness.Statement
		line string
	}{
		{"a fork", s, "prev 4 sha256:77"},
		{"a new root", func() witness.Statement {
			s := s
			s.Replaces, s.Prev, s.Parent, s.ForkedAt = false, witness.HeadRef{}, "", 0
			return s
		}(), "prev\nparent\n"},
		{"a head without chain replaced", func() witness.Statement {
			s := s
			s.Prev = witness.HeadRef{Turns: 0}
			return s
		}(), "prev 0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := sign(t, tc.s, writer)
			if !strings.Contains(string(msg), tc.line) {
				t.Errorf("text lacks %q:\n%s", tc.line, msg)
			}
			back, _, err := witness.Open(msg, known)
			if err != nil || back != tc.s {
				t.Fatalf("got %+v, %v, want %+v", back, err, tc.s)
			}
		})
	}
	for _, tc := range []struct {
		name string
		edit func(string) string
	}{
		{"a prev count with a leading zero", func(x string) string { return strings.Replace(x, "prev 4 ", "prev 04 ", 1) }},
		{"a parent without its fork point", func(x string) string { return strings.Replace(x, " 2\ntime", "\ntime", 1) }},
		{"a version 1 header on 10 lines", func(x string) string { return strings.Replace(x, "v2", "v1", 1) }},
		{"a version 2 header on 8 lines", func(x string) string {
			return strings.Replace(strings.Replace(x, "prev 4 sha256:77\n", "", 1), "parent 00000000-0000-4000-8000-000000000009 2\n", "", 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var back witness.Statement
			if err := back.Unmarshal([]byte(tc.edit(want))); !errors.Is(err, witness.ErrMalformed) {
				t.Fatalf("got %v, want ErrMalformed", err)
			}
		})
	}
	v1 := statement(1)
	v1.Parent = "x"
	if _, err := v1.Marshal(); !errors.Is(err, witness.ErrMalformed) {
		t.Errorf("version 1 with a parent: got %v, want ErrMalformed", err)
	}
}
