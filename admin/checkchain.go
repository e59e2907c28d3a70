package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
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

// checkChain recomputes the hash chain of every session (session.TurnDigest) from
// its stored turns, in one pass over the turns ordered by session and
// index, and reports the turns whose stored digest does not follow from
// their fields and their predecessor's digest (RuleChain: changed after
// they were written), the sessions holding turns without a digest
// (RuleUnchained: stored before the chain; trails-admin rechain adds it),
// the turns larger than Persist accepts (RuleTurnSize), and, for the
// turns of sessions holding structured turns, the triples of their
// structured resources that are not those their fields give
// (RuleDerived, checkDerived). Memory grows
// with the number of sessions, not of turns.
func (ds *Dataset) checkChain(ctx context.Context) ([]Finding, error) {
	out, _, err := ds.chainScan(ctx)
	return out, err
}

// chainScan is checkChain, also returning the chain faults it found (by
// the session whose graph holds each turn; a structured turn whose fields
// cannot be read is a fault with Index -1 and no Turn).
func (ds *Dataset) chainScan(ctx context.Context) ([]Finding, []ChainFault, error) {
	res, err := ds.c.Select(ctx, qCheckChainSessions)
	if err != nil {
		return nil, nil, err
	}
	sessions := make(map[string]chainSession, len(res.Solutions))
	branches := make(map[string]string, len(res.Solutions))
	structured := map[string]bool{} // sessions holding structured turns (trails:structuredTurns)
	for _, row := range res.Solutions {
		id := ontology.SessionID(row.String("s"))
		if _, dup := sessions[id]; dup {
			continue // damaged: other rules report it
		}
		s := chainSession{ParentID: ontology.SessionID(row.String("parent"))}
		if _, ok := row["at"]; ok {
			s.ForkedAt, _ = row.Int("at")
		}
		sessions[id] = s
		branches[id] = cmp.Or(row.String("branch"), session.MainBranch)
		_, structured[id] = row["structured"]
	}
	cc := newChainCheck(sessions)
	var out []Finding
	var unreadable []ChainFault // sessions whose structured turns do not read
	unchained := map[string]int{}
	var order []string
	// The turns of a session holding structured turns wait until the
	// session's last one, and then get their structured fields, which
	// their digests cover, in one query per such session.
	var derived []Finding // RuleDerived, kept for turns whose digests verify
	var pend []session.Turn
	var pendDigests []string
	pendID := ""
	flush := func() error {
		if len(pend) == 0 {
			return nil
		}
		if err := session.ReadStructures(ctx, ds.c, pend); errors.Is(err, session.ErrCorrupt) {
			out = append(out, Finding{Rule: RuleChain, Resource: ontology.SessionIRI(pendID), Message: err.Error()})
			unreadable = append(unreadable, ChainFault{Session: pendID, Index: -1, Want: err.Error()})
		} else if err != nil {
			return err
		} else {
			fs, err := ds.checkDerived(ctx, pendID, pend)
			if err != nil {
				return err
			}
			derived = append(derived, fs...)
		}
		for k, t := range pend {
			cc.turn(pendID, t, pendDigests[k])
		}
		pend, pendDigests = pend[:0], pendDigests[:0]
		return nil
	}
	add := func(row kg.Solution) error {
		id := ontology.SessionID(row.String("s"))
		i, err := row.Int("i")
		if err != nil {
			return nil // not an integer: the SHACL rule reports it
		}
		role, _ := row.Literal("role")
		content, _ := row.Literal("content")
		t := session.Turn{Index: i, Role: role, Content: content, Branch: row.String("branch"), ID: row.String("t")}
		if t.Branch == "" {
			t.Branch = branches[id] // as Load reads a turn stored without one
		}
		if _, ok := row["created"]; ok {
			if t.Created, err = row.Time("created"); err != nil {
				lex, _ := row.Literal("created")
				out = append(out, Finding{Rule: RuleTime, Resource: t.ID,
					Message: fmt.Sprintf("turn %d of %s: created %s is not a date-time", i, id, termsafe.Quote(lex))})
				return nil // its digest cannot be recomputed: the chain rule leaves it
			}
			if err := kg.CheckTime(t.Created); err != nil {
				lex, _ := row.Literal("created")
				out = append(out, Finding{Rule: RuleTime, Resource: t.ID,
					Message: fmt.Sprintf("turn %d of %s: created %s is outside years 0000 to 9999, which Persist refuses (milliseconds taken for seconds?); the session loads, other readers of the store may not", i, id, termsafe.Quote(lex))})
			}
		}
		if n := len(t.Content); n > session.MaxTurnBytes || len(t.Role) > session.MaxRoleBytes || !utf8.ValidString(t.Content) {
			out = append(out, Finding{Rule: RuleTurnSize, Resource: t.ID,
				Message: fmt.Sprintf("turn %d of %s holds %d bytes of content and a role of %d bytes: more than Persist accepts (%d and %d), or not UTF-8", i, id, n, len(t.Role), session.MaxTurnBytes, session.MaxRoleBytes)})
		}
		d := row.String("digest")
		if d == "" {
			if unchained[id] == 0 {
				order = append(order, id)
			}
			unchained[id]++
		}
		if id != pendID {
			if err := flush(); err != nil {
				return err
			}
			pendID = id
		}
		if structured[id] {
			pend, pendDigests = append(pend, t), append(pendDigests, d)
			return nil
		}
		cc.turn(id, t, d)
		return nil
	}
	err = eachRow(ctx, ds.c, qCheckChainTurns, add)
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, nil, err
	}
	broken := map[string]bool{}
	faults := unreadable
	for _, f := range cc.finish() {
		if f.Digest == "" {
			continue // reported per session below
		}
		broken[f.Turn] = true
		faults = append(faults, f)
		out = append(out, Finding{Rule: RuleChain, Resource: f.Turn, Message: f.String()})
	}
	for _, f := range derived {
		if !broken[f.Resource] { // judged against fields edited since: the chain finding says enough
			out = append(out, f)
		}
	}
	for _, id := range order {
		out = append(out, Finding{Rule: RuleUnchained, Resource: id,
			Message: fmt.Sprintf("%s of %s %s no trails:digest (stored before the hash chain): run trails-admin rechain", count(unchained[id], "turn"), id, hasHave(unchained[id]))})
	}
	return out, faults, nil
}
