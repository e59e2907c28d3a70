package openaiagents_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/nlpodyssey/openai-agents-go/memory"
	"github.com/openai/openai-go/v2/packages/param"
	"github.com/openai/openai-go/v2/responses"
	"github.com/openai/openai-go/v2/shared/constant"
	"github.com/trails-kg/trails/integrations/openaiagents"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// Items added by hand, without a Runner: a user message, the model's
// function call and its output. Each item is a turn; the call and its
// output are tool parts that the audit query tool-calls pairs, and
// GetItems returns the items exactly as added, from any process.
func ExampleSession_AddItems() {
	ctx := context.Background()
	c, err := kg.New(kg.Config{Endpoint: os.Getenv("TRAILS_ENDPOINT"), Store: kg.Store(os.Getenv("TRAILS_STORE"))}) // e.g. http://127.0.0.1:3030/trails
	if err != nil {
		log.Fatal(err)
	}
	s := openaiagents.NewSession(session.NewStore(c), "", openaiagents.WithPrincipal("alice"))

	items := []memory.TResponseInputItem{
		{OfMessage: &responses.EasyInputMessageParam{
			Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt("Weather in Lisbon?")},
			Role:    responses.EasyInputMessageRoleUser,
			Type:    responses.EasyInputMessageTypeMessage,
		}},
		{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
			CallID: "call_1", Name: "get_weather", Arguments: `{"city":"Lisbon"}`,
			Type: constant.ValueOf[constant.FunctionCall](),
		}},
		{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
			CallID: "call_1", Output: "sunny", Type: constant.ValueOf[constant.FunctionCallOutput](),
		}},
	}
	if err := s.AddItems(ctx, items); err != nil { // one atomic update
		log.Fatal(err)
	}

	got, err := s.GetItems(ctx, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range got {
		fmt.Println(*it.GetType())
	}
	calls, err := prov.NewReader(c).Run(ctx, "tool-calls", map[string]string{"session": s.SessionID(ctx)})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range calls.Solutions {
		fmt.Printf("call %s %s at %s, answered %s at %s\n", r.String("tool"), r.String("arguments"), r.String("index"), r.String("result"), r.String("resultIndex"))
	}
	// Output:
	// message
	// function_call
	// function_call_output
	// call get_weather {"city":"Lisbon"} at 1, answered "sunny" at 2
}
