package openaiagents_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nlpodyssey/openai-agents-go/agents"
	"github.com/nlpodyssey/openai-agents-go/agentstesting"
	"github.com/nlpodyssey/openai-agents-go/memory"
	"github.com/trails-kg/trails/integrations/openaiagents"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/prov"
)

// recorder is a memory.Session that remembers the items the runner adds
// through it, to compare with what the store gives back.
type recorder struct {
	memory.Session
	added []memory.TResponseInputItem
}

func (r *recorder) AddItems(ctx context.Context, items []memory.TResponseInputItem) error {
	r.added = append(r.added, items...)
	return r.Session.AddItems(ctx, items)
}

// runAgent runs agent on input with session s, streamed or not, and
// returns its final output.
func runAgent(t *testing.T, streaming bool, s memory.Session, agent *agents.Agent, input string) any {
	t.Helper()
	r := agents.Runner{Config: agents.RunConfig{Session: s}}
	if streaming {
		res, err := r.RunStreamed(t.Context(), agent, input)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.StreamEvents(func(agents.StreamEvent) error { return nil }); err != nil {
			t.Fatal(err)
		}
		return res.FinalOutput()
	}
	res, err := r.Run(t.Context(), agent, input)
	if err != nil {
		t.Fatal(err)
	}
	return res.FinalOutput
}

// lastInput returns the items the model was given on its last call.
func lastInput(t *testing.T, m *agentstesting.FakeModel) agents.InputItems {
	t.Helper()
	in, ok := m.LastTurnArgs.Input.(agents.InputItems)
	if !ok {
		t.Fatalf("got model input %T, want agents.InputItems", m.LastTurnArgs.Input)
	}
	return in
}

// TestRunner (the SDK's own test of a Runner with a session, run there on
// SQLite): the runner's history reaches the model from the store, each
// session keeps its own, and a run with a tool call stores the call and
// its output as the audit query tool-calls pairs them; what the runner
// added comes back as it added it.
func TestRunner(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := newStore(t)
	ctx := context.Background()
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming %v", streaming), func(t *testing.T) {
			t.Run("history", func(t *testing.T) {
				s := &recorder{Session: openaiagents.NewSession(st, "")}
				model := agentstesting.NewFakeModel(false, nil)
				agent := agents.New("test").WithModelInstance(model)
				model.SetNextOutput(agentstesting.FakeModelTurnOutput{Value: []agents.TResponseOutputItem{agentstesting.GetTextMessage("San Francisco")}})
				if got := runAgent(t, streaming, s, agent, "What city is the Golden Gate Bridge in?"); got != "San Francisco" {
					t.Fatalf("got %v, want San Francisco", got)
				}
				model.SetNextOutput(agentstesting.FakeModelTurnOutput{Value: []agents.TResponseOutputItem{agentstesting.GetTextMessage("California")}})
				// A new Session value over the same id: the history comes from the store.
				s2 := &recorder{Session: openaiagents.NewSession(st, s.SessionID(ctx))}
				if got := runAgent(t, streaming, s2, agent, "What state is it in?"); got != "California" {
					t.Fatalf("got %v, want California", got)
				}
				if in := lastInput(t, model); len(in) != 3 {
					t.Fatalf("got %d items of input, want 3 (two of history, the question)", len(in))
				}
				sameItems(t, mustGet(t, openaiagents.NewSession(st, s.SessionID(ctx)), 0), append(s.added, s2.added...))
			})

			t.Run("different sessions", func(t *testing.T) {
				model := agentstesting.NewFakeModel(false, nil)
				agent := agents.New("test").WithModelInstance(model)
				s1 := openaiagents.NewSession(st, "")
				s2 := openaiagents.NewSession(st, "")
				for _, r := range []struct {
					s                 *openaiagents.Session
					input, out, likes string
				}{
					{s1, "I like cats", "I like cats", ""},
					{s2, "I like dogs", "I like dogs", ""},
					{s1, "What did I say I like?", "Yes, you mentioned cats", "I like cats"},
					{s2, "What did I say I like?", "Yes, you mentioned dogs", "I like dogs"},
				} {
					model.SetNextOutput(agentstesting.FakeModelTurnOutput{Value: []agents.TResponseOutputItem{agentstesting.GetTextMessage(r.out)}})
					if got := runAgent(t, streaming, r.s, agent, r.input); got != r.out {
						t.Fatalf("got %v, want %s", got, r.out)
					}
					if r.likes == "" {
						continue
					}
					in := lastInput(t, model)
					if len(in) != 3 || in[0].OfMessage == nil || in[0].OfMessage.Content.OfString.Value != r.likes {
						t.Fatalf("got input %s, want 3 items starting with %q", jsonOf(in), r.likes)
					}
				}
			})

			t.Run("tool call", func(t *testing.T) {
				s := &recorder{Session: openaiagents.NewSession(st, "")}
				model := agentstesting.NewFakeModel(false, nil)
				agent := agents.New("test").WithModelInstance(model).WithTools(agentstesting.GetFunctionTool("get_weather", "sunny"))
				model.AddMultipleTurnOutputs([]agentstesting.FakeModelTurnOutput{
					{Value: []agents.TResponseOutputItem{agentstesting.GetFunctionToolCall("get_weather", `{"city":"Lisbon"}`)}},
					{Value: []agents.TResponseOutputItem{agentstesting.GetTextMessage("Sunny in Lisbon.")}},
				})
				if got := runAgent(t, streaming, s, agent, "Weather in Lisbon?"); got != "Sunny in Lisbon." {
					t.Fatalf("got %v, want Sunny in Lisbon.", got)
				}
				id := s.SessionID(ctx)
				sameItems(t, mustGet(t, openaiagents.NewSession(st, id), 0), s.added)
				res, err := prov.NewReader(c).Run(ctx, "tool-calls", map[string]string{"session": id})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Solutions) != 1 {
					t.Fatalf("got %d tool calls, want 1", len(res.Solutions))
				}
				r := res.Solutions[0]
				if r.String("tool") != "get_weather" || r.String("arguments") != `{"city":"Lisbon"}` || r.String("result") != `"sunny"` ||
					r.String("index") != "1" || r.String("resultIndex") != "2" {
					t.Errorf("got tool call row %v, want get_weather at 1 answered \"sunny\" at 2", r)
				}
			})
		})
	}
}
