package main_test

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trails-kg/trails/internal/fusekitest"
)

// What varies between runs of the same case, in the order normalize
// replaces it.
var (
	// A session or activity id: a UUID, a UUID cut short by a table cell
	// ("01a1fcb9-23cc-73b9-8f0a-…"), or a UUID without its dashes (the
	// node names of the Mermaid output).
	idRE = regexp.MustCompile(`([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{8}-[0-9a-f-]{0,26}…|[0-9a-f]{32})( {2,})?`)
	// A fork's random branch label.
	branchRE = regexp.MustCompile(`(fork-[0-9a-f]{8})( {2,})?`)
	// A run of hex digits taken from an id, such as the short ids of the
	// Graphviz and Mermaid labels.
	hexRE = regexp.MustCompile(`\b([0-9a-f]{8,})\b( {2,})?`)
	// An RFC 3339 time, with or without fraction.
	timeRE = regexp.MustCompile(`(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))( {2,})?`)
	// An ephemeral port of a local address, as in "127.0.0.1:41234".
	portRE = regexp.MustCompile(`(127\.0\.0\.1|localhost|\[::1\]):[1-9]\d{4}\b`)
)

// normalize replaces what varies between runs of one case with stable
// placeholders: each endpoint with <ENDPOINT> (and its port elsewhere, as
// in "dial tcp 127.0.0.1:<PORT>"), each distinct id with <ID1>, <ID2>, ...
// in order of first appearance (a cut-short id gets the number of the whole
// id it starts, "<ID1>…"), each distinct fork label with fork-<B1>, ...,
// a hex run cut from an id with <SHORT-ID1> (<SHORT> if it could be cut
// from several), RFC 3339 times with <TIME>, and
// other ports above 9999 of local addresses with <PORT>.
//
// In the rows of an aligned table (a line whose columns start where those
// of the line above or below start), a replaced cell keeps its width, so
// that the golden files show the alignment the command printed.
func normalize(s string, endpoints ...string) string {
	if bin != "" {
		s = strings.ReplaceAll(s, bin, "<BIN>") // the demo's Next line names the binary it ran
	}
	for _, ep := range endpoints {
		if ep == "" {
			continue
		}
		s = strings.ReplaceAll(s, ep, "<ENDPOINT>")
		if u, err := url.Parse(ep); err == nil && u.Port() != "" {
			s = strings.ReplaceAll(s, u.Host, u.Hostname()+":<PORT>")
		}
	}

	// Whole ids first, so that a cut-short one can be matched to the id it
	// starts, wherever that appears.
	var whole []string
	for _, m := range idRE.FindAllStringSubmatch(s, -1) {
		if id, ok := wholeID(m[1]); ok {
			whole = append(whole, id)
		}
	}
	hexes := make([]string, len(whole))
	for i, id := range whole {
		hexes[i] = strings.ReplaceAll(id, "-", "")
	}
	ids := numbering{format: "<ID%d>"}
	branches := numbering{format: "fork-<B%d>"}

	lines := strings.Split(s, "\n")
	starts := make([]string, len(lines))
	for i, l := range lines {
		starts[i] = columnStarts(l)
	}
	for i, l := range lines {
		table := starts[i] != "" && (i > 0 && starts[i-1] == starts[i] || i+1 < len(lines) && starts[i+1] == starts[i])
		l = replaceCells(l, idRE, table, func(v string) string {
			if id, ok := wholeID(v); ok {
				return ids.of(id)
			}
			prefix := strings.TrimSuffix(v, "…")
			for _, id := range whole {
				if strings.HasPrefix(id, prefix) {
					return ids.of(id) + "…"
				}
			}
			return ids.of(prefix) + "…"
		})
		l = replaceCells(l, branchRE, table, branches.of)
		l = replaceCells(l, hexRE, table, func(v string) string {
			var of []string // the ids v is cut from
			for i, h := range hexes {
				if strings.Contains(h, v) && !slices.Contains(of, whole[i]) {
					of = append(of, whole[i])
				}
			}
			switch len(of) {
			case 0:
				return v
			case 1:
				return "<SHORT-" + strings.Trim(ids.of(of[0]), "<>") + ">"
			default:
				return "<SHORT>" // ambiguous
			}
		})
		l = replaceCells(l, timeRE, table, func(string) string { return "<TIME>" })
		lines[i] = portRE.ReplaceAllString(l, "$1:<PORT>")
	}
	return strings.Join(lines, "\n")
}

// columnStarts returns where the columns of line l start, as text: the
// positions (in runes) of the characters that follow a run of two or more
// spaces, leading indentation aside.
func columnStarts(l string) string {
	var b strings.Builder
	spaces, pos, text := 0, 0, false
	for _, r := range l {
		if r == ' ' {
			spaces++
		} else {
			if spaces >= 2 && text {
				fmt.Fprintf(&b, "%d,", pos)
			}
			spaces, text = 0, true
		}
		pos++
	}
	return b.String()
}

// wholeID returns v as a UUID with dashes, if v is a whole id.
func wholeID(v string) (string, bool) {
	switch {
	case len(v) == 36:
		return v, true
	case len(v) == 32 && !strings.Contains(v, "-"):
		return v[:8] + "-" + v[8:12] + "-" + v[12:16] + "-" + v[16:20] + "-" + v[20:], true
	}
	return "", false
}

// numbering gives each distinct value a numbered placeholder, in order of
// first appearance.
type numbering struct {
	format string
	seen   map[string]string
}

func (n *numbering) of(v string) string {
	if n.seen == nil {
		n.seen = map[string]string{}
	}
	p, ok := n.seen[v]
	if !ok {
		p = fmt.Sprintf(n.format, len(n.seen)+1)
		n.seen[v] = p
	}
	return p
}

// replaceCells replaces the first group of each match of re in s with
// what repl returns for it. re's second group is the padding after a cell:
// in a table, it is widened or narrowed so that the cell keeps its width
// (but never below two spaces).
func replaceCells(s string, re *regexp.Regexp, table bool, repl func(string) string) string {
	return re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		v, pad := sub[1], sub[2]
		out := repl(v)
		if !table || pad == "" {
			return out + pad
		}
		n := utf8.RuneCountInString(v) + len(pad) - utf8.RuneCountInString(out)
		return out + strings.Repeat(" ", max(n, 2))
	})
}

func TestNormalize(t *testing.T) {
	fusekitest.Parallel(t)
	const (
		id1 = "01a1fcb9-22fe-7acc-8ddb-42d2af524f09"
		id2 = "01a1fcb9-2395-7682-a87d-28610b45afb8"
	)
	tests := []struct {
		name      string
		in        string
		endpoints []string
		want      string
	}{
		{
			name: "ids numbered in order of first appearance",
			in:   id2 + " " + id1 + " " + id2,
			want: "<ID1> <ID2> <ID1>",
		},
		{
			name: "a cut-short id takes the number of the id it starts",
			in:   "https://w3id.org/trails/id/session/01a1fcb9-2395-7682-a87d-… then " + id1 + " and " + id2,
			want: "https://w3id.org/trails/id/session/<ID1>… then <ID2> and <ID1>",
		},
		{
			name: "a cut-short id of no whole one gets its own number",
			in:   "activity/detach/01a1fcb9-700f-7e… " + id1,
			want: "activity/detach/<ID1>… <ID2>",
		},
		{
			name: "ids without dashes (Mermaid node names)",
			in:   "s01a1fcb922fe7acc8ddb42d2af524f09 -- \"at 3\" --> s" + strings.ReplaceAll(id2, "-", ""),
			want: "s<ID1> -- \"at 3\" --> s<ID2>",
		},
		{
			name: "short ids cut from an id",
			in:   id1 + ` [label="…2af524f09\nmain"] ` + id2 + ` [label="…28610b45afb8"] 01a1fcb9 2395 deadbeef`,
			want: `<ID1> [label="…<SHORT-ID1>\nmain"] <ID2> [label="…<SHORT-ID2>"] <SHORT> 2395 deadbeef`,
		},
		{
			name: "fork labels",
			in:   "fork-0d727de3 fork-1cc1482e fork-0d727de3 main",
			want: "fork-<B1> fork-<B2> fork-<B1> main",
		},
		{
			name: "times",
			in:   `"2026-11-21T06:09:14.207Z" 2026-11-21T06:09:14Z 2026-03-01T10:00:00+01:00 2026-03-01`,
			want: `"<TIME>" <TIME> <TIME> 2026-03-01`,
		},
		{
			name:      "endpoints, then ports",
			in:        `http://127.0.0.1:41234/trails/query: dial tcp 127.0.0.1:41234: refused; http://127.0.0.1:5555/trails 127.0.0.1:5555`,
			endpoints: []string{"http://127.0.0.1:41234/trails", "http://127.0.0.1:5555/trails"},
			want:      `<ENDPOINT>/query: dial tcp 127.0.0.1:<PORT>: refused; <ENDPOINT> 127.0.0.1:<PORT>`,
		},
		{
			name: "ephemeral ports of other addresses, not the documented 3030",
			in:   `read tcp 127.0.0.1:54321->127.0.0.1:3030: reset; default http://127.0.0.1:3030/trails`,
			want: `read tcp 127.0.0.1:<PORT>->127.0.0.1:3030: reset; default http://127.0.0.1:3030/trails`,
		},
		{
			name: "table cells keep their width",
			in: "ID                                    BRANCH         CREATED               N\n" +
				id1 + "  fork-0d727de3  2026-11-21T06:09:14Z  1\n",
			want: "ID                                    BRANCH         CREATED               N\n" +
				"<ID1>                                 fork-<B1>      <TIME>                1\n",
		},
		{
			name: "cells keep their width only in a table",
			in: id1 + "  main  agent-7  6 turns\n" +
				"└── " + id2 + "  fork-0d727de3  @3  +4 turns (7 in all)\n",
			want: "<ID1>  main  agent-7  6 turns\n" +
				"└── <ID2>  fork-<B1>  @3  +4 turns (7 in all)\n",
		},
		{
			name: "prose keeps its single spaces",
			in:   "forked " + id1 + " (fork-0d727de3) at " + "2026-11-21T06:09:14Z.",
			want: "forked <ID1> (fork-<B1>) at <TIME>.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := normalize(tt.in, tt.endpoints...); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
