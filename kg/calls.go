package kg

import "strings"

// NondeterministicCall returns the name (upper case) of the first call in
// query of a SPARQL function whose value depends on where or when it is
// evaluated: NOW, RAND, UUID, STRUUID or BNODE; "" when it calls none.
// Names inside strings, IRIs and comments, variables and prefixed names
// (ex:now(...), an extension function) are not such calls. A store that
// replays the same update elsewhere (a replica of a log) would get another
// value from each.
func NondeterministicCall(query string) string {
	q := query
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == '"' || c == '\'':
			i = stringEnd(q, i)
		case c == '<':
			i = iriEnd(q, i)
		case c == '#':
			if n := strings.IndexByte(q[i:], '\n'); n >= 0 {
				i += n + 1
			} else {
				i = len(q)
			}
		case c == '?' || c == '$' || c == ':':
			// A variable, or the local part of a prefixed name.
			i++
			for i < len(q) && isNameByte(q[i]) {
				i++
			}
		case isNameStart(c):
			j := i
			for j < len(q) && isNameByte(q[j]) {
				j++
			}
			k := j
			for k < len(q) && strings.IndexByte(" \t\r\n", q[k]) >= 0 {
				k++
			}
			if k < len(q) && q[k] == '(' {
				switch up := strings.ToUpper(q[i:j]); up {
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

// isNameStart reports whether c may begin a SPARQL keyword or function
// name: a letter, '_', or a byte of a multi-byte character.
func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

// isNameByte reports whether c may go on a SPARQL name: a name's start, a
// digit, '-' or '.'.
func isNameByte(c byte) bool {
	return isNameStart(c) || c >= '0' && c <= '9' || c == '-' || c == '.'
}
