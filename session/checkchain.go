package session

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
)

// The queries of the hash-chain check.
var (
	qCheckChainSessions = query("check-chain-sessions.rq")
	qCheckChainTurns    = query("check-chain-turns.rq")
)

// count returns "1 turn", "2 turns".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// checkChain recomputes the hash chain of every session (chain.go) from
// its stored turns, in one pass over the turns ordered by session and
// index, and reports the turns whose stored digest does not follow from
// their fields and their predecessor's digest (RuleChain: changed after
// they were written), the sessions holding turns without a digest
// (RuleUnchained: stored before the chain; trails-admin rechain adds it),
// and the turns larger than Persist accepts (RuleTurnSize). Memory grows
// with the number of sessions, not of turns.
func (st *Store) checkChain(ctx context.Context) ([]Finding, error) {
	res, err := st.c.Select(ctx, qCheckChainSessions)
	if err != nil {
		return nil, err
	}
	sessions := make(map[string]chainSession, len(res.Solutions))
	branches := make(map[string]string, len(res.Solutions))
	for _, row := range res.Solutions {
		id := idOf(row.String("s"))
		if _, dup := sessions[id]; dup {
			continue // damaged: other rules report it
		}
		s := chainSession{ParentID: idOf(row.String("parent"))}
		if _, ok := row["at"]; ok {
			s.ForkedAt, _ = row.Int("at")
		}
		sessions[id] = s
		branches[id] = branchOrMain(row.String("branch"))
	}
	cc := newChainCheck(sessions)
	var out []Finding
	unchained := map[string]int{}
	var order []string
	err = st.c.SelectRows(ctx, qCheckChainTurns, func([]string) error {
		cc = newChainCheck(sessions) // a retried request starts over
		out, order = out[:0], order[:0]
		clear(unchained)
		return nil
	}, func(row kg.Solution) error {
		id := idOf(row.String("s"))
		i, err := row.Int("i")
		if err != nil {
			return nil // not an integer: the SHACL rule reports it
		}
		role, _ := row.Literal("role")
		content, _ := row.Literal("content")
		t := Turn{Index: i, Role: role, Content: content, Branch: row.String("branch"), ID: row.String("t")}
		if t.Branch == "" {
			t.Branch = branches[id] // as Load reads a turn stored without one
		}
		if _, ok := row["created"]; ok {
			if t.Created, err = row.Time("created"); err != nil {
				return nil // the SHACL rule reports it
			}
		}
		if n := len(t.Content); n > MaxTurnBytes || len(t.Role) > maxRoleBytes || !utf8.ValidString(t.Content) {
			out = append(out, Finding{Rule: RuleTurnSize, Resource: t.ID,
				Message: fmt.Sprintf("turn %d of %s holds %d bytes of content and a role of %d bytes: more than Persist accepts (%d and %d), or not UTF-8", i, id, n, len(t.Role), MaxTurnBytes, maxRoleBytes)})
		}
		d := row.String("digest")
		if d == "" {
			if unchained[id] == 0 {
				order = append(order, id)
			}
			unchained[id]++
		}
		cc.turn(id, t, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, f := range cc.finish() {
		if f.Digest == "" {
			continue // reported per session below
		}
		out = append(out, Finding{Rule: RuleChain, Resource: f.Turn, Message: f.String()})
	}
	for _, id := range order {
		out = append(out, Finding{Rule: RuleUnchained, Resource: id,
			Message: fmt.Sprintf("%s of %s %s no trails:digest (stored before the hash chain): run trails-admin rechain", count(unchained[id], "turn"), id, hasHave(unchained[id]))})
	}
	return out, nil
}

var qStoredDigests = query("stored-digests.rq")

// sameDigests checks that each of turns (as loaded, their ID their IRI)
// that has a stored trails:digest has the one chain gives it (chain[i] is
// the digest of turns[i]), in one query: a turn edited in the store after
// it was written is ErrCorrupt, naming it, so that no copy launders it. A
// turn without a digest (stored before the hash chain) passes.
func (st *Store) sameDigests(ctx context.Context, turns []Turn, chain []string) error {
	if len(turns) == 0 {
		return nil
	}
	rows := make([][]rdf.Term, len(turns))
	want := make(map[string]int, len(turns))
	for i, t := range turns {
		rows[i] = []rdf.Term{kg.MustIRI(t.ID)}
		want[t.ID] = i
	}
	q, err := kg.BindTables(qStoredDigests, nil, map[string]kg.Table{"turns": {Vars: []string{"t"}, Rows: rows}})
	if err != nil {
		return fmt.Errorf("stored-digests: %w", err)
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return err
	}
	for _, row := range res.Solutions {
		i, ok := want[row.String("t")]
		if ok && row.String("d") != chain[i] {
			return fmt.Errorf("%w: turn %d (%s) does not match its trails:digest: it was changed after it was written (see trails-admin check)", ErrCorrupt, turns[i].Index, turns[i].ID)
		}
	}
	return nil
}
