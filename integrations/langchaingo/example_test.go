package langchaingo_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
	"github.com/trails-kg/trails/integrations/langchaingo"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// A langchaingo conversation buffer keeps its history in Trails; a tool
// call and its result are stored as structured turns, and Clear archives
// the conversation instead of deleting it.
func Example() {
	ctx := context.Background()
	c, err := kg.New(kg.Config{Endpoint: os.Getenv("TRAILS_ENDPOINT"), Store: kg.Store(os.Getenv("TRAILS_STORE"))}) // e.g. http://127.0.0.1:3030/trails
	if err != nil {
		log.Fatal(err)
	}
	st := session.NewStore(c)
	h := langchaingo.NewHistory(st, "support-chat-42", langchaingo.WithPrincipal("alice"))
	mem := memory.NewConversationBuffer(memory.WithChatHistory(h))
	if err := mem.SaveContext(ctx, map[string]any{"input": "Weather in Paris?"}, map[string]any{"output": "Let me look."}); err != nil {
		log.Fatal(err)
	}
	err = h.AddMessage(ctx, llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "call_1", Type: "function",
		FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}})
	if err != nil {
		log.Fatal(err)
	}
	if err := h.AddMessage(ctx, llms.ToolChatMessage{ID: "call_1", Content: `{"sky":"sunny"}`}); err != nil {
		log.Fatal(err)
	}

	// Another process, the same name: the same session.
	msgs, err := langchaingo.NewHistory(st, "support-chat-42", langchaingo.WithPrincipal("alice")).Messages(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("%-5s %q\n", m.GetType(), m.GetContent())
	}
	if err := mem.Clear(ctx); err != nil {
		log.Fatal(err)
	}
	recs, err := st.Rewinds(ctx, h.SessionID())
	if err != nil {
		log.Fatal(err)
	}
	archived, err := langchaingo.NewHistory(st, recs[0].Archive).Messages(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("cleared: %d messages archived (%s)\n", len(archived), recs[0].Reason)
	// Output:
	// human "Weather in Paris?"
	// ai    "Let me look."
	// ai    ""
	// tool  "{\"sky\":\"sunny\"}"
	// cleared: 4 messages archived (langchaingo: clear)
}
