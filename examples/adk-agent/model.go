package main

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// scriptedModel is an ADK model.LLM that answers by a script, without a
// network: asked by the user about a city it knows (see forecasts), it
// calls the weather tool for that city; given the tool's response, it
// answers in a sentence made from it. So what a conversation does depends
// on what the user says, as with a real model, and a fork that asks
// something else continues differently. It is safe for concurrent use.
type scriptedModel struct{}

var _ model.LLM = scriptedModel{}

func (scriptedModel) Name() string { return "scripted-weather-model" }

// GenerateContent answers the last content of req (one response, streamed
// or not).
func (m scriptedModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(m.answer(req), nil)
	}
}

// answer is the script: a tool's response becomes a sentence; a user's
// question about a known city becomes a call of the weather tool; anything
// else gets a text saying what the model knows.
func (scriptedModel) answer(req *model.LLMRequest) *model.LLMResponse {
	var last *genai.Content
	if n := len(req.Contents); n > 0 {
		last = req.Contents[n-1]
	}
	if last != nil {
		for _, p := range last.Parts {
			if r := p.FunctionResponse; r != nil && r.Name == weatherTool {
				return reply(genai.NewContentFromText(sentence(r.Response), genai.RoleModel))
			}
		}
	}
	question := ""
	if last != nil && last.Role == genai.RoleUser {
		for _, p := range last.Parts {
			question += p.Text
		}
	}
	city, ok := cityIn(question)
	if !ok {
		return reply(genai.NewContentFromText("I can tell the weather in "+strings.Join(cityNames(), ", ")+".", genai.RoleModel))
	}
	// The call's ID is what the tool-calls audit pairs its result by (the
	// tool's FunctionResponse carries it back): one per city is unique in
	// this example's histories.
	call := &genai.FunctionCall{
		ID:   "call-" + strings.ToLower(city),
		Name: weatherTool,
		Args: map[string]any{"city": city},
	}
	return reply(&genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: call}}})
}

func reply(c *genai.Content) *model.LLMResponse {
	return &model.LLMResponse{Content: c, TurnComplete: true, FinishReason: genai.FinishReasonStop}
}

// sentence turns the weather tool's response into the model's answer.
func sentence(r map[string]any) string {
	if e, ok := r["error"]; ok {
		return fmt.Sprintf("The weather service failed: %v.", e)
	}
	return fmt.Sprintf("In %v it is %v, %v °C.", r["city"], r["sky"], r["celsius"])
}
