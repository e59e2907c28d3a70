package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// TreeInput is the input of fork_tree.
type TreeInput struct {
	ID string `json:"id" jsonschema:"the session at the top of the tree"`
}

// TreeOutput is the result of fork_tree: the session with its forks
// nested (trails-admin tree --json's node).
type TreeOutput struct {
	Tree NodeJSON `json:"tree"`
}

// NodeJSON is a session of a fork tree, with its direct forks, oldest
// first.
type NodeJSON struct {
	InfoJSON
	ParentMissing bool       `json:"parent_missing,omitempty"`
	Children      []NodeJSON `json:"children"`
}

func toNodeJSON(n *session.Node) NodeJSON {
	out := NodeJSON{InfoJSON: toInfoJSON(n.Info), ParentMissing: n.ParentMissing, Children: []NodeJSON{}}
	for _, c := range n.Children {
		out.Children = append(out.Children, toNodeJSON(c))
	}
	return out
}

// treeSchema is fork_tree's output schema, written out: a node holds
// nodes, which schema inference cannot follow.
var treeSchema = &jsonschema.Schema{
	Type:     "object",
	Required: []string{"tree"},
	Properties: map[string]*jsonschema.Schema{
		"tree": {Ref: "#/$defs/node"},
	},
	Defs: map[string]*jsonschema.Schema{
		"node": {
			Type:     "object",
			Required: []string{"id", "principal", "parent", "forked_at", "branch", "kind", "own_turns", "turns", "created", "tags", "children"},
			Properties: map[string]*jsonschema.Schema{
				"id": {Type: "string"}, "principal": {Type: "string"}, "parent": {Type: "string"},
				"forked_at": {Type: "integer"}, "branch": {Type: "string"}, "kind": {Type: "string"},
				"own_turns": {Type: "integer"}, "turns": {Type: "integer"}, "created": {Type: "string"},
				"tags": {Type: "array", Items: &jsonschema.Schema{Type: "string"}}, "cycle": {Type: "boolean"},
				"parent_missing": {Type: "boolean"},
				"children":       {Type: "array", Items: &jsonschema.Schema{Ref: "#/$defs/node"}},
			},
		},
	},
}

func (t *tools) addTreeTool(srv *sdk.Server) {
	addTool(srv, &sdk.Tool{Name: ToolForkTree, Annotations: readOnly, OutputSchema: treeSchema,
		Description: "The fork tree under a session: each fork with its fork point, own and total turns, kind and lifecycle state, nested under its parent."},
		t.tree)
}

func (t *tools) tree(ctx context.Context, in TreeInput) (TreeOutput, string, error) {
	n, err := t.st.Tree(ctx, in.ID)
	if err != nil {
		return TreeOutput{}, "", err
	}
	var b strings.Builder
	writeTree(&b, n, "", true, true)
	return TreeOutput{Tree: toNodeJSON(n)}, b.String(), nil
}

// writeTree draws n and its forks as trails-admin tree does: one line
// each, forks indented under their parent with box-drawing lines, every
// stored value escaped.
func writeTree(b *strings.Builder, n *session.Node, prefix string, last, top bool) {
	branch, next := "", prefix
	if !top {
		branch, next = "├── ", prefix+"│   "
		if last {
			branch, next = "└── ", prefix+"    "
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
	}
	fmt.Fprintf(b, "%s%s%s\n", prefix, branch, desc)
	for i, c := range n.Children {
		writeTree(b, c, next, i == len(n.Children)-1, false)
	}
}
