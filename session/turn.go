package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// MaxTurnBytes is the largest content of one turn Persist accepts (a role
// may hold up to 1 KiB); a larger turn is refused with ErrInvalid before
// anything is sent. Jena's SPARQL parser takes time that grows faster than
// the length of a string literal (about 3 s for 1 MiB, minutes for 10 MiB,
// blocking the store's one writer meanwhile), so a content over 64 KiB
// does not go into the SPARQL Update: Persist sends it ahead through the
// Graph Store Protocol (whose N-Triples parser takes linear time) into a
// staging graph, and the update, still one conditional compare and swap,
// copies it into the session's graph and drops the staging graph. That
// needs a Querier with the Graph Store method of *kg.Client (PutGraph);
// through one without it a turn may hold at most 1 MiB.
// Store larger artifacts elsewhere and put their IRI in the turn.
const MaxTurnBytes = 16 << 20

// maxRoleBytes is the longest role Persist accepts.
const maxRoleBytes = 1024

// Turn is one turn of a conversation.
type Turn struct {
	Index   int    // position in the effective history, from 0
	Role    string // "user", "assistant", "system", "tool", ...
	Content string
	Branch  string    // label of the session that wrote it: "main" or "fork-xxxxxxxx"
	Created time.Time // UTC, millisecond precision (what the store keeps)
	// ID is the turn's IRI in the store, TurnID(owner, Index) where owner is
	// the session that wrote it (an ancestor, for an inherited turn; the
	// session itself after a Detach), followed by "/r" and k for a turn
	// written after the owner's k-th Rewind (ontology.TurnIRIGen). A turn a
	// Rewind moved to its archive keeps its ID. Set by Append, Persist, Load
	// and Replay; ForkAtTurn takes it.
	ID string

	// Structure holds the turn's structured fields (part.go): what an
	// agent framework's event holds besides its text. nil for a plain
	// turn (what Append makes); a pointer, so that Turn stays comparable.
	Structure *Structure
}

// TurnID returns the ID of the turn at index i written by session
// sessionID: the turn's IRI in the store. A turn written after the
// session's k-th Rewind has that IRI followed by "/r" and k
// (ontology.TurnIRIGen).
func TurnID(sessionID string, i int) string {
	return ontology.TurnIRI(ontology.SessionIRI(sessionID), i)
}

// turnID returns the ID turn i of s has, or will have once stored: the ID
// it was loaded with when the store held it already (the value's fresh
// first turns), else the IRI of a turn written in the session's current
// generation (ontology.TurnIRIGen), which for a session never rewound is
// TurnID(s.ID, i).
func (s *Session) turnID(i int) string {
	if k := i - s.From; k >= 0 && k < s.fresh && k < len(s.Turns) && s.Turns[k].ID != "" {
		return s.Turns[k].ID
	}
	return ontology.TurnIRIGen(ontology.SessionIRI(s.ID), i, s.gen)
}

// ownTurnIRI returns the IRI at which session g writes turn t: t.ID when
// it is an IRI of g's for t's index (TurnIRIGen of some generation), else
// TurnIRI(g, t.Index), so that a turn copied from another session (Detach)
// never takes its original's IRI.
func ownTurnIRI(g string, t Turn) string {
	ti := ontology.TurnIRI(g, t.Index)
	if rest, ok := strings.CutPrefix(t.ID, ti+ontology.RewindSuffix); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
		return t.ID
	}
	return ti
}

// checkTurn checks what Persist demands of the fields of a turn it
// writes: a non-empty UTF-8 role of at most 1 KiB, UTF-8 content of at
// most MaxTurnBytes, a branch label, and a creation time in years 0000
// to 9999 (kg.CheckTime: what every reader of the store reads back).
func checkTurn(t Turn) error {
	i := t.Index
	if t.Role == "" || !utf8.ValidString(t.Role) {
		return fmt.Errorf("%w: turn %d: role %s must be non-empty UTF-8", ErrInvalid, i, termsafe.Quote(t.Role))
	}
	if err := kg.CheckTime(t.Created); err != nil {
		return fmt.Errorf("%w: turn %d: Created: %w", ErrInvalid, i, err)
	}
	if !utf8.ValidString(t.Content) {
		return fmt.Errorf("%w: turn %d: content is not valid UTF-8", ErrInvalid, i)
	}
	if n := len(t.Content); n > MaxTurnBytes {
		return fmt.Errorf("%w: turn %d: %d bytes of content, more than the %d a turn may hold (session.MaxTurnBytes)", ErrInvalid, i, n, MaxTurnBytes)
	}
	if len(t.Role) > maxRoleBytes {
		return fmt.Errorf("%w: turn %d: a role of %d bytes, more than %d", ErrInvalid, i, len(t.Role), maxRoleBytes)
	}
	if !branchRE.MatchString(t.Branch) {
		return fmt.Errorf("%w: turn %d: branch %s is not a branch label", ErrInvalid, i, termsafe.Quote(t.Branch))
	}
	return checkStructure(t)
}

// checkTurnBranch checks that s writes turn t under its own label: only a
// detached root holds turns of other branches (the copies of its former
// prefix).
func (s *Session) checkTurnBranch(t Turn) error {
	if (s.ParentID != "" || s.Branch == MainBranch) && t.Branch != s.Branch {
		return fmt.Errorf("%w: turn %d: branch %s, want the session's %s", ErrInvalid, t.Index, termsafe.Quote(t.Branch), termsafe.Quote(s.Branch))
	}
	return nil
}

// ownBranch checks that turns about to be written carry the session's
// branch: a session writes only under its own label.
func ownBranch(s *Session, turns []Turn) error {
	for _, t := range turns {
		if t.Branch != s.Branch {
			return fmt.Errorf("%w: turn %d: branch %q, want the session's %q", ErrInvalid, t.Index, t.Branch, s.Branch)
		}
	}
	return nil
}

// sameTurn reports whether a and b are the same turn.
func sameTurn(a, b Turn) bool {
	return a.Index == b.Index && a.Role == b.Role && a.Content == b.Content &&
		a.Branch == b.Branch && a.Created.Equal(b.Created) && a.ID == b.ID && sameStructure(a, b)
}

// sameGen checks that the stored rewind count of s (?rewinds of
// state.rq) is the one s was loaded with: a value loaded before a rewind
// must not append (it would bring the abandoned turns back).
func sameGen(s *Session, row kg.Solution) error {
	gen := 0
	if _, ok := row["rewinds"]; ok {
		var err error
		if gen, err = row.Int("rewinds"); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	if gen != s.gen {
		return fmt.Errorf("%w: the session was rewound (%d rewinds stored, the caller's value knows %d); load it again", ErrConflict, gen, s.gen)
	}
	return nil
}

// addTurn adds turn t with its chain digest (chainDigest) to the graph of
// session g in d, at the IRI its ID gives when that is one of g's (a turn
// written after a rewind), else at TurnIRI(g, t.Index). A long content
// goes through sg (nil: into d as well).
func addTurn(d *kg.Data, sg *staging, g rdf.IRI, t Turn, digest string) rdf.IRI {
	ti := kg.MustIRI(ownTurnIRI(g.String(), t))
	d.Add(g, ti, iri(ontology.RDFType), iri(ontology.Turn))
	d.Add(g, ti, iri(ontology.RDFType), iri(ontology.ProvEntity))
	d.Add(g, ti, iri(ontology.TurnSession), g)
	d.Add(g, ti, iri(ontology.Index), kg.Int(t.Index))
	d.Add(g, ti, iri(ontology.Role), kg.String(t.Role))
	sg.content(d, g, ti, t)
	d.Add(g, ti, iri(ontology.Branch), kg.String(t.Branch))
	d.Add(g, ti, iri(ontology.Created), kg.DateTime(t.Created))
	d.Add(g, ti, iri(ontology.Digest), kg.String(digest))
	addStructure(d, sg, g, ti, t)
	return ti
}

// turnRows gathers turn rows (?i ?role ?content, optional ?branch
// ?created) into turns, one row at a time, so that a large answer is never
// held twice; branchOf names the branch of a turn stored without one.
type turnRows struct {
	turns    []Turn
	branchOf func(i int) string
}

// start drops what an earlier attempt of the request gathered.
func (r *turnRows) start() {
	clear(r.turns)
	r.turns = r.turns[:0]
}

// cutRetries is how many times a SELECT whose answer was cut off after
// its first rows is asked again (kg retries a request itself only until
// its first row arrives).
const cutRetries = 2

// read runs the turn query q on c and gathers its rows as they arrive, so
// that a long history is never held twice.
func (r *turnRows) read(ctx context.Context, c Querier, q string) error {
	return readRows(ctx, c, q, r.start, r.add)
}

// readRows runs SELECT q on c and hands each solution to row as it
// arrives, after start. A SELECT is safe to repeat: an answer cut off
// mid-way (kg.ErrUnavailable) is asked for again, start called again
// first, up to cutRetries times.
func readRows(ctx context.Context, c Querier, q string, start func(), row func(kg.Solution) error) error {
	for attempt := 0; ; attempt++ {
		start()
		err := readOnce(ctx, c, q, row)
		if err == nil || attempt == cutRetries || ctx.Err() != nil || !errors.Is(err, kg.ErrUnavailable) {
			return err
		}
	}
}

// readOnce is one attempt of readRows.
func readOnce(ctx context.Context, c Querier, q string, row func(kg.Solution) error) error {
	rows, err := c.Rows(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Solution()); err != nil {
			return err
		}
	}
	return rows.Err()
}

// add reads one row.
func (r *turnRows) add(row kg.Solution) error {
	if err := staleRow(row); err != nil {
		return err
	}
	i, err := row.Int("i")
	if err != nil {
		return fmt.Errorf("%w: turn index: %v", ErrCorrupt, err)
	}
	role, okRole := row.Literal("role")
	content, okContent := row.Literal("content")
	if !okRole || !okContent {
		return fmt.Errorf("%w: turn %d: role and content must be literals", ErrCorrupt, i)
	}
	t := Turn{Index: i, Role: role, Content: content, Branch: row.String("branch"), ID: row.String("t")} // ?t: turns-ids.rq
	if t.Branch == "" {
		t.Branch = r.branchOf(i)
	}
	if _, ok := row["created"]; ok {
		if t.Created, err = row.Time("created"); err != nil {
			return fmt.Errorf("%w: turn %d: %v", ErrCorrupt, i, err)
		}
	}
	r.turns = append(r.turns, t)
	return nil
}

// staleRow returns ErrCorrupt for a row of a tail query saying that a
// session was rewound since the chain query read it (?stale, its IRI):
// the turns would pair with a chain of before, so the load reads both
// again (loadWindow).
func staleRow(row kg.Solution) error {
	if s, ok := row["stale"]; ok {
		return fmt.Errorf("%w: %s was rewound since its chain was read", ErrCorrupt, s)
	}
	return nil
}

// done returns the turns sorted by index; two turns at one index are
// ErrCorrupt.
func (r *turnRows) done() ([]Turn, error) {
	turns := r.turns
	slices.SortFunc(turns, func(a, b Turn) int { return a.Index - b.Index })
	for k := 1; k < len(turns); k++ {
		if turns[k].Index == turns[k-1].Index {
			return nil, fmt.Errorf("%w: two turns at index %d", ErrCorrupt, turns[k].Index)
		}
	}
	return turns, nil
}

// readTurns reads the turn rows of res (see turnRows), sorted by index.
func readTurns(res *kg.Results, branchOf func(i int) string) ([]Turn, error) {
	r := turnRows{turns: make([]Turn, 0, len(res.Solutions)), branchOf: branchOf}
	for _, row := range res.Solutions {
		if err := r.add(row); err != nil {
			return nil, err
		}
	}
	return r.done()
}

// The query that counts stored turns, read once.
var (
	qCountTurns = query("count-turns.rq")
)

// CountTurns counts the turns stored for each of the given session IRIs,
// by IRI, in one query, whatever their principal: it takes the client, as
// the operators' Check (package admin) does, not a Store. It returns
// ErrCorrupt for a count that is not an integer, or a store error wrapping
// the kg error.
func CountTurns(ctx context.Context, c Querier, sessions []string) (_ map[string]int, err error) {
	ctx, call := telemetry.Start(ctx, "session.CountTurns", "")
	defer func() { call.End(err) }()
	return NewStore(c).countTurns(ctx, sessions)
}

// countTurns counts the turns stored for each session IRI given.
func (st *Store) countTurns(ctx context.Context, sessions []string) (map[string]int, error) {
	rows := make([][]rdf.Term, len(sessions))
	for i, s := range sessions {
		rows[i] = []rdf.Term{kg.MustIRI(s)}
	}
	q, err := kg.BindTables(qCountTurns, nil, map[string]kg.Table{"sessions": {Vars: []string{"s"}, Rows: rows}})
	if err != nil {
		return nil, err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int, len(sessions))
	for _, row := range res.Solutions {
		n, err := row.Int("n")
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		counts[row.String("s")] = n
	}
	return counts, nil
}
