package adk_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/internal/fusekitest"
	trails "github.com/trails-kg/trails/session"
)

// richEvents returns events with every kind of content: text, thought,
// function call and response, inline data, a file, usage, metadata,
// state changes of each scope.
func richEvents() []*session.Event {
	ts := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	return []*session.Event{
		{ID: "e1", InvocationID: "inv1", Author: "user", Timestamp: ts,
			LLMResponse: model.LLMResponse{Content: genai.NewContentFromText("Weather in Lisbon?", "user")}},
		{ID: "e2", InvocationID: "inv1", Author: "agent", Timestamp: ts.Add(time.Second), Branch: "root.weather",
			Actions: session.EventActions{StateDelta: map[string]any{"city": "Lisbon", "user:units": "C", "app:calls": float64(1)}},
			LLMResponse: model.LLMResponse{
				ModelVersion: "scripted-1", FinishReason: genai.FinishReasonStop,
				UsageMetadata:  &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 12, CandidatesTokenCount: 5, ThoughtsTokenCount: 3, TotalTokenCount: 20},
				CustomMetadata: map[string]any{"trace": "abc", "n": float64(2)},
				Content: &genai.Content{Role: "model", Parts: []*genai.Part{
					{Text: "I should call the tool.", Thought: true},
					{FunctionCall: &genai.FunctionCall{ID: "call-1", Name: "get_weather", Args: map[string]any{"city": "Lisbon"}}},
				}},
			}},
		{ID: "e3", InvocationID: "inv1", Author: "agent", Timestamp: ts.Add(2 * time.Second),
			LLMResponse: model.LLMResponse{Content: &genai.Content{Role: "user", Parts: []*genai.Part{
				{FunctionResponse: &genai.FunctionResponse{ID: "call-1", Name: "get_weather", Response: map[string]any{"temp": float64(18)}}},
			}}}},
		{ID: "e4", InvocationID: "inv1", Author: "agent", Timestamp: ts.Add(3 * time.Second),
			LLMResponse: model.LLMResponse{Content: &genai.Content{Role: "model", Parts: []*genai.Part{
				{Text: "18 °C, and here is a map:"},
				{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0, 1, 2}}},
				{FileData: &genai.FileData{MIMEType: "application/pdf", FileURI: "https://example.org/forecast.pdf"}},
			}}}},
	}
}

// TestEventsAsInMemory appends the same events through Trails and through
// ADK's in-memory service: Get returns the same events and state, and the
// store holds each as a structured turn.
func TestEventsAsInMemory(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, st := newService(t)
	mem := session.InMemoryService()
	got := appendAll(t, ctx, svc, richEvents())
	want := appendAll(t, ctx, mem, richEvents())
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(session.Event{}), cmpIgnoreID); diff != "" {
		t.Errorf("Get differs from ADK's in-memory service (-want +got):\n%s", diff)
	}

	ts, err := st.Load(ctx, got.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts.Turns) != 4 || ts.App != "app" || ts.Principal != "u1" {
		t.Fatalf("got %d turns, app %q, principal %q, want 4, app, u1", len(ts.Turns), ts.App, ts.Principal)
	}
	x := ts.Turns[1].Structure
	if x == nil || x.Author != "agent" || x.InvocationID != "inv1" || x.Model != "scripted-1" || x.FinishReason != "STOP" ||
		x.Usage == nil || x.Usage.Input != 12 || x.Usage.Reasoning != 3 || x.Raw == nil || x.Raw.Format != adk.RawFormat {
		t.Fatalf("turn 1 structure %+v", x)
	}
	kinds := func(i int) []trails.PartKind {
		var k []trails.PartKind
		for _, p := range ts.Turns[i].Structure.Parts {
			k = append(k, p.Kind)
		}
		return k
	}
	for i, want := range [][]trails.PartKind{{trails.PartText}, {trails.PartReasoning, trails.PartToolCall}, {trails.PartToolResult},
		{trails.PartText, trails.PartData, trails.PartData}} {
		if diff := cmp.Diff(want, kinds(i)); diff != "" {
			t.Errorf("turn %d parts (-want +got):\n%s", i, diff)
		}
	}
	if p := ts.Turns[1].Structure.Parts[1]; p.CallID != "call-1" || p.ToolName != "get_weather" || string(p.Arguments) != `{"city":"Lisbon"}` {
		t.Errorf("tool call part %+v", p)
	}
	if d := x.Delta; string(d["city"]) != `"Lisbon"` || string(d["user:units"]) != `"C"` || string(d["app:calls"]) != "1" {
		t.Errorf("delta %v", d)
	}
	if ts.Turns[0].Role != "user" || ts.Turns[0].Content != "Weather in Lisbon?" || ts.Turns[3].Content != "18 °C, and here is a map:" {
		t.Errorf("turns 0 and 3: %q %q, %q", ts.Turns[0].Role, ts.Turns[0].Content, ts.Turns[3].Content)
	}
}

// snapshot is what a Get returns, comparable across services.
type snapshot struct {
	SessionID string
	State     map[string]any
	Events    []*session.Event
}

// appendAll creates session "s1" of u1 in app on svc, appends evs and
// returns what Get then returns.
func appendAll(tb testing.TB, ctx context.Context, svc session.Service, evs []*session.Event) snapshot {
	tb.Helper()
	c, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1", SessionID: "s1", State: map[string]any{"k": "v"}})
	if err != nil {
		tb.Fatal(err)
	}
	for _, ev := range evs {
		if err := svc.AppendEvent(ctx, c.Session, ev); err != nil {
			tb.Fatal(err)
		}
	}
	g, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u1", SessionID: "s1"})
	if err != nil {
		tb.Fatal(err)
	}
	snap := snapshot{State: map[string]any{}}
	for k, v := range g.Session.State().All() {
		snap.State[k] = v
	}
	for ev := range g.Session.Events().All() {
		snap.Events = append(snap.Events, ev)
	}
	if s, ok := g.Session.(*adk.Session); ok {
		snap.SessionID = s.TrailsID()
	}
	return snap
}

// cmpIgnoreID leaves out the Trails id of a snapshot.
var cmpIgnoreID = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".SessionID" }, cmp.Ignore())
