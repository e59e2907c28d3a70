package openaiagents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/nlpodyssey/openai-agents-go/memory"
	"github.com/openai/openai-go/v2/packages/param"
	"github.com/openai/openai-go/v2/responses"
	"github.com/trails-kg/trails/session"
)

// RawFormat names the raw copy (session.Raw) every turn this package
// writes carries: a JSON object {"of": FIELD, "item": ITEM}, where ITEM
// is the item's JSON as the OpenAI SDK writes it (MarshalJSON of
// responses.ResponseInputItemUnionParam) and FIELD the name of the field
// of the union that holds it ("OfMessage", "OfFunctionCall", ...): three
// variants share the type "message", and an EasyInputMessage may have no
// type at all, so the JSON alone does not say which variant to read it
// into.
const RawFormat = "openai.responses.input-item/v2"

// TypeKey is the metadata key (session.Structure.Metadata) under which a
// turn records its item's "type" as a JSON string ("message",
// "function_call", ...), for auditors who query the store.
const TypeKey = "openai.type"

// The roles of the turns that items which are not messages become.
const (
	roleModel = "assistant" // what the model produced: calls, reasoning
	roleTool  = "tool"      // what a tool returned: the *_output items
	roleUser  = "user"      // what the caller gives: approvals, references
)

// maxShort is the longest role, call id or tool name a structured turn
// holds (the core's limit on short strings); a longer one stays in the raw
// copy only.
const maxShort = 1024

// rawItem is the JSON of a raw copy (see RawFormat).
type rawItem struct {
	Of   string          `json:"of"`
	Item json.RawMessage `json:"item"`
}

// variant returns the name of the one field of the union item sets and
// its value (a non-nil pointer). It returns an error wrapping ErrInvalid
// when none is set or more than one.
func variant(item *memory.TResponseInputItem) (string, reflect.Value, error) {
	u := reflect.ValueOf(item).Elem()
	var name string
	var val reflect.Value
	for i := range u.NumField() {
		f := u.Type().Field(i)
		if !f.IsExported() || !strings.HasPrefix(f.Name, "Of") || f.Type.Kind() != reflect.Pointer || u.Field(i).IsNil() {
			continue
		}
		if name != "" {
			return "", reflect.Value{}, fmt.Errorf("%w: both %s and %s are set (a union holds one)", ErrInvalid, name, f.Name)
		}
		name, val = f.Name, u.Field(i)
	}
	if name == "" {
		return "", reflect.Value{}, fmt.Errorf("%w: no variant of the union is set", ErrInvalid)
	}
	return name, val, nil
}

// validStrings reports whether every string v holds, however deep
// (unexported fields and interfaces included), is valid UTF-8: JSON, and
// so the raw copy, would replace the bytes of one that is not.
func validStrings(v reflect.Value, depth int) bool {
	if depth > 64 {
		return true // deeper than any item; JSON encoding refuses a cycle
	}
	switch v.Kind() {
	case reflect.String:
		return utf8.ValidString(v.String())
	case reflect.Pointer, reflect.Interface:
		return v.IsNil() || validStrings(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if !validStrings(v.Field(i), depth+1) {
				return false
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return true // bytes: JSON encodes them as base64, or refuses invalid raw JSON
		}
		for i := range v.Len() {
			if !validStrings(v.Index(i), depth+1) {
				return false
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if !validStrings(it.Key(), depth+1) || !validStrings(it.Value(), depth+1) {
				return false
			}
		}
	}
	return true
}

// turnOf returns the turn that stores item and the item's type: its role
// and text as the turn's, its tool call, tool result or reasoning as
// structured parts, its type as metadata, and the raw copy from which
// itemOf gives it back. It returns an error wrapping ErrInvalid (and, for
// what the core refuses, session.ErrInvalid) for an item it cannot store
// as it is.
func turnOf(item memory.TResponseInputItem) (session.Turn, string, error) {
	name, v, err := variant(&item)
	if err != nil {
		return session.Turn{}, "", err
	}
	var typ string
	if p := item.GetType(); p != nil {
		typ = *p
	}
	if !validStrings(v, 0) {
		return session.Turn{}, typ, fmt.Errorf("%w: %w: a string that is not valid UTF-8", ErrInvalid, session.ErrInvalid)
	}
	data, err := item.MarshalJSON()
	if err != nil {
		return session.Turn{}, typ, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	typ = typeOf(data)
	raw, err := json.Marshal(rawItem{Of: name, Item: data})
	if err != nil {
		return session.Turn{}, typ, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	t := fieldsTurn(v.Interface(), typ)
	if t.Structure == nil {
		t.Structure = &session.Structure{}
	}
	t.Structure.Raw = &session.Raw{Format: RawFormat, Data: raw}
	if typ != "" && short(typ) {
		b, _ := json.Marshal(typ) // a string always encodes
		t.Structure.Metadata = map[string]json.RawMessage{TypeKey: b}
	}
	t.Branch = session.MainBranch // for the check; AppendTurn sets the session's
	if err := session.CheckTurn(t); err != nil {
		return session.Turn{}, typ, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	// What GetItems will return must encode as the item did: an item
	// whose JSON the SDK cannot read back into its variant is refused.
	back, err := itemOf(t)
	if err != nil {
		return session.Turn{}, typ, fmt.Errorf("%w: it does not read back: %v", ErrInvalid, err)
	}
	if again, err := back.MarshalJSON(); err != nil || !sameJSON(again, data) {
		return session.Turn{}, typ, fmt.Errorf("%w: it does not read back as it was written (%s)", ErrInvalid, data)
	}
	return t, typ, nil
}

// typeOf returns the "type" of the item whose JSON is data, "" when it
// has none (an EasyInputMessage or an item reference may omit it).
func typeOf(data []byte) string {
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &head) // data is the SDK's JSON of an object
	return head.Type
}

// fieldsTurn maps variant v (a pointer to one of the union's variants) of
// type typ onto a turn's role, content and parts, leaving out what they
// cannot hold (the raw copy has it).
func fieldsTurn(v any, typ string) session.Turn {
	var t session.Turn
	var x session.Structure
	switch m := v.(type) {
	case *responses.EasyInputMessageParam:
		t.Role = string(m.Role)
		if !param.IsOmitted(m.Content.OfString) {
			t.Content = m.Content.OfString.Value
		} else {
			t.Content, x.Parts = inputText(m.Content.OfInputItemContentList)
		}
	case *responses.ResponseInputItemMessageParam:
		t.Role = m.Role
		t.Content, x.Parts = inputText(m.Content)
	case *responses.ResponseOutputMessageParam:
		t.Role = roleModel
		var texts []string
		for _, c := range m.Content {
			switch {
			case c.OfOutputText != nil:
				texts = append(texts, c.OfOutputText.Text)
			case c.OfRefusal != nil:
				texts = append(texts, c.OfRefusal.Refusal)
			default:
				continue
			}
			x.Parts = append(x.Parts, session.Part{Kind: session.PartText, Text: texts[len(texts)-1]})
		}
		t.Content = strings.Join(texts, "\n")
	case *responses.ResponseFunctionToolCallParam:
		t.Role = roleModel
		x.Parts = callPart(m.CallID, m.Name, m.Arguments)
	case *responses.ResponseCustomToolCallParam:
		t.Role = roleModel
		x.Parts = callPart(m.CallID, m.Name, m.Input)
	case *responses.ResponseInputItemFunctionCallOutputParam:
		t.Role, t.Content = roleTool, m.Output
		x.Parts = resultPart(m.CallID, m.Output)
	case *responses.ResponseCustomToolCallOutputParam:
		t.Role, t.Content = roleTool, m.Output
		x.Parts = resultPart(m.CallID, m.Output)
	case *responses.ResponseReasoningItemParam:
		t.Role = roleModel
		for _, s := range m.Summary {
			x.Parts = append(x.Parts, session.Part{Kind: session.PartReasoning, Text: s.Text})
		}
		for _, c := range m.Content {
			x.Parts = append(x.Parts, session.Part{Kind: session.PartReasoning, Text: c.Text})
		}
	default:
		switch {
		case strings.HasSuffix(typ, "_output"):
			t.Role = roleTool
		case typ == "mcp_approval_response" || typ == "item_reference" || typ == "":
			t.Role = roleUser
		default:
			t.Role = roleModel
		}
	}
	if t.Role == "" || !short(t.Role) {
		t.Role = "message" // a message without a role, or one Trails cannot hold as a role
	}
	if len(x.Parts) > 0 {
		t.Structure = &x
	}
	return t
}

// inputText returns the text of an input content list, its text items
// joined by newlines, and a text part for each.
func inputText(list responses.ResponseInputMessageContentListParam) (string, []session.Part) {
	var texts []string
	var parts []session.Part
	for _, c := range list {
		if c.OfInputText != nil {
			texts = append(texts, c.OfInputText.Text)
			parts = append(parts, session.Part{Kind: session.PartText, Text: c.OfInputText.Text})
		}
	}
	return strings.Join(texts, "\n"), parts
}

// callPart returns the tool call part of a call with id, tool name and
// arguments, none when a part cannot hold it (no name, an id or name too
// long).
func callPart(id, name, args string) []session.Part {
	if name == "" || !short(name) || !short(id) {
		return nil
	}
	return []session.Part{{Kind: session.PartToolCall, CallID: id, ToolName: name, Arguments: jsonOf(args)}}
}

// resultPart returns the tool result part of the output of call id, none
// when the id is too long for a part.
func resultPart(id, output string) []session.Part {
	if !short(id) {
		return nil
	}
	return []session.Part{{Kind: session.PartToolResult, CallID: id, Result: jsonOf(output)}}
}

// short reports whether s fits a short field of a structured turn.
func short(s string) bool { return len(s) <= maxShort && utf8.ValidString(s) }

// jsonOf returns s as a JSON value: s itself, byte for byte, when it is
// valid JSON (a tool's arguments and output usually are), else s as a
// JSON string.
func jsonOf(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// itemOf returns the item turn t stores: from its raw copy when it has
// one of RawFormat, else (a turn another client of Trails wrote) made
// from its fields: a function call for a turn whose one part is a tool
// call, a function call output for one with a tool result, else an
// EasyInputMessage with the turn's role (when it is one a message may
// have, else "assistant") and its content as text. It returns an error
// wrapping session.ErrCorrupt for a raw copy it cannot read.
func itemOf(t session.Turn) (memory.TResponseInputItem, error) {
	var x session.Structure
	if t.Structure != nil {
		x = *t.Structure
	}
	if x.Raw != nil && x.Raw.Format == RawFormat {
		return decodeRaw(x.Raw.Data, t)
	}
	if len(x.Parts) == 1 && x.Parts[0].Kind == session.PartToolCall {
		p := x.Parts[0]
		args := string(p.Arguments)
		var s string
		if json.Unmarshal(p.Arguments, &s) == nil {
			args = s // a JSON string stands for arguments that were not JSON
		}
		return memory.TResponseInputItem{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
			CallID: p.CallID, Name: p.ToolName, Arguments: args, Type: "function_call"}}, nil
	}
	for _, p := range x.Parts {
		if p.Kind == session.PartToolResult {
			return memory.TResponseInputItem{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: p.CallID, Output: t.Content, Type: "function_call_output"}}, nil
		}
	}
	role := responses.EasyInputMessageRole(t.Role)
	switch role {
	case responses.EasyInputMessageRoleUser, responses.EasyInputMessageRoleAssistant,
		responses.EasyInputMessageRoleSystem, responses.EasyInputMessageRoleDeveloper:
	default:
		role = responses.EasyInputMessageRoleAssistant
	}
	return memory.TResponseInputItem{OfMessage: &responses.EasyInputMessageParam{
		Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(t.Content)},
		Role:    role, Type: responses.EasyInputMessageTypeMessage}}, nil
}

// decodeRaw returns the item of raw copy data, read into the variant it
// names.
func decodeRaw(data []byte, t session.Turn) (memory.TResponseInputItem, error) {
	var item memory.TResponseInputItem
	var r rawItem
	if err := json.Unmarshal(data, &r); err != nil {
		return item, fmt.Errorf("%w: turn %d (%s): raw copy %s: %v", session.ErrCorrupt, t.Index, t.ID, RawFormat, err)
	}
	f := reflect.ValueOf(&item).Elem().FieldByName(r.Of)
	if !strings.HasPrefix(r.Of, "Of") || !f.IsValid() || f.Kind() != reflect.Pointer || !f.CanSet() {
		return item, fmt.Errorf("%w: turn %d (%s): raw copy %s of unknown variant %q", session.ErrCorrupt, t.Index, t.ID, RawFormat, r.Of)
	}
	p := reflect.New(f.Type().Elem())
	if err := json.Unmarshal(r.Item, p.Interface()); err != nil {
		return item, fmt.Errorf("%w: turn %d (%s): raw copy %s: %s: %v", session.ErrCorrupt, t.Index, t.ID, RawFormat, r.Of, err)
	}
	restoreExtras(r.Item, p.Interface())
	f.Set(p)
	return item, nil
}

// restoreExtras gives v, a variant just decoded from data, what its JSON
// lacks of data: the SDK's decoding drops the fields an item was given
// with SetExtraFields, and writes a required field that SetExtraFields
// told to omit (param.Omit). Each such field becomes an extra field of v
// again (its JSON as data holds it, or param.Omit), so that v encodes as
// data. An item whose JSON this does not restore is refused by turnOf.
func restoreExtras(data []byte, v any) {
	x, ok := v.(interface{ SetExtraFields(map[string]any) })
	if !ok {
		return
	}
	var want, got map[string]json.RawMessage
	b, err := json.Marshal(v)
	if err != nil || json.Unmarshal(data, &want) != nil || json.Unmarshal(b, &got) != nil {
		return
	}
	extra := make(map[string]any)
	for k, w := range want {
		if g, ok := got[k]; !ok || !bytes.Equal(g, w) {
			extra[k] = w
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra[k] = param.Omit
		}
	}
	if len(extra) > 0 {
		x.SetExtraFields(extra)
	}
}

// isCallOutput reports whether item is the output of a call (function,
// custom tool, computer, local shell), which the model refuses without
// the call before it.
func isCallOutput(item memory.TResponseInputItem) bool {
	return item.OfFunctionCallOutput != nil || item.OfCustomToolCallOutput != nil ||
		item.OfComputerCallOutput != nil || item.OfLocalShellCallOutput != nil
}

// sameJSON reports whether a and b are the same JSON value: the SDK writes
// an item's extra fields (SetExtraFields) in the order of a Go map, which
// changes from one encoding to the next, so two encodings of one item may
// differ in their bytes (an item with two extra fields was refused at
// random).
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
