package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/trails-kg/trails/internal/sharemark"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// A write that sets a shared value (app: or user:) from a tree outside
// the shared group goes as three records, each in one group's log:
//
//  1. in the tree's group g: the session's write, with an outbox entry
//     (ontology.PendingShare, in the replica graph) for each value it
//     shares, in the same transaction;
//  2. in the shared group, once record 1 applied: the values' operations
//     (session's share-value.ru, unchanged) reading the changes from a
//     staging graph that the record fills with the changes as group g
//     stored them, and drops;
//  3. in group g: the outbox entries removed.
//
// Update returns once record 1 applied and record 2 applied or could not
// be sent within the timeout. A writer that dies between 1 and 3 leaves
// its entries in the outbox: Reshare (which a Sharded runs before its
// first such write) sends their record 2 again, which changes nothing
// where it applied (a change is shared at most once), and applies a
// change only where no newer one (by the writers' times) is shared, so
// that a late replay never undoes a newer value.

// updateAcross sends update, a write of a tree of group g (not the shared
// group) that sets shared values, as the records above. It returns
// ErrCrossGroup when update has other writes of shared values than the
// marked ones.
func (s *Sharded) updateAcross(ctx context.Context, g int, fresh []string, update string, opts ...kg.UpdateOption) error {
	rest, ops, err := sharemark.Split(update)
	if err != nil || len(ops) == 0 || valuesRe.MatchString(rest) {
		return crossGroup(fmt.Sprintf("it writes the shared values from group %d in a way the group of shared values (%d) cannot take", g, s.shared))
	}
	s.reshareOnce(ctx)
	if strings.TrimSpace(rest) == "" {
		// The values of changes stored before (an import's): record 2 alone.
		return s.share(ctx, g, ops, false)
	}
	entries := outbox(ops)
	if _, err := s.sendStaged(ctx, g, rest); err != nil {
		return err
	}
	rest += " ;\nINSERT DATA { GRAPH " + termOf(kg.MustIRI(ontology.ReplicaGraph)) + " { " + entries + " } }"
	if len(fresh) > 0 {
		rest += groupOps(fresh, g)
	}
	if err := s.groups[g].Update(ctx, rest, opts...); err != nil {
		s.markPending() // it may have applied: its entries wait for a Reshare
		return err
	}
	s.learn(g, fresh...)
	if beforeShare != nil && beforeShare() {
		s.markPending()
		return nil // the writer died here (a test's)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	if err := s.share(wctx, g, ops, false); err != nil {
		s.markPending()
		return nil // stored, and its values in the outbox: acknowledged
	}
	if err := s.groups[g].Update(wctx, "DELETE DATA { GRAPH "+termOf(kg.MustIRI(ontology.ReplicaGraph))+" { "+entries+" } }"); err != nil {
		s.markPending()
	}
	return nil
}

// beforeShare, set by a test, says whether the writer dies between
// records 1 and 2.
var beforeShare func() bool

// outbox returns the outbox entries of ops: each change, its marked
// operation (ontology.PendingShare), as triples.
func outbox(ops []sharemark.Op) string {
	var b strings.Builder
	p := termOf(kg.MustIRI(ontology.PendingShare))
	for _, op := range ops {
		b.WriteString(op.Change + " " + p + " " + termOf(kg.String(sharemark.Mark(op))) + " . ")
	}
	return b.String()
}

// share sends record 2 of ops, values operations of changes stored in
// group g, to the shared group: the changes as g's replica holds them, in
// a staging graph the operations read in place of the session's graph.
// A change g does not hold (its write did not apply) is left out. With
// replay, each operation applies only where no newer change (a later
// trails:changedAt) is shared. It returns what the shared group's
// Client.Update returns.
func (s *Sharded) share(ctx context.Context, g int, ops []sharemark.Op, replay bool) error {
	var vals strings.Builder
	for _, op := range ops {
		vals.WriteString("(" + op.G + " " + op.Owner + " " + op.Change + ") ")
	}
	created, changes, key, value := termOf(kg.MustIRI(ontology.Created)), termOf(kg.MustIRI(ontology.Changes)), termOf(kg.MustIRI(ontology.Key)), termOf(kg.MustIRI(ontology.Value))
	q := "SELECT ?c ?at ?k ?v WHERE { VALUES (?g ?o ?c) { " + vals.String() + "} GRAPH ?g { ?o " + created + " ?at ; " + changes + " ?c . ?c " + key + " ?k OPTIONAL { ?c " + value + " ?v } } }"
	res, err := s.groups[g].Select(ctx, q)
	if err != nil {
		return fmt.Errorf("cluster: read the shared changes from group %d: %w", g, err)
	}
	stage := termOf(kg.MustIRI(ontology.StagingBase + uuid.NewString()))
	var b strings.Builder
	b.WriteString("INSERT DATA { GRAPH " + stage + " { ")
	found := map[string]bool{}
	for _, row := range res.Solutions {
		c, at, k := termOf(row["c"]), termOf(row["at"]), termOf(row["k"])
		for _, op := range ops {
			if op.Change == c {
				b.WriteString(op.Owner + " " + created + " " + at + " ; " + changes + " " + c + " . ")
			}
		}
		b.WriteString(c + " " + key + " " + k + " . ")
		if v, ok := row["v"]; ok {
			b.WriteString(c + " " + value + " " + termOf(v) + " . ")
		}
		found[c] = true
	}
	b.WriteString("} }")
	n := 0
	for _, op := range ops {
		if !found[op.Change] {
			continue
		}
		from := "GRAPH " + op.G + " {"
		if strings.Count(op.Text, from) != 1 {
			return fmt.Errorf("cluster: a shared value's operation reads %q %d times, want once", from, strings.Count(op.Text, from))
		}
		t := strings.Replace(op.Text, from, "GRAPH "+stage+" {", 1)
		if replay {
			t = strings.TrimRight(t, " \t\r\n")
			if !strings.HasSuffix(t, "}") {
				return fmt.Errorf("cluster: a shared value's operation does not end its WHERE with }")
			}
			t = t[:len(t)-1] + "  FILTER NOT EXISTS { GRAPH " + termOf(kg.MustIRI(ontology.ValuesGraph)) + " { " + op.Node + " " +
				termOf(kg.MustIRI(ontology.ChangedAt)) + " ?newer FILTER(?newer > ?now) } }\n}"
		}
		b.WriteString(" ;\n" + t)
		n++
	}
	if n == 0 {
		return nil // no change stored: nothing to share
	}
	b.WriteString(" ;\nDROP SILENT GRAPH " + stage)
	// Sent once: a record whose outcome is unknown is in the log or not,
	// and the outbox entry covers both (sending it again would add a
	// record each time).
	return s.groups[s.shared].Update(ctx, b.String(), kg.Idempotent())
}

// markPending notes that an outbox entry of this Sharded may be left: the
// next write of shared values across groups runs Reshare first.
func (s *Sharded) markPending() {
	s.mu.Lock()
	s.reshared = false
	s.mu.Unlock()
}

// reshareOnce runs Reshare before this Sharded's first write of shared
// values across groups, and after one whose records did not all apply.
// Its errors are Reshare's to report when called: the write goes on.
func (s *Sharded) reshareOnce(ctx context.Context) {
	s.mu.Lock()
	done := s.reshared
	s.reshared = true
	s.mu.Unlock()
	if !done {
		if _, err := s.Reshare(ctx); err != nil {
			s.markPending()
		}
	}
}

// Reshare completes the writes of shared values across groups that a
// writer left unfinished (it died, or the group of shared values did not
// answer in time): for each outbox entry in a group's replicas, it sends
// the value's record to the group of shared values again, applying the
// change unless it was shared already or a newer change (by the writers'
// trails:changedAt) is, then removes the entry. It returns the entries
// it completed. It is safe to run at any time, by any writer, and again.
func (s *Sharded) Reshare(ctx context.Context) (int, error) {
	done := 0
	rg, p := termOf(kg.MustIRI(ontology.ReplicaGraph)), termOf(kg.MustIRI(ontology.PendingShare))
	for g, c := range s.groups {
		if g == s.shared {
			continue
		}
		c.catchUp(ctx)
		res, err := c.Select(ctx, "SELECT ?c ?op WHERE { GRAPH "+rg+" { ?c "+p+" ?op } }")
		if err != nil {
			return done, fmt.Errorf("cluster: read group %d's outbox: %w", g, err)
		}
		for _, row := range res.Solutions {
			text, _ := row.Literal("op")
			_, ops, err := sharemark.Split(text)
			if err != nil || len(ops) != 1 {
				return done, fmt.Errorf("%w: cluster: group %d's outbox entry of %s is not one marked operation", kg.ErrProtocol, g, row.String("c"))
			}
			if err := s.share(ctx, g, ops, true); err != nil {
				return done, fmt.Errorf("cluster: group %d: the shared value of %s: %w", g, row.String("c"), err)
			}
			entry := termOf(row["c"]) + " " + p + " " + termOf(row["op"])
			if err := c.Update(ctx, "DELETE DATA { GRAPH "+rg+" { "+entry+" } }"); err != nil {
				return done, fmt.Errorf("cluster: group %d: remove the outbox entry of %s: %w", g, row.String("c"), err)
			}
			done++
		}
	}
	return done, nil
}
