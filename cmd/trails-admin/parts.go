package main

import (
	"strings"
	"unicode/utf8"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// The parts of a structured turn (session.Structure) as diff prints them,
// side by side (render.Items gives them; show and replay print them with
// render.Turns).

// The items of a turn in diff: the item's label and head on a line, its
// body below, indented by two, in lines cut to the column, at most
// diffBodyLines of them.
const diffBodyLines = 3

// diffItemLines returns the lines of the items of t (at most width
// characters each) for diff, each with the marker that says whether it
// differs from the same item of other (the turn at the same index on the
// other side; nil: none, nothing marked): "*" if it does, " " if not.
// A body that differs and is too long for its lines is shown from a
// little before its first difference.
func diffItemLines(t session.Turn, other *session.Turn, width int) (lines, marks []string) {
	var theirs map[string]render.Item
	if other != nil {
		theirs = make(map[string]render.Item)
		for _, it := range render.Items(*other) {
			theirs[it.Key] = it
		}
	}
	for _, it := range render.Items(t) {
		mark, d := " ", -1
		body := termsafe.String(it.Body)
		if theirs != nil {
			o, ok := theirs[it.Key]
			switch {
			case !ok || o.Label != it.Label || o.Head != it.Head:
				mark, d = "*", 0
			case o.Body != it.Body:
				mark, d = "*", firstDiff(body, termsafe.String(o.Body))
			}
		}
		head := strings.TrimSpace(it.Label + " " + it.Head)
		for _, l := range wrap(head, width) {
			lines, marks = append(lines, l), append(marks, mark)
		}
		if it.Body == "" {
			continue
		}
		for _, l := range bodyLines(body, width-2, diffBodyLines, d) {
			lines, marks = append(lines, "  "+l), append(marks, mark)
		}
	}
	return lines, marks
}

// firstDiff returns the index of the first character at which a and b
// differ (the shorter's length if one starts the other).
func firstDiff(a, b string) int {
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	for k > 0 && k < len(a) && !utf8.RuneStart(a[k]) {
		k-- // back to the start of the character that differs
	}
	return utf8.RuneCountInString(a[:k])
}

// bodyLines cuts s (escaped) into lines of width characters, at most
// maxLines of them: a longer s is cut, the cut marked by "…" at the end, and
// when its character d (d >= 0: where it differs from the other side's)
// would not be shown, the lines start a few characters before d, marked
// by "…" at the start.
func bodyLines(s string, width, maxLines, d int) []string {
	width = max(width, 8)
	capacity := width * maxLines
	r := []rune(render.PrefixRunes(s, max(d, 0)+capacity+1)) // no more than can be shown
	if len(r) > capacity {
		const before = 8 // characters shown before the difference
		if d >= 0 && d > capacity-1-before {
			r = append([]rune("…"), r[d-before:]...)
		}
		if len(r) > capacity {
			r = append(r[:capacity-1:capacity-1], '…')
		}
	}
	var out []string
	for len(r) > width {
		out = append(out, string(r[:width]))
		r = r[width:]
	}
	return append(out, string(r))
}
