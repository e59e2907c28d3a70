package openaiagents_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/nlpodyssey/openai-agents-go/agents"
	"github.com/nlpodyssey/openai-agents-go/agentstesting"
	"github.com/trails-kg/trails/integrations/openaiagents"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// An agent's runner keeps its conversation in Trails: the function call
// and its output are paired by the audit query tool-calls, a fork tries
// another question from the same prefix, and PopItem is a rewind that
// keeps what it removes. (A fake model stands in for OpenAI's.)
func Example() {
	ctx := context.Background()
	c, err := kg.New(kg.Config{Endpoint: os.Getenv("TRAILS_ENDPOINT"), Store: kg.Store(os.Getenv("TRAILS_STORE"))}) // e.g. http://127.0.0.1:3030/trails
	if err != nil {
		log.Fatal(err)
	}
	st := session.NewStore(c)
	s := openaiagents.NewSession(st, "", openaiagents.WithPrincipal("alice"))

	model := agentstesting.NewFakeModel(false, nil)
	model.AddMultipleTurnOutputs([]agentstesting.FakeModelTurnOutput{
		{Value: []agents.TResponseOutputItem{agentstesting.GetFunctionToolCall("get_weather", `{"city":"Lisbon"}`)}},
		{Value: []agents.TResponseOutputItem{agentstesting.GetTextMessage("Sunny in Lisbon.")}},
	})
	agent := agents.New("weather").WithModelInstance(model).WithTools(agentstesting.GetFunctionTool("get_weather", "sunny"))
	runner := agents.Runner{Config: agents.RunConfig{Session: s}}
	if _, err := runner.Run(ctx, agent, "Weather in Lisbon?"); err != nil {
		log.Fatal(err)
	}

	calls, err := prov.NewReader(c).Run(ctx, "tool-calls", map[string]string{"session": s.SessionID(ctx)})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range calls.Solutions {
		fmt.Printf("call %s %s at %s, answered %s at %s\n", r.String("tool"), r.String("arguments"), r.String("index"), r.String("result"), r.String("resultIndex"))
	}

	// A fork before the answer; the answer popped from the original.
	f, err := s.Fork(ctx, 3, session.WithReason("answer in Fahrenheit"))
	if err != nil {
		log.Fatal(err)
	}
	popped, err := s.PopItem(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("popped: %s\n", popped.OfOutputMessage.Content[0].OfOutputText.Text)
	for _, x := range []*openaiagents.Session{s, f} {
		items, err := x.GetItems(ctx, 0)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d items, the last a %s\n", len(items), *items[len(items)-1].GetType())
	}
	recs, err := st.Rewinds(ctx, s.SessionID(ctx))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rewound to %d (%s)\n", recs[0].To, recs[0].Reason)
	// Output:
	// call get_weather {"city":"Lisbon"} at 1, answered "sunny" at 2
	// popped: Sunny in Lisbon.
	// 3 items, the last a function_call_output
	// 3 items, the last a function_call_output
	// rewound to 3 (openai-agents: pop item)
}
