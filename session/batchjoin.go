package session

import "strings"

// Joining texts into one request: the prologues of the members' updates
// and checks gathered at the request's start, and an ASK check's pattern
// taken out to be asked beside the others (Store.checks).

// askPattern returns the group graph pattern of ASK query body (the query
// without its prologue): what follows ASK and an optional WHERE, when it
// is one group ending the query.
func askPattern(body string) (string, bool) {
	s := strings.TrimSpace(body)
	if !hasKeyword(s, "ASK") {
		return "", false
	}
	s = strings.TrimSpace(s[len("ASK"):])
	if hasKeyword(s, "WHERE") {
		s = strings.TrimSpace(s[len("WHERE"):])
	}
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return "", false
	}
	return s, true
}

// hasKeyword reports whether s starts with keyword kw (any case) followed
// by a space or a brace.
func hasKeyword(s, kw string) bool {
	if len(s) <= len(kw) || !strings.EqualFold(s[:len(kw)], kw) {
		return false
	}
	c := s[len(kw)]
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '{'
}

// prologue gathers the PREFIX declarations of the texts joined into one
// request. SPARQL allows a prologue before each operation of an update,
// but Oxigraph (0.5.13) refuses one after a ";": so the joined request
// declares every prefix once, at its start. Texts that bind one prefix
// name to different IRIs cannot be joined.
type prologue struct {
	names []string // in order of first declaration
	iris  map[string]string
}

// join reads the prologue of SPARQL text q (leading comments and PREFIX
// declarations) into pro and returns the rest of q. It reports false,
// changing nothing, when q declares a BASE or binds a prefix pro binds
// otherwise.
func (pro *prologue) join(q string) (body string, decls int, ok bool) {
	var names, iris []string
	s := q
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		switch {
		case strings.HasPrefix(s, "#"):
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
			} else {
				s = ""
			}
			continue
		case hasKeyword(s, "PREFIX"):
			rest := strings.TrimLeft(s[len("PREFIX"):], " \t\r\n")
			colon := strings.IndexByte(rest, ':')
			if colon < 0 || strings.ContainsAny(rest[:colon], " \t\r\n<>{}") {
				return q, 0, false
			}
			name := rest[:colon]
			rest = strings.TrimLeft(rest[colon+1:], " \t\r\n")
			end := strings.IndexByte(rest, '>')
			if !strings.HasPrefix(rest, "<") || end < 0 {
				return q, 0, false
			}
			names, iris = append(names, name), append(iris, rest[:end+1])
			s = rest[end+1:]
			continue
		case hasKeyword(s, "BASE"):
			return q, 0, false
		}
		break
	}
	for i, n := range names {
		if have, ok := pro.iris[n]; ok && have != iris[i] {
			return q, 0, false
		}
		for j := range i {
			if names[j] == n && iris[j] != iris[i] {
				return q, 0, false
			}
		}
	}
	if pro.iris == nil {
		pro.iris = map[string]string{}
	}
	for i, n := range names {
		if _, ok := pro.iris[n]; !ok {
			pro.names = append(pro.names, n)
			pro.iris[n] = iris[i]
		}
	}
	return s, len(names), true
}

// String returns the declarations, one a line.
func (pro *prologue) String() string {
	var b strings.Builder
	for _, n := range pro.names {
		b.WriteString("PREFIX " + n + ": " + pro.iris[n] + "\n")
	}
	return b.String()
}
