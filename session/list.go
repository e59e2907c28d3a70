package session

import (
	"context"
	"fmt"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
)

// Info describes a stored session without its turns.
type Info struct {
	ID        string
	Principal string
	ParentID  string // "" for a root
	Branch    string
	ForkedAt  int       // 0 for a root
	OwnTurns  int       // turns stored in the session's own graph
	Turns     int       // length of the effective history: ForkedAt + OwnTurns
	Created   time.Time // when the session was first persisted
	Tags      []string  // its tags, sorted (Store.Tag); empty, not nil, when none
	Kind      Kind      // main, branch or worker (for a session stored without one: main if a root, branch if a fork)
	// State, ExpiresAt and CancelRequested are its lifecycle (state.go):
	// its state (StateActive when none is stored), when it expires (zero:
	// never) and whether an ancestor's end flagged it for cancellation.
	State           State
	ExpiresAt       time.Time
	CancelRequested bool
	// Cycle is set on a session on a trails:parentSession cycle: its own
	// ancestor, which Check reports and Delete with Cascade removes. List
	// sets it when the cycle is among the sessions it lists; Tree and
	// Forest on every session of a cycle they show.
	Cycle bool
}

// ListOption narrows a List.
type ListOption func(*listConfig)

type listConfig struct {
	principal string
	roots     bool
	tags      []string // ByTag (meta.go)
	pending   bool     // CancelPending (state.go)
}

// ByPrincipal keeps the sessions of principal p.
func ByPrincipal(p string) ListOption { return func(c *listConfig) { c.principal = p } }

// Roots keeps the root sessions (those with no parent).
func Roots() ListOption { return func(c *listConfig) { c.roots = true } }

// List returns the stored sessions, newest first, narrowed by opts.
//
// It returns ErrInvalid for a ByTag that no tag can match (empty, white
// space), a store error wrapping the kg error, or ErrCorrupt when stored
// metadata cannot be read.
func (st *Store) List(ctx context.Context, opts ...ListOption) ([]Info, error) {
	var cfg listConfig
	for _, o := range opts {
		o(&cfg)
	}
	if st.scope != "" {
		if cfg.principal != "" && cfg.principal != st.scope {
			return []Info{}, nil
		}
		cfg.principal = st.scope
	}
	var infos []Info
	var err error
	switch {
	case len(cfg.tags) > 0:
		infos, err = st.listByTag(ctx, cfg.tags, cfg.principal) // meta.go
	case cfg.principal != "":
		var q string
		if q, err = bind("list-by-principal", qListBy, kg.Params{"principal": kg.String(cfg.principal)}); err == nil {
			infos, err = st.infos(ctx, q)
		}
	case cfg.roots:
		infos, err = st.infos(ctx, qListRoots)
	default:
		infos, err = st.infos(ctx, qList)
	}
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	if cfg.roots {
		kept := infos[:0]
		for _, in := range infos {
			if in.ParentID == "" {
				kept = append(kept, in)
			}
		}
		infos = kept
	}
	if cfg.pending {
		infos = cancelPending(infos) // state.go
	}
	markCycles(infos)
	return infos, nil
}

// markCycles sets Cycle on the infos on a parent cycle among infos.
func markCycles(infos []Info) {
	at := make(map[string]int, len(infos))
	for i, in := range infos {
		at[in.ID] = i
	}
	const (
		unseen = iota
		walking
		done
	)
	state := make([]byte, len(infos))
	for i := range infos {
		// Walk up from i until a root, a session not listed, a session
		// an earlier walk settled, or one of this walk: a cycle.
		var walk []int
		for j := i; state[j] == unseen; {
			state[j] = walking
			walk = append(walk, j)
			p, ok := at[infos[j].ParentID]
			if !ok {
				break
			}
			if state[p] == walking {
				for k := len(walk) - 1; k >= 0; k-- {
					infos[walk[k]].Cycle = true
					if walk[k] == p {
						break
					}
				}
				break
			}
			j = p
		}
		for _, k := range walk {
			state[k] = done
		}
	}
}

// Branches returns the direct forks of session id, oldest first.
//
// It returns ErrInvalid for a bad id, ErrNotFound when id is not stored
// (forks of a missing session are orphans: see the prov queries), or a
// store error wrapping the kg error.
func (st *Store) Branches(ctx context.Context, id string) ([]Info, error) {
	if _, err := st.Info(ctx, id); err != nil {
		return nil, fmt.Errorf("branches: %w", err)
	}
	return st.children(ctx, id)
}

// children returns the direct forks of id, oldest first, whether or not id
// is stored.
func (st *Store) children(ctx context.Context, id string) ([]Info, error) {
	q, err := bind("branches", qBranches, kg.Params{"parent": sessionIRI(id)})
	if err != nil {
		return nil, err
	}
	infos, err := st.infos(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("branches of %s: %w", id, err)
	}
	return st.scoped(infos), nil
}

// Info returns the stored description of session id.
//
// It returns ErrInvalid for a bad id, ErrNotFound, or a store error
// wrapping the kg error.
func (st *Store) Info(ctx context.Context, id string) (Info, error) {
	if err := checkID(id); err != nil {
		return Info{}, fmt.Errorf("info %s: %w", id, err)
	}
	q, err := bind("info", qInfo, kg.Params{"s": sessionIRI(id)})
	if err != nil {
		return Info{}, err
	}
	infos, err := st.infos(ctx, q)
	if err != nil {
		return Info{}, fmt.Errorf("info %s: %w", id, err)
	}
	switch infos = st.scoped(infos); len(infos) {
	case 0:
		return Info{}, fmt.Errorf("info %s: %w", id, ErrNotFound)
	case 1:
		return infos[0], nil
	default:
		return Info{}, fmt.Errorf("info %s: %w: %d descriptions", id, ErrCorrupt, len(infos))
	}
}

// scoped keeps the infos visible to st.
func (st *Store) scoped(infos []Info) []Info {
	if st.scope == "" {
		return infos
	}
	kept := infos[:0]
	for _, in := range infos {
		if st.visible(in.Principal) {
			kept = append(kept, in)
		}
	}
	return kept
}

// infos runs a query with the columns of list.rq and reads its rows (as
// tab-separated values, which Fuseki writes faster than JSON).
func (st *Store) infos(ctx context.Context, q string) ([]Info, error) {
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	infos := make([]Info, 0, len(res.Solutions))
	var legacy []string          // sessions stored without trails:ownTurns
	agents := map[string][]int{} // infos whose agent their own graph does not describe, by agent
	seen := make(map[string]bool, len(res.Solutions))
	for _, row := range res.Solutions {
		l, err := readLink(row)
		if err != nil {
			return nil, err
		}
		if seen[l.iri] {
			continue // a session stored with two parents (say): trails-admin check reports it
		}
		seen[l.iri] = true
		in := Info{
			ID:        row.String("id"),
			Principal: l.principal,
			Branch:    branchOrMain(l.branch),
			ForkedAt:  l.at,
			OwnTurns:  l.own,
			Created:   l.created,
			Tags:      splitTags(row.String("tags")),
			Kind:      kindOf(l.kind, l.parent), // limits.go
		}
		l.life.setInfo(&in) // state.go
		if in.ID == "" {
			in.ID = idOf(l.iri)
		}
		if l.parent != "" {
			in.ParentID = idOf(l.parent)
		}
		if !l.hasOwn {
			legacy = append(legacy, l.iri)
			in.OwnTurns = -1
		}
		if _, ok := row["principal"]; !ok {
			if a := row.String("agent"); a != "" {
				agents[a] = append(agents[a], len(infos))
			}
		}
		infos = append(infos, in)
	}
	if len(agents) > 0 {
		if err := st.agentIDs(ctx, agents, infos); err != nil {
			return nil, err
		}
	}
	if len(legacy) > 0 {
		counts, err := st.countTurns(ctx, legacy)
		if err != nil {
			return nil, err
		}
		for i := range infos {
			if infos[i].OwnTurns < 0 {
				infos[i].OwnTurns = counts[sessionIRI(infos[i].ID).String()]
			}
		}
	}
	for i := range infos {
		infos[i].Turns = infos[i].ForkedAt + infos[i].OwnTurns
	}
	return infos, nil
}

// agentIDs fills in the principal of the infos at agents[a] from the
// description of agent a anywhere in the store, in one query: for sessions
// whose own graph does not describe their agent (written by hand, say).
func (st *Store) agentIDs(ctx context.Context, agents map[string][]int, infos []Info) error {
	rows := make([][]rdf.Term, 0, len(agents))
	for a := range agents {
		t, err := kg.IRI(a)
		if err != nil {
			continue // not an IRI: no description to find
		}
		rows = append(rows, []rdf.Term{t})
	}
	if len(rows) == 0 {
		return nil
	}
	q, err := kg.BindTables(qAgentIDs, nil, map[string]kg.Table{"agents": {Vars: []string{"agent"}, Rows: rows}})
	if err != nil {
		return err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return err
	}
	for _, row := range res.Solutions {
		for _, i := range agents[row.String("agent")] {
			if infos[i].Principal == "" {
				infos[i].Principal = row.String("principal")
			}
		}
	}
	return nil
}

// CountTurns counts the turns stored for each of the given session IRIs,
// by IRI, in one query, whatever their principal: it takes the client, as
// the operators' Check (package admin) does, not a Store. It returns
// ErrCorrupt for a count that is not an integer, or a store error wrapping
// the kg error.
func CountTurns(ctx context.Context, c *kg.Client, sessions []string) (map[string]int, error) {
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
	res, err := st.c.Query(ctx, q)
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
