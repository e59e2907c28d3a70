package termsafe_test

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trails-kg/trails/internal/termsafe"
)

func TestString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "Day 1: Alfama — fado, €60, 日本", "Day 1: Alfama — fado, €60, 日本"},
		{"empty", "", ""},
		{"newline and a forged turn", "user\n   2  main  assistant  hi", `user\n   2  main  assistant  hi`},
		{"tab and carriage return", "a\tb\rc", `a\tb\rc`},
		{"window title", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"screen clear", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"NUL and DEL", "a\x00b\x7f", `a\x00b\x7f`},
		{"C1 CSI and NEL", "a\u009b2Jb\u0085", `a\u009b2Jb\u0085`},
		{"bidi override", "tag\u202eexe.txt", `tag\u202eexe.txt`},
		{"bidi isolates and marks", "\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u202a\u202b\u202c\u202d",
			`\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u202a\u202b\u202c\u202d`},
		{"line separators", "a\u2028b\u2029", `a\u2028b\u2029`},
		{"invalid UTF-8", "ok\xff\xfe", `ok\xff\xfe`},
		{"truncated rune", "\xe2\x80", `\xe2\x80`},
		{"replacement character kept", "a\ufffdb", "a\ufffdb"},
		{"backslashes kept", `C:\new\x1b`, `C:\new\x1b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := termsafe.String(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLines(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one line", "hello", []string{"hello"}},
		{"empty", "", []string{""}},
		{"two lines", "Day 1\nDay 2", []string{"Day 1", "Day 2"}},
		{"CRLF", "a\r\nb\r\n", []string{"a", "b", ""}},
		{"lone CR escaped", "a\rb", []string{`a\rb`}},
		{"trailing CR escaped", "a\r", []string{`a\r`}},
		{"tabs kept", "\tx\ty", []string{"\tx\ty"}},
		{"ESC on a line", "ok\n\x1b[2J", []string{"ok", `\x1b[2J`}},
		{"bidi on a line", "\u202efdp.exe", []string{`\u202efdp.exe`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := termsafe.Lines(tt.in)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	tests := []struct {
		name, in, want string
	}{
		{"short", "experiment", `"experiment"`},
		{"escaped", "a\x1b[2J\u202e\n", `"a\x1b[2J\u202e\n"`},
		{"exactly the limit", strings.Repeat("é", termsafe.MaxQuoted), strconv.Quote(strings.Repeat("é", termsafe.MaxQuoted))},
		{"100 KB", long, strconv.Quote(long[:termsafe.MaxQuoted]) + "…(102400 bytes)"},
		{"cut counts characters", strings.Repeat("日", 100), strconv.Quote(strings.Repeat("日", termsafe.MaxQuoted)) + "…(300 bytes)"},
		{"invalid UTF-8", "\xff", `"\xff"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := termsafe.Quote(tt.in); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short", "tag experiment: not found", 80, "tag experiment: not found"},
		{"escaped", "a\x1b[2J\n", 80, `a\x1b[2J\n`},
		{"cut", "abcdef\x1b", 3, "abc…(7 bytes)"},
		{"cut after an escape", "\x1bbcdef", 2, `\x1bb…(6 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := termsafe.Cut(tt.in, tt.n); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// safe reports whether s is valid UTF-8 holding no Unsafe character but
// those allowed.
func safe(s string, allowed ...rune) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if termsafe.Unsafe(r) && !strings.ContainsRune(string(allowed), r) {
			return false
		}
	}
	return true
}

// FuzzString checks, for any input, that String, Lines, Quote and Cut return
// valid UTF-8 with nothing a terminal acts on (Lines keeps tabs), that
// String changes nothing in safe text, that Lines gives one line per line
// break, and that Quote keeps at most MaxQuoted characters of a prefix of
// its input. To fuzz:
//
//	go test -run '^$' -fuzz FuzzString -fuzztime 1m ./internal/termsafe/
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\nb", "\x1b]0;t\x07", "\u202e", "\xff\xfe", "\r\n\t", "\u0085", strings.Repeat("é", 90)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := termsafe.String(s)
		if !safe(got) {
			t.Errorf("String(%q) = %q: not safe", s, got)
		}
		if safe(s) && got != s {
			t.Errorf("String(%q) = %q: changed safe text", s, got)
		}
		lines := termsafe.Lines(s)
		if len(lines) != strings.Count(s, "\n")+1 {
			t.Errorf("Lines(%q): got %d lines, want %d", s, len(lines), strings.Count(s, "\n")+1)
		}
		for _, l := range lines {
			if !safe(l, '\t') {
				t.Errorf("Lines(%q): line %q is not safe", s, l)
			}
		}
		q := termsafe.Quote(s)
		if !safe(q) {
			t.Errorf("Quote(%q) = %q: not safe", s, q)
		}
		if c := termsafe.Cut(s, 10); !safe(c) {
			t.Errorf("Cut(%q, 10) = %q: not safe", s, c)
		}
		quoted, _, _ := strings.Cut(q, "…(")
		v, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("Quote(%q) = %q: %v", s, q, err)
		}
		if !strings.HasPrefix(s, v) || utf8.RuneCountInString(v) > termsafe.MaxQuoted {
			t.Errorf("Quote(%q) = %q: not a prefix of at most %d characters", s, q, termsafe.MaxQuoted)
		}
	})
}
