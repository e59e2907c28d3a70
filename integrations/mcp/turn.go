package mcp

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// TurnJSON is a turn of a history (trails-admin show --json's turns), a
// structured turn's fields inlined as the JSONL export writes them
// (admin.StructureJSON).
type TurnJSON struct {
	ID      string    `json:"id,omitempty" jsonschema:"the turn's IRI, which fork_session takes as turn"`
	Index   int       `json:"index"`
	Role    string    `json:"role"`
	Content string    `json:"content"`
	Branch  string    `json:"branch" jsonschema:"the branch of the session that wrote it"`
	Created time.Time `json:"created"`
	*admin.StructureJSON
}

func toTurnsJSON(turns []session.Turn) []TurnJSON {
	out := make([]TurnJSON, len(turns))
	for i, t := range turns {
		out[i] = TurnJSON{ID: t.ID, Index: t.Index, Role: t.Role, Content: t.Content, Branch: t.Branch, Created: t.Created}
		if t.Structured() {
			out[i].StructureJSON = admin.NewStructureJSON(t.Structure)
		}
	}
	return out
}

// writeTurns writes turns one per line: index, branch, role and the
// content, whose further lines go indented under its first; then a
// structured turn's items, one line each, the kind in the role column.
// Every stored value is escaped (termsafe), so no stored text can start a
// line that reads as a turn or a part.
func writeTurns(b *strings.Builder, turns []session.Turn) {
	for _, t := range turns {
		lines := termsafe.Lines(t.Content)
		fmt.Fprintln(b, strings.TrimRight(fmt.Sprintf("%4d  %-13s  %-9s  %s", t.Index, termsafe.String(t.Branch), termsafe.String(t.Role), lines[0]), " "))
		for _, l := range lines[1:] {
			fmt.Fprintf(b, "%4s  %-13s  %-9s  %s\n", "", "", "", l)
		}
		for _, it := range items(t.Structure) {
			fmt.Fprintf(b, "%4s  %-13s  %-9s  %s\n", "", "", it[0], clip(it[1], lineWidth))
		}
	}
}

// items returns the lines of a turn's structured fields as label and
// text (not yet escaped): model, usage, author, each part, each state
// change and metadata key by key, the raw copy. None for nil.
func items(x *session.Structure) [][2]string {
	if x == nil {
		return nil
	}
	var out [][2]string
	add := func(label string, words ...string) {
		var kept []string
		for _, w := range words {
			if w != "" {
				kept = append(kept, w)
			}
		}
		out = append(out, [2]string{label, strings.Join(kept, " ")})
	}
	if x.Model != "" || x.FinishReason != "" {
		add("model", x.Model, prefixed("finish", x.FinishReason))
	}
	if u := x.Usage; u != nil {
		in, out := fmt.Sprintf("%d in", u.Input), fmt.Sprintf("%d out", u.Output)
		if u.Cached != 0 {
			in += fmt.Sprintf(" (%d cached)", u.Cached)
		}
		if u.Reasoning != 0 {
			out += fmt.Sprintf(" (%d reasoning)", u.Reasoning)
		}
		add("tokens", fmt.Sprintf("%s, %s, %d total", in, out, u.Total))
	}
	if x.Author != "" || x.InvocationID != "" {
		add("author", x.Author, prefixed("invocation", x.InvocationID))
	}
	for _, p := range x.Parts {
		call := ""
		if p.CallID != "" {
			call = "[" + p.CallID + "]"
		}
		switch p.Kind {
		case session.PartToolCall:
			add("call", "→", p.ToolName, call, compactJSON(p.Arguments))
		case session.PartToolResult:
			errFlag := ""
			if p.IsError {
				errFlag = "error"
			}
			add("result", "←", p.ToolName, call, errFlag, compactJSON(p.Result))
		case session.PartData:
			where := plural(len(p.Data), "byte")
			if p.URI != "" {
				where = "<" + p.URI + ">"
			}
			add("data", p.MIMEType, where)
		default:
			add(string(p.Kind), p.Text)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(x.Delta)) {
		if v := x.Delta[k]; v != nil {
			add("state", k, "=", compactJSON(v))
		} else {
			add("state", k, "removed")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(x.Metadata)) {
		add("meta", k, "=", compactJSON(x.Metadata[k]))
	}
	if r := x.Raw; r != nil {
		add("raw", r.Format, plural(len(r.Data), "byte"))
	}
	return out
}

// prefixed returns word and v, or "" when v is empty.
func prefixed(word, v string) string {
	if v == "" {
		return ""
	}
	return word + " " + v
}
