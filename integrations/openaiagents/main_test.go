package openaiagents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/nlpodyssey/openai-agents-go/memory"
	"github.com/openai/openai-go/v2/packages/param"
	"github.com/openai/openai-go/v2/responses"
	"github.com/openai/openai-go/v2/shared/constant"
	"github.com/trails-kg/trails/integrations/openaiagents"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

func TestMain(m *testing.M) {
	// The Example reads its store from TRAILS_ENDPOINT and TRAILS_STORE, as a program would.
	ep, err := fusekitest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TRAILS_ENDPOINT", ep)
	os.Setenv("TRAILS_STORE", string(fusekitest.TestStore()))
	fusekitest.Main(m)
}

// hostile is text that has broken SPARQL writers, terminals and JSON
// encoders: quotes, a query of its own, control characters, bidi
// overrides, line separators, characters of every UTF-8 length.
const hostile = "\"\"\" ' \\ \\\" } ; DROP ALL ; INSERT DATA { <a> <b> \"c\" } # \x00\x01\x1b[31m\x1f\x7f \t\r\n é 漢字 🦀 \u202e\u2066 \u2028\u2029 ^^<x> @en <script>&amp;"

// hostileArgs is valid JSON with a spelling of its own (whitespace,
// escapes, key order, a duplicate key, numbers a parser would rewrite),
// which a tool call part keeps byte for byte.
const hostileArgs = "{ \"b\" : [1.0, 1e2, -0, 12345678901234567890] ,\n\t\"a\":\"\\u0000\\\"}; DROP ALL\\\\ \\ud83e\\udd80 é\", \"a\": null }"

// newStore returns a Store over tb's own dataset of the test Fuseki, and
// its client.
func newStore(tb testing.TB) (*session.Store, *kg.Client) {
	tb.Helper()
	c := fusekitest.New(tb)
	return session.NewStore(c), c
}

// message returns an EasyInputMessage item of role with text.
func message(role responses.EasyInputMessageRole, text string) memory.TResponseInputItem {
	return memory.TResponseInputItem{OfMessage: &responses.EasyInputMessageParam{
		Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(text)},
		Role:    role,
		Type:    responses.EasyInputMessageTypeMessage,
	}}
}

func user(text string) memory.TResponseInputItem {
	return message(responses.EasyInputMessageRoleUser, text)
}

func assistant(text string) memory.TResponseInputItem {
	return message(responses.EasyInputMessageRoleAssistant, text)
}

// call returns a function call item.
func call(id, name, args string) memory.TResponseInputItem {
	return memory.TResponseInputItem{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
		CallID: id, Name: name, Arguments: args, ID: param.NewOpt("fc_" + id),
		Status: responses.ResponseFunctionToolCallStatusCompleted, Type: constant.ValueOf[constant.FunctionCall](),
	}}
}

// output returns a function call output item.
func output(id, out string) memory.TResponseInputItem {
	return memory.TResponseInputItem{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: id, Output: out, Type: constant.ValueOf[constant.FunctionCallOutput](),
	}}
}

// answer returns an output message item, what the model wrote, as the SDK
// hands it to a session.
func answer(id, text string) memory.TResponseInputItem {
	return memory.TResponseInputItem{OfOutputMessage: &responses.ResponseOutputMessageParam{
		ID: id,
		Content: []responses.ResponseOutputMessageContentUnionParam{{OfOutputText: &responses.ResponseOutputTextParam{
			Text: text, Type: constant.ValueOf[constant.OutputText](), Annotations: []responses.ResponseOutputTextAnnotationUnionParam{},
		}}},
		Status: responses.ResponseOutputMessageStatusCompleted,
		Role:   constant.ValueOf[constant.Assistant](),
		Type:   constant.ValueOf[constant.Message](),
	}}
}

// mustAdd adds items to s, failing tb on an error.
func mustAdd(tb testing.TB, s *openaiagents.Session, items ...memory.TResponseInputItem) {
	tb.Helper()
	if err := s.AddItems(context.Background(), items); err != nil {
		tb.Fatalf("add items: %v", err)
	}
}

// mustGet returns the last limit items of s (all for limit <= 0).
func mustGet(tb testing.TB, s *openaiagents.Session, limit int) []memory.TResponseInputItem {
	tb.Helper()
	items, err := s.GetItems(context.Background(), limit)
	if err != nil {
		tb.Fatalf("get items (limit %d): %v", limit, err)
	}
	return items
}

// sameItems fails tb unless got and want hold the same items: the same
// variants, deeply equal.
func sameItems(tb testing.TB, got, want []memory.TResponseInputItem) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d items, want %d:\ngot  %s\nwant %s", len(got), len(want), jsonOf(got), jsonOf(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			tb.Fatalf("item %d: got %s (%#v), want %s", i, jsonOf(got[i]), got[i], jsonOf(want[i]))
		}
	}
}

// stored fails tb unless session id holds want, read by s and by a new
// Session over the same id (a reload from the store).
func stored(tb testing.TB, st *session.Store, s *openaiagents.Session, want []memory.TResponseInputItem) {
	tb.Helper()
	sameItems(tb, mustGet(tb, s, 0), want)
	sameItems(tb, mustGet(tb, openaiagents.NewSession(st, s.SessionID(context.Background())), 0), want)
}

// jsonOf returns v as JSON, for failure messages.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v (%v)", v, err)
	}
	return string(b)
}
