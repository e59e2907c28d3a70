package session_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trails-kg/trails/session"
)

// FuzzRoundTrip appends one turn of arbitrary role and content to a new
// session of an arbitrary principal, persists it and loads it back.
//
//   - Valid input (a non-empty principal of UTF-8 without NUL, a non-empty
//     UTF-8 role, UTF-8 content) comes back byte for byte, from Load and
//     from Replay.
//   - Anything else is refused with session.ErrInvalid before any request
//     reaches the store (the client's requests are counted).
//
// The seed corpus, testdata/fuzz/FuzzRoundTrip, holds the nasty cases
// (quotes, long-string quotes, "\u0022" as text, braces, '#' after a line
// break, NUL and other control characters, non-characters, invalid UTF-8 in
// each field, a 128 KiB string); plain go test runs it. To fuzz:
//
//	go test -run '^$' -fuzz FuzzRoundTrip -fuzztime 3m ./session/
//
// and keep what it finds under testdata/fuzz/FuzzRoundTrip as a new seed.
func FuzzRoundTrip(f *testing.F) {
	f.Add("agent-7", "user", "Name a prime number.")
	// A string of a mebibyte (staged: over the 64 KiB a SPARQL literal may
	// hold), made of the characters a SPARQL string must escape: it has to
	// come back whole.
	f.Add("agent-\"huge\"", "tool", strings.Repeat("\"\"\"}\\\n#\r\t'\x00$x?x<>", 1<<16)[:1<<20])
	st, ct, _ := newStore(f)
	f.Fuzz(func(t *testing.T, principal, role, content string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s := session.New(principal)
		s.Append(role, content)
		before := ct.requests.Load()
		err := st.Persist(ctx, s)
		if why := invalidInput(principal, role, content); why != "" {
			if !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("persist with %s: got %v, want ErrInvalid", why, err)
			}
			if n := ct.requests.Load() - before; n != 0 {
				t.Fatalf("persist with %s: %d requests sent, want none", why, n)
			}
			return
		}
		if err != nil {
			t.Fatalf("persist principal %q role %q content %q: %v", clip(principal), clip(role), clip(content), err)
		}
		got, err := st.Load(ctx, s.ID)
		if err != nil {
			t.Fatalf("load %s: %v", s.ID, err)
		}
		if got.Principal != principal {
			t.Fatalf("principal: got %q, want %q", clip(got.Principal), clip(principal))
		}
		sameHistory(t, got.Turns, s.Turns)
		turns, err := st.Replay(ctx, s.ID)
		if err != nil {
			t.Fatalf("replay %s: %v", s.ID, err)
		}
		sameHistory(t, turns, s.Turns)
	})
}

// invalidInput says why Persist must refuse a session of principal with one
// turn of role and content, or returns "" when it must store it.
func invalidInput(principal, role, content string) string {
	switch {
	case principal == "":
		return "an empty principal"
	case !utf8.ValidString(principal):
		return "a principal that is not UTF-8"
	case strings.ContainsRune(principal, 0):
		return "a principal with NUL" // Session.validate refuses it
	case role == "":
		return "an empty role"
	case !utf8.ValidString(role):
		return "a role that is not UTF-8"
	case !utf8.ValidString(content):
		return "content that is not UTF-8"
	case len(content) > session.MaxTurnBytes:
		return "content over session.MaxTurnBytes"
	case len(role) > 1024:
		return "a role over 1 KiB"
	}
	return ""
}

// clip shortens a string for a failure message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// FuzzTurnRoundTrip persists one turn of arbitrary role, content (repeated
// up to 256 times, for sizes) and creation time (seconds and nanoseconds
// since 1970) and holds Persist to its promise: whatever it acknowledges,
// Load returns equal, creation time included; what it refuses
// (session.ErrInvalid) leaves nothing stored. Issue 36 found a time
// Persist acknowledged and no Load could read back (year 57868).
//
//	go test -run '^$' -fuzz FuzzTurnRoundTrip -fuzztime 3m ./session/
func FuzzTurnRoundTrip(f *testing.F) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	f.Add("user", "hello", now.Unix(), int64(123e6), uint8(0))
	f.Add("user", "milliseconds taken for seconds", now.UnixMilli(), int64(0), uint8(0))
	f.Add("model", "nanoseconds", now.Unix(), int64(123456789), uint8(3))
	f.Add("tool", "year -5", time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), int64(0), uint8(0))
	f.Add("user", "year 0000", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), int64(0), uint8(0))
	f.Add("user", "last second of 9999", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix(), int64(999999999), uint8(0))
	f.Add("user", "the end of int64", int64(math.MaxInt64), int64(math.MaxInt64), uint8(255))
	f.Add("user", "the start of int64", int64(math.MinInt64), int64(-1), uint8(1))
	f.Add("user\x00", "\"\"\"}\\\n#", int64(0), int64(-1), uint8(7))
	st, _, _ := newStore(f)
	f.Fuzz(func(t *testing.T, role, content string, sec, nsec int64, repeat uint8) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s := session.New("fuzz-turn")
		s.Append(role, strings.Repeat(content, int(repeat)+1))
		s.Turns[0].Created = time.Unix(sec, nsec)
		err := st.Persist(ctx, s)
		if errors.Is(err, session.ErrInvalid) {
			if _, lerr := st.Load(ctx, s.ID); !errors.Is(lerr, session.ErrNotFound) {
				t.Fatalf("persist refused (%v), then load: got %v, want ErrNotFound", err, lerr)
			}
			return
		}
		if err != nil {
			t.Fatalf("persist role %q content %q created %v: %v", clip(role), clip(content), s.Turns[0].Created, err)
		}
		got, err := st.Load(ctx, s.ID)
		if err != nil {
			t.Fatalf("acknowledged (created %v), then load: %v", s.Turns[0].Created, err)
		}
		sameHistory(t, got.Turns, s.Turns)
	})
}
