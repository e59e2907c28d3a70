package adk

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"unicode/utf8"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/trails-kg/trails/kg"
	trails "github.com/trails-kg/trails/session"
)

// RawFormat is the format of the raw copy (session.Raw) each stored event
// keeps: the event's JSON as ADK's own encoding writes it, from which Get
// returns the event.
const RawFormat = "adk.event/v2"

// maxShort is the longest short string (author, ids, names, MIME types,
// metadata keys) Trails stores in a structured field; a longer one stays
// in the raw copy only.
const maxShort = 1024

// short reports whether v fits a short structured field.
func short(v string) bool { return utf8.ValidString(v) && len(v) <= maxShort }

// turnOf returns the Trails turn that stores event ev (its temp: keys
// already removed): its role, its text as content, its fields as a
// structured turn (author, invocation, model, finish reason, usage,
// metadata, parts, state delta) and its JSON as the raw copy. A field
// Trails cannot hold in a structured field (an author over 1 KiB, a file
// URI that is not an IRI, a code execution part) is in the raw copy only.
func turnOf(ev *session.Event) (trails.Turn, error) {
	raw, err := json.Marshal(ev)
	if err != nil {
		return trails.Turn{}, fmt.Errorf("%w: event %s: %v", ErrInvalid, ev.ID, err)
	}
	x := &trails.Structure{Raw: &trails.Raw{Format: RawFormat, Data: raw}}
	if short(ev.Author) {
		x.Author = ev.Author
	}
	if short(ev.InvocationID) {
		x.InvocationID = ev.InvocationID
	}
	if short(ev.ModelVersion) {
		x.Model = ev.ModelVersion
	}
	if short(string(ev.FinishReason)) {
		x.FinishReason = string(ev.FinishReason)
	}
	if u := ev.UsageMetadata; u != nil && u.PromptTokenCount >= 0 && u.CandidatesTokenCount >= 0 &&
		u.CachedContentTokenCount >= 0 && u.ThoughtsTokenCount >= 0 && u.TotalTokenCount >= 0 {
		x.Usage = &trails.Usage{Input: int64(u.PromptTokenCount), Output: int64(u.CandidatesTokenCount),
			Cached: int64(u.CachedContentTokenCount), Reasoning: int64(u.ThoughtsTokenCount), Total: int64(u.TotalTokenCount)}
	}
	for k, v := range ev.CustomMetadata {
		b, err := json.Marshal(v)
		if err != nil || !short(k) || !utf8.Valid(b) {
			continue // the raw copy has it
		}
		if x.Metadata == nil {
			x.Metadata = make(map[string]json.RawMessage)
		}
		x.Metadata[k] = b
	}
	if x.Delta, err = deltaOf(ev.Actions.StateDelta); err != nil {
		return trails.Turn{}, fmt.Errorf("event %s: %w", ev.ID, err)
	}
	var text []string
	if ev.Content != nil {
		for _, p := range ev.Content.Parts {
			x.Parts = append(x.Parts, partsOf(p)...)
			if p != nil && p.Text != "" && !p.Thought {
				text = append(text, p.Text)
			}
		}
	}
	return trails.Turn{Role: roleOf(ev), Content: strings.Join(text, "\n"), Created: ev.Timestamp, Structure: x}, nil
}

// roleOf returns the role of the turn that stores ev: its content's role
// ("user", "model"), else "user" for an event the user wrote, else
// "event" (an event with actions only).
func roleOf(ev *session.Event) string {
	switch {
	case ev.Content != nil && ev.Content.Role != "" && short(ev.Content.Role):
		return ev.Content.Role
	case ev.Author == "user":
		return "user"
	}
	return "event"
}

// deltaOf returns the state changes d as Trails stores them: each value as
// its JSON. ErrInvalid when a value has none.
func deltaOf(d map[string]any) (map[string]json.RawMessage, error) {
	if len(d) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(d))
	for k, v := range d {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: state key %q: %v", ErrInvalid, k, err)
		}
		out[k] = b
	}
	return out, nil
}

// partsOf returns the Trails parts of genai part p: text or reasoning, a
// function call, a function response (an error when its response has an
// "error" key, as ADK's function tools report one), inline data, a file.
func partsOf(p *genai.Part) []trails.Part {
	if p == nil {
		return nil
	}
	var out []trails.Part
	if p.Text != "" {
		k := trails.PartText
		if p.Thought {
			k = trails.PartReasoning
		}
		out = append(out, trails.Part{Kind: k, Text: p.Text})
	}
	if c := p.FunctionCall; c != nil && c.Name != "" && short(c.Name) && short(c.ID) {
		if args, err := json.Marshal(c.Args); err == nil {
			out = append(out, trails.Part{Kind: trails.PartToolCall, CallID: c.ID, ToolName: c.Name, Arguments: args})
		}
	}
	if r := p.FunctionResponse; r != nil && short(r.Name) && short(r.ID) {
		if res, err := json.Marshal(r.Response); err == nil {
			_, isErr := r.Response["error"]
			out = append(out, trails.Part{Kind: trails.PartToolResult, CallID: r.ID, ToolName: r.Name, Result: res, IsError: isErr})
		}
	}
	if d := p.InlineData; d != nil && d.MIMEType != "" && short(d.MIMEType) {
		out = append(out, trails.Part{Kind: trails.PartData, MIMEType: d.MIMEType, Data: d.Data})
	}
	if f := p.FileData; f != nil && f.MIMEType != "" && short(f.MIMEType) {
		if _, err := kg.IRI(f.FileURI); err == nil {
			out = append(out, trails.Part{Kind: trails.PartData, MIMEType: f.MIMEType, URI: f.FileURI})
		}
	}
	return out
}

// eventOf returns the ADK event turn t stores: decoded from its raw copy
// when it has one of RawFormat, else (a turn another client of Trails
// wrote) made from its fields: id the turn's IRI, author, invocation,
// model, finish reason, content from its parts or text, timestamp its
// creation time, state delta.
func eventOf(t trails.Turn) (*session.Event, error) {
	x := t.Structure
	if x != nil && x.Raw != nil && x.Raw.Format == RawFormat {
		ev := new(session.Event)
		if err := json.Unmarshal(x.Raw.Data, ev); err != nil {
			return nil, fmt.Errorf("turn %d (%s): raw event: %w", t.Index, t.ID, err)
		}
		return ev, nil
	}
	ev := &session.Event{ID: t.ID, Timestamp: t.Created, Author: t.Role}
	role := "model"
	if t.Role == "user" {
		role = "user"
	}
	c := &genai.Content{Role: role}
	if x != nil {
		if x.Author != "" {
			ev.Author = x.Author
		}
		ev.InvocationID = x.InvocationID
		ev.LLMResponse = model.LLMResponse{ModelVersion: x.Model, FinishReason: genai.FinishReason(x.FinishReason)}
		for _, p := range x.Parts {
			c.Parts = append(c.Parts, genaiPart(p))
		}
		if len(x.Delta) > 0 {
			ev.Actions.StateDelta = make(map[string]any, len(x.Delta))
			for k, v := range x.Delta {
				var a any
				if v != nil && json.Unmarshal(v, &a) == nil {
					ev.Actions.StateDelta[k] = a
				}
			}
		}
	}
	if len(c.Parts) == 0 && t.Content != "" {
		c.Parts = []*genai.Part{{Text: t.Content}}
	}
	if len(c.Parts) > 0 {
		ev.Content = c
	}
	return ev, nil
}

// genaiPart returns the genai part of Trails part p.
func genaiPart(p trails.Part) *genai.Part {
	switch p.Kind {
	case trails.PartReasoning:
		return &genai.Part{Text: p.Text, Thought: true}
	case trails.PartToolCall:
		var args map[string]any
		_ = json.Unmarshal(p.Arguments, &args) // arguments that are not an object are left out
		return &genai.Part{FunctionCall: &genai.FunctionCall{ID: p.CallID, Name: p.ToolName, Args: args}}
	case trails.PartToolResult:
		var res map[string]any
		if json.Unmarshal(p.Result, &res) != nil {
			res = map[string]any{"output": json.RawMessage(p.Result)}
		}
		return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: p.CallID, Name: p.ToolName, Response: res}}
	case trails.PartData:
		if p.URI != "" {
			return &genai.Part{FileData: &genai.FileData{FileURI: p.URI, MIMEType: p.MIMEType}}
		}
		return &genai.Part{InlineData: &genai.Blob{Data: p.Data, MIMEType: p.MIMEType}}
	}
	return &genai.Part{Text: p.Text}
}

// withoutTemp returns ev without the temp: keys of its state delta (ev
// itself when it has none), as ADK's services store it.
func withoutTemp(ev *session.Event) *session.Event {
	d := ev.Actions.StateDelta
	if len(d) == 0 {
		return ev
	}
	kept := maps.Clone(d)
	maps.DeleteFunc(kept, func(k string, _ any) bool { return strings.HasPrefix(k, session.KeyPrefixTemp) })
	if len(kept) == len(d) {
		return ev
	}
	cp := *ev
	cp.Actions.StateDelta = kept
	return &cp
}
