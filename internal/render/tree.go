package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// Node is the JSON form of a session of a fork tree (session.Node), with
// stable names: its description and its direct forks, oldest first.
type Node struct {
	Info
	ParentMissing bool   `json:"parent_missing,omitempty"`
	Children      []Node `json:"children"`
}

// NewNode returns the JSON form of n and the forks under it.
func NewNode(n *session.Node) Node {
	out := Node{Info: NewInfo(n.Info), ParentMissing: n.ParentMissing, Children: []Node{}}
	for _, c := range n.Children {
		out.Children = append(out.Children, NewNode(c))
	}
	return out
}

// Short returns "…" and the last 8 characters of a session id: the random
// part of a UUIDv7 (its first characters are a timestamp, alike for
// sessions made together), enough to tell the sessions of a tree apart.
func Short(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}

// TreeText draws trees as indented text: one line a session, forks under
// their parent with box-drawing lines; a root with its principal and
// turns, a fork with its fork point and own and total turns, then
// worker, a lifecycle state other than active, ORPHAN for a missing
// parent and CYCLE. cycleHint, when not nil, gives what follows CYCLE on
// the top line of a tree on a parent cycle (what to do about it). Every
// stored value is escaped.
func TreeText(w io.Writer, trees []*session.Node, cycleHint func(n *session.Node) string) error {
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
		desc := fmt.Sprintf("%s  %s  %s  %s", id, label, termsafe.String(n.Principal), Plural(n.Turns, "turn"))
		if n.ParentID != "" && !top {
			desc = fmt.Sprintf("%s  %s  @%d  +%s (%d in all)", id, label, n.ForkedAt, Plural(n.OwnTurns, "turn"), n.Turns)
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
			if top && cycleHint != nil {
				desc += cycleHint(n)
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

// TreeDot draws trees as a Graphviz digraph: a box a session (a root
// green, a session whose parent is missing red, with a dashed box for
// the missing parent), an arrow a fork, labelled with its fork point.
func TreeDot(w io.Writer, trees []*session.Node) error {
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
			lines := []string{Short(n.ID), n.Branch + " · " + n.Principal, fmt.Sprintf("%s (%d own)", Plural(n.Turns, "turn"), n.OwnTurns)}
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
				fmt.Fprintf(&b, "  %s [label=%s, shape=box, style=dashed, fillcolor=white, color=\"#c0392b\"];\n", dotString(n.ParentID), dotString("missing", Short(n.ParentID)))
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

// TreeMermaid draws trees as a Mermaid flowchart: a node a session, an
// arrow a fork labelled with its fork point, a dotted arrow from a
// missing parent.
func TreeMermaid(w io.Writer, trees []*session.Node) error {
	var b strings.Builder
	b.WriteString("graph LR\n")
	for _, t := range trees {
		t.Walk(func(n *session.Node) {
			fmt.Fprintf(&b, "  %s[\"%s<br/>%s · %s\"]\n", mermaidNode(n.ID), mermaidText(Short(n.ID)), mermaidText(n.Branch), Plural(n.Turns, "turn"))
			for _, c := range n.Children {
				fmt.Fprintf(&b, "  %s -- \"at %d\" --> %s\n", mermaidNode(n.ID), c.ForkedAt, mermaidNode(c.ID))
			}
			if n.ParentMissing {
				fmt.Fprintf(&b, "  %s[\"missing %s\"] -. \"at %d\" .-> %s\n", mermaidNode(n.ParentID), mermaidText(Short(n.ParentID)), n.ForkedAt, mermaidNode(n.ID))
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
