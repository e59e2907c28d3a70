// Package termsafe makes text that users and agents wrote safe to print on
// a terminal: a stored role, content, tag or name must never move the
// cursor, retitle the window, clear the screen, reorder what follows it
// (bidi overrides) or start a line that looks like output of our own.
// Its functions are pure and safe for concurrent use.
package termsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxQuoted is how many characters of a value Quote keeps.
const MaxQuoted = 80

// Unsafe reports whether a terminal or a bidi-aware renderer could act on
// r instead of showing it: the C0 controls (newline and tab included), DEL,
// the C1 controls, the bidi embeddings, overrides, isolates and marks
// (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) and the Unicode
// line and paragraph separators (U+2028, U+2029).
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c, r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// String returns s on one line with every Unsafe character written as a
// Go escape (\n, \t, \r, \x1b, \u202e) and every byte of invalid UTF-8 as
// \xNN; everything else, backslashes included, is kept as it is. The
// result is for people: a value that holds a backslash sequence already
// prints like an escaped one (use JSON output to tell them apart).
func String(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case Unsafe(r):
			b.WriteString(escape(r))
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Lines returns s split at its line breaks ("\n", or "\r\n"), each line
// escaped by String, tabs kept: the way to print multi-line text as
// several lines, each of which the caller indents. It returns one empty
// line for an empty s.
func Lines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if i < len(lines)-1 {
			l = strings.TrimSuffix(l, "\r")
		}
		parts := strings.Split(l, "\t")
		for k, p := range parts {
			parts[k] = String(p)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return lines
}

// Quote returns s for an error message: double-quoted with Go's escapes
// (strconv.Quote, which escapes every Unsafe character), cut to its first
// MaxQuoted characters, the cut marked by "…(N bytes)" with N the length
// of s.
func Quote(s string) string {
	head, cut := prefix(s, MaxQuoted)
	if !cut {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s…(%d bytes)", strconv.Quote(head), len(s))
}

// Cut returns s escaped by String and cut to its first n characters, the
// cut marked by "…(N bytes)" with N the length of s: for a message that
// may hold a long value and must stay readable.
func Cut(s string, n int) string {
	head, cut := prefix(s, n)
	if !cut {
		return String(s)
	}
	return fmt.Sprintf("%s…(%d bytes)", String(head), len(s))
}

// prefix returns the first n characters of s (a byte of invalid UTF-8
// counts as one) and whether that is less than s.
func prefix(s string, n int) (string, bool) {
	end := 0
	for k := 0; end < len(s) && k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	return s[:end], end < len(s)
}

// clean reports whether s holds nothing String would change.
func clean(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || Unsafe(r) {
			return false
		}
	}
	return true
}

// escape returns the Go escape of an Unsafe rune.
func escape(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}
