package langchaingo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
	"github.com/trails-kg/trails/session"
)

// RawFormat names the raw copy (session.Raw) a turn carries when its
// fields alone cannot give its message back exactly: a JSON object with
// the message's "type" and each of its fields but the content, which is
// the turn's own (see the package documentation for when it is written).
const RawFormat = "langchaingo.message/v0.1"

// The roles of the turns that messages become.
const (
	roleHuman    = "user"
	roleAI       = "assistant"
	roleSystem   = "system"
	roleTool     = "tool"
	roleFunction = "function"
	roleGeneric  = "generic" // a GenericChatMessage with no role of its own
)

// maxShort is the longest author, call id or tool name a structured turn
// may hold (the core's limit on short strings); a longer one is left to
// the raw copy.
const maxShort = 1024

// rawMessage is the JSON of a raw copy: a message without its content.
// ToolCalls is a pointer so that an empty list and no list stay apart.
type rawMessage struct {
	Type             llms.ChatMessageType `json:"type"`
	Role             string               `json:"role,omitempty"`
	Name             string               `json:"name,omitempty"`
	ID               string               `json:"tool_call_id,omitempty"`
	FunctionCall     *llms.FunctionCall   `json:"function_call,omitempty"`
	ToolCalls        *[]rawCall           `json:"tool_calls,omitempty"`
	ReasoningContent string               `json:"reasoning_content,omitempty"`
}

// rawCall is a tool call in a raw copy, in the JSON of OpenAI's API:
// llms.ToolCall's own JSON methods (v0.1.14) lose the function when they
// read back what they wrote.
type rawCall struct {
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function *llms.FunctionCall `json:"function,omitempty"`
}

// messageValue returns m as one of langchaingo's six message values,
// dereferencing a pointer to one. It returns an error wrapping
// llms.ErrUnexpectedChatMessageType for any other type or a nil message.
func messageValue(m llms.ChatMessage) (llms.ChatMessage, error) {
	switch v := m.(type) {
	case llms.HumanChatMessage, llms.AIChatMessage, llms.SystemChatMessage,
		llms.GenericChatMessage, llms.FunctionChatMessage, llms.ToolChatMessage:
		return m, nil
	case *llms.HumanChatMessage:
		if v != nil {
			return *v, nil
		}
	case *llms.AIChatMessage:
		if v != nil {
			return *v, nil
		}
	case *llms.SystemChatMessage:
		if v != nil {
			return *v, nil
		}
	case *llms.GenericChatMessage:
		if v != nil {
			return *v, nil
		}
	case *llms.FunctionChatMessage:
		if v != nil {
			return *v, nil
		}
	case *llms.ToolChatMessage:
		if v != nil {
			return *v, nil
		}
	}
	return nil, fmt.Errorf("%w: %T (a nil message or a type of its own: Trails stores langchaingo's six)", llms.ErrUnexpectedChatMessageType, m)
}

// toTurn returns the turn that stores message m (a value messageValue
// returned): its role and content, its structured fields, and a raw copy
// when those do not give m back exactly. It returns an error wrapping
// session.ErrInvalid for a message Trails cannot store as it is (invalid
// UTF-8, too long).
func toTurn(m llms.ChatMessage) (session.Turn, error) {
	t := fieldsTurn(m)
	if back, err := fromTurn(t); err != nil || !reflect.DeepEqual(back, m) {
		raw, err := encodeRaw(m)
		if err != nil {
			return session.Turn{}, fmt.Errorf("%w: %v", session.ErrInvalid, err)
		}
		if t.Structure == nil {
			t.Structure = &session.Structure{}
		}
		t.Structure.Raw = &session.Raw{Format: RawFormat, Data: raw}
	}
	t.Branch = session.MainBranch // for the check; AppendTurn sets the session's
	if err := session.CheckTurn(t); err != nil {
		return session.Turn{}, err
	}
	if back, err := fromTurn(t); err != nil || !reflect.DeepEqual(back, m) {
		// The raw copy is JSON, which holds UTF-8 only.
		return session.Turn{}, fmt.Errorf("%w: a %s message with a field that is not valid UTF-8", session.ErrInvalid, m.GetType())
	}
	return t, nil
}

// fieldsTurn maps m onto a turn's role, content and structured fields,
// leaving out what they cannot hold (the raw copy's business).
func fieldsTurn(m llms.ChatMessage) session.Turn {
	t := session.Turn{Content: m.GetContent()}
	var x session.Structure
	switch v := m.(type) {
	case llms.HumanChatMessage:
		t.Role = roleHuman
	case llms.SystemChatMessage:
		t.Role = roleSystem
	case llms.AIChatMessage:
		t.Role = roleAI
		if v.ReasoningContent != "" {
			x.Parts = append(x.Parts, session.Part{Kind: session.PartReasoning, Text: v.ReasoningContent})
		}
		for _, c := range v.ToolCalls {
			if p, ok := callPart(c.ID, c.FunctionCall); ok {
				x.Parts = append(x.Parts, p)
			}
		}
		if p, ok := callPart("", v.FunctionCall); ok {
			x.Parts = append(x.Parts, p)
		}
	case llms.ToolChatMessage:
		t.Role = roleTool
		p := session.Part{Kind: session.PartToolResult, Result: jsonOf(v.Content)}
		if short(v.ID) {
			p.CallID = v.ID
		}
		x.Parts = append(x.Parts, p)
	case llms.FunctionChatMessage:
		t.Role = roleFunction
		p := session.Part{Kind: session.PartToolResult, Result: jsonOf(v.Content)}
		if short(v.Name) {
			p.ToolName = v.Name
		}
		x.Parts = append(x.Parts, p)
	case llms.GenericChatMessage:
		t.Role = v.Role
		if t.Role == "" || len(t.Role) > session.MaxRoleBytes || !utf8.ValidString(t.Role) {
			t.Role = roleGeneric
		}
		if short(v.Name) {
			x.Author = v.Name
		}
	}
	if len(x.Parts) > 0 || x.Author != "" {
		t.Structure = &x
	}
	return t
}

// callPart returns the tool call part of a call with id and function f,
// and false when a part cannot hold it (no function or no name, or an id
// or name too long).
func callPart(id string, f *llms.FunctionCall) (session.Part, bool) {
	if f == nil || f.Name == "" || !short(f.Name) || !short(id) {
		return session.Part{}, false
	}
	return session.Part{Kind: session.PartToolCall, CallID: id, ToolName: f.Name, Arguments: jsonOf(f.Arguments)}, true
}

// short reports whether s fits a short field of a structured turn.
func short(s string) bool { return len(s) <= maxShort && utf8.ValidString(s) }

// jsonOf returns s as a JSON value: s itself, byte for byte, when it is
// valid JSON (a tool's arguments or result usually are), else s as a JSON
// string (what the core does with a model's malformed arguments).
func jsonOf(s string) json.RawMessage {
	if utf8.ValidString(s) && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(strings.ToValidUTF8(s, "\uFFFD")) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// encodeRaw returns the raw copy of m: its type and fields but the
// content, as JSON.
func encodeRaw(m llms.ChatMessage) ([]byte, error) {
	r := rawMessage{Type: m.GetType()}
	switch v := m.(type) {
	case llms.AIChatMessage:
		r.FunctionCall, r.ReasoningContent = v.FunctionCall, v.ReasoningContent
		if v.ToolCalls != nil {
			calls := make([]rawCall, len(v.ToolCalls))
			for i, c := range v.ToolCalls {
				calls[i] = rawCall{ID: c.ID, Type: c.Type, Function: c.FunctionCall}
			}
			r.ToolCalls = &calls
		}
	case llms.GenericChatMessage:
		r.Role, r.Name = v.Role, v.Name
	case llms.FunctionChatMessage:
		r.Name = v.Name
	case llms.ToolChatMessage:
		r.ID = v.ID
	}
	return json.Marshal(r)
}

// fromTurn returns the message turn t stores: from its raw copy when it
// has one of RawFormat, else from its role, content and structured fields
// (a turn written by other means reads as well: an unknown role is a
// GenericChatMessage). It returns an error wrapping session.ErrCorrupt for
// a raw copy it cannot read.
func fromTurn(t session.Turn) (llms.ChatMessage, error) {
	var x session.Structure
	if t.Structure != nil {
		x = *t.Structure
	}
	if x.Raw != nil && x.Raw.Format == RawFormat {
		return decodeRaw(x.Raw.Data, t)
	}
	switch t.Role {
	case roleHuman:
		return llms.HumanChatMessage{Content: t.Content}, nil
	case roleSystem:
		return llms.SystemChatMessage{Content: t.Content}, nil
	case roleAI:
		m := llms.AIChatMessage{Content: t.Content}
		for _, p := range x.Parts {
			switch p.Kind {
			case session.PartReasoning:
				m.ReasoningContent += p.Text
			case session.PartToolCall:
				m.ToolCalls = append(m.ToolCalls, llms.ToolCall{ID: p.CallID, Type: "function",
					FunctionCall: &llms.FunctionCall{Name: p.ToolName, Arguments: string(p.Arguments)}})
			}
		}
		return m, nil
	case roleTool:
		m := llms.ToolChatMessage{Content: t.Content}
		if p, ok := resultPart(x.Parts); ok {
			m.ID = p.CallID
		}
		return m, nil
	case roleFunction:
		m := llms.FunctionChatMessage{Content: t.Content}
		if p, ok := resultPart(x.Parts); ok {
			m.Name = p.ToolName
		}
		return m, nil
	}
	return llms.GenericChatMessage{Role: t.Role, Name: x.Author, Content: t.Content}, nil
}

// resultPart returns the first tool result part of parts.
func resultPart(parts []session.Part) (session.Part, bool) {
	for _, p := range parts {
		if p.Kind == session.PartToolResult {
			return p, true
		}
	}
	return session.Part{}, false
}

// decodeRaw returns the message of raw copy data, its content t's.
func decodeRaw(data []byte, t session.Turn) (llms.ChatMessage, error) {
	var r rawMessage
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: turn %d (%s): raw copy %s: %v", session.ErrCorrupt, t.Index, t.ID, RawFormat, err)
	}
	switch r.Type {
	case llms.ChatMessageTypeHuman:
		return llms.HumanChatMessage{Content: t.Content}, nil
	case llms.ChatMessageTypeSystem:
		return llms.SystemChatMessage{Content: t.Content}, nil
	case llms.ChatMessageTypeAI:
		m := llms.AIChatMessage{Content: t.Content, FunctionCall: r.FunctionCall, ReasoningContent: r.ReasoningContent}
		if r.ToolCalls != nil {
			m.ToolCalls = make([]llms.ToolCall, len(*r.ToolCalls))
			for i, c := range *r.ToolCalls {
				m.ToolCalls[i] = llms.ToolCall{ID: c.ID, Type: c.Type, FunctionCall: c.Function}
			}
		}
		return m, nil
	case llms.ChatMessageTypeGeneric:
		return llms.GenericChatMessage{Role: r.Role, Name: r.Name, Content: t.Content}, nil
	case llms.ChatMessageTypeFunction:
		return llms.FunctionChatMessage{Name: r.Name, Content: t.Content}, nil
	case llms.ChatMessageTypeTool:
		return llms.ToolChatMessage{ID: r.ID, Content: t.Content}, nil
	}
	return nil, fmt.Errorf("%w: turn %d (%s): raw copy %s of unknown type %q", session.ErrCorrupt, t.Index, t.ID, RawFormat, r.Type)
}
