package adk

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/knakk/rdf"
	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk/adkcore"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	trails "github.com/trails-kg/trails/session"
)

// How memory is kept. ADK's memory is the sessions added to it, searched
// across one user's sessions of one app. A session in Trails needs no
// copy for that: AddSessionToMemory tags it (tagMemory), storing it first
// when it is not stored (a session of another session service), and
// SearchMemory runs one SPARQL query over the turns of the user's tagged
// sessions (queries/memory.rq). So memory follows the store: the events
// appended to a session after it was added are found too, a fork added to
// memory brings the history it shares with its parent, and a deleted
// session leaves memory with its graph.

// tagMemory marks the sessions added to memory.
const tagMemory = "adk.memory"

// Memory search limits.
const (
	maxWords    = 32  // the most words of a query searched for
	maxWordLen  = 64  // the longest word searched for, in bytes
	defaultHits = 100 // SearchMemory's default number of entries
)

//go:embed queries/memory.rq
var qMemory string

// MemoryService is an ADK memory.Service over a Trails store: a session
// added to memory stays where the session service stores it, and
// SearchMemory finds the events of one user's sessions of one app by
// their words, with one SPARQL query. It holds no state besides its
// options and is safe for concurrent use.
type MemoryService struct {
	c         trails.Querier
	sessions  *SessionService
	limit     int
	storeOpts []trails.StoreOption
}

var _ memory.Service = (*MemoryService)(nil)

// MemoryOption configures a MemoryService.
type MemoryOption func(*MemoryService)

// WithSearchLimit sets the most entries SearchMemory returns (100 unless
// set; n <= 0 for no limit).
func WithSearchLimit(n int) MemoryOption {
	return func(m *MemoryService) { m.limit = n }
}

// WithMemoryStoreOptions passes opts to session.NewStore, the store
// through which AddSessionToMemory stores a session of another session
// service: session.WithSigning makes it sign the heads it writes (a
// session created, events appended), so that they verify
// (docs/verify.md). Marking a session as in memory (a tag) changes no
// head and is signed by no statement.
func WithMemoryStoreOptions(opts ...trails.StoreOption) MemoryOption {
	return func(m *MemoryService) { m.storeOpts = append(m.storeOpts, opts...) }
}

// NewMemoryService returns a MemoryService over the dataset c reaches
// (a *kg.Client), the one its SessionService stores in.
func NewMemoryService(c trails.Querier, opts ...MemoryOption) *MemoryService {
	m := &MemoryService{c: c, limit: defaultHits}
	for _, o := range opts {
		o(m)
	}
	m.sessions = NewSessionService(trails.NewStore(c, m.storeOpts...))
	return m
}

// AddSessionToMemory adds session s to the memory of its user in its app.
// A session value this package returned (a *Session) is stored already:
// it is only marked (one request). Any other value (of another ADK session
// service) is stored as SessionService.AppendEvent would have stored its
// events (partial ones left out, temp: keys dropped), under the same app
// name, user id and session id, then marked; its state is not read, the
// state deltas of its events are stored with them. Adding it again after
// more events stores the new ones only: the stored events must be the
// first events of the value. Adding a session twice adds it once.
//
// It returns ErrInvalid for a nil session, an empty app name, user id or
// session id, or a user id or an event Trails cannot store (nothing is
// stored),
// ErrDiverged when the value's events are not the stored ones (nothing is
// stored), ErrNotFound when a *Session was deleted, or a store error.
func (m *MemoryService) AddSessionToMemory(ctx context.Context, s session.Session) (err error) {
	ctx, call := telemetry.Start(ctx, "adk.MemoryService.AddSessionToMemory", "")
	defer func() { call.End(err) }()
	if s != nil {
		call.SetSession(s.ID())
	}
	if s == nil {
		return fmt.Errorf("add session to memory: %w: nil session", ErrInvalid)
	}
	app, user, id := s.AppName(), s.UserID(), s.ID()
	if app == "" || user == "" || id == "" {
		return fmt.Errorf("add session to memory: %w: app name, user id and session id are required, got %q, %q and %q", ErrInvalid, app, user, id)
	}
	if own, ok := s.(*Session); ok {
		if err := m.sessions.core.St.Tag(ctx, own.TrailsID(), tagMemory); err != nil {
			if errors.Is(err, trails.ErrNotFound) {
				err = fmt.Errorf("%w: %w", ErrNotFound, err)
			}
			return fmt.Errorf("add session %s to memory: %w", id, err)
		}
		return nil
	}
	var turns []trails.Turn
	for ev := range s.Events().All() {
		if ev == nil || ev.Partial {
			continue
		}
		t, err := m.turn(ev)
		if err != nil {
			return fmt.Errorf("add session %s to memory: %w", id, err)
		}
		turns = append(turns, t)
	}
	if _, err := adkcore.IDTag(id); err != nil {
		return fmt.Errorf("add session %s to memory: %w", id, err)
	}
	// A race with another writer (a create or an append of the same
	// session) is retried from a fresh load; three tries are plenty for
	// the writers of one session.
	for range 3 {
		if err = m.store(ctx, app, user, id, turns); !errors.Is(err, trails.ErrConflict) && !errors.Is(err, ErrExists) {
			break
		}
	}
	if errors.Is(err, trails.ErrInvalid) && !errors.Is(err, ErrInvalid) {
		// A user id Trails cannot take as a principal, an event too big
		// for a turn: refused before anything was sent.
		err = fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return fmt.Errorf("add session %s to memory: %w", id, err)
	}
	return nil
}

// store stores session id of user in app with turns as its history, marked
// as in memory: it creates it, or appends to the stored session the turns
// it lacks.
func (m *MemoryService) store(ctx context.Context, app, user, id string, turns []trails.Turn) error {
	got, err := m.sessions.load(ctx, app, user, id, trails.Tail{})
	if errors.Is(err, ErrNotFound) {
		_, err = m.sessions.core.CreateTurns(ctx, app, user, id, nil, turns, tagMemory)
		return err
	}
	if err != nil {
		return err
	}
	ts := got.v.Trails()
	stored := ts.Turns
	for i := range min(len(stored), len(turns)) {
		if !sameEvent(stored[i], turns[i]) {
			return fmt.Errorf("%w: event %d", ErrDiverged, i)
		}
	}
	if len(turns) > len(stored) {
		for _, t := range turns[len(stored):] {
			ts.AppendTurn(t)
		}
		if err := m.sessions.core.St.Persist(ctx, ts); err != nil {
			return err
		}
	}
	return m.sessions.core.St.Tag(ctx, ts.ID, tagMemory)
}

// sameEvent reports whether stored turn a and turn b, made of an event,
// hold the same event: the same raw copy, or the same non-empty event id.
func sameEvent(a, b trails.Turn) bool {
	ra, rb := a.Structure, b.Structure
	if ra == nil || ra.Raw == nil || ra.Raw.Format != RawFormat || rb == nil || rb.Raw == nil {
		return false
	}
	if bytes.Equal(ra.Raw.Data, rb.Raw.Data) {
		return true
	}
	ida, idb := rawEventID(ra.Raw.Data), rawEventID(rb.Raw.Data)
	return ida != "" && ida == idb
}

// rawEventID returns the id of the event whose raw copy is raw.
func rawEventID(raw []byte) string {
	ev, err := codec.Decode(raw)
	if err != nil {
		return ""
	}
	return ev.ID
}

// turn returns the turn that stores ev, as AppendEvent stores it (without
// its temp: keys).
func (m *MemoryService) turn(ev *session.Event) (trails.Turn, error) {
	if kept, cut := adkcore.WithoutTemp(ev.Actions.StateDelta); cut {
		ev = codec.WithDelta(ev, kept)
	}
	return m.sessions.core.Turn(ev)
}

// SearchMemory returns the events of req.UserID's sessions of req.AppName
// that were added to memory and whose text holds a word of req.Query.
// Words are runs of letters and digits, matched whole and whatever their
// case (the first 32 distinct words of the query of at most 64 bytes
// each); the text
// of an event is that of its text parts, reasoning left out. Ranking: the
// events holding the most distinct words of the query come first, the
// newest first among those; at most the search limit (WithSearchLimit)
// are returned. No other user's or app's event is ever returned. Each
// entry is the event's id, content, author, timestamp and custom metadata,
// as ADK's in-memory service gives them. A query without words finds
// nothing.
//
// It returns ErrInvalid for a nil request or an empty app name or user
// id, or a store error.
func (m *MemoryService) SearchMemory(ctx context.Context, req *memory.SearchRequest) (_ *memory.SearchResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adk.MemoryService.SearchMemory", "")
	defer func() { call.End(err) }()
	if req == nil || req.AppName == "" || req.UserID == "" {
		return nil, fmt.Errorf("search memory: %w: app name and user id are required", ErrInvalid)
	}
	res := &memory.SearchResponse{}
	words := queryWords(req.Query)
	if len(words) == 0 {
		return res, nil
	}
	agent, err := kg.IRI(ontology.AgentIRI(req.UserID))
	if err != nil {
		return nil, fmt.Errorf("search memory: %w: user id %q: %v", ErrInvalid, req.UserID, err)
	}
	rows := make([][]rdf.Term, len(words))
	for i, w := range words {
		rows[i] = []rdf.Term{kg.String(w)}
	}
	q, err := kg.BindTables(qMemory, kg.Params{
		"agent":  agent,
		"app":    kg.String(adkcore.AppTag(req.AppName)),
		"memory": kg.String(tagMemory),
	}, map[string]kg.Table{"words": {Vars: []string{"w"}, Rows: rows}})
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	found, err := m.c.Rows(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	defer found.Close()
	var turns []trails.Turn
	for (m.limit <= 0 || len(turns) < m.limit) && found.Next() {
		row := found.Solution()
		created, err := row.Time("created")
		if err != nil {
			return nil, fmt.Errorf("search memory: %w: %w", trails.ErrCorrupt, err)
		}
		turns = append(turns, trails.Turn{ID: row.String("turn"), Role: row.String("role"), Content: row.String("content"), Created: created})
	}
	if err := found.Err(); err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	found.Close() // the rows past the limit are not read
	if err := trails.ReadStructures(ctx, m.c, turns); err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	for _, t := range turns {
		ev, err := m.sessions.core.Event(t)
		if err != nil {
			return nil, fmt.Errorf("search memory: %w: %w", trails.ErrCorrupt, err)
		}
		res.Memories = append(res.Memories, memory.Entry{ID: ev.ID, Content: ev.Content, Author: ev.Author,
			Timestamp: ev.Timestamp, CustomMetadata: ev.CustomMetadata})
	}
	return res, nil
}

// queryWords returns the distinct words of query, lowercase: its runs of
// letters and digits, the first maxWords of them, leaving out those over
// maxWordLen bytes (no word of a text is that long; a longer one would
// only make the query longer).
func queryWords(query string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	}) {
		if len(w) <= maxWordLen && !slices.Contains(out, w) {
			out = append(out, w)
		}
		if len(out) == maxWords {
			break
		}
	}
	return out
}
