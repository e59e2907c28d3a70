package main_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// auditLoop is a small agent loop with a fork between a tool call and its
// result, stored through the library.
type auditLoop struct {
	c          *kg.Client
	root, fork string
}

// agentStart is the day the agent loop's turns are created.
var agentStart = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// seedAgentLoop stores, in an emptied dataset: a root of agent-7 (the
// user asks, the model calls get_weather with usage, the tool answers,
// the model answers) and a fork of agent-9 made between the call and its
// result, holding a result of its own (quotes and a newline in it) and a
// model turn.
func seedAgentLoop(tb testing.TB) auditLoop {
	tb.Helper()
	c := fusekitest.Empty(tb)
	st := session.NewStore(c)
	ctx := context.Background()
	minute := func(n int) time.Time { return agentStart.Add(time.Duration(n) * time.Minute) }
	call := session.Part{Kind: session.PartToolCall, CallID: "call_1", ToolName: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}
	result := func(r string) session.Part {
		return session.Part{Kind: session.PartToolResult, CallID: "call_1", ToolName: "get_weather", Result: json.RawMessage(r)}
	}
	root := session.New("agent-7")
	root.AppendTurn(session.Turn{Role: "user", Content: "Weather in Paris?", Created: minute(0)})
	root.AppendTurn(session.Turn{Role: "assistant", Created: minute(1), Structure: &session.Structure{
		Author: "weather-agent", Model: "gemini-2.5-flash", FinishReason: "tool_calls",
		Usage: &session.Usage{Input: 812, Output: 19, Total: 831}, Parts: []session.Part{call}}})
	root.AppendTurn(session.Turn{Role: "tool", Content: "sunny", Created: minute(2), Structure: &session.Structure{
		Parts: []session.Part{result(`{"sky":"sunny"}`)}}})
	root.AppendTurn(session.Turn{Role: "assistant", Content: "It is sunny in Paris.", Created: minute(3), Structure: &session.Structure{
		Model: "gemini-2.5-flash", FinishReason: "stop", Usage: &session.Usage{Input: 850, Output: 8, Cached: 800, Total: 858}}})
	if err := st.Persist(ctx, root); err != nil {
		tb.Fatal(err)
	}
	fork, err := root.Fork(2)
	if err != nil {
		tb.Fatal(err)
	}
	fork.Principal = "agent-9"
	fork.AppendTurn(session.Turn{Role: "tool", Content: "cloudy", Created: minute(10), Structure: &session.Structure{
		Parts: []session.Part{result(`{"sky":"cloudy","note":"a \"grey\" day\nall day"}`)}}})
	fork.AppendTurn(session.Turn{Role: "assistant", Content: "Cloudy in Paris.", Created: minute(11), Structure: &session.Structure{
		Model: "gemini-2.5-pro", FinishReason: "stop", Usage: &session.Usage{Input: 860, Output: 12, Reasoning: 40, Total: 912}}})
	if err := st.Persist(ctx, fork); err != nil {
		tb.Fatal(err)
	}
	return auditLoop{c: c, root: root.ID, fork: fork.ID}
}

// TestAuditAgentQueries: the audit queries of agent turns run through
// trails-admin audit (tool-calls, the usage queries, model-invocations),
// and check reports a tool result whose call was never made.
func TestAuditAgentQueries(t *testing.T) {
	fusekitest.Parallel(t)
	l := seedAgentLoop(t)
	r := storeRunner(t)
	window := []string{"--param", "from=2026-11-20", "--param", "to=2026-11-21"}
	calls := r.mustRun(t, 0, "audit", "tool-calls", "--param", "session="+l.fork)
	callsJSON := r.mustRun(t, 0, "audit", "tool-calls", "--param", "session="+l.root, "--json")
	usage := r.mustRun(t, 0, "audit", "usage-of-session", "--param", "session="+l.fork)
	tree := r.mustRun(t, 0, "audit", "usage-of-tree", "--param", "session="+l.root)
	byPrincipal := r.mustRun(t, 0, append([]string{"audit", "usage-by-principal"}, window...)...)
	invocations := r.mustRun(t, 0, append([]string{"audit", "model-invocations", "--param", "principal=agent-7"}, window...)...)
	clean := r.mustRun(t, 0, "check")

	// A result of a call never made, as Persist writes it.
	st := session.NewStore(l.c)
	s, err := st.Load(context.Background(), l.fork)
	if err != nil {
		t.Fatal(err)
	}
	s.AppendTurn(session.Turn{Role: "tool", Created: agentStart.Add(12 * time.Minute), Structure: &session.Structure{Parts: []session.Part{
		{Kind: session.PartToolResult, CallID: "call_9", ToolName: "get_time", Result: json.RawMessage(`"noon"`)}}}})
	if err := st.Persist(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	finding := r.mustRun(t, 1, "check")
	golden(t, "audit-agent", []string{l.c.Endpoint()},
		"an agent loop of agent-7 (a call of get_weather, its result, an answer) and a fork of agent-9 between the call and its result; then a result of a call never made",
		calls, callsJSON, usage, tree, byPrincipal, invocations, clean, finding)
	t.Logf("trails-admin audit tool-calls --param session=%s\n%s\ntrails-admin audit usage-of-session --param session=%s\n%s", l.fork, calls.stdout, l.fork, usage.stdout)

	// The fork's own result answers the root's call; the root's, its own.
	rows := object(t, "tool-calls", decode[map[string]any](t, callsJSON))
	got := array(t, "rows", rows["rows"])
	if len(got) != 1 {
		t.Fatalf("tool-calls of the root: got %d rows, want 1", len(got))
	}
	row := object(t, "row", got[0])
	if row["arguments"] != `{"city":"Paris"}` || row["result"] != `{"sky":"sunny"}` || row["isError"] != false || row["index"] != float64(1) {
		t.Errorf("tool-calls of the root: got %v", row)
	}
	if !strings.Contains(calls.stdout, `{"sky":"cloudy"`) || strings.Contains(calls.stdout, "sunny") {
		t.Errorf("tool-calls of the fork: want its own result, not the root's:\n%s", calls.stdout)
	}
	if !slices.ContainsFunc(strings.Split(finding.stdout, "\n"), func(line string) bool {
		return strings.HasPrefix(line, "tool-result-without-call") && strings.Contains(line, `call id "call_9"`)
	}) {
		t.Errorf("check: want a tool-result-without-call finding for call_9:\n%s", finding.stdout)
	}
}
