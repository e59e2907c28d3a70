// Package langchaingo keeps a langchaingo conversation in Trails: History
// is a schema.ChatMessageHistory (github.com/tmc/langchaingo v0.1.14)
// whose messages are the turns of a Trails session, so that a chain or an
// agent built on langchaingo's memory (memory.NewConversationBuffer and
// the like) gets Trails' forks, PROV records and SPARQL audit queries by
// changing the history it is given.
//
//	c, _ := kg.New(kg.Config{Endpoint: "http://127.0.0.1:3030/trails"})
//	h := langchaingo.NewHistory(session.NewStore(c), "support-chat-42", langchaingo.WithPrincipal("alice"))
//	mem := memory.NewConversationBuffer(memory.WithChatHistory(h))
//	err := mem.SaveContext(ctx, map[string]any{"input": "hi"}, map[string]any{"output": "hello"})
//	msgs, err := h.Messages(ctx) // the same messages from any process, from the store
//
// Each message is one turn, its role given by its type: human "user", AI
// "assistant", system "system", tool "tool", function "function", and a
// generic message its own role ("generic" when it has none). The content
// is the turn's content. The rest goes into the turn's structured fields
// (session.Structure), which auditors query with plain SPARQL: an AI
// message's ReasoningContent is a reasoning part and each of its ToolCalls
// a tool call part (call id, function name, arguments: byte for byte when
// they are valid JSON, else as a JSON string); a ToolChatMessage is a tool
// result part with its call id (which Trails links to the call), a
// FunctionChatMessage one with its function name, both with the content
// as the result (as it is when it is valid JSON, else as a JSON string), so
// a tool's output counts twice against session.MaxTurnBytes; a generic
// message's name is the turn's author. When these fields do not give the
// message back exactly (a generic message whose role is another type's, a
// tool call whose type is not "function", whose arguments are not JSON or
// that has no function, an AI message's deprecated FunctionCall or an
// empty ToolCalls list, a name or id over 1 KiB), the turn also carries a
// raw copy (session.Raw) of format RawFormat: the message without its
// content, as JSON. Messages returns exactly the messages added: the same
// types and fields, whichever History value or process reads them. A
// pointer to a message is stored as the message (Messages returns the
// value); a message type of one's own is refused. Trails stores UTF-8
// only: a message with invalid UTF-8 in any field is refused.
//
// Nothing is deleted: Clear and SetMessages rewind the session
// (session.Store.Rewind), which moves the abandoned turns, untouched, into
// an archive fork and records the rewind in PROV, then append. trails-admin
// rewinds lists them; trails-admin show prints an archive.
package langchaingo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/uuid"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/session"
)

// NameKey is the session value holding the name a History was given (see
// NewHistory), set when the session is created.
const NameKey = "langchaingo.name"

// DefaultPrincipal is the principal of the sessions a History creates
// when WithPrincipal does not name one.
const DefaultPrincipal = "langchaingo"

// names is the namespace of the name-based (version 5) UUIDs that
// NewHistory gives sessions named by a string that is not a UUID.
var names = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://w3id.org/trails/integrations/langchaingo"))

// History is a langchaingo chat message history kept in a Trails session.
// It reads the store on Messages, and remembers the session as it last saw
// it there, so that a write made from a stale view (another History value
// or process wrote to the session since) fails with session.ErrConflict
// instead of interleaving; after any failed write it reads the store again
// on its next call. A History is safe for concurrent use: its calls run one
// at a time.
type History struct {
	st        *session.Store
	id        string
	name      string // the name NewHistory was given, when not an id
	principal string
	app       string

	mu sync.Mutex
	s  *session.Session // the session as last read or written; nil: read it first
}

var _ schema.ChatMessageHistory = (*History)(nil)

// Option configures a History.
type Option func(*History)

// WithPrincipal sets the principal of the session the History creates
// (default DefaultPrincipal), and so the session a name stands for (see
// NewHistory). With a Store scoped to a principal (session.ForPrincipal)
// give that principal. A session stored already keeps its own.
func WithPrincipal(p string) Option { return func(h *History) { h.principal = p } }

// WithApp sets the app of the session the History creates (session.App:
// its sessions share the values of app: keys), and so the session a name
// stands for (see NewHistory). A session stored already keeps its own.
func WithApp(app string) Option { return func(h *History) { h.app = app } }

// NewHistory returns the history of session id in st; it does no I/O: the
// session is read at the first call and created, when not stored, by the
// first message added.
//
// id is what langchaingo's other histories call a session id: a Trails
// session id (a UUID in canonical form) is used as it is; "" gives a new
// session with a fresh id; any other string names a session, whose id is
// the version 5 UUID of the app, principal and name (the same string with
// the same options gives the same session in every process; SessionID
// tells which). The session a name stands for is created with the name as
// its value NameKey and, when the name is a valid tag (session.CheckTag:
// no white space, at most 128 characters), as a tag, so that operators
// find it with trails-admin sessions --tag NAME and see it in show.
func NewHistory(st *session.Store, id string, opts ...Option) *History {
	h := &History{st: st, principal: DefaultPrincipal}
	for _, o := range opts {
		o(h)
	}
	switch {
	case id == "":
		h.id = session.New(h.principal).ID
	case session.CheckID(id) == nil:
		h.id = id
	default:
		h.id = uuid.NewSHA1(names, []byte(h.app+"\x00"+h.principal+"\x00"+id)).String()
		h.name = id
	}
	return h
}

// SessionID returns the id of the Trails session that holds the history
// (what trails-admin show, tree and audit take).
func (h *History) SessionID() string { return h.id }

// Messages returns the messages of the history, oldest first, as the store
// holds them now, and takes that as the history's view of the session. A
// session not stored yet has none.
//
// It returns an error wrapping session.ErrCorrupt for a raw copy it cannot
// read, the errors of session.Store.Load (session.ErrParentMissing, ...),
// or a store error.
func (h *History) Messages(ctx context.Context) (_ []llms.ChatMessage, err error) {
	ctx, call := telemetry.Start(ctx, "langchaingo.History.Messages", h.id)
	defer func() { call.End(err) }()
	h.mu.Lock()
	defer h.mu.Unlock()
	s, _, err := h.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	msgs := make([]llms.ChatMessage, 0, len(s.Turns))
	for _, t := range s.Turns {
		m, err := fromTurn(t)
		if err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
		msgs = append(msgs, m)
	}
	h.s = s
	return msgs, nil
}

// AddMessage appends message m to the history, as one turn in one atomic
// update (see the package documentation for how it is stored).
//
// It returns an error wrapping llms.ErrUnexpectedChatMessageType for a
// message that is nil or of a type of its own, session.ErrInvalid for one
// Trails cannot store (invalid UTF-8, over session.MaxTurnBytes),
// session.ErrConflict when another writer changed the session since this
// History last read it (call Messages to see it, then add again), the
// other errors of session.Store.Persist, or a store error. Nothing is
// stored when it fails, except that a store error may hide a write that
// landed: Messages tells.
func (h *History) AddMessage(ctx context.Context, m llms.ChatMessage) (err error) {
	ctx, call := telemetry.Start(ctx, "langchaingo.History.AddMessage", h.id)
	defer func() { call.End(err) }()
	t, err := turnOf(m)
	if err != nil {
		return fmt.Errorf("add message: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s == nil {
		if h.s, _, err = h.read(ctx); err != nil {
			return fmt.Errorf("add message: %w", err)
		}
	}
	if err := h.append(ctx, []session.Turn{t}); err != nil {
		return fmt.Errorf("add message: %w", err)
	}
	return nil
}

// AddUserMessage appends a human message with content text, as AddMessage
// does.
func (h *History) AddUserMessage(ctx context.Context, text string) error {
	return h.AddMessage(ctx, llms.HumanChatMessage{Content: text})
}

// AddAIMessage appends an AI message with content text, as AddMessage
// does.
func (h *History) AddAIMessage(ctx context.Context, text string) error {
	return h.AddMessage(ctx, llms.AIChatMessage{Content: text})
}

// Clear empties the history without deleting anything: it rewinds the
// session to its start, which moves every turn into an archive fork and
// records the rewind in PROV (session.Store.Rewind, reason "langchaingo:
// clear"). An empty or unstored history is left as it is.
//
// It returns session.ErrConflict when another writer changed the session
// since this History last read it, the errors of session.Store.Rewind
// (session.ErrInvalid for a fork, whose inherited turns cannot be rewound;
// session.ErrState, ...), or a store error.
func (h *History) Clear(ctx context.Context) error {
	return h.SetMessages(ctx, nil)
}

// SetMessages makes msgs the history without deleting anything: it keeps
// the longest prefix of the stored messages that msgs begins with, rewinds
// the session to it (session.Store.Rewind, reason "langchaingo:
// set messages"; the turns beyond it move, untouched, into an archive fork,
// and PROV records the rewind), then appends the rest of msgs in one
// atomic update. Setting the messages the history holds, or those
// followed by more, rewinds nothing.
//
// The rewind and the append are two atomic steps: when the append fails
// the history holds the kept prefix and the error says why (the archive
// holds what was replaced). It returns the errors of AddMessage for a
// message it cannot store (then nothing changes) and those of Clear.
func (h *History) SetMessages(ctx context.Context, msgs []llms.ChatMessage) (err error) {
	ctx, call := telemetry.Start(ctx, "langchaingo.History.SetMessages", h.id)
	defer func() { call.End(err) }()
	op := "set messages"
	if msgs == nil {
		op = "clear"
	}
	if err := h.set(ctx, op, msgs); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func (h *History) set(ctx context.Context, op string, msgs []llms.ChatMessage) error {
	vals := make([]llms.ChatMessage, len(msgs))
	turns := make([]session.Turn, len(msgs))
	for i, m := range msgs {
		v, err := messageValue(m)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if turns[i], err = toTurn(v); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		vals[i] = v
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, stored, err := h.read(ctx)
	if err != nil {
		return err
	}
	if h.s != nil && !sameView(h.s, s) {
		h.s = nil
		return fmt.Errorf("%w: another writer changed session %s since this history read it; call Messages, then retry", session.ErrConflict, h.id)
	}
	keep := 0
	for keep < len(s.Turns) && keep < len(vals) {
		m, err := fromTurn(s.Turns[keep])
		if err != nil || !reflect.DeepEqual(m, vals[keep]) {
			break
		}
		keep++
	}
	if stored && keep < len(s.Turns) {
		h.s = nil
		if s, _, err = h.st.Rewind(ctx, h.id, keep, session.RewindOptions{Reason: "langchaingo: " + op}); err != nil {
			return err
		}
	}
	h.s = s
	return h.append(ctx, turns[keep:])
}

// turnOf returns the turn that stores message m.
func turnOf(m llms.ChatMessage) (session.Turn, error) {
	v, err := messageValue(m)
	if err != nil {
		return session.Turn{}, err
	}
	return toTurn(v)
}

// read loads the session from the store, or returns a new one with the
// History's id, principal and app when none is stored (stored false).
func (h *History) read(ctx context.Context) (*session.Session, bool, error) {
	s, err := h.st.Load(ctx, h.id)
	if errors.Is(err, session.ErrNotFound) {
		s = session.New(h.principal)
		s.ID, s.App = h.id, h.app
		if h.name != "" {
			name, err := json.Marshal(h.name)
			if err != nil {
				return nil, false, err
			}
			s.Initial = map[string]json.RawMessage{NameKey: name}
			if session.CheckTag(h.name) == nil {
				s.Tags = []string{h.name}
			}
		}
		return s, false, nil
	}
	return s, err == nil, err
}

// append appends turns to h.s and persists them; after a failure it
// forgets h.s, so that nothing the store refused stays in the History's
// view and the next call reads the store again.
func (h *History) append(ctx context.Context, turns []session.Turn) error {
	if len(turns) == 0 {
		return nil
	}
	for _, t := range turns {
		h.s.AppendTurn(t)
	}
	if err := h.st.Persist(ctx, h.s); err != nil {
		h.s = nil
		return err
	}
	return nil
}

// sameView reports whether a (the History's view) and b (the store's now)
// hold the same turns: the same ids, which a rewind changes as well.
func sameView(a, b *session.Session) bool {
	if a.From != b.From || len(a.Turns) != len(b.Turns) {
		return false
	}
	for i := range a.Turns {
		if a.Turns[i].ID != b.Turns[i].ID {
			return false
		}
	}
	return true
}
