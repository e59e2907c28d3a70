package admin

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/trails-kg/trails/session"
)

// StructureJSON is the JSON form of a turn's structured fields, as a
// JSONL export writes them inlined in a turn's line (see Export) and
// trails-admin show --json in a turn's object: all left out when empty,
// so that a plain turn's JSON is what it was before structured turns;
// JSON values as JSON, bytes base64.
type StructureJSON struct {
	Author       string                     `json:"author,omitempty"`
	InvocationID string                     `json:"invocation_id,omitempty"`
	Model        string                     `json:"model,omitempty"`
	FinishReason string                     `json:"finish_reason,omitempty"`
	Usage        *UsageJSON                 `json:"usage,omitempty"`
	Metadata     map[string]json.RawMessage `json:"metadata,omitempty"`
	Raw          *RawJSON                   `json:"raw,omitempty"`
	Parts        []PartJSON                 `json:"parts,omitempty"`
	StateDelta   map[string]json.RawMessage `json:"state_delta,omitempty"`
	StateRemoved []string                   `json:"state_removed,omitempty"`
}

// UsageJSON is a turn's token usage in StructureJSON.
type UsageJSON struct {
	Input     int64 `json:"input_tokens"`
	Output    int64 `json:"output_tokens"`
	Cached    int64 `json:"cached_input_tokens"`
	Reasoning int64 `json:"reasoning_tokens"`
	Total     int64 `json:"total_tokens"`
}

// RawJSON is a turn's raw copy in StructureJSON.
type RawJSON struct {
	Format string `json:"format"`
	Data   []byte `json:"data"` // base64, as encoding/json writes []byte
}

// PartJSON is a part of a turn in StructureJSON.
type PartJSON struct {
	Kind      session.PartKind `json:"kind"`
	Text      *string          `json:"text,omitempty"` // a text part's, even when empty
	CallID    string           `json:"call_id,omitempty"`
	ToolName  string           `json:"tool_name,omitempty"`
	Arguments json.RawMessage  `json:"arguments,omitempty"`
	Result    json.RawMessage  `json:"result,omitempty"`
	IsError   bool             `json:"is_error,omitempty"`
	MIMEType  string           `json:"mime_type,omitempty"`
	Data      []byte           `json:"data,omitempty"`
	URI       string           `json:"uri,omitempty"`
}

// NewStructureJSON returns the JSON form of x, a turn's structured fields.
func NewStructureJSON(x *session.Structure) *StructureJSON {
	out := &StructureJSON{Author: x.Author, InvocationID: x.InvocationID, Model: x.Model, FinishReason: x.FinishReason, Metadata: x.Metadata}
	if u := x.Usage; u != nil {
		out.Usage = &UsageJSON{u.Input, u.Output, u.Cached, u.Reasoning, u.Total}
	}
	if r := x.Raw; r != nil {
		out.Raw = &RawJSON{Format: r.Format, Data: r.Data}
		if out.Raw.Data == nil {
			out.Raw.Data = []byte{}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(x.Delta)) {
		if v := x.Delta[k]; v != nil {
			if out.StateDelta == nil {
				out.StateDelta = make(map[string]json.RawMessage)
			}
			out.StateDelta[k] = v
		} else {
			out.StateRemoved = append(out.StateRemoved, k)
		}
	}
	for _, p := range x.Parts {
		jp := PartJSON{Kind: p.Kind, CallID: p.CallID, ToolName: p.ToolName, Arguments: p.Arguments, Result: p.Result,
			IsError: p.IsError, MIMEType: p.MIMEType, Data: p.Data, URI: p.URI}
		if p.Kind == session.PartText || p.Kind == session.PartReasoning {
			jp.Text = &p.Text
		}
		out.Parts = append(out.Parts, jp)
	}
	return out
}
