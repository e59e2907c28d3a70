package openaiagents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/nlpodyssey/openai-agents-go/memory"
	"github.com/openai/openai-go/v2/packages/param"
	"github.com/openai/openai-go/v2/responses"
	"github.com/openai/openai-go/v2/shared/constant"
	"github.com/trails-kg/trails/integrations/openaiagents"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// itemCase is an item and the turn that should store it: its role,
// content and parts (the raw copy and the type metadata aside).
type itemCase struct {
	name    string
	item    memory.TResponseInputItem
	role    string
	content string
	parts   []session.Part
}

// itemCases returns an item of each kind the SDK's runner writes, and
// some it may be given, with text that breaks careless writers.
func itemCases() []itemCase {
	text := func(s string) session.Part { return session.Part{Kind: session.PartText, Text: s} }
	return []itemCase{
		{name: "user message", item: user(hostile), role: "user", content: hostile},
		{name: "message without a type", role: "system", content: "be brief",
			item: memory.TResponseInputItem{OfMessage: &responses.EasyInputMessageParam{
				Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt("be brief")}, Role: responses.EasyInputMessageRoleSystem}}},
		{name: "message with a content list", role: "user", content: "look\n" + hostile, parts: []session.Part{text("look"), text(hostile)},
			item: memory.TResponseInputItem{OfMessage: &responses.EasyInputMessageParam{
				Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: responses.ResponseInputMessageContentListParam{
					{OfInputText: &responses.ResponseInputTextParam{Text: "look", Type: constant.ValueOf[constant.InputText]()}},
					{OfInputImage: &responses.ResponseInputImageParam{Detail: responses.ResponseInputImageDetailAuto,
						ImageURL: param.NewOpt("https://example.org/a.png"), Type: constant.ValueOf[constant.InputImage]()}},
					{OfInputText: &responses.ResponseInputTextParam{Text: hostile, Type: constant.ValueOf[constant.InputText]()}},
				}},
				Role: responses.EasyInputMessageRoleUser, Type: responses.EasyInputMessageTypeMessage}}},
		{name: "input message", role: "developer", content: "rules", parts: []session.Part{text("rules")},
			item: memory.TResponseInputItem{OfInputMessage: &responses.ResponseInputItemMessageParam{
				Content: responses.ResponseInputMessageContentListParam{{OfInputText: &responses.ResponseInputTextParam{Text: "rules", Type: constant.ValueOf[constant.InputText]()}}},
				Role:    "developer", Status: "completed", Type: "message"}}},
		{name: "output message", item: answer("msg_1", "Sunny. "+hostile), role: "assistant", content: "Sunny. " + hostile, parts: []session.Part{text("Sunny. " + hostile)}},
		{name: "refusal", role: "assistant", content: "no", parts: []session.Part{text("no")},
			item: memory.TResponseInputItem{OfOutputMessage: &responses.ResponseOutputMessageParam{ID: "msg_2",
				Content: []responses.ResponseOutputMessageContentUnionParam{{OfRefusal: &responses.ResponseOutputRefusalParam{Refusal: "no", Type: constant.ValueOf[constant.Refusal]()}}},
				Status:  responses.ResponseOutputMessageStatusCompleted, Role: constant.ValueOf[constant.Assistant](), Type: constant.ValueOf[constant.Message]()}}},
		{name: "function call", item: call("call_1", "get_weather", hostileArgs), role: "assistant",
			parts: []session.Part{{Kind: session.PartToolCall, CallID: "call_1", ToolName: "get_weather", Arguments: json.RawMessage(hostileArgs)}}},
		{name: "function call with arguments that are not JSON", item: call("call_2", "f", "not json"), role: "assistant",
			parts: []session.Part{{Kind: session.PartToolCall, CallID: "call_2", ToolName: "f", Arguments: json.RawMessage(`"not json"`)}}},
		{name: "function call output", item: output("call_1", `{"sky":"sunny"}`), role: "tool", content: `{"sky":"sunny"}`,
			parts: []session.Part{{Kind: session.PartToolResult, CallID: "call_1", Result: json.RawMessage(`{"sky":"sunny"}`)}}},
		{name: "function call output that is not JSON", item: output("call_2", hostile), role: "tool", content: hostile,
			parts: []session.Part{{Kind: session.PartToolResult, CallID: "call_2", Result: mustJSON(hostile)}}},
		{name: "custom tool call", role: "assistant",
			item: memory.TResponseInputItem{OfCustomToolCall: &responses.ResponseCustomToolCallParam{CallID: "call_3", Input: "SELECT 1", Name: "sql",
				ID: param.NewOpt("ctc_3"), Type: constant.ValueOf[constant.CustomToolCall]()}},
			parts: []session.Part{{Kind: session.PartToolCall, CallID: "call_3", ToolName: "sql", Arguments: json.RawMessage(`"SELECT 1"`)}}},
		{name: "custom tool call output", role: "tool", content: "1",
			item: memory.TResponseInputItem{OfCustomToolCallOutput: &responses.ResponseCustomToolCallOutputParam{CallID: "call_3", Output: "1",
				Type: constant.ValueOf[constant.CustomToolCallOutput]()}},
			parts: []session.Part{{Kind: session.PartToolResult, CallID: "call_3", Result: json.RawMessage(`1`)}}},
		{name: "reasoning", role: "assistant",
			item: memory.TResponseInputItem{OfReasoning: &responses.ResponseReasoningItemParam{ID: "rs_1",
				Summary:          []responses.ResponseReasoningItemSummaryParam{{Text: "two cities " + hostile, Type: constant.ValueOf[constant.SummaryText]()}},
				EncryptedContent: param.NewOpt("gAAAA=="), Type: constant.ValueOf[constant.Reasoning]()}},
			parts: []session.Part{{Kind: session.PartReasoning, Text: "two cities " + hostile}}},
		{name: "mcp call", role: "assistant",
			item: memory.TResponseInputItem{OfMcpCall: &responses.ResponseInputItemMcpCallParam{ID: "mcp_1", Arguments: "{}", Name: "n", ServerLabel: "s",
				Output: param.NewOpt("out"), Type: constant.ValueOf[constant.McpCall]()}}},
		{name: "mcp approval response", role: "user",
			item: memory.TResponseInputItem{OfMcpApprovalResponse: &responses.ResponseInputItemMcpApprovalResponseParam{ApprovalRequestID: "a1", Approve: true,
				Type: constant.ValueOf[constant.McpApprovalResponse]()}}},
		{name: "local shell call output", role: "tool",
			item: memory.TResponseInputItem{OfLocalShellCallOutput: &responses.ResponseInputItemLocalShellCallOutputParam{ID: "ls_1", Output: "ok",
				Type: constant.ValueOf[constant.LocalShellCallOutput]()}}},
		{name: "item reference", role: "user", item: memory.TResponseInputItem{OfItemReference: &responses.ResponseInputItemItemReferenceParam{ID: "msg_0"}}},
	}
}

// mustJSON returns v as JSON, with no HTML escapes (as a part holds a
// tool's text).
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TestItems: every kind of item comes back as it was added (the same
// variant, deeply equal), and its turn holds its role, text, tool call or
// result parts and type, for auditors.
func TestItems(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	cases := itemCases()
	s := openaiagents.NewSession(st, "")
	var items []memory.TResponseInputItem
	for _, c := range cases {
		items = append(items, c.item)
	}
	mustAdd(t, s, items...)
	stored(t, st, s, items)
	ts, err := st.Load(ctx, s.SessionID(ctx))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			turn := ts.Turns[i]
			if turn.Role != c.role || turn.Content != c.content {
				t.Errorf("got role %q content %q, want %q, %q", turn.Role, turn.Content, c.role, c.content)
			}
			x := turn.Structure
			if x == nil || x.Raw == nil || x.Raw.Format != openaiagents.RawFormat {
				t.Fatalf("got structure %+v, want a raw copy of format %s", x, openaiagents.RawFormat)
			}
			if len(x.Parts) != len(c.parts) {
				t.Fatalf("got parts %+v, want %+v", x.Parts, c.parts)
			}
			for k := range c.parts {
				g, w := x.Parts[k], c.parts[k]
				if g.Kind != w.Kind || g.Text != w.Text || g.CallID != w.CallID || g.ToolName != w.ToolName ||
					string(g.Arguments) != string(w.Arguments) || string(g.Result) != string(w.Result) {
					t.Errorf("part %d: got %+v, want %+v", k, g, w)
				}
			}
			want, ok := "", false
			if p := c.item.GetType(); p != nil && *p != "" {
				want, ok = *p, true
			}
			typ, has := x.Metadata[openaiagents.TypeKey]
			if has != ok || (ok && string(typ) != string(mustJSON(want))) {
				t.Errorf("got type %s (%v), want %q (%v)", typ, has, want, ok)
			}
		})
	}
}

// TestToolCalls: the audit query tool-calls (package prov) pairs each
// function call with its output by call id, arguments and results byte
// for byte, across a fork made between a call and its output; a popped
// output is no longer the call's result.
func TestToolCalls(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := newStore(t)
	ctx := context.Background()
	s := openaiagents.NewSession(st, "")
	mustAdd(t, s, user("Weather in Lisbon and Porto?"), call("c1", "get_weather", hostileArgs), call("c2", "get_weather", "not json"),
		output("c1", `{"sky":"sunny"}`), output("c2", hostile))
	f, err := s.Fork(ctx, 4) // the two calls and c1's output
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, f, output("c2", `{"sky":"rain"}`))
	type row struct{ index, tool, callID, args, resultIndex, result string }
	for _, tc := range []struct {
		name string
		id   string
		want []row
	}{
		{"session", s.SessionID(ctx), []row{
			{"1", "get_weather", "c1", hostileArgs, "3", `{"sky":"sunny"}`},
			{"2", "get_weather", "c2", `"not json"`, "4", string(mustJSON(hostile))}}},
		{"fork between a call and its output", f.SessionID(ctx), []row{
			{"1", "get_weather", "c1", hostileArgs, "3", `{"sky":"sunny"}`},
			{"2", "get_weather", "c2", `"not json"`, "4", `{"sky":"rain"}`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := prov.NewReader(c).Run(ctx, "tool-calls", map[string]string{"session": tc.id})
			if err != nil {
				t.Fatal(err)
			}
			var got []row
			for _, r := range res.Solutions {
				got = append(got, row{r.String("index"), r.String("tool"), r.String("callId"), r.String("arguments"), r.String("resultIndex"), r.String("result")})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d rows %q, want %q", len(got), got, tc.want)
			}
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Errorf("row %d: got %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
	if _, err := f.PopItem(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := prov.NewReader(c).Run(ctx, "tool-calls", map[string]string{"session": f.SessionID(ctx)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Solutions {
		if r.String("callId") == "c2" && r.String("result") != "" {
			t.Errorf("after the pop: got c2's result %s, want none", r.String("result"))
		}
	}
}

// TestInvalidItems: an item Trails cannot store as it is gives an
// *ItemError naming it that matches ErrInvalid; nothing of the call is
// stored (an unstored session stays unstored, a stored one keeps its
// items), and the Session goes on writing.
func TestInvalidItems(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	good := user("fine")
	for _, c := range []struct {
		name   string
		item   memory.TResponseInputItem
		typ    string
		inCore bool // also session.ErrInvalid
	}{
		{"no variant", memory.TResponseInputItem{}, "", false},
		{"two variants", memory.TResponseInputItem{OfMessage: user("a").OfMessage, OfFunctionCall: call("c", "f", "{}").OfFunctionCall}, "", false},
		{"content not UTF-8", user("bad \xff byte"), "message", true},
		{"arguments not UTF-8", call("c", "f", "{\"a\":\"\xfe\"}"), "function_call", true},
		{"call id not UTF-8", output("c\xff", "{}"), "function_call_output", true},
		{"role not UTF-8", message("us\xffer", "hi"), "message", true},
		{"output over MaxTurnBytes", output("c", strings.Repeat("x", session.MaxTurnBytes+1)), "function_call_output", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openaiagents.NewSession(st, "")
			id := s.SessionID(ctx)
			check := func(err error, index int) {
				t.Helper()
				var ie *openaiagents.ItemError
				if !errors.As(err, &ie) || !errors.Is(err, openaiagents.ErrInvalid) {
					t.Fatalf("got %v, want an *ItemError matching %v", err, openaiagents.ErrInvalid)
				}
				if ie.Index != index || (c.typ != "" && ie.Type != c.typ) {
					t.Errorf("got item %d of type %q, want %d of %q", ie.Index, ie.Type, index, c.typ)
				}
				if errors.Is(err, session.ErrInvalid) != c.inCore {
					t.Errorf("matches session.ErrInvalid: got %v, want %v", !c.inCore, c.inCore)
				}
			}
			check(s.AddItems(ctx, []memory.TResponseInputItem{good, c.item}), 1)
			if _, err := st.Load(ctx, id); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("after a refused first add: got %v, want the session unstored", err)
			}
			mustAdd(t, s, good)
			check(s.AddItems(ctx, []memory.TResponseInputItem{c.item, good}), 0)
			stored(t, st, s, []memory.TResponseInputItem{good})
			mustAdd(t, s, good)
			stored(t, st, s, []memory.TResponseInputItem{good, good})
		})
	}
}

// TestOtherWriters: turns another client of Trails wrote (no raw copy)
// read as items: a tool call part as a function call, a tool result as
// its output, the rest as messages.
func TestOtherWriters(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	ts := session.New("bob")
	ts.Append("user", "hi")
	ts.AppendTurn(session.Turn{Role: "assistant", Structure: &session.Structure{Parts: []session.Part{
		{Kind: session.PartToolCall, CallID: "c1", ToolName: "f", Arguments: json.RawMessage(`{"a":1}`)}}}})
	ts.AppendTurn(session.Turn{Role: "tool", Content: "done", Structure: &session.Structure{Parts: []session.Part{
		{Kind: session.PartToolResult, CallID: "c1", Result: json.RawMessage(`"done"`)}}}})
	ts.Append("narrator", "the end")
	if err := st.Persist(ctx, ts); err != nil {
		t.Fatal(err)
	}
	s := openaiagents.NewSession(st, ts.ID)
	sameItems(t, mustGet(t, s, 0), []memory.TResponseInputItem{
		user("hi"),
		{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: "c1", Name: "f", Arguments: `{"a":1}`, Type: constant.ValueOf[constant.FunctionCall]()}},
		{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: "c1", Output: "done", Type: constant.ValueOf[constant.FunctionCallOutput]()}},
		assistant("the end"),
	})
	// A Session appends to it as to its own.
	mustAdd(t, s, user("more"))
	if got := mustGet(t, s, 1); len(got) != 1 || !strings.Contains(jsonOf(got[0]), "more") {
		t.Fatalf("got %s, want the item added", jsonOf(got))
	}
}

// TestDamagedRawCopy: a raw copy GetItems cannot read is
// session.ErrCorrupt, not a silently dropped item.
func TestDamagedRawCopy(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	ts := session.New("bob")
	for _, data := range []string{`{"of":"OfNothing","item":{}}`, `{"of":"OfMessage","item":[1]}`, `not json`} {
		ts.AppendTurn(session.Turn{Role: "user", Content: "x", Structure: &session.Structure{Raw: &session.Raw{Format: openaiagents.RawFormat, Data: []byte(data)}}})
	}
	if err := st.Persist(ctx, ts); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 3; n++ {
		if _, err := openaiagents.NewSession(st, ts.ID).GetItems(ctx, n); !errors.Is(err, session.ErrCorrupt) {
			t.Errorf("last %d: got %v, want %v", n, err, session.ErrCorrupt)
		}
	}
}

// TestExtraFields: an item given fields of its own (SetExtraFields), or
// told to omit a required one (param.Omit), comes back as the same
// variant with the same JSON value (its extra fields in any order).
func TestExtraFields(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	ctx := context.Background()
	extra := user("hi")
	extra.OfMessage.SetExtraFields(map[string]any{"x_trace": map[string]any{"id": 7, "tags": []string{"a", hostile}}, "x_n": 1.5})
	omit := call("c1", "f", "{}")
	omit.OfFunctionCall.SetExtraFields(map[string]any{"status": param.Omit})
	items := []memory.TResponseInputItem{extra, omit}
	s := openaiagents.NewSession(st, "")
	mustAdd(t, s, items...)
	got := mustGet(t, openaiagents.NewSession(st, s.SessionID(ctx)), 0)
	if len(got) != len(items) {
		t.Fatalf("got %d items, want %d", len(got), len(items))
	}
	for i := range items {
		w, _ := items[i].MarshalJSON()
		g, err := got[i].MarshalJSON()
		// The same JSON value: the SDK writes extra fields in a Go map's
		// order, which changes from one encoding to the next.
		var gv, wv any
		if err != nil || json.Unmarshal(g, &gv) != nil || json.Unmarshal(w, &wv) != nil || !reflect.DeepEqual(gv, wv) {
			t.Errorf("item %d: got %s (%v), want %s", i, g, err, w)
		}
	}
	if got[0].OfMessage == nil || got[1].OfFunctionCall == nil {
		t.Errorf("got variants %s, want a message and a function call", jsonOf(got))
	}
}
