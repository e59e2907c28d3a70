package mcp

import (
	"context"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/internal/render"
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
// first (trails-admin tree --json's node). It is render.Node.
type NodeJSON = render.Node

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
	render.TreeText(&b, []*session.Node{n}, nil)
	return TreeOutput{Tree: render.NewNode(n)}, b.String(), nil
}
