// Package openaiagents keeps an OpenAI Agents SDK conversation in Trails:
// Session is a memory.Session of github.com/nlpodyssey/openai-agents-go
// (v0.1.0, the Go port of the SDK) whose items are the turns of a Trails
// session, so that an agent run with RunConfig.Session set to one gets
// Trails' forks, PROV records and SPARQL audit queries by changing the
// session it is given.
//
//	c, _ := kg.New(kg.Config{Endpoint: "http://127.0.0.1:3030/trails"})
//	s := openaiagents.NewSession(session.NewStore(c), "support-chat-42", openaiagents.WithPrincipal("alice"))
//	r := agents.Runner{Config: agents.RunConfig{Session: s}}
//	items, err := s.GetItems(ctx, 0) // the same items from any process, from the store
//
// Each item (a responses.ResponseInputItemUnionParam of openai-go v2) is
// one turn. A message's role is the turn's role and its text the turn's
// content; an item the model produced (a function call, reasoning, a
// web search, ...) is an "assistant" turn, the output of a tool a "tool"
// turn. What auditors query goes into the turn's structured fields
// (session.Structure): a function call, or a custom tool call, is a tool
// call part (call id, name, arguments: byte for byte when they are valid
// JSON, else as a JSON string), its output a tool result part with the
// same call id, which Trails links to the call, so that the audit query
// tool-calls (package prov) pairs them; reasoning summaries are reasoning
// parts; the item's type is metadata (TypeKey). Every turn also keeps a
// raw copy (RawFormat): the item's JSON and the variant of the union that
// holds it, from which GetItems returns the item exactly as added, the
// same variant with the same JSON, whichever Session value or process
// reads it (deeply equal to it when its constant fields, such as Type,
// are set, as the SDK's own conversions set them: a zero constant comes
// back with its value; extra fields set with SetExtraFields come back as
// JSON values). Trails stores UTF-8 only: an item with a string that is not
// valid UTF-8 is refused (ErrInvalid).
//
// Nothing is deleted: PopItem rewinds the session by one turn and
// ClearSession rewinds it to its start (session.Store.Rewind), which
// moves the abandoned turns, untouched, into an archive fork and records
// the rewind in PROV; session.Store.Rewinds lists them, trails-admin show
// prints an archive. Fork makes a new Session that shares a prefix of
// the items with its parent in the store instead of copying it.
package openaiagents

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/nlpodyssey/openai-agents-go/memory"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/session"
)

// DefaultPrincipal is the principal of the sessions a Session creates
// when WithPrincipal does not name one.
const DefaultPrincipal = "openai-agents"

// The reasons the rewinds of PopItem and ClearSession record in PROV.
const (
	ReasonPop   = "openai-agents: pop item"
	ReasonClear = "openai-agents: clear session"
)

// names is the namespace of the name-based (version 5) UUIDs that
// NewSession gives sessions named by a string that is not a UUID.
var names = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://w3id.org/trails/integrations/openaiagents"))

// Session is an openai-agents-go memory.Session kept in a Trails session.
// It reads the store on GetItems, and remembers the session as it last
// saw it there, so that a write made from a stale view (another Session
// value or process wrote to the session since) fails with
// session.ErrConflict instead of interleaving; after any failed write it
// reads the store again on its next call. A Session is safe for
// concurrent use: its calls run one at a time.
type Session struct {
	st        *session.Store
	id        string
	principal string
	app       string

	mu sync.Mutex
	s  *session.Session // the session as last read or written (maybe a tail); nil: read it first
}

var _ memory.Session = (*Session)(nil)

// Option configures a Session.
type Option func(*Session)

// WithPrincipal sets the principal of the Trails session the Session
// creates (default DefaultPrincipal), and so the session a name stands
// for (see NewSession). With a Store scoped to a principal
// (session.ForPrincipal) give that principal. A session stored already
// keeps its own.
func WithPrincipal(p string) Option { return func(s *Session) { s.principal = p } }

// WithApp sets the app of the Trails session the Session creates
// (session.Session.App), and so the session a name stands for (see
// NewSession). A session stored already keeps its own.
func WithApp(app string) Option { return func(s *Session) { s.app = app } }

// NewSession returns the session id of st; it does no I/O: the session is
// read at the first call and created, when not stored, by the first items
// added.
//
// id is what the SDK's other sessions call a session id: a Trails session
// id (a UUID in canonical form) is used as it is; "" gives a new session
// with a fresh id; any other string names a session, whose id is the
// version 5 UUID of the app, principal and name (the same string with the
// same options gives the same session in every process; SessionID tells
// which).
func NewSession(st *session.Store, id string, opts ...Option) *Session {
	s := &Session{st: st, principal: DefaultPrincipal}
	for _, o := range opts {
		o(s)
	}
	switch {
	case id == "":
		s.id = session.New(s.principal).ID
	case session.CheckID(id) == nil:
		s.id = id
	default:
		s.id = uuid.NewSHA1(names, []byte(s.app+"\x00"+s.principal+"\x00"+id)).String()
	}
	return s
}

// SessionID returns the id of the Trails session that holds the items
// (what trails-admin show, tree and audit take). It does no I/O.
func (s *Session) SessionID(context.Context) string { return s.id }

// GetItems returns the items of the session, oldest first, as the store
// holds them now: all of them when limit <= 0, else the last limit (a
// tail load, whose cost is that of the tail). As the SDK's SQLite session
// does, a window that starts with the output of a call whose call it
// leaves out starts one item later (the model refuses an output without
// its call), so it may hold limit-1 items. A session not stored yet has
// none. What it read becomes the Session's view of the session.
//
// It returns an error wrapping session.ErrCorrupt for a raw copy it
// cannot read, the errors of session.Store.Load and LoadTail
// (session.ErrParentMissing, ...), or a store error.
func (s *Session) GetItems(ctx context.Context, limit int) (_ []memory.TResponseInputItem, err error) {
	ctx, call := telemetry.Start(ctx, "openaiagents.Session.GetItems", s.id)
	defer func() { call.End(err) }()
	s.mu.Lock()
	defer s.mu.Unlock()
	ts, _, err := s.read(ctx, max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("get items: %w", err)
	}
	items := make([]memory.TResponseInputItem, 0, len(ts.Turns))
	for _, t := range ts.Turns {
		item, err := itemOf(t)
		if err != nil {
			return nil, fmt.Errorf("get items: %w", err)
		}
		items = append(items, item)
	}
	if limit > 0 && len(items) > 0 && isCallOutput(items[0]) {
		items = items[1:]
	}
	s.s = ts
	return items, nil
}

// AddItems appends items to the session, one turn each, in one atomic
// update: all of them are stored or none (see the package documentation
// for how). No items: nothing is done.
//
// It returns an *ItemError wrapping ErrInvalid for an item Trails cannot
// store as it is (then nothing is sent), session.ErrConflict when another
// writer changed the session since this Session last read it (call
// GetItems to see it, then add again), session.ErrState when the session
// is in a terminal state, the other errors of session.Store.Persist, or a
// store error. Nothing is stored when it fails, except that a store error
// may hide a write that landed: GetItems tells.
func (s *Session) AddItems(ctx context.Context, items []memory.TResponseInputItem) (err error) {
	ctx, call := telemetry.Start(ctx, "openaiagents.Session.AddItems", s.id)
	defer func() { call.End(err) }()
	if len(items) == 0 {
		return nil
	}
	turns := make([]session.Turn, len(items))
	for i, item := range items {
		t, typ, err := turnOf(item)
		if err != nil {
			return fmt.Errorf("add items: %w", &ItemError{Index: i, Type: typ, Err: err})
		}
		turns[i] = t
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.s == nil {
		ts, _, err := s.read(ctx, 1)
		if err != nil {
			return fmt.Errorf("add items: %w", err)
		}
		s.s = ts
	}
	for _, t := range turns {
		s.s.AppendTurn(t)
	}
	if err := s.st.Persist(ctx, s.s); err != nil {
		s.s = nil
		return fmt.Errorf("add items: %w", err)
	}
	return nil
}

// PopItem removes the last item of the session and returns it, nil when
// the session has none, without deleting it: it rewinds the session by
// one turn (session.Store.Rewind, reason ReasonPop), which moves the
// turn, untouched, into an archive fork and records the rewind in PROV.
//
// It returns ErrInherited when the last item is one a fork inherits from
// its parent, session.ErrConflict when another writer changed the session
// since this Session last read it, the errors of session.Store.Rewind
// (session.ErrState, ...), or a store error. Between its read and the
// rewind another process may append: then the rewind moves that item too
// (into the archive, where nothing is lost), and PopItem returns
// session.ErrConflict saying so.
func (s *Session) PopItem(ctx context.Context) (_ *memory.TResponseInputItem, err error) {
	ctx, call := telemetry.Start(ctx, "openaiagents.Session.PopItem", s.id)
	defer func() { call.End(err) }()
	s.mu.Lock()
	defer s.mu.Unlock()
	ts, stored, err := s.current(ctx)
	if err != nil {
		return nil, fmt.Errorf("pop item: %w", err)
	}
	n := length(ts)
	switch {
	case !stored || n == 0:
		return nil, nil
	case n <= ts.ForkedAt:
		return nil, fmt.Errorf("pop item: %w: session %s holds none of its own (it is a fork of %s at %d)", ErrInherited, s.id, ts.ParentID, ts.ForkedAt)
	}
	item, err := itemOf(ts.Turns[len(ts.Turns)-1])
	if err != nil {
		return nil, fmt.Errorf("pop item: %w", err)
	}
	if err := s.rewind(ctx, n-1, ReasonPop); err != nil {
		return nil, fmt.Errorf("pop item: %w", err)
	}
	return &item, nil
}

// ClearSession empties the session without deleting anything: it rewinds
// the session to its start (session.Store.Rewind, reason ReasonClear),
// which moves every turn into an archive fork and records the rewind in
// PROV. An empty or unstored session is left as it is.
//
// It returns ErrInherited for a fork that inherits items from its parent
// (nothing is changed), session.ErrConflict when another writer changed
// the session since this Session last read it, the errors of
// session.Store.Rewind (session.ErrState, ...), or a store error.
func (s *Session) ClearSession(ctx context.Context) (err error) {
	ctx, call := telemetry.Start(ctx, "openaiagents.Session.ClearSession", s.id)
	defer func() { call.End(err) }()
	s.mu.Lock()
	defer s.mu.Unlock()
	ts, stored, err := s.current(ctx)
	if err != nil {
		return fmt.Errorf("clear session: %w", err)
	}
	n := length(ts)
	switch {
	case !stored || n == 0:
		return nil
	case ts.ForkedAt > 0:
		return fmt.Errorf("clear session: %w: session %s inherits %d items from %s", ErrInherited, s.id, ts.ForkedAt, ts.ParentID)
	}
	if err := s.rewind(ctx, 0, ReasonClear); err != nil {
		return fmt.Errorf("clear session: %w", err)
	}
	return nil
}

// rewind rewinds the session to index to (session.Store.Rewind with
// reason) and takes the rewound session as the view. It reports
// session.ErrConflict when the rewind moved more turns than the
// Session's view had beyond to (another writer appended between the read
// and the rewind).
func (s *Session) rewind(ctx context.Context, to int, reason string) error {
	want := length(s.s) - to
	s.s = nil
	ts, res, err := s.st.Rewind(ctx, s.id, to, session.RewindOptions{Reason: reason})
	if err != nil {
		return err
	}
	s.s = ts
	if res.Moved != want {
		return fmt.Errorf("%w: another writer appended while session %s was rewound: archive %s holds %d turns from index %d, not %d",
			session.ErrConflict, s.id, res.Archive, res.Moved, to, want)
	}
	return nil
}

// current reads the end of the session (its last turn) and fails with
// session.ErrConflict when it is not the Session's view of it (another
// writer changed it since); the read becomes the view (s.s), but for a
// conflict, after which the next call reads again.
func (s *Session) current(ctx context.Context) (*session.Session, bool, error) {
	ts, stored, err := s.read(ctx, 1)
	if err != nil {
		return nil, false, err
	}
	if s.s != nil && !sameView(s.s, ts) {
		s.s = nil
		return nil, false, fmt.Errorf("%w: another writer changed session %s since this Session read it; call GetItems, then retry", session.ErrConflict, s.id)
	}
	s.s = ts
	return ts, stored, nil
}

// read loads the session from the store, its last last turns when last
// is above 0, or returns a new one with the Session's id, principal and
// app when none is stored (stored false).
func (s *Session) read(ctx context.Context, last int) (*session.Session, bool, error) {
	var ts *session.Session
	var err error
	if last > 0 {
		ts, err = s.st.LoadTail(ctx, s.id, session.Tail{Last: last})
	} else {
		ts, err = s.st.Load(ctx, s.id)
	}
	if errors.Is(err, session.ErrNotFound) {
		ts = session.New(s.principal)
		ts.ID, ts.App = s.id, s.app
		return ts, false, nil
	}
	return ts, err == nil, err
}

// length returns the number of turns of the history ts holds or ends.
func length(ts *session.Session) int { return ts.From + len(ts.Turns) }

// sameView reports whether a (the Session's view) and b (the store's now)
// end alike: the same length and the same last turn, whose ID a rewind
// changes as well.
func sameView(a, b *session.Session) bool {
	if length(a) != length(b) {
		return false
	}
	if len(a.Turns) == 0 || len(b.Turns) == 0 {
		return len(a.Turns) == len(b.Turns) || length(a) == 0
	}
	return a.Turns[len(a.Turns)-1].ID == b.Turns[len(b.Turns)-1].ID
}
