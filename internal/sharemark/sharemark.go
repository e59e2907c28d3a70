// Package sharemark marks, in the text of a SPARQL Update, the operations
// that set a shared value (session's share-value.ru), so that a router
// below session (cluster.Sharded) can send them to another log than the
// session write they follow, without parsing SPARQL.
//
// A marked operation is the operation between two comment lines:
//
//	#trails:share-value <g> <owner> <change> <node>
//	DELETE { GRAPH <https://w3id.org/trails/graph/values> ... } ... WHERE { GRAPH <g> { ... } ... }
//	#trails:end-share-value
//
// SPARQL ignores comments, so a marked request means to a store what the
// unmarked one does. A line can begin with the mark only where Trails
// writes one: Trails escapes every line break inside the literals it
// writes (kg.Term), so no literal can hold the start of a line.
package sharemark

import (
	"errors"
	"strings"
)

// The comment lines around a marked operation.
const (
	begin = "\n#trails:share-value "
	end   = "\n#trails:end-share-value\n"
)

// Op is one marked operation: the IRIs (in angle brackets, as the text
// writes them) of the session graph it reads the change from (G), the
// change's owner (a turn, or the session), the change, and the shared
// value it sets (Node), and the operation's text (Text, without the
// mark's lines).
type Op struct {
	G, Owner, Change, Node string
	Text                   string
}

// Mark returns op (its Text) between the mark's lines, to follow " ;"
// in a request.
func Mark(op Op) string {
	return begin + op.G + " " + op.Owner + " " + op.Change + " " + op.Node + "\n" + op.Text + end
}

// ErrMalformed: a mark without its end, or with the wrong fields.
var ErrMalformed = errors.New("sharemark: malformed mark")

// Split returns update without its marked operations (and the " ;" that
// separates each from the operation before it) and those operations in
// order. With none, rest is update and ops is nil; with only marked
// operations, rest is blank. It returns ErrMalformed for a mark that is
// neither first nor after " ;", has no end or not four IRIs.
func Split(update string) (rest string, ops []Op, err error) {
	var b strings.Builder
	for {
		i := strings.Index(update, begin)
		if i < 0 {
			b.WriteString(update)
			return b.String(), ops, nil
		}
		head := strings.TrimRight(update[:i], " \t\r\n")
		head, ok := strings.CutSuffix(head, ";")
		if !ok && head != "" {
			return "", nil, ErrMalformed // not after " ;", nor first
		}
		b.WriteString(strings.TrimRight(head, " \t\r\n"))
		body := update[i+len(begin):]
		nl := strings.IndexByte(body, '\n')
		j := strings.Index(body, end)
		if nl < 0 || j < nl {
			return "", nil, ErrMalformed
		}
		f := strings.Fields(body[:nl])
		if len(f) != 4 {
			return "", nil, ErrMalformed
		}
		for _, iri := range f {
			if !strings.HasPrefix(iri, "<") || !strings.HasSuffix(iri, ">") {
				return "", nil, ErrMalformed
			}
		}
		ops = append(ops, Op{G: f[0], Owner: f[1], Change: f[2], Node: f[3], Text: body[nl+1 : j]})
		update = "\n" + body[j+len(end):]
	}
}
