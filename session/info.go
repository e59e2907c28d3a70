package session

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// The queries of Info, read once.
var (
	qInfo     = query("info.rq")
	qAgentIDs = query("agent-ids.rq")
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
	// State, ExpiresAt and CancelRequested are its lifecycle:
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

// Info returns the stored description of session id.
//
// It returns ErrInvalid for a bad id, ErrNotFound, or a store error
// wrapping the kg error.
func (st *Store) Info(ctx context.Context, id string) (_ Info, err error) {
	ctx, call := telemetry.Start(ctx, "session.Info", id)
	defer func() { call.End(err) }()
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
	return st.infosUnder(ctx, q, "")
}

// infosUnder is infos for a query whose sessions are all forks of the
// session of IRI parent, which its rows then need not repeat in a ?parent
// column (branches.rq: 10,000 forks would bring 10,000 copies of it).
func (st *Store) infosUnder(ctx context.Context, q, parent string) ([]Info, error) {
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.readInfos(ctx, res.Solutions, parent)
}

// infosWhole binds whole and full, template name, with p: whole is a
// query of the sessions that have every column of list.rq as required
// patterns (their rows) and of how many sessions full, the same query with
// OPTIONAL columns, would return (one row without ?s, whose ?all counts
// them). It runs whole and reads its rows; when fewer sessions came back
// than ?all counts (one lacks a column: written by hand, or by an older
// Trails), it runs full instead. parent is as for infosUnder.
func (st *Store) infosWhole(ctx context.Context, name, whole, full string, p kg.Params, parent string) ([]Info, error) {
	q, err := bind(name+"-whole", whole, p)
	if err != nil {
		return nil, err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	all := -1
	rows := make([]kg.Solution, 0, len(res.Solutions))
	for _, row := range res.Solutions {
		if _, ok := row["s"]; ok {
			rows = append(rows, row)
			continue
		}
		if all, err = row.Int("all"); err != nil || all < 0 {
			return nil, fmt.Errorf("%w: session count %q", kg.ErrProtocol, row.String("all"))
		}
	}
	if all < 0 {
		return nil, fmt.Errorf("%w: no session count among %d rows", kg.ErrProtocol, len(res.Solutions))
	}
	// Every row has its principal and turn count: reading them asks nothing.
	infos, err := st.readInfos(ctx, rows, parent)
	if err != nil || len(infos) == all {
		return infos, err
	}
	if q, err = bind(name, full, p); err != nil {
		return nil, err
	}
	return st.infosUnder(ctx, q, parent)
}

// readInfos reads the rows of a query with the columns of list.rq (see
// infosUnder for parent), and asks the store for what they lack: the
// principals of agents their sessions' graphs do not describe, the turn
// counts of sessions stored without one.
func (st *Store) readInfos(ctx context.Context, rows []kg.Solution, parent string) ([]Info, error) {
	infos := make([]Info, 0, len(rows))
	var legacy []string          // sessions stored without trails:ownTurns
	agents := map[string][]int{} // infos whose agent their own graph does not describe, by agent
	seen := make(map[string]bool, len(rows))
	for _, row := range rows {
		l, err := readLink(row)
		if err != nil {
			return nil, err
		}
		if l.parent == "" {
			l.parent = parent
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
			Kind:      kindOf(l.kind, l.parent),
		}
		l.life.setInfo(&in)
		if in.ID == "" {
			in.ID = ontology.SessionID(l.iri)
		}
		if l.parent != "" {
			in.ParentID = ontology.SessionID(l.parent)
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
	ids, err := st.agentPrincipals(ctx, slices.Collect(maps.Keys(agents)))
	if err != nil {
		return err
	}
	for a, is := range agents {
		if len(ids[a]) == 0 {
			continue
		}
		for _, i := range is {
			if infos[i].Principal == "" {
				infos[i].Principal = ids[a][0]
			}
		}
	}
	return nil
}

// agentPrincipals returns the identifiers (principals) of agents, by
// agent IRI, wherever the store describes them, in one query
// (agent-ids.rq); an agent the store does not describe, or that is not an
// IRI, has none.
func (st *Store) agentPrincipals(ctx context.Context, agents []string) (map[string][]string, error) {
	rows := make([][]rdf.Term, 0, len(agents))
	for _, a := range agents {
		t, err := kg.IRI(a)
		if err != nil {
			continue // not an IRI: no description to find
		}
		rows = append(rows, []rdf.Term{t})
	}
	if len(rows) == 0 {
		return nil, nil
	}
	q, err := kg.BindTables(qAgentIDs, nil, map[string]kg.Table{"agents": {Vars: []string{"agent"}, Rows: rows}})
	if err != nil {
		return nil, err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	ids := make(map[string][]string, len(rows))
	for _, row := range res.Solutions {
		a, p := row.String("agent"), row.String("principal")
		if !slices.Contains(ids[a], p) {
			ids[a] = append(ids[a], p)
		}
	}
	for _, ps := range ids {
		slices.Sort(ps)
	}
	return ids, nil
}

// splitTags reads the ?tags column of the list queries: the tags joined
// by spaces (a tag holds none), in any order. It returns them sorted, and
// an empty slice (not nil) when there are none.
func splitTags(s string) []string {
	tags := strings.Fields(s)
	slices.Sort(tags)
	return slices.Compact(tags)
}
