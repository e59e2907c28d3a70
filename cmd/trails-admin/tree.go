package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

type treeCmd struct {
	format string
	json   bool // --json, the same as --format json (as every other command that prints data)
}

func (*treeCmd) name() string  { return "tree" }
func (*treeCmd) usage() string { return "[ID] [--format text|dot|mermaid|json] [--json]" }
func (*treeCmd) synopsis() string {
	return "draw the fork tree under ID (or every root) with fork points"
}
func (*treeCmd) example() string {
	return "trails-admin tree --format dot | dot -Tpng -o tree.png"
}
func (c *treeCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.format, "format", "text", "text (indented), dot (Graphviz), mermaid or json")
	fs.BoolVar(&c.json, "json", false, "the same as --format json")
}

// nodeJSON is the JSON form of a tree node (stable names).
type nodeJSON struct {
	infoJSON
	ParentMissing bool       `json:"parent_missing,omitempty"`
	Children      []nodeJSON `json:"children"`
}

func toNodeJSON(n *session.Node) nodeJSON {
	out := nodeJSON{infoJSON: toInfoJSON(n.Info), ParentMissing: n.ParentMissing, Children: []nodeJSON{}}
	for _, c := range n.Children {
		out.Children = append(out.Children, toNodeJSON(c))
	}
	return out
}

func (c *treeCmd) run(ctx context.Context, a *app, args []string) error {
	if c.json {
		if c.format != "text" && c.format != "json" {
			return usageErrorf("tree: --json and --format %s disagree; give one of them; try: trails-admin tree -h", termsafe.Quote(c.format))
		}
		c.format = "json"
	}
	render, ok := map[string]func(io.Writer, []*session.Node) error{
		"text": renderText, "dot": renderDot, "mermaid": renderMermaid,
	}[c.format]
	if !ok && c.format != "json" {
		return usageErrorf("tree: unknown --format %s; want text, dot, mermaid or json; try: trails-admin tree -h", termsafe.Quote(c.format))
	}
	if len(args) > 1 {
		return usageErrorf("tree takes at most one session id; try: trails-admin tree -h")
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	var trees []*session.Node
	if len(args) == 1 {
		t, err := st.Tree(ctx, args[0])
		if err != nil {
			return err
		}
		trees = []*session.Node{t}
	} else {
		ds, err := a.dataset(ctx)
		if err != nil {
			return err
		}
		if trees, err = ds.Forest(ctx); err != nil {
			return err
		}
	}
	if c.format == "json" {
		out := make([]nodeJSON, len(trees))
		for i, t := range trees {
			out[i] = toNodeJSON(t)
		}
		return a.json(out)
	}
	return render(a.stdout, trees)
}

// short is "…" and the last 8 characters of a session id: the random part
// of a UUIDv7 (its first characters are a timestamp, alike for sessions
// made together), enough to tell the sessions of a tree apart.
func short(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}

func renderText(w io.Writer, trees []*session.Node) error {
	var line func(n *session.Node, prefix string, last, top bool)
	line = func(n *session.Node, prefix string, last, top bool) {
		branch, next := "", prefix
		if !top {
			branch = "├── "
			next = prefix + "│   "
			if last {
				branch = "└── "
				next = prefix + "    "
			}
		}
		id, label := termsafe.String(n.ID), termsafe.String(n.Branch)
		desc := fmt.Sprintf("%s  %s  %s  %s", id, label, termsafe.String(n.Principal), plural(n.Turns, "turn"))
		if n.ParentID != "" && !top {
			desc = fmt.Sprintf("%s  %s  @%d  +%s (%d in all)", id, label, n.ForkedAt, plural(n.OwnTurns, "turn"), n.Turns)
		}
		if n.Kind == session.KindWorker {
			desc += "  worker"
		}
		if n.State != "" && n.State != session.StateActive {
			desc += "  " + termsafe.String(string(n.State))
		}
		if n.ParentMissing {
			desc += fmt.Sprintf("  ORPHAN: parent %s is missing", termsafe.String(n.ParentID))
		}
		if n.Cycle {
			desc += "  CYCLE"
			if top {
				desc += fmt.Sprintf(": its parent %s descends from it (trails-admin delete %s --cascade removes the cycle)", n.ParentID, n.ID)
			}
		}
		fmt.Fprintf(w, "%s%s%s\n", prefix, branch, desc)
		for i, c := range n.Children {
			line(c, next, i == len(n.Children)-1, false)
		}
	}
	for _, t := range trees {
		line(t, "", true, true)
	}
	return nil
}

func renderDot(w io.Writer, trees []*session.Node) error {
	var b strings.Builder
	b.WriteString("digraph trails {\n")
	b.WriteString("  rankdir=LR;\n  bgcolor=\"white\";\n")
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11, fillcolor=\"#eef4ff\", color=\"#4a6fa5\"];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=10, color=\"#4a6fa5\"];\n")
	for _, t := range trees {
		t.Walk(func(n *session.Node) {
			fill := "#eef4ff"
			if n.ParentID == "" {
				fill = "#dff3e3"
			}
			if n.ParentMissing {
				fill = "#fde2e1"
			}
			lines := []string{short(n.ID), n.Branch + " · " + n.Principal, fmt.Sprintf("%s (%d own)", plural(n.Turns, "turn"), n.OwnTurns)}
			var notes []string
			if n.Kind == session.KindWorker {
				notes = append(notes, "worker")
			}
			if n.State != "" && n.State != session.StateActive {
				notes = append(notes, string(n.State))
			}
			if n.Cycle {
				notes = append(notes, "cycle")
			}
			if len(notes) > 0 {
				lines = append(lines, strings.Join(notes, " · "))
			}
			fmt.Fprintf(&b, "  %s [label=%s, fillcolor=%q];\n", dotString(n.ID), dotString(lines...), fill)
			for _, c := range n.Children {
				fmt.Fprintf(&b, "  %s -> %s [label=\"at %d\"];\n", dotString(n.ID), dotString(c.ID), c.ForkedAt)
			}
			if n.ParentMissing {
				fmt.Fprintf(&b, "  %s [label=%s, shape=box, style=dashed, fillcolor=white, color=\"#c0392b\"];\n", dotString(n.ParentID), dotString("missing", short(n.ParentID)))
				fmt.Fprintf(&b, "  %s -> %s [label=\"at %d\", style=dashed, color=\"#c0392b\"];\n", dotString(n.ParentID), dotString(n.ID), n.ForkedAt)
			}
		})
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dotString returns lines as one quoted Graphviz string, the lines joined
// by Graphviz's line break \n: each escaped (termsafe.String), then its
// backslashes and quotes escaped, so that no value can end the string or
// add a line break of its own.
func dotString(lines ...string) string {
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = esc.Replace(termsafe.String(l))
	}
	return `"` + strings.Join(out, `\n`) + `"`
}

func renderMermaid(w io.Writer, trees []*session.Node) error {
	var b strings.Builder
	b.WriteString("graph LR\n")
	for _, t := range trees {
		t.Walk(func(n *session.Node) {
			fmt.Fprintf(&b, "  %s[\"%s<br/>%s · %s\"]\n", mermaidNode(n.ID), mermaidText(short(n.ID)), mermaidText(n.Branch), plural(n.Turns, "turn"))
			for _, c := range n.Children {
				fmt.Fprintf(&b, "  %s -- \"at %d\" --> %s\n", mermaidNode(n.ID), c.ForkedAt, mermaidNode(c.ID))
			}
			if n.ParentMissing {
				fmt.Fprintf(&b, "  %s[\"missing %s\"] -. \"at %d\" .-> %s\n", mermaidNode(n.ParentID), mermaidText(short(n.ParentID)), n.ForkedAt, mermaidNode(n.ID))
			}
		})
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mermaidNode returns the Mermaid node name of session id: "s" and the id
// without its hyphens, any other character that is not a letter or digit
// of ASCII written as "_" and its hex code.
func mermaidNode(id string) string {
	var b strings.Builder
	b.WriteString("s")
	for _, c := range []byte(id) {
		switch {
		case c == '-':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

// mermaidText returns s for a quoted Mermaid label: escaped
// (termsafe.String), with the characters Mermaid reads in a label written
// as its entity codes, so that no value can end the label or add markup.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "#", "#35;").Replace(termsafe.String(s))
}
