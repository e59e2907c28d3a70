package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// The parts of a structured turn (session.Structure) as show, replay and
// diff print them: in text, one item per part, state change, metadata
// key and model invocation, each on one line; in JSON, every field.

// toStructureJSON returns the JSON form of t's structured fields (the
// JSONL export's, admin.StructureJSON), nil for a plain turn.
func toStructureJSON(t session.Turn) *admin.StructureJSON {
	if !t.Structured() {
		return nil
	}
	return admin.NewStructureJSON(t.Structure)
}

// item is one line of a structured turn in text: a model invocation, the
// author, a part, a state change, a metadata key or the raw copy. Head
// and body are as stored (escaped when printed); body may be long and is
// cut (show) or cut around where it differs (diff).
type item struct {
	key   string // what it is, to pair it with the same item of another turn: "model", "part 2", "state cart"
	label string // its kind as printed: model, tokens, author, text, reasoning, call, result, data, state, meta, raw
	head  string // the short fields: a tool's name and call id, a MIME type, a key
	body  string // the long one: arguments, a result, a text, a value
}

// line is the item on one line, escaped: head, then body.
func (it item) line() string {
	switch {
	case it.head == "":
		return it.body
	case it.body == "":
		return it.head
	}
	return it.head + " " + it.body
}

// items returns the items of t's structured fields, in order: model
// (and finish reason), token usage, author (and invocation), parts, state changes (by key), metadata (by key), raw copy.
// None for a plain turn.
func items(t session.Turn) []item {
	if !t.Structured() {
		return nil
	}
	x := t.Structure
	var out []item
	if x.Model != "" || x.FinishReason != "" {
		it := item{key: "model", label: "model", head: x.Model}
		if x.FinishReason != "" {
			it.body = "finish " + x.FinishReason
		}
		out = append(out, it)
	}
	if x.Usage != nil {
		out = append(out, item{key: "tokens", label: "tokens", head: usageText(x.Usage)})
	}
	if x.Author != "" || x.InvocationID != "" {
		it := item{key: "author", label: "author", head: x.Author}
		if x.InvocationID != "" {
			it.body = "invocation " + x.InvocationID
		}
		out = append(out, it)
	}
	for k, p := range x.Parts {
		out = append(out, partItem(k, p))
	}
	for _, k := range slices.Sorted(maps.Keys(x.Delta)) {
		if v := x.Delta[k]; v != nil {
			out = append(out, item{key: "state " + k, label: "state", head: k + " =", body: compactJSON(v)})
		} else {
			out = append(out, item{key: "state " + k, label: "state", head: k, body: "removed"})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(x.Metadata)) {
		out = append(out, item{key: "meta " + k, label: "meta", head: k + " =", body: compactJSON(x.Metadata[k])})
	}
	if r := x.Raw; r != nil {
		out = append(out, item{key: "raw", label: "raw", head: r.Format, body: plural(len(r.Data), "byte")})
	}
	return out
}

// partItem returns part k, p, as an item.
func partItem(k int, p session.Part) item {
	it := item{key: fmt.Sprintf("part %d", k), label: string(p.Kind)}
	callID := func() string {
		if p.CallID == "" {
			return ""
		}
		return " [" + p.CallID + "]"
	}
	switch p.Kind {
	case session.PartText, session.PartReasoning:
		it.body = p.Text
	case session.PartToolCall:
		it.label, it.head, it.body = "call", "→ "+p.ToolName+callID(), compactJSON(p.Arguments)
	case session.PartToolResult:
		it.label, it.head, it.body = "result", strings.TrimRight("← "+p.ToolName, " ")+callID(), compactJSON(p.Result)
		if p.IsError {
			it.head += " error"
		}
	case session.PartData:
		it.head = p.MIMEType
		if p.URI != "" {
			it.body = "<" + p.URI + ">"
		} else {
			it.body = plural(len(p.Data), "byte")
		}
	}
	return it
}

// usageText is u in words: "812 in, 19 out, 831 total", cached and
// reasoning tokens added when not 0.
func usageText(u *session.Usage) string {
	in := fmt.Sprintf("%d in", u.Input)
	if u.Cached != 0 {
		in += fmt.Sprintf(" (%d cached)", u.Cached)
	}
	out := fmt.Sprintf("%d out", u.Output)
	if u.Reasoning != 0 {
		out += fmt.Sprintf(" (%d reasoning)", u.Reasoning)
	}
	return fmt.Sprintf("%s, %s, %d total", in, out, u.Total)
}

// compactJSON returns the JSON value v without insignificant white space
// (v as it is if it is not valid JSON).
func compactJSON(v json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}

// clip returns s escaped (termsafe.String) on one line of at most width
// characters, the cut marked by "…". Only what it keeps is escaped.
func clip(s string, width int) string {
	head := prefixRunes(s, width) // escaping never shortens: width characters are enough
	e := []rune(termsafe.String(head))
	if len(head) == len(s) && len(e) <= width {
		return string(e)
	}
	return string(e[:min(len(e), width-1)]) + "…"
}

// prefixRunes returns the first n characters of s (at most).
func prefixRunes(s string, n int) string {
	k := 0
	for i := range s {
		if k == n {
			return s[:i]
		}
		k++
	}
	return s
}

// showWidth is the most characters of an item's value in show and
// replay: with the columns before it, lines of at most 112 characters.
const showWidth = 80

// writeItems prints the items of t under its turn line: the label in the
// role column (where no stored text can appear: content goes on in the
// next column), the value escaped and cut to one line.
func (a *app) writeItems(t session.Turn) {
	for _, it := range items(t) {
		fmt.Fprintf(a.stdout, "%4s  %-13s  %-9s  %s\n", "", "", it.label, clip(it.line(), showWidth))
	}
}

// writeValues prints a session's state (Session.Values) for show's
// header: one "key = value" line each, by key, escaped and cut to a line.
func (a *app) writeValues(values map[string]json.RawMessage) {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		fmt.Fprintf(a.stdout, "values    %s\n", clip(k+" = "+compactJSON(values[k]), showWidth))
	}
}

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
	var theirs map[string]item
	if other != nil {
		theirs = make(map[string]item)
		for _, it := range items(*other) {
			theirs[it.key] = it
		}
	}
	for _, it := range items(t) {
		mark, d := " ", -1
		body := termsafe.String(it.body)
		if theirs != nil {
			o, ok := theirs[it.key]
			switch {
			case !ok || o.label != it.label || o.head != it.head:
				mark, d = "*", 0
			case o.body != it.body:
				mark, d = "*", firstDiff(body, termsafe.String(o.body))
			}
		}
		head := strings.TrimSpace(it.label + " " + it.head)
		for _, l := range wrap(head, width) {
			lines, marks = append(lines, l), append(marks, mark)
		}
		if it.body == "" {
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
	r := []rune(prefixRunes(s, max(d, 0)+capacity+1)) // no more than can be shown
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
