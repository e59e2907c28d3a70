package cluster

import (
	"errors"
	"regexp"
	"strings"
)

// ErrNondeterministic: an update calls a SPARQL function whose value
// depends on where or when it is evaluated (NOW, RAND, UUID, STRUUID,
// BNODE). Each replica would fill in its own value and the replicas would
// differ, so Client.Update refuses it before it reaches the log; the error
// also matches kg.ErrBadRequest. A session.Store fills such values in
// itself when its Querier says it is replicated (a Replicated() bool
// method, which *Client has): a Querier that wraps a Client must pass that
// method on.
var ErrNondeterministic = errors.New("cluster: the update depends on where or when it is applied")

// nondeterministic names the first function of update whose value a
// replica would choose itself, or returns "" when it calls none. It reads
// SPARQL's tokens: a name inside a string literal, an IRI, a comment, a
// variable or a prefixed name is not a call.
func nondeterministic(update string) string {
	s := update
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '"' || c == '\'':
			i = skipString(s, i)
		case c == '<':
			if m := iriRef.FindStringIndex(s[i:]); m != nil {
				i += m[1]
			} else {
				i++ // the operator
			}
		case c == '#':
			if n := strings.IndexByte(s[i:], '\n'); n >= 0 {
				i += n + 1
			} else {
				i = len(s)
			}
		case c == '?' || c == '$' || c == ':':
			// A variable, or the local part of a prefixed name: skip
			// the name that follows.
			i++
			for i < len(s) && isNameByte(s[i]) {
				i++
			}
		case isNameStart(c):
			j := i
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			name := s[i:j]
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r') {
				k++
			}
			if k < len(s) && s[k] == '(' {
				switch up := strings.ToUpper(name); up {
				case "NOW", "RAND", "UUID", "STRUUID", "BNODE":
					return up
				}
			}
			i = j
		default:
			i++
		}
	}
	return ""
}

// iriRef matches a SPARQL IRIREF at the start of a string.
var iriRef = regexp.MustCompile(`^<[^<>"{}|^` + "`" + `\\\x00-\x20]*>`)

// isNameStart reports whether c may begin a SPARQL name (a keyword or a
// function's): a letter, '_', or a byte of a multi-byte character.
func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

// isNameByte reports whether c may be part of a SPARQL name: letters,
// digits, '_', '-', '.', and every byte of a multi-byte character.
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c >= 0x80
}

// skipString returns the index just past the string literal that starts
// at i (a quote): short or long ("""...""", ”'...”'), with backslash
// escapes; len(s) when it does not end.
func skipString(s string, i int) int {
	q := s[i]
	long := strings.HasPrefix(s[i:], strings.Repeat(string(q), 3))
	if long {
		i += 3
	} else {
		i++
	}
	for i < len(s) {
		switch {
		case s[i] == '\\':
			i += 2
		case long && strings.HasPrefix(s[i:], strings.Repeat(string(q), 3)):
			return i + 3
		case !long && s[i] == q:
			return i + 1
		case !long && (s[i] == '\n' || s[i] == '\r'):
			return i + 1 // not a literal SPARQL takes; the store will say so
		default:
			i++
		}
	}
	return len(s)
}
