package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	trailsmcp "github.com/trails-kg/trails/integrations/mcp"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

func TestMain(m *testing.M) { fusekitest.Main(m) }

// connect returns a client session of a server over c, through the
// SDK's in-memory transports; both end with tb.
func connect(tb testing.TB, c *kg.Client) *mcp.ClientSession {
	tb.Helper()
	return connectServer(tb, trailsmcp.NewServer(c))
}

// connectServer returns a client session of srv over the SDK's in-memory
// transports; both end with tb.
func connectServer(tb testing.TB, srv *mcp.Server) *mcp.ClientSession {
	tb.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		tb.Fatalf("connect the server: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatalf("connect the client: %v", err)
	}
	tb.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// call calls tool name with args, failing tb on a protocol error (a tool
// error is a result).
func call(tb testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	tb.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.Fatalf("%s: got protocol error %v, want a result", name, err)
	}
	return res
}

// result calls tool name with args and decodes its structured content into
// a T, failing tb on a tool error; it returns the text rendering too.
func result[T any](tb testing.TB, cs *mcp.ClientSession, name string, args any) (T, string) {
	tb.Helper()
	var out T
	res := call(tb, cs, name, args)
	if res.IsError {
		tb.Fatalf("%s %v: got tool error %q", name, args, text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		tb.Fatalf("%s: structured content: %v", name, err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return out, text(res)
}

// raw calls tool name and returns its structured content as JSON objects.
func raw(tb testing.TB, cs *mcp.ClientSession, name string, args any) map[string]any {
	tb.Helper()
	out, _ := result[map[string]any](tb, cs, name, args)
	return out
}

// text returns the text content of res.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// wantToolError fails tb unless res is a tool error whose text holds
// every one of want.
func wantToolError(tb testing.TB, what string, res *mcp.CallToolResult, want ...string) {
	tb.Helper()
	if !res.IsError {
		tb.Errorf("%s: got a result (%s), want a tool error", what, text(res))
		return
	}
	tb.Logf("%s: %s", what, text(res))
	for _, w := range want {
		if !strings.Contains(text(res), w) {
			tb.Errorf("%s: got error %q, want it to say %q", what, text(res), w)
		}
	}
}

// agentLoop stores a root of principal "agent-7" with a tool call and
// its result, an anchor after turn 2 and a fork at 2 with one turn of its
// own; it returns the root and the fork.
func agentLoop(tb testing.TB, st *session.Store) (root, fork *session.Session) {
	tb.Helper()
	ctx := context.Background()
	root = session.New("agent-7")
	root.Append("user", "Weather in Paris?")
	root.AppendTurn(session.Turn{Role: "assistant", Structure: &session.Structure{
		Model: "gemini-2.5-flash", FinishReason: "tool_calls", Usage: &session.Usage{Input: 812, Output: 19, Total: 831},
		Parts: []session.Part{{Kind: session.PartToolCall, CallID: "call_1", ToolName: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}},
	}})
	if err := st.Persist(ctx, root); err != nil {
		tb.Fatalf("persist: %v", err)
	}
	if _, err := st.Anchor(ctx, root.ID, "asked", nil); err != nil {
		tb.Fatalf("anchor: %v", err)
	}
	root.AppendTurn(session.Turn{Role: "tool", Content: "sunny", Structure: &session.Structure{
		Parts: []session.Part{{Kind: session.PartToolResult, CallID: "call_1", ToolName: "get_weather", Result: json.RawMessage(`{"sky":"sunny"}`)}},
	}})
	root.Append("assistant", "It is sunny in Paris.")
	if err := st.Persist(ctx, root); err != nil {
		tb.Fatalf("persist: %v", err)
	}
	fork, err := root.Fork(2)
	if err != nil {
		tb.Fatalf("fork: %v", err)
	}
	fork.Append("user", "And in Lisbon?")
	if err := st.Persist(ctx, fork); err != nil {
		tb.Fatalf("persist the fork: %v", err)
	}
	return root, fork
}
