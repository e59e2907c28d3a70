package main

import (
	"fmt"
	"time"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

// The benchmark's events are those of an agent answering with a tool, four
// per invocation, as ADK's runner produces them:
//
//	0  the user's question (text)
//	1  the model's turn: a thought and a function call, token usage,
//	   state changes of the three stored scopes (session, user:, app:)
//	   and a temp: key (never stored)
//	2  the function's response (a JSON object)
//	3  the model's answer (text, a few sentences), usage and a session key
//
// Each backend gets events of its own (ADK's database service changes
// the event it is given: it truncates the timestamp), made the same way
// from the same numbers.

// perInvocation is the number of events of one invocation.
const perInvocation = 4

var cities = []string{"Lisbon", "Porto", "Madrid", "Seville", "Paris", "Lyon", "Berlin", "Munich", "Vienna", "Prague", "Rome", "Milan"}

// event returns event i (0-based) of a conversation whose events are
// prefixed prefix (so that two writers on one session have distinct ids),
// stamped at.
func event(prefix string, i int, at time.Time) *session.Event {
	inv := i / perInvocation
	city := cities[inv%len(cities)]
	ev := &session.Event{
		ID:           fmt.Sprintf("%s-e%05d", prefix, i),
		InvocationID: fmt.Sprintf("%s-inv%04d", prefix, inv),
		Timestamp:    at,
	}
	usage := func(prompt, out int32) *genai.GenerateContentResponseUsageMetadata {
		return &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: prompt, CandidatesTokenCount: out, TotalTokenCount: prompt + out}
	}
	switch i % perInvocation {
	case 0:
		ev.Author = "user"
		ev.Content = genai.NewContentFromText(fmt.Sprintf("What's the weather like in %s this weekend, and should I pack an umbrella? (question %d)", city, inv), "user")
	case 1:
		ev.Author = "weather_agent"
		ev.Branch = "weather_agent"
		ev.ModelVersion = "gemini-2.5-flash"
		ev.UsageMetadata = usage(int32(310+2*inv%400), 24)
		ev.Content = &genai.Content{Role: "model", Parts: []*genai.Part{
			{Text: "The user wants a forecast; I'll call the weather tool for the city.", Thought: true},
			{FunctionCall: &genai.FunctionCall{ID: fmt.Sprintf("call-%s-%d", prefix, inv), Name: "get_weather",
				Args: map[string]any{"city": city, "days": float64(2), "units": "metric"}}},
		}}
		ev.Actions.StateDelta = map[string]any{
			"last_city":          city,
			"user:units":         "metric",
			"app:tool_calls":     float64(inv + 1),
			"temp:request_start": float64(at.UnixMilli()),
		}
	case 2:
		ev.Author = "weather_agent"
		ev.Branch = "weather_agent"
		ev.Content = &genai.Content{Role: "user", Parts: []*genai.Part{
			{FunctionResponse: &genai.FunctionResponse{ID: fmt.Sprintf("call-%s-%d", prefix, inv), Name: "get_weather",
				Response: map[string]any{
					"city": city, "units": "metric",
					"forecast": []any{
						map[string]any{"day": "Saturday", "high": float64(19 + inv%5), "low": float64(11), "rain_chance": 0.2},
						map[string]any{"day": "Sunday", "high": float64(17 + inv%4), "low": float64(10), "rain_chance": 0.65},
					},
				}}},
		}}
	case 3:
		ev.Author = "weather_agent"
		ev.Branch = "weather_agent"
		ev.ModelVersion = "gemini-2.5-flash"
		ev.FinishReason = genai.FinishReasonStop
		ev.UsageMetadata = usage(int32(420+2*inv%400), 71)
		ev.Content = genai.NewContentFromText(fmt.Sprintf("In %s, Saturday looks dry and mild (up to %d °C), but Sunday has a 65%% chance of rain "+
			"with highs around %d °C. Pack a light umbrella, and plan outdoor things for Saturday.", city, 19+inv%5, 17+inv%4), "model")
		ev.Actions.StateDelta = map[string]any{"answered": float64(inv + 1)}
	}
	return ev
}

// copyEvent returns a copy of ev that shares nothing mutable with it (the
// copy a fork by copying appends): the content's parts and the state
// delta are new values.
func copyEvent(ev *session.Event) *session.Event {
	c := *ev
	if ev.Content != nil {
		cc := *ev.Content
		cc.Parts = append([]*genai.Part(nil), ev.Content.Parts...)
		c.Content = &cc
	}
	if ev.Actions.StateDelta != nil {
		c.Actions.StateDelta = make(map[string]any, len(ev.Actions.StateDelta))
		for k, v := range ev.Actions.StateDelta {
			c.Actions.StateDelta[k] = v
		}
	}
	return &c
}
