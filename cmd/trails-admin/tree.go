package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/trails-kg/trails/internal/render"
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

func (c *treeCmd) run(ctx context.Context, a *app, args []string) error {
	if c.json {
		if c.format != "text" && c.format != "json" {
			return usageErrorf("tree: --json and --format %s disagree; give one of them; try: trails-admin tree -h", termsafe.Quote(c.format))
		}
		c.format = "json"
	}
	draw, ok := map[string]func(io.Writer, []*session.Node) error{
		"text": treeText, "dot": render.TreeDot, "mermaid": render.TreeMermaid,
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
		out := make([]render.Node, len(trees))
		for i, t := range trees {
			out[i] = render.NewNode(t)
		}
		return a.json(out)
	}
	return draw(a.stdout, trees)
}

// treeText draws trees as indented text (render.TreeText), the top line
// of a tree on a parent cycle saying how to remove the cycle.
func treeText(w io.Writer, trees []*session.Node) error {
	return render.TreeText(w, trees, func(n *session.Node) string {
		return fmt.Sprintf(": its parent %s descends from it (trails-admin delete %s --cascade removes the cycle)", n.ParentID, n.ID)
	})
}
