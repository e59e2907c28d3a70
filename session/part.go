package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
)

// Structured turns. Besides its plain text (Content), a turn may carry what
// an agent framework's event holds: parts (text, reasoning, tool calls and
// their results, data), the agent that wrote it, the model that answered
// with its token usage, metadata, and a raw copy of the framework's own
// bytes. Every such field is optional; a turn without any (what
// Session.Append makes) is stored, hashed and loaded exactly as before.

// PartKind says what a Part holds.
type PartKind string

// The kinds of Part.
const (
	// PartText is plain text (Part.Text).
	PartText PartKind = "text"
	// PartReasoning is a model's reasoning or thought (Part.Text).
	PartReasoning PartKind = "reasoning"
	// PartToolCall is a model's request to call a tool (Part.CallID,
	// Part.ToolName, Part.Arguments).
	PartToolCall PartKind = "tool_call"
	// PartToolResult is what a tool returned (Part.CallID, Part.ToolName,
	// Part.Result, Part.IsError).
	PartToolResult PartKind = "tool_result"
	// PartData is binary or file data (Part.MIMEType and either Part.Data
	// or Part.URI).
	PartData PartKind = "data"
)

// Part is one part of a turn's content. Which fields it may set depends on
// its Kind; Persist refuses a part with fields its kind does not have.
type Part struct {
	Kind PartKind
	// Text is the text of a text or reasoning part (may be empty).
	Text string
	// CallID pairs a tool call with its result (gen_ai.tool.call.id).
	CallID string
	// ToolName is the tool called (gen_ai.tool.name): required for a tool
	// call, optional for a result (OpenAI's function_call_output has none).
	ToolName string
	// Arguments is a tool call's arguments, valid JSON, kept byte for byte
	// (a model's malformed argument string goes in as a JSON string).
	Arguments json.RawMessage
	// Result is a tool result, valid JSON, kept byte for byte.
	Result json.RawMessage
	// IsError marks a tool result that reports a failure.
	IsError bool
	// MIMEType is a data part's media type.
	MIMEType string
	// Data is a data part's bytes (empty when URI is set).
	Data []byte
	// URI is where a data part's file is, an absolute IRI, when Data does
	// not hold it.
	URI string
}

// Structure is what a turn holds besides its plain text, all fields
// optional: the parts of its content, who wrote it, the model that
// answered and its usage, metadata, and a raw copy of the framework's own
// event. A Structure with no field set is a plain turn's (Load returns
// nil for it).
type Structure struct {
	Author       string                     // the agent that wrote the turn (ADK's Event.Author)
	InvocationID string                     // the agent invocation it belongs to
	EventID      string                     // the framework's id of the event the turn stores (ADK's Event.ID)
	Model        string                     // the model that answered (gen_ai.response.model)
	FinishReason string                     // why the model stopped (gen_ai.response.finish_reasons)
	Usage        *Usage                     // token usage the model reported
	Metadata     map[string]json.RawMessage // string keys, JSON values kept byte for byte
	Raw          *Raw                       // the framework's own bytes, for a byte-exact round trip
	Parts        []Part                     // text, reasoning, tool calls, tool results, data, in order
	// Delta is the state the turn changes (ADK's Actions.StateDelta): key
	// → new JSON value, a nil value (not JSON null) removing the key. A
	// key's prefix gives its scope (AppPrefix, UserPrefix, TempPrefix;
	// none: the session's own); Persist stores no temp: key.
	Delta map[string]json.RawMessage
}

// Usage is the token usage a model reported for one turn
// (gen_ai.usage.*).
type Usage struct {
	Input     int64 // input (prompt) tokens
	Output    int64 // output (completion) tokens
	Cached    int64 // input tokens read from the provider's cache
	Reasoning int64 // tokens spent reasoning
	Total     int64 // total, as the provider reported it
}

// Raw is a lossless copy of a framework's own event: an adapter stores the
// bytes it cannot map onto other fields, and reads them back byte-exact.
type Raw struct {
	Format string // e.g. "adk.event/v2"
	Data   []byte
}

// AppendTurn adds turn t at the end of the history, as Append does, and
// returns it: its Index, Branch and ID are set by s, its Created stamped
// now when zero; every other field (Role, Content and the structured
// fields) is kept as given. Nothing is written to the store until
// Persist, which returns ErrInvalid for a turn it cannot store.
func (s *Session) AppendTurn(t Turn) Turn {
	t.Index = s.From + len(s.Turns)
	t.Branch = s.Branch
	if t.Created.IsZero() {
		t.Created = now()
	} else {
		t.Created = t.Created.UTC().Truncate(1e6)
	}
	t.ID = s.turnID(t.Index)
	s.Turns = append(s.Turns, t)
	s.Values = applyDelta(s.Values, deltaOf(t))
	return t
}

// Structured reports whether t has any structured field: parts, author,
// invocation id, event id, model, finish reason, usage, metadata, a raw copy or a
// state delta.
func (t Turn) Structured() bool {
	x := t.Structure
	return x != nil && (len(x.Parts) > 0 || x.Author != "" || x.InvocationID != "" || x.EventID != "" || x.hasInvocation() ||
		len(x.Metadata) > 0 || x.Raw != nil || len(x.Delta) > 0)
}

// hasInvocation reports whether x records a model invocation (a model, a
// finish reason or usage).
func (x *Structure) hasInvocation() bool {
	return x.Model != "" || x.FinishReason != "" || x.Usage != nil
}

// MaxParts is the most parts one structured turn may hold (Turn.Structure
// Parts); a turn with more is refused with ErrInvalid before anything is
// sent, by Persist and by Import. Each part is a resource of its own with
// its triples: 50,000 parts took about a minute to persist and twelve
// seconds to load. A model answer, even a long run of parallel tool calls,
// has a few dozen.
const MaxParts = 1024

// maxShortBytes bounds each short string of a structured turn (author,
// ids, names, model, finish reason, formats, MIME types, metadata keys).
const maxShortBytes = 1024

// checkStructure checks the structured fields of t: short strings UTF-8
// and at most 1 KiB, JSON valid and UTF-8, parts with the fields of their
// kind, and the whole turn (content included) at most MaxTurnBytes.
func checkStructure(t Turn) error {
	if !t.Structured() {
		return nil
	}
	x := t.Structure
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: turn %d: %s", ErrInvalid, t.Index, fmt.Sprintf(format, args...))
	}
	short := func(name, v string) error {
		if !utf8.ValidString(v) || len(v) > maxShortBytes {
			return bad("%s %s must be UTF-8 of at most %d bytes", name, termsafe.Quote(v), maxShortBytes)
		}
		return nil
	}
	for _, f := range []struct{ name, v string }{{"author", x.Author}, {"invocation id", x.InvocationID}, {"event id", x.EventID}, {"model", x.Model}, {"finish reason", x.FinishReason}} {
		if err := short(f.name, f.v); err != nil {
			return err
		}
	}
	if u := x.Usage; u != nil && (u.Input < 0 || u.Output < 0 || u.Cached < 0 || u.Reasoning < 0 || u.Total < 0) {
		return bad("negative token count in usage %+v", *u)
	}
	for k, v := range x.Metadata {
		if err := short("metadata key", k); err != nil {
			return err
		}
		if !validJSON(v) {
			return bad("metadata %s is not valid UTF-8 JSON", termsafe.Quote(k))
		}
	}
	if r := x.Raw; r != nil {
		if r.Format == "" {
			return bad("a raw copy needs a format")
		}
		if err := short("raw format", r.Format); err != nil {
			return err
		}
	}
	if n := len(x.Parts); n > MaxParts {
		return bad("%d parts, more than the %d a turn may hold (session.MaxParts)", n, MaxParts)
	}
	for k, p := range x.Parts {
		if err := checkPart(p); err != nil {
			return bad("part %d: %v", k, err)
		}
	}
	if n := turnBytes(t); n > MaxTurnBytes {
		return bad("%d bytes with its structured fields, more than the %d a turn may hold (session.MaxTurnBytes)", n, MaxTurnBytes)
	}
	return nil
}

// checkPart checks that p sets the fields of its kind, and only those.
func checkPart(p Part) error {
	var text, call, args, result, data bool // which fields the kind has
	switch p.Kind {
	case PartText, PartReasoning:
		text = true
	case PartToolCall:
		call, args = true, true
	case PartToolResult:
		call, result = true, true
	case PartData:
		data = true
	default:
		return fmt.Errorf("unknown kind %s", termsafe.Quote(string(p.Kind)))
	}
	switch {
	case !text && p.Text != "":
		return fmt.Errorf("a %s part has no text", p.Kind)
	case !call && (p.CallID != "" || p.ToolName != ""):
		return fmt.Errorf("a %s part has no call id or tool name", p.Kind)
	case !args && p.Arguments != nil:
		return fmt.Errorf("a %s part has no arguments", p.Kind)
	case !result && (p.Result != nil || p.IsError):
		return fmt.Errorf("a %s part has no result", p.Kind)
	case !data && (p.MIMEType != "" || len(p.Data) > 0 || p.URI != ""):
		return fmt.Errorf("a %s part has no data", p.Kind)
	case !utf8.ValidString(p.Text):
		return fmt.Errorf("text is not valid UTF-8")
	}
	for _, f := range []struct{ name, v string }{{"call id", p.CallID}, {"tool name", p.ToolName}, {"MIME type", p.MIMEType}} {
		if !utf8.ValidString(f.v) || len(f.v) > maxShortBytes {
			return fmt.Errorf("%s %s must be UTF-8 of at most %d bytes", f.name, termsafe.Quote(f.v), maxShortBytes)
		}
	}
	switch {
	case args && p.ToolName == "":
		return fmt.Errorf("a %s part needs a tool name", p.Kind)
	case args && !validJSON(p.Arguments):
		return fmt.Errorf("arguments are not valid UTF-8 JSON")
	case result && !validJSON(p.Result):
		return fmt.Errorf("result is not valid UTF-8 JSON")
	case data && p.MIMEType == "":
		return fmt.Errorf("a data part needs a MIME type")
	case data && p.URI != "" && len(p.Data) > 0:
		return fmt.Errorf("a data part holds either bytes or an IRI, not both")
	}
	if p.URI != "" {
		if _, err := kg.IRI(p.URI); err != nil {
			return fmt.Errorf("data IRI %s: %v", termsafe.Quote(p.URI), err)
		}
	}
	return nil
}

// validJSON reports whether b is one valid JSON value in valid UTF-8
// (encoding/json accepts invalid UTF-8 inside strings; the store does not).
func validJSON(b []byte) bool { return utf8.Valid(b) && json.Valid(b) }

// turnBytes is the size of t that counts against MaxTurnBytes: its content
// and every structured field (bytes as stored, base64-encoded).
func turnBytes(t Turn) int {
	n := len(t.Content)
	x := t.Structure
	if x == nil {
		return n
	}
	n += len(x.Author) + len(x.InvocationID) + len(x.EventID) + len(x.Model) + len(x.FinishReason)
	for k, v := range x.Metadata {
		n += len(k) + len(v)
	}
	if x.Raw != nil {
		n += len(x.Raw.Format) + b64Len(len(x.Raw.Data))
	}
	for _, p := range x.Parts {
		n += len(p.Text) + len(p.CallID) + len(p.ToolName) + len(p.Arguments) + len(p.Result) +
			len(p.MIMEType) + b64Len(len(p.Data)) + len(p.URI)
	}
	for k, v := range x.Delta {
		n += len(k) + len(v)
	}
	return n
}

func b64Len(n int) int { return (n + 2) / 3 * 4 }

// metadataJSON returns the metadata m as the JSON object Trails stores:
// keys sorted, each value the bytes given.
func metadataJSON(m map[string]json.RawMessage) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k) // a string always marshals
		b.Write(kb)
		b.WriteByte(':')
		b.Write(m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// parseMetadata reads a stored trails:metadata object (as metadataJSON
// writes it: no space around the colons and commas) back into its keys and
// the bytes of each value, whitespace around a value included.
func parseMetadata(s string) (map[string]json.RawMessage, error) {
	bad := fmt.Errorf("metadata %s is not a JSON object", termsafe.Quote(s))
	b := []byte(s)
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, bad
	}
	m := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return nil, bad
		}
		start := int(dec.InputOffset()) // at the colon
		if start >= len(b) || b[start] != ':' {
			return nil, bad
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, bad
		}
		end := int(dec.InputOffset())
		for end < len(b) && b[end] != ',' && b[end] != '}' {
			end++ // the whitespace after the value is the value's
		}
		m[key] = json.RawMessage(bytes.Clone(b[start+1 : end]))
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, bad
	}
	return m, nil
}

// writeStructure writes the structured fields of t to h for the digest
// recipe "trails-turn/2" (chain.go), each with field: every field in a
// fixed order, absent ones as "", counts before lists, metadata keys
// sorted, JSON and bytes as given.
func writeStructure(h interface{ Write([]byte) (int, error) }, t Turn) {
	f := func(s string) { field(h, s) }
	x := t.Structure
	if x == nil {
		x = &Structure{}
	}
	f(x.Author)
	f(x.InvocationID)
	f(x.Model)
	f(x.FinishReason)
	if u := x.Usage; u != nil {
		f("1")
		for _, n := range []int64{u.Input, u.Output, u.Cached, u.Reasoning, u.Total} {
			f(strconv.FormatInt(n, 10))
		}
	} else {
		f("")
	}
	f(strconv.Itoa(len(x.Metadata)))
	for _, k := range slices.Sorted(maps.Keys(x.Metadata)) {
		f(k)
		f(string(x.Metadata[k]))
	}
	if r := x.Raw; r != nil {
		f("1")
		f(r.Format)
		f(string(r.Data))
	} else {
		f("")
	}
	f(strconv.Itoa(len(x.Parts)))
	for _, p := range x.Parts {
		f(string(p.Kind))
		f(p.Text)
		f(p.CallID)
		f(p.ToolName)
		f(string(p.Arguments))
		f(string(p.Result))
		if p.IsError {
			f("1")
		} else {
			f("0")
		}
		f(p.MIMEType)
		f(string(p.Data))
		f(p.URI)
	}
	// Only when there are state changes, as before state deltas: every
	// digest stored before them holds.
	if len(x.Delta) > 0 {
		f(strconv.Itoa(len(x.Delta)))
		for _, k := range slices.Sorted(maps.Keys(x.Delta)) {
			f(k)
			if v := x.Delta[k]; v != nil {
				f("1")
				f(string(v))
			} else {
				f("0")
				f("")
			}
		}
	}
	// Only when there is one, as before event ids: "event" is no count,
	// so it cannot be read as the start of the changes above.
	if x.EventID != "" {
		f("event")
		f(x.EventID)
	}
}

// sameStructure reports whether a and b have the same structured fields.
func sameStructure(at, bt Turn) bool {
	if !at.Structured() || !bt.Structured() {
		return at.Structured() == bt.Structured()
	}
	a, b := at.Structure, bt.Structure
	if a.Author != b.Author || a.InvocationID != b.InvocationID || a.EventID != b.EventID || a.Model != b.Model || a.FinishReason != b.FinishReason {
		return false
	}
	if (a.Usage == nil) != (b.Usage == nil) || (a.Usage != nil && *a.Usage != *b.Usage) {
		return false
	}
	if (a.Raw == nil) != (b.Raw == nil) || (a.Raw != nil && (a.Raw.Format != b.Raw.Format || !bytes.Equal(a.Raw.Data, b.Raw.Data))) {
		return false
	}
	if !maps.EqualFunc(a.Metadata, b.Metadata, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) }) {
		return false
	}
	if !maps.EqualFunc(a.Delta, b.Delta, func(x, y json.RawMessage) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }) {
		return false
	}
	return slices.EqualFunc(a.Parts, b.Parts, func(x, y Part) bool {
		return x.Kind == y.Kind && x.Text == y.Text && x.CallID == y.CallID && x.ToolName == y.ToolName &&
			bytes.Equal(x.Arguments, y.Arguments) && bytes.Equal(x.Result, y.Result) && x.IsError == y.IsError &&
			x.MIMEType == y.MIMEType && bytes.Equal(x.Data, y.Data) && x.URI == y.URI
	})
}
