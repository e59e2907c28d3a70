package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// Turn is the JSON form of a turn (session.Turn), with stable names and
// the structured fields of a structured turn inlined as the JSONL export
// writes them (admin.StructureJSON).
type Turn struct {
	ID      string    `json:"id,omitempty" jsonschema:"the turn's IRI, which fork_session takes as turn"`
	Index   int       `json:"index"`
	Role    string    `json:"role"`
	Content string    `json:"content"`
	Branch  string    `json:"branch" jsonschema:"the branch of the session that wrote it"`
	Created time.Time `json:"created"`
	*admin.StructureJSON
}

// NewTurns returns the JSON forms of turns.
func NewTurns(turns []session.Turn) []Turn {
	out := make([]Turn, len(turns))
	for i, t := range turns {
		out[i] = Turn{ID: t.ID, Index: t.Index, Role: t.Role, Content: t.Content, Branch: t.Branch, Created: t.Created,
			StructureJSON: NewStructure(t)}
	}
	return out
}

// NewStructure returns the JSON form of t's structured fields (the JSONL
// export's, admin.StructureJSON), nil for a plain turn.
func NewStructure(t session.Turn) *admin.StructureJSON {
	if !t.Structured() {
		return nil
	}
	return admin.NewStructureJSON(t.Structure)
}

// Item is one line of a structured turn in text: a model invocation, the
// author, a part, a state change, a metadata key or the raw copy. Head
// and Body are as stored (escaped when printed); Body may be long and is
// cut (Turns) or cut around where it differs (trails-admin diff).
type Item struct {
	Key   string // what it is, to pair it with the same item of another turn: "model", "part 2", "state cart"
	Label string // its kind as printed: model, tokens, author, text, reasoning, call, result, data, state, meta, raw
	Head  string // the short fields: a tool's name and call id, a MIME type, a key
	Body  string // the long one: arguments, a result, a text, a value
}

// Line returns the item on one line, not yet escaped: Head, then Body.
func (it Item) Line() string {
	switch {
	case it.Head == "":
		return it.Body
	case it.Body == "":
		return it.Head
	}
	return it.Head + " " + it.Body
}

// Items returns the items of t's structured fields, in order: model (and
// finish reason), token usage, author (and invocation), parts, state
// changes (by key), metadata (by key), raw copy. None for a plain turn.
// It is the zero Form's Items.
func Items(t session.Turn) []Item { return Form{}.Items(t) }

// Items returns the items of t's structured fields as Items does, their
// heads and bodies as f.Words says.
func (f Form) Items(t session.Turn) []Item {
	if !t.Structured() {
		return nil
	}
	x := t.Structure
	var out []Item
	if x.Model != "" || x.FinishReason != "" {
		it := Item{Key: "model", Label: "model", Head: x.Model}
		if x.FinishReason != "" {
			it.Body = "finish " + x.FinishReason
		}
		out = append(out, it)
	}
	if x.Usage != nil {
		out = append(out, Item{Key: "tokens", Label: "tokens", Head: usageText(x.Usage)})
	}
	if x.Author != "" || x.InvocationID != "" {
		it := Item{Key: "author", Label: "author", Head: x.Author}
		if x.InvocationID != "" {
			it.Body = "invocation " + x.InvocationID
		}
		out = append(out, it)
	}
	for k, p := range x.Parts {
		out = append(out, f.partItem(k, p))
	}
	for _, k := range slices.Sorted(maps.Keys(x.Delta)) {
		if v := x.Delta[k]; v != nil {
			out = append(out, Item{Key: "state " + k, Label: "state", Head: f.words(k, "="), Body: CompactJSON(v)})
		} else {
			out = append(out, Item{Key: "state " + k, Label: "state", Head: k, Body: "removed"})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(x.Metadata)) {
		out = append(out, Item{Key: "meta " + k, Label: "meta", Head: f.words(k, "="), Body: CompactJSON(x.Metadata[k])})
	}
	if r := x.Raw; r != nil {
		out = append(out, Item{Key: "raw", Label: "raw", Head: r.Format, Body: Plural(len(r.Data), "byte")})
	}
	return out
}

// partItem returns part k, p, as an item.
func (f Form) partItem(k int, p session.Part) Item {
	it := Item{Key: fmt.Sprintf("part %d", k), Label: string(p.Kind)}
	callID := func() string {
		if p.CallID == "" {
			return ""
		}
		return " [" + p.CallID + "]"
	}
	call := ""
	if p.CallID != "" {
		call = "[" + p.CallID + "]"
	}
	switch p.Kind {
	case session.PartText, session.PartReasoning:
		it.Body = p.Text
	case session.PartToolCall:
		it.Label, it.Head, it.Body = "call", "→ "+p.ToolName+callID(), CompactJSON(p.Arguments)
		if f.Words {
			it.Head = f.words("→", p.ToolName, call)
		}
	case session.PartToolResult:
		it.Label, it.Head, it.Body = "result", strings.TrimRight("← "+p.ToolName, " ")+callID(), CompactJSON(p.Result)
		if f.Words {
			it.Head = f.words("←", p.ToolName, call)
		}
		if p.IsError {
			it.Head += " error"
		}
	case session.PartData:
		it.Head = p.MIMEType
		if p.URI != "" {
			it.Body = "<" + p.URI + ">"
		} else {
			it.Body = Plural(len(p.Data), "byte")
		}
	default:
		if f.Words {
			it.Body = p.Text
		}
	}
	return it
}

// words returns ws joined by one space: with f.Words, the empty ones
// left out.
func (f Form) words(ws ...string) string {
	if !f.Words {
		return strings.Join(ws, " ")
	}
	return strings.Join(slices.DeleteFunc(ws, func(w string) bool { return w == "" }), " ")
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

// LineWidth is the most characters of an item's or a state value's line
// in the text forms: with the columns before it, lines of at most 112
// characters.
const LineWidth = 80

// Turns writes turns one per line, with index, branch and role, the
// content's further lines indented under its first, then a structured
// turn's items, one line each, the label in the role column (where no
// stored text can appear: content goes on in the next column), the value
// escaped and cut to LineWidth. Branch and role are printed on one line,
// and every field escaped (termsafe), so that only a turn starts a line
// with an index and only an item has a label in the role column: stored
// text cannot forge a turn or a part, or act on the terminal. It is the
// zero Form's Turns.
func Turns(w io.Writer, turns []session.Turn) error { return Form{}.Turns(w, turns) }

// Turns writes turns as Turns does, their first lines trimmed and their
// items built as f says.
func (f Form) Turns(w io.Writer, turns []session.Turn) error {
	for _, t := range turns {
		lines := termsafe.Lines(t.Content)
		line := fmt.Sprintf("%4d  %-13s  %-9s  %s", t.Index, termsafe.String(t.Branch), termsafe.String(t.Role), lines[0])
		if f.TrimTurns || t.Structured() {
			line = strings.TrimRight(line, " ") // a model's turn often has no text, only parts
		}
		fmt.Fprintln(w, line)
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%4s  %-13s  %-9s  %s\n", "", "", "", l)
		}
		for _, it := range f.Items(t) {
			fmt.Fprintf(w, "%4s  %-13s  %-9s  %s\n", "", "", it.Label, Clip(it.Line(), LineWidth))
		}
	}
	return nil
}
