package main_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// The structured agent loop of the parts tests: a user asks, the model
// reasons and calls a tool (with its usage), the tool answers (one result,
// one error, state changes), the model answers. Every string an agent or
// a user wrote tries to act on the terminal: control characters, ANSI
// escapes, bidi overrides, line breaks, quotes.
var (
	loopArgs = "{\n  \"city\": \"Paris \u202e\",\n  \"note\": \"say \\\"hi\\\"\\n\\u001b[2J \u009b\",\n  \"long\": \"" +
		strings.Repeat("x", 120) + "\"\n}"
	loopResult = `{"sky": "sunny` + "\u0085" + `", "temp_c": 21}`
	loopError  = `"timeout\u001b[31m"`
	loopPNG    = []byte{0x89, 'P', 'N', 'G', 0, 1}
	loopRaw    = []byte("{\"id\":\"e1\"}\x00\xff")
)

// agentLoop stores the loop as a root of app "weather" and returns it as
// stored (Turns with their IDs).
func agentLoop(tb testing.TB, c *kg.Client) *session.Session {
	tb.Helper()
	st := session.NewStore(c)
	s := session.New("agent-7")
	s.App = "weather\x1b[31m"
	s.Initial = map[string]json.RawMessage{"cart": json.RawMessage(`[]`), "visits": json.RawMessage(`3`)}
	s.Append("user", "Weather in \"Paris\"?\x1b[2J\n   9  main           user       forged")
	s.AppendTurn(session.Turn{Role: "assistant", Structure: &session.Structure{
		Author: "weather-agent\u202e", InvocationID: "inv\n1", Model: "gemini-2.5\x1b]0;t\x07-flash", FinishReason: "tool_calls",
		Usage:    &session.Usage{Input: 812, Output: 19, Cached: 300, Reasoning: 5, Total: 831},
		Metadata: map[string]json.RawMessage{"trace\x1b": json.RawMessage(`{"span": "ab"}`)},
		Parts: []session.Part{
			{Kind: session.PartReasoning, Text: "The user wants the weather.\nCall get_weather.\x1b[1A"},
			{Kind: session.PartToolCall, CallID: "call_1", ToolName: "get_weather\x1b[31m", Arguments: json.RawMessage(loopArgs)},
		},
	}})
	s.AppendTurn(session.Turn{Role: "tool", Content: "sunny", Structure: &session.Structure{
		Parts: []session.Part{
			{Kind: session.PartToolResult, CallID: "call_1", ToolName: "get_weather\x1b[31m", Result: json.RawMessage(loopResult)},
			{Kind: session.PartToolResult, CallID: "call_2", Result: json.RawMessage(loopError), IsError: true},
			{Kind: session.PartData, MIMEType: "image/png", Data: loopPNG},
			{Kind: session.PartData, MIMEType: "text/plain", URI: "https://example.org/report.txt"},
		},
		Delta: map[string]json.RawMessage{
			"city\u202e": json.RawMessage(`"Paris"`), "user:units": json.RawMessage(`"metric"`),
			"app:calls": json.RawMessage(`1`), "visits": nil,
		},
		Raw: &session.Raw{Format: "adk.event/v2", Data: loopRaw},
	}})
	s.AppendTurn(session.Turn{Role: "assistant", Content: "It is sunny in Paris.", Structure: &session.Structure{
		Model: "gemini-2.5-flash", FinishReason: "stop", Usage: &session.Usage{Input: 900, Output: 12, Total: 912},
		Parts: []session.Part{{Kind: session.PartText, Text: "It is sunny in Paris."}},
	}})
	if err := st.Persist(context.Background(), s); err != nil {
		tb.Fatalf("persist the agent loop: %v", err)
	}
	return s
}

// noRawControls fails tb if a run printed a character a terminal acts on
// (other than line breaks).
func noRawControls(tb testing.TB, runs ...result) {
	tb.Helper()
	for _, res := range runs {
		for _, out := range []string{res.stdout, res.stderr} {
			for _, c := range out {
				if termsafe.Unsafe(c) && c != '\n' {
					tb.Errorf("trails-admin %s: printed %U:\n%s", strings.Join(res.args, " "), c, termsafe.String(out))
					break
				}
			}
		}
	}
}

// TestShowParts: show and replay print a structured turn's parts
// compactly, one line each, escaped: the model with its usage, the author,
// reasoning, a tool call and its results cut to a line, data, state
// changes, metadata, the raw copy; show's header the app and the state;
// --last reads only the last turns.
func TestShowParts(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	s := agentLoop(t, c)
	r := storeRunner(t)
	runs := []result{
		r.mustRun(t, 0, "show", s.ID),
		r.mustRun(t, 0, "replay", s.ID),
		r.mustRun(t, 0, "show", s.ID, "--last", "2"),
		r.mustRun(t, 0, "replay", s.ID, "--last", "1"),
		r.mustRun(t, 0, "replay", s.ID, "--last", "2", "--up-to", "2"),
		r.mustRun(t, 2, "show", s.ID, "--last", "0"),
		runner{endpoint: noStore}.mustRun(t, 0, "replay", "-h"),
	}
	golden(t, "show-parts", []string{c.Endpoint()}, "a structured agent loop with hostile strings", runs...)
	noRawControls(t, runs...)
	for _, res := range runs[:2] {
		n := 0
		for _, l := range strings.Split(res.stdout, "\n") {
			if turnLine.MatchString(l) {
				n++
			}
			if len([]rune(l)) > 32+80 {
				t.Errorf("%s: a line of %d characters, want at most 112: %q", res.args[0], len([]rune(l)), l)
			}
		}
		if n != 4 {
			t.Errorf("%s: %d lines look like turns, want 4:\n%s", res.args[0], n, res.stdout)
		}
		if !strings.Contains(res.stdout, `call       → get_weather\x1b[31m [call_1] {"city":"Paris `+"\\u202e"+`","note":`) {
			t.Errorf("%s: no tool call line:\n%s", res.args[0], res.stdout)
		}
	}
}

// TestShowPartsJSON: show --json and replay --json carry every field of a
// structured turn, JSON values as JSON, bytes as base64, and the
// session's app and state; a plain turn's fields stay as they were.
func TestShowPartsJSON(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	s := agentLoop(t, c)
	r := storeRunner(t)
	show := r.mustRun(t, 0, "show", s.ID, "--json")
	// JSON holds the values as stored: the golden file shows the bidi and
	// C1 characters JSON does not escape as Go escapes, so that it holds
	// none raw.
	escaped := show
	escaped.stdout = strings.Join(termsafe.Lines(show.stdout), "\n")
	golden(t, "show-parts-json", []string{c.Endpoint()},
		"the structured agent loop of show-parts (characters JSON leaves raw shown escaped in this file)", escaped)

	type part struct {
		Kind      string          `json:"kind"`
		Text      *string         `json:"text"`
		CallID    string          `json:"call_id"`
		ToolName  string          `json:"tool_name"`
		Arguments json.RawMessage `json:"arguments"`
		Result    json.RawMessage `json:"result"`
		IsError   bool            `json:"is_error"`
		MIMEType  string          `json:"mime_type"`
		Data      []byte          `json:"data"`
		URI       string          `json:"uri"`
	}
	type turn struct {
		Role         string                     `json:"role"`
		Content      string                     `json:"content"`
		Author       string                     `json:"author"`
		InvocationID string                     `json:"invocation_id"`
		Model        string                     `json:"model"`
		FinishReason string                     `json:"finish_reason"`
		UsageJSON    map[string]int64           `json:"usage"`
		Metadata     map[string]json.RawMessage `json:"metadata"`
		Raw          *struct {
			Format string `json:"format"`
			Data   []byte `json:"data"`
		} `json:"raw"`
		Parts        []part                     `json:"parts"`
		StateDelta   map[string]json.RawMessage `json:"state_delta"`
		StateRemoved []string                   `json:"state_removed"`
	}
	got := decode[struct {
		App    string                     `json:"app"`
		Values map[string]json.RawMessage `json:"values"`
		Turns  []turn                     `json:"turns"`
	}](t, show)
	same := func(what string, got, want json.RawMessage) {
		t.Helper()
		var a, b bytes.Buffer
		if err := json.Compact(&a, got); err != nil {
			t.Errorf("%s: got %s, not JSON: %v", what, got, err)
			return
		}
		if err := json.Compact(&b, want); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s: got %s, want %s", what, a.String(), b.String())
		}
	}
	if got.App != s.App {
		t.Errorf("app: got %q, want %q", got.App, s.App)
	}
	for k, want := range map[string]string{"cart": `[]`, "city\u202e": `"Paris"`, "user:units": `"metric"`, "app:calls": `1`} {
		same("values["+k+"]", got.Values[k], json.RawMessage(want))
	}
	if _, ok := got.Values["visits"]; ok || len(got.Values) != 4 {
		t.Errorf("values: got %v, want 4 keys, visits removed", got.Values)
	}
	if len(got.Turns) != 4 {
		t.Fatalf("got %d turns, want 4", len(got.Turns))
	}
	user, model, tool, answer := got.Turns[0], got.Turns[1], got.Turns[2], got.Turns[3]
	if user.Parts != nil || user.UsageJSON != nil || user.Content != s.Turns[0].Content {
		t.Errorf("plain turn: got %+v", user)
	}
	x := s.Turns[1].Structure
	if model.Author != x.Author || model.InvocationID != x.InvocationID || model.Model != x.Model || model.FinishReason != x.FinishReason {
		t.Errorf("model turn: got %+v", model)
	}
	wantUsage := map[string]int64{"input_tokens": 812, "output_tokens": 19, "cached_input_tokens": 300, "reasoning_tokens": 5, "total_tokens": 831}
	for k, v := range wantUsage {
		if model.UsageJSON[k] != v {
			t.Errorf("usage %s: got %d, want %d", k, model.UsageJSON[k], v)
		}
	}
	same("metadata", model.Metadata["trace\x1b"], x.Metadata["trace\x1b"])
	if len(model.Parts) != 2 || model.Parts[0].Kind != "reasoning" || model.Parts[0].Text == nil || *model.Parts[0].Text != x.Parts[0].Text {
		t.Fatalf("model parts: got %+v", model.Parts)
	}
	if p := model.Parts[1]; p.Kind != "tool_call" || p.CallID != "call_1" || p.ToolName != x.Parts[1].ToolName {
		t.Errorf("tool call: got %+v", p)
	}
	same("arguments", model.Parts[1].Arguments, json.RawMessage(loopArgs))
	if len(tool.Parts) != 4 {
		t.Fatalf("tool parts: got %+v", tool.Parts)
	}
	same("result", tool.Parts[0].Result, json.RawMessage(loopResult))
	same("error", tool.Parts[1].Result, json.RawMessage(loopError))
	if !tool.Parts[1].IsError || tool.Parts[1].ToolName != "" || tool.Parts[1].CallID != "call_2" {
		t.Errorf("error result: got %+v", tool.Parts[1])
	}
	if p := tool.Parts[2]; p.MIMEType != "image/png" || !bytes.Equal(p.Data, loopPNG) {
		t.Errorf("data part: got %+v", p)
	}
	if p := tool.Parts[3]; p.URI != "https://example.org/report.txt" || p.Data != nil {
		t.Errorf("data IRI part: got %+v", p)
	}
	if tool.Raw == nil || tool.Raw.Format != "adk.event/v2" || !bytes.Equal(tool.Raw.Data, loopRaw) {
		t.Errorf("raw: got %+v", tool.Raw)
	}
	if !strings.Contains(show.stdout, `"data": "`+base64.StdEncoding.EncodeToString(loopRaw)+`"`) {
		t.Errorf("raw data is not base64 in the output")
	}
	same("delta city", tool.StateDelta["city\u202e"], json.RawMessage(`"Paris"`))
	if len(tool.StateDelta) != 3 || len(tool.StateRemoved) != 1 || tool.StateRemoved[0] != "visits" {
		t.Errorf("delta: got %v, removed %v", tool.StateDelta, tool.StateRemoved)
	}
	if answer.Parts[0].Text == nil || *answer.Parts[0].Text != "It is sunny in Paris." || answer.UsageJSON["total_tokens"] != 912 {
		t.Errorf("answer: got %+v", answer)
	}

	// replay --json holds the same turns.
	replay := decode[[]turn](t, r.mustRun(t, 0, "replay", s.ID, "--json"))
	if len(replay) != 4 || len(replay[2].Parts) != 4 {
		t.Errorf("replay --json: got %+v", replay)
	}
	same("replay arguments", replay[1].Parts[1].Arguments, json.RawMessage(loopArgs))
}

// TestDiffParts: two forks whose turns differ only in a part (a tool
// call's arguments, a tool's result, far into a long value) diff as
// different, with the part that differs marked and shown where it
// differs.
func TestDiffParts(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	st := session.NewStore(c)
	ctx := context.Background()
	root := session.New("agent-7")
	root.Append("user", "Weather in Paris?")
	if err := st.Persist(ctx, root); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("lorem ipsum ", 20)
	loop := func(city, sky, tail string) *session.Session {
		f, err := root.Fork(1)
		if err != nil {
			t.Fatal(err)
		}
		f.AppendTurn(session.Turn{Role: "assistant", Structure: &session.Structure{
			Model: "gemini-2.5-flash", Usage: &session.Usage{Input: 812, Output: 19, Total: 831},
			Parts: []session.Part{{Kind: session.PartToolCall, CallID: "call_1", ToolName: "get_weather",
				Arguments: json.RawMessage(`{"city":"` + city + `"}`)}},
		}})
		f.AppendTurn(session.Turn{Role: "tool", Content: "done", Structure: &session.Structure{
			Parts: []session.Part{
				{Kind: session.PartToolResult, CallID: "call_1", ToolName: "get_weather", Result: json.RawMessage(`{"sky":"` + sky + `"}`)},
				{Kind: session.PartToolResult, CallID: "call_1", ToolName: "get_weather", Result: json.RawMessage(`"` + long + tail + `"`)},
			},
		}})
		if err := st.Persist(ctx, f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	a := loop("Paris", "sunny", "end\u202e")
	b := loop("Paris, TX", "sunny", "END")
	r := storeRunner(t)
	cols := r.mustRun(t, 0, "diff", a.ID, b.ID)
	blocks := r.mustRun(t, 0, "diff", a.ID, b.ID, "--blocks")
	js := r.mustRun(t, 0, "diff", a.ID, b.ID, "--json")
	golden(t, "diff-parts", []string{c.Endpoint()}, "two forks of one agent loop, differing in a tool call's arguments and in the end of a long result",
		cols, blocks)
	noRawControls(t, cols, blocks)
	for _, want := range []string{`<* call → get_weather [call_1]`, `>*   {"city":"Paris, TX"}`, `ipsum end\u202e"`, `ipsum END"`} {
		if !strings.Contains(cols.stdout, want) {
			t.Errorf("diff: no %q in\n%s", want, cols.stdout)
		}
	}
	if strings.Contains(cols.stdout, `<* result ← get_weather [call_1]`+"\n"+`<*   {"sky"`) {
		t.Errorf("diff: the equal result is marked:\n%s", cols.stdout)
	}
	v := decode[struct {
		A []struct {
			Parts []struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"parts"`
		} `json:"a_tail"`
		B []struct {
			Parts []struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"parts"`
		} `json:"b_tail"`
	}](t, js)
	if len(v.A) != 2 || len(v.B) != 2 || len(v.A[0].Parts) != 1 || len(v.B[0].Parts) != 1 {
		t.Fatalf("diff --json: got %+v", v)
	}
	if string(v.A[0].Parts[0].Arguments) == string(v.B[0].Parts[0].Arguments) {
		t.Errorf("diff --json: the arguments are the same: %s", v.A[0].Parts[0].Arguments)
	}
}
