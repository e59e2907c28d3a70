package langchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/trails-kg/trails/integrations/langchaingo"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

// hostile holds what a user, a model or a tool may well emit: quotes,
// backslashes, SPARQL and Turtle syntax, control characters (NUL and ESC
// among them), bidi overrides, line separators, non-ASCII.
const hostile = "\"\"\" ' \\ \\\" } ; DROP ALL ; INSERT DATA { <a> <b> \"c\" } # \x00\x01\x1b[31m\x1f\x7f \t\r\n é 漢字 🦀 \u202e\u2066 \u2028\u2029 ^^<x> @en"

// hostileArgs is valid JSON that keeps its own spelling: whitespace,
// escapes, key order, duplicate keys, numbers a parser would rewrite.
const hostileArgs = "{ \"b\" : [1.0, 1e2, -0, 12345678901234567890] ,\n\t\"a\":\"\\u0000\\\"}; DROP ALL\\\\ \\ud83e\\udd80 é\", \"a\": null }"

// call returns a tool call of type "function".
func call(id, name, args string) llms.ToolCall {
	return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
}

// TestRoundTrip: every message type and field comes back exactly
// (reflect.DeepEqual) from Messages, on the History that added them and
// on a new one over the same session, including what only a raw copy can
// carry, hostile strings and a content long enough to be sent ahead of
// its update.
func TestRoundTrip(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	long := strings.Repeat(hostile, 70<<10/len(hostile)+1) // > 64 KiB: the staging path
	msgs := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "You are a weather agent. " + hostile},
		llms.HumanChatMessage{Content: "Weather in Paris and Rome? " + hostile},
		llms.AIChatMessage{Content: "", ReasoningContent: "Two cities: two calls. " + hostile, ToolCalls: []llms.ToolCall{
			call("call_1", "get_weather", `{"city":"Paris"}`),
			call("call_2 "+hostile, "get_weather", hostileArgs),
		}},
		llms.ToolChatMessage{ID: "call_1", Content: `{"sky":"sunny","temp":21.50}`},
		llms.ToolChatMessage{ID: "call_2 " + hostile, Content: "rain " + hostile},
		llms.AIChatMessage{Content: "Sunny in Paris, rain in Rome. " + hostile},
		llms.HumanChatMessage{Content: ""},
		llms.HumanChatMessage{Content: long},
		llms.AIChatMessage{Content: long, ReasoningContent: long},
		// What the turn's fields cannot say: the raw copy does.
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{
			call("c3", "search", "not JSON {"),
			call("c4", "noargs", ""),
			call("c5", "quoted", `"a JSON string"`),
			{ID: "c6", Type: "", FunctionCall: &llms.FunctionCall{Name: "untyped", Arguments: "{}"}},
			{ID: "c7", Type: "custom " + hostile, FunctionCall: &llms.FunctionCall{Name: "typed", Arguments: "{}"}},
			{ID: "c8", Type: "function"},
			call("c9", "", "{}"),
			call(strings.Repeat("i", 2000), strings.Repeat("n", 2000), "{}"),
		}},
		llms.AIChatMessage{Content: "legacy", FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: hostileArgs}},
		llms.AIChatMessage{Content: "no calls", ToolCalls: []llms.ToolCall{}},
		llms.FunctionChatMessage{Name: "lookup", Content: "found " + hostile},
		llms.FunctionChatMessage{Name: "", Content: `[1, 2]`},
		llms.ToolChatMessage{ID: "", Content: ""},
		llms.GenericChatMessage{Role: "critic", Name: "reviewer " + hostile, Content: "LGTM " + hostile},
		llms.GenericChatMessage{Role: "user", Name: "", Content: "a generic message in a human's role"},
		llms.GenericChatMessage{Role: "assistant", Content: "and in an AI's"},
		llms.GenericChatMessage{Role: "", Name: "anonymous", Content: "no role"},
		llms.GenericChatMessage{Role: "generic", Content: "the role that stands for none"},
		llms.GenericChatMessage{Role: hostile, Name: strings.Repeat("n", 2000), Content: hostile},
		llms.GenericChatMessage{Role: strings.Repeat("r", 2000), Content: "a role too long for a turn's"},
	}
	h := langchaingo.NewHistory(st, "round trip "+hostile)
	mustAdd(t, h, msgs...)
	sameMessages(t, st, h, msgs)
}

// TestStructuredTurns: an auditor finds the messages as structured turns:
// roles by type, the reasoning and tool calls as parts with the arguments
// byte for byte, a tool message as a tool result part, and no raw copy
// where the fields say it all.
func TestStructuredTurns(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	h := langchaingo.NewHistory(st, "")
	mustAdd(t, h,
		llms.HumanChatMessage{Content: "Weather in Paris?"},
		llms.AIChatMessage{ReasoningContent: "call the tool", ToolCalls: []llms.ToolCall{call("call_1", "get_weather", hostileArgs)}},
		llms.ToolChatMessage{ID: "call_1", Content: "sunny"},
		llms.FunctionChatMessage{Name: "get_time", Content: `{"h":12}`},
		llms.GenericChatMessage{Role: "critic", Name: "reviewer", Content: "fine"},
		llms.GenericChatMessage{Role: "user", Content: "raw"},
	)
	s, err := st.Load(context.Background(), h.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		role  string
		parts []session.Part
		raw   bool
	}
	wants := []want{
		{role: "user"},
		{role: "assistant", parts: []session.Part{
			{Kind: session.PartReasoning, Text: "call the tool"},
			{Kind: session.PartToolCall, CallID: "call_1", ToolName: "get_weather", Arguments: json.RawMessage(hostileArgs)},
		}},
		{role: "tool", parts: []session.Part{{Kind: session.PartToolResult, CallID: "call_1", Result: json.RawMessage(`"sunny"`)}}},
		{role: "function", parts: []session.Part{{Kind: session.PartToolResult, ToolName: "get_time", Result: json.RawMessage(`{"h":12}`)}}},
		{role: "critic"},
		{role: "user", raw: true},
	}
	if len(s.Turns) != len(wants) {
		t.Fatalf("got %d turns, want %d", len(s.Turns), len(wants))
	}
	for i, w := range wants {
		tu := s.Turns[i]
		var x session.Structure
		if tu.Structure != nil {
			x = *tu.Structure
		}
		if tu.Role != w.role {
			t.Errorf("turn %d: got role %q, want %q", i, tu.Role, w.role)
		}
		if len(x.Parts) != len(w.parts) {
			t.Fatalf("turn %d: got parts %+v, want %+v", i, x.Parts, w.parts)
		}
		for k := range w.parts {
			g, wp := x.Parts[k], w.parts[k]
			if g.Kind != wp.Kind || g.Text != wp.Text || g.CallID != wp.CallID || g.ToolName != wp.ToolName ||
				string(g.Arguments) != string(wp.Arguments) || string(g.Result) != string(wp.Result) {
				t.Errorf("turn %d part %d: got %+v, want %+v", i, k, g, wp)
			}
		}
		if got := x.Raw != nil; got != w.raw {
			t.Errorf("turn %d: got a raw copy %v, want %v", i, got, w.raw)
		} else if got && x.Raw.Format != langchaingo.RawFormat {
			t.Errorf("turn %d: got raw format %q, want %q", i, x.Raw.Format, langchaingo.RawFormat)
		}
	}
	if a := s.Turns[4].Structure; a == nil || a.Author != "reviewer" {
		t.Errorf("generic message: got structure %+v, want author %q", a, "reviewer")
	}
}

// TestRefused: a message Trails cannot store (invalid UTF-8 anywhere, a
// type of one's own, nil) is refused with the error its kind says, nothing
// is stored, and the History goes on working.
func TestRefused(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	h := langchaingo.NewHistory(st, "")
	first := llms.HumanChatMessage{Content: "kept"}
	mustAdd(t, h, first)
	var nilAI *llms.AIChatMessage
	for _, c := range []struct {
		name string
		m    llms.ChatMessage
		want error
	}{
		{"content", llms.HumanChatMessage{Content: "bad \xff"}, session.ErrInvalid},
		{"reasoning", llms.AIChatMessage{ReasoningContent: "bad \xfe"}, session.ErrInvalid},
		{"arguments", llms.AIChatMessage{ToolCalls: []llms.ToolCall{call("c", "f", "{\"a\":\"\xff\"}")}}, session.ErrInvalid},
		{"call type", llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c", Type: "\xff"}}}, session.ErrInvalid},
		{"generic name", llms.GenericChatMessage{Role: "r", Name: strings.Repeat("\xff", 2000)}, session.ErrInvalid},
		{"generic role", llms.GenericChatMessage{Role: "\xff"}, session.ErrInvalid},
		{"tool id", llms.ToolChatMessage{ID: "\xff"}, session.ErrInvalid},
		{"too long", llms.ToolChatMessage{Content: strings.Repeat("x", session.MaxTurnBytes/2+1)}, session.ErrInvalid},
		{"own type", ownMessage{}, llms.ErrUnexpectedChatMessageType},
		{"nil", nil, llms.ErrUnexpectedChatMessageType},
		{"nil pointer", nilAI, llms.ErrUnexpectedChatMessageType},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := h.AddMessage(ctx, c.m); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if err := h.SetMessages(ctx, []llms.ChatMessage{first, c.m}); !errors.Is(err, c.want) {
				t.Fatalf("set messages: got %v, want %v", err, c.want)
			}
		})
	}
	sameMessages(t, st, h, []llms.ChatMessage{first})
	if recs, err := st.Rewinds(ctx, h.SessionID()); err != nil || len(recs) != 0 {
		t.Fatalf("got %d rewinds (%v), want none", len(recs), err)
	}
	second := llms.AIChatMessage{Content: "still works"}
	mustAdd(t, h, second)
	sameMessages(t, st, h, []llms.ChatMessage{first, second})
}

// ownMessage is a message type of a program's own.
type ownMessage struct{}

func (ownMessage) GetType() llms.ChatMessageType { return llms.ChatMessageTypeHuman }
func (ownMessage) GetContent() string            { return "mine" }

// TestPointers: a pointer to one of langchaingo's messages is stored as
// the message, and Messages returns the value.
func TestPointers(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	h := langchaingo.NewHistory(st, "")
	mustAdd(t, h,
		&llms.HumanChatMessage{Content: "q"},
		&llms.AIChatMessage{Content: "a", ToolCalls: []llms.ToolCall{call("c", "f", "{}")}},
		&llms.ToolChatMessage{ID: "c", Content: "r"},
		&llms.SystemChatMessage{Content: "s"},
		&llms.FunctionChatMessage{Name: "f", Content: "r"},
		&llms.GenericChatMessage{Role: "x", Content: "g"},
	)
	sameMessages(t, st, h, []llms.ChatMessage{
		llms.HumanChatMessage{Content: "q"},
		llms.AIChatMessage{Content: "a", ToolCalls: []llms.ToolCall{call("c", "f", "{}")}},
		llms.ToolChatMessage{ID: "c", Content: "r"},
		llms.SystemChatMessage{Content: "s"},
		llms.FunctionChatMessage{Name: "f", Content: "r"},
		llms.GenericChatMessage{Role: "x", Content: "g"},
	})
}

// TestForeignTurns: a session written by other means (the session API,
// another framework's adapter) reads as messages: known roles by type, a
// tool result's call id, any other role as a generic message with the
// turn's author as its name.
func TestForeignTurns(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	s := session.New("agent")
	s.Append("user", "hi")
	s.AppendTurn(session.Turn{Role: "assistant", Content: "calling", Structure: &session.Structure{Model: "m",
		Parts: []session.Part{{Kind: session.PartText, Text: "calling"}, {Kind: session.PartReasoning, Text: "a"}, {Kind: session.PartReasoning, Text: "b"},
			{Kind: session.PartToolCall, CallID: "c1", ToolName: "f", Arguments: json.RawMessage(`{}`)}}}})
	s.AppendTurn(session.Turn{Role: "tool", Content: "done", Structure: &session.Structure{
		Parts: []session.Part{{Kind: session.PartToolResult, CallID: "c1", ToolName: "f", Result: json.RawMessage(`"done"`)}}}})
	s.AppendTurn(session.Turn{Role: "model", Content: "ok", Structure: &session.Structure{Author: "root-agent"}})
	s.Append("merge", "worker result")
	if err := st.Persist(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	sameMessages(t, st, langchaingo.NewHistory(st, s.ID), []llms.ChatMessage{
		llms.HumanChatMessage{Content: "hi"},
		llms.AIChatMessage{Content: "calling", ReasoningContent: "ab", ToolCalls: []llms.ToolCall{call("c1", "f", "{}")}},
		llms.ToolChatMessage{ID: "c1", Content: "done"},
		llms.GenericChatMessage{Role: "model", Name: "root-agent", Content: "ok"},
		llms.GenericChatMessage{Role: "merge", Content: "worker result"},
	})
}
