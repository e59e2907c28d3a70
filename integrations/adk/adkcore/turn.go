package adkcore

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/genai"

	"github.com/trails-kg/trails/kg"
	trails "github.com/trails-kg/trails/session"
)

// Fields are the fields of an ADK event that Trails stores in a
// structured turn, the same in ADK v1 and v2 (whose Event types differ).
type Fields struct {
	ID, InvocationID, Author string
	Timestamp                time.Time
	Content                  *genai.Content
	ModelVersion             string
	FinishReason             genai.FinishReason
	Usage                    *genai.GenerateContentResponseUsageMetadata
	CustomMetadata           map[string]any
	StateDelta               map[string]any
	Partial                  bool
}

// maxShort is the longest short string (author, ids, names, MIME types,
// metadata keys) Trails stores in a structured field; a longer one stays
// in the raw copy only.
const maxShort = 1024

// Short reports whether v fits a short structured field.
func Short(v string) bool { return utf8.ValidString(v) && len(v) <= maxShort }

// TurnOf returns the Trails turn that stores the event with fields f (its
// temp: keys already removed) and JSON raw, in raw format format: its
// role, its text as content, its fields as a structured turn (author,
// invocation, event id, model, finish reason, usage, metadata, parts,
// state delta) and raw as the raw copy. A field Trails cannot hold in a structured
// field (an author over 1 KiB, a file URI that is not an IRI, a code
// execution part) is in the raw copy only. ErrInvalid for a state value
// that is not JSON.
func TurnOf(f Fields, raw []byte, format string) (trails.Turn, error) {
	x := &trails.Structure{Raw: &trails.Raw{Format: format, Data: raw}}
	if Short(f.Author) {
		x.Author = f.Author
	}
	if Short(f.InvocationID) {
		x.InvocationID = f.InvocationID
	}
	if Short(f.ID) {
		x.EventID = f.ID // so that a fork finds it through the store's index
	}
	if Short(f.ModelVersion) {
		x.Model = f.ModelVersion
	}
	if Short(string(f.FinishReason)) {
		x.FinishReason = string(f.FinishReason)
	}
	if u := f.Usage; u != nil && u.PromptTokenCount >= 0 && u.CandidatesTokenCount >= 0 &&
		u.CachedContentTokenCount >= 0 && u.ThoughtsTokenCount >= 0 && u.TotalTokenCount >= 0 {
		x.Usage = &trails.Usage{Input: int64(u.PromptTokenCount), Output: int64(u.CandidatesTokenCount),
			Cached: int64(u.CachedContentTokenCount), Reasoning: int64(u.ThoughtsTokenCount), Total: int64(u.TotalTokenCount)}
	}
	for k, v := range f.CustomMetadata {
		b, err := json.Marshal(v)
		if err != nil || !Short(k) || !utf8.Valid(b) {
			continue // the raw copy has it
		}
		if x.Metadata == nil {
			x.Metadata = make(map[string]json.RawMessage)
		}
		x.Metadata[k] = b
	}
	var err error
	if x.Delta, err = DeltaOf(f.StateDelta); err != nil {
		return trails.Turn{}, fmt.Errorf("event %s: %w", f.ID, err)
	}
	var text []string
	if f.Content != nil {
		for _, p := range f.Content.Parts {
			x.Parts = append(x.Parts, partsOf(p)...)
			if p != nil && p.Text != "" && !p.Thought {
				text = append(text, p.Text)
			}
		}
	}
	if err := kg.CheckTime(f.Timestamp); err != nil {
		return trails.Turn{}, fmt.Errorf("%w: event %s: Timestamp: %w", ErrInvalid, f.ID, err)
	}
	return trails.Turn{Role: roleOf(f), Content: strings.Join(text, "\n"), Created: f.Timestamp, Structure: x}, nil
}

// roleOf returns the role of the turn that stores an event with fields f:
// its content's role ("user", "model"), else "user" for an event the user
// wrote, else "event" (an event with actions only).
func roleOf(f Fields) string {
	switch {
	case f.Content != nil && f.Content.Role != "" && Short(f.Content.Role):
		return f.Content.Role
	case f.Author == "user":
		return "user"
	}
	return "event"
}

// DeltaOf returns the state changes d as Trails stores them: each value as
// its JSON. ErrInvalid when a value has none.
func DeltaOf(d map[string]any) (map[string]json.RawMessage, error) {
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
	if c := p.FunctionCall; c != nil && c.Name != "" && Short(c.Name) && Short(c.ID) {
		if args, err := json.Marshal(c.Args); err == nil {
			out = append(out, trails.Part{Kind: trails.PartToolCall, CallID: c.ID, ToolName: c.Name, Arguments: args})
		}
	}
	if r := p.FunctionResponse; r != nil && Short(r.Name) && Short(r.ID) {
		if res, err := json.Marshal(r.Response); err == nil {
			_, isErr := r.Response["error"]
			out = append(out, trails.Part{Kind: trails.PartToolResult, CallID: r.ID, ToolName: r.Name, Result: res, IsError: isErr})
		}
	}
	if d := p.InlineData; d != nil && d.MIMEType != "" && Short(d.MIMEType) {
		out = append(out, trails.Part{Kind: trails.PartData, MIMEType: d.MIMEType, Data: d.Data})
	}
	if f := p.FileData; f != nil && f.MIMEType != "" && Short(f.MIMEType) {
		if _, err := kg.IRI(f.FileURI); err == nil {
			out = append(out, trails.Part{Kind: trails.PartData, MIMEType: f.MIMEType, URI: f.FileURI})
		}
	}
	return out
}

// FieldsOf returns the fields of the event a turn without a raw copy of
// the caller's format stands for (a turn another client of Trails wrote):
// id the turn's IRI, author, invocation, model, finish reason, content
// from its parts or text, timestamp its creation time, state delta.
func FieldsOf(t trails.Turn) Fields {
	x := t.Structure
	f := Fields{ID: t.ID, Timestamp: t.Created, Author: t.Role}
	role := "model"
	if t.Role == "user" {
		role = "user"
	}
	c := &genai.Content{Role: role}
	if x != nil {
		if x.Author != "" {
			f.Author = x.Author
		}
		f.InvocationID = x.InvocationID
		if x.EventID != "" {
			f.ID = x.EventID
		}
		f.ModelVersion, f.FinishReason = x.Model, genai.FinishReason(x.FinishReason)
		for _, p := range x.Parts {
			c.Parts = append(c.Parts, genaiPart(p))
		}
		if len(x.Delta) > 0 {
			f.StateDelta = make(map[string]any, len(x.Delta))
			for k, v := range x.Delta {
				var a any
				if v != nil && json.Unmarshal(v, &a) == nil {
					f.StateDelta[k] = a
				}
			}
		}
	}
	if len(c.Parts) == 0 && t.Content != "" {
		c.Parts = []*genai.Part{{Text: t.Content}}
	}
	if len(c.Parts) > 0 {
		f.Content = c
	}
	return f
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

// WithoutTemp returns state delta d without its temp: keys, and whether
// it had any (ADK's services store no temp: key).
func WithoutTemp(d map[string]any) (map[string]any, bool) {
	if len(d) == 0 {
		return d, false
	}
	kept := maps.Clone(d)
	maps.DeleteFunc(kept, func(k string, _ any) bool { return strings.HasPrefix(k, TempPrefix) })
	return kept, len(kept) != len(d)
}

// TempPrefix starts the state keys of one invocation, never stored (ADK's
// session.KeyPrefixTemp, the same in both versions).
const TempPrefix = "temp:"
