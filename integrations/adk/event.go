package adk

import (
	"encoding/json"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk/adkcore"
)

// RawFormat is the format of the raw copy (session.Raw of Trails) each
// stored event keeps: the event's JSON as ADK's own encoding writes it,
// from which Get returns the event.
const RawFormat = "adk.event/v2"

// codec is how ADK v2's events are stored (package adkcore): each a
// structured turn with its JSON as the raw copy.
var codec = adkcore.Codec[*session.Event]{
	Format: RawFormat,
	Fields: func(ev *session.Event) adkcore.Fields {
		return adkcore.Fields{ID: ev.ID, InvocationID: ev.InvocationID, Author: ev.Author, Timestamp: ev.Timestamp,
			Content: ev.Content, ModelVersion: ev.ModelVersion, FinishReason: ev.FinishReason, Usage: ev.UsageMetadata,
			CustomMetadata: ev.CustomMetadata, StateDelta: ev.Actions.StateDelta, Partial: ev.Partial}
	},
	Decode: func(raw []byte) (*session.Event, error) {
		ev := new(session.Event)
		return ev, json.Unmarshal(raw, ev)
	},
	FromFields: func(f adkcore.Fields) *session.Event {
		ev := &session.Event{ID: f.ID, Timestamp: f.Timestamp, Author: f.Author, InvocationID: f.InvocationID,
			LLMResponse: model.LLMResponse{Content: f.Content, ModelVersion: f.ModelVersion, FinishReason: f.FinishReason}}
		ev.Actions.StateDelta = f.StateDelta
		return ev
	},
	WithDelta: func(ev *session.Event, d map[string]any) *session.Event {
		cp := *ev
		cp.Actions.StateDelta = d
		return &cp
	},
}
