package adkv1_test

import (
	"context"
	"errors"
	"iter"
	"testing"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/trails-kg/trails/integrations/adkv1"
	"github.com/trails-kg/trails/internal/fusekitest"
	trails "github.com/trails-kg/trails/session"
)

// TestErrors: bad requests are ErrInvalid with nothing stored; a session
// that is not there (never, or another user's or app's) is ErrNotFound
// and ADK v1's session.ErrNotFound; a value of another service is
// ErrForeignSession.
func TestErrors(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, st := newService(t)
	for i, r := range []*session.CreateRequest{nil, {UserID: "u1"}, {AppName: "app"},
		{AppName: "app", UserID: "u1", State: map[string]any{"k": make(chan int)}}} {
		if _, err := svc.Create(ctx, r); !errors.Is(err, adkv1.ErrInvalid) {
			t.Errorf("create %d: got %v, want ErrInvalid", i, err)
		}
	}
	if infos, err := st.List(ctx); err != nil || len(infos) != 0 {
		t.Fatalf("stored after refused creates: %v, %v", infos, err)
	}
	c, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1", SessionID: "s1"}); !errors.Is(err, adkv1.ErrExists) {
		t.Errorf("create s1 again: got %v, want ErrExists", err)
	}
	for _, r := range []*session.GetRequest{{AppName: "app", UserID: "u1", SessionID: "s2"},
		{AppName: "app", UserID: "u2", SessionID: "s1"}, {AppName: "other", UserID: "u1", SessionID: "s1"}} {
		_, err := svc.Get(ctx, r)
		if !errors.Is(err, adkv1.ErrNotFound) || !errors.Is(err, session.ErrNotFound) {
			t.Errorf("get %+v: got %v, want ErrNotFound and session.ErrNotFound", r, err)
		}
	}
	for i, r := range []*session.GetRequest{nil, {AppName: "app", UserID: "u1"}, {AppName: "app", UserID: "u1", SessionID: "s1", NumRecentEvents: -1}} {
		if _, err := svc.Get(ctx, r); !errors.Is(err, adkv1.ErrInvalid) {
			t.Errorf("get %d: got %v, want ErrInvalid", i, err)
		}
	}
	if _, err := svc.List(ctx, &session.ListRequest{}); !errors.Is(err, adkv1.ErrInvalid) {
		t.Errorf("list without app: got %v, want ErrInvalid", err)
	}
	if err := svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u1"}); !errors.Is(err, adkv1.ErrInvalid) {
		t.Errorf("delete without id: got %v, want ErrInvalid", err)
	}
	other, err := session.InMemoryService().Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEvent(ctx, other.Session, &session.Event{ID: "e1"}); !errors.Is(err, adkv1.ErrForeignSession) {
		t.Errorf("append to another service's value: got %v, want ErrForeignSession", err)
	}
	bad := &session.Event{ID: "e1", Actions: session.EventActions{StateDelta: map[string]any{"k": func() {}}}}
	if err := svc.AppendEvent(ctx, c.Session, bad); !errors.Is(err, adkv1.ErrInvalid) {
		t.Errorf("append of a state value that is not JSON: got %v, want ErrInvalid", err)
	}
	if err := svc.AppendEvent(ctx, c.Session, nil); !errors.Is(err, adkv1.ErrInvalid) {
		t.Errorf("append nil: got %v, want ErrInvalid", err)
	}
	g, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u1", SessionID: "s1"})
	if err != nil || g.Session.Events().Len() != 0 || c.Session.Events().Len() != 0 {
		t.Errorf("after refused appends: %v, %v events stored, %d held", err, g.Session.Events().Len(), c.Session.Events().Len())
	}
}

// echoModel calls the echo tool with the user's text, then answers with
// the tool's result.
type echoModel struct{}

func (echoModel) Name() string { return "echo-model" }

func (echoModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		p := req.Contents[len(req.Contents)-1].Parts[0]
		c := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
			ID: "call-1", Name: "echo", Args: map[string]any{"text": p.Text}}}}}
		if r := p.FunctionResponse; r != nil {
			c = genai.NewContentFromText("echo: "+r.Response["text"].(string), genai.RoleModel)
		}
		yield(&model.LLMResponse{Content: c, TurnComplete: true, ModelVersion: "echo-1",
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 3, CandidatesTokenCount: 2, TotalTokenCount: 5}}, nil)
	}
}

type echoArgs struct {
	Text string `json:"text"`
}

// TestRunner runs an ADK v1 agent with a tool on the service: the events
// of the run, a state change of the tool's included, are what Get returns
// from another service value, and the Trails turns hold the tool call and
// its result as structured parts, and the usage.
func TestRunner(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, st := newService(t)
	echo, err := functiontool.New(functiontool.Config{Name: "echo", Description: "Echoes."},
		func(tc agent.ToolContext, a echoArgs) (map[string]any, error) {
			tc.Actions().StateDelta["last"] = a.Text
			return map[string]any{"text": a.Text}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "echoer", Model: echoModel{}, Tools: []tool.Tool{echo}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: svc})
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	var ran []*session.Event
	for ev, err := range r.Run(ctx, "u1", c.Session.ID(), genai.NewContentFromText("hello", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		ran = append(ran, ev)
	}
	g, err := adkv1.NewSessionService(st).Get(ctx, &session.GetRequest{AppName: "app", UserID: "u1", SessionID: c.Session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	var got []*session.Event
	for ev := range g.Session.Events().All() {
		got = append(got, ev)
	}
	// The stored events: the user's message, then those the run yielded.
	if len(got) != len(ran)+1 || len(ran) != 3 {
		t.Fatalf("got %d stored events for %d run events, want 4 for 3", len(got), len(ran))
	}
	for i, ev := range ran {
		if s := got[i+1]; s.ID != ev.ID || s.Author != ev.Author || !s.Timestamp.Equal(ev.Timestamp) {
			t.Errorf("event %d: got %s by %s at %v, want %s by %s at %v", i+1, s.ID, s.Author, s.Timestamp, ev.ID, ev.Author, ev.Timestamp)
		}
	}
	if v, err := g.Session.State().Get("last"); err != nil || v != "hello" {
		t.Errorf("state last: got %v, %v, want hello", v, err)
	}
	if last := got[3].Content.Parts[0].Text; last != "echo: hello" {
		t.Errorf("last event: got %q", last)
	}
	ts, err := st.Load(ctx, g.Session.(*adkv1.Session).TrailsID())
	if err != nil {
		t.Fatal(err)
	}
	call, result := ts.Turns[1].Structure, ts.Turns[2].Structure
	if len(call.Parts) != 1 || call.Parts[0].Kind != trails.PartToolCall || call.Parts[0].CallID != "call-1" || call.Usage == nil || call.Usage.Total != 5 || call.Model != "echo-1" {
		t.Errorf("the call's turn: %+v", call)
	}
	if len(result.Parts) != 1 || result.Parts[0].Kind != trails.PartToolResult || result.Parts[0].CallID != "call-1" {
		t.Errorf("the result's turn: %+v", result)
	}
	if ts.Turns[2].Structure.Raw.Format != adkv1.RawFormat {
		t.Errorf("raw format: got %q, want %q", ts.Turns[2].Structure.Raw.Format, adkv1.RawFormat)
	}
}
