package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Moving a session tree from one replica group to another (MoveTree), and
// what a Sharded does when a tree it routes moved: a write refused by the
// old group goes again to the new one once the copy is there (updateIn),
// a read finds the move through the seal count the appliers report
// (sealsGrew).

// beforeCopy, when set and true, stops MoveTree after its seal, as a
// mover that dies there (tests).
var beforeCopy func() bool

// maxHops bounds how often one write follows its tree's moves.
const maxHops = 3

// MoveReport says what MoveTree did.
type MoveReport struct {
	Root     string   // the tree's root session
	From, To int      // the groups
	Sessions []string // the family's live sessions, moved (IRIs)
	Deleted  []string // its deleted sessions, whose PROV moved (IRIs)
	Quads    int      // quads copied into To (0 when an earlier run copied them)
	Bytes    int      // their size as N-Quads
	Resumed  bool     // an earlier run had sealed the tree
}

// MoveTree moves the session tree whose root is root to replica group
// to, with the sessions a Detach cut off from it and the PROV of the
// ones deleted (its family: every session whose trails:parentSession or
// prov:wasDerivedFrom links reach root), without losing or repeating a
// write:
//
//  1. a seal record in the old group's log makes its appliers write a
//     seal (ontology.SealedIn) for every session of the family and refuse
//     every later record naming one, with a refusal (HTTP 421) naming
//     the new group;
//  2. the family, read from a replica of the old group at or past the
//     seal (its sessions' graphs, the quads of other graphs about them
//     such as PROV records, and their trails:group rewritten), is loaded
//     into the new group as one record (at most MaxRecordBytes); on an
//     audit replica, which applies both logs into one dataset, only once
//     it applied the old group's log up to the seal;
//  3. a last record in the old group removes the sessions' trails:group
//     there (on an audit replica, once it applied the copy). The seals
//     stay, as tombstones, and so do the graphs, unchanged since the
//     seal: a read that chose the old group before the move finished
//     still finds the tree as it is.
//
// A Sharded whose write is refused waits until the move finished (the
// last record applied), then sends it again to the new group: its
// conditions hold there as they would have in the old group, since no
// write changed the tree in between. A run stopped part way is completed
// by running it again with the same arguments; until then the tree takes
// no write (a writer waits for its Timeout, then gets a *kg.Error with
// status 503) and reads find it in the old group. A tree never moves
// back to a group it left; a tree whose branch labels a tree of the new
// group uses is refused (labels are unique within a group). logf, when
// set, reports each step.
func MoveTree(ctx context.Context, s *Sharded, root string, to int, logf func(string, ...any)) (*MoveReport, error) {
	say := func(format string, args ...any) {
		if logf != nil {
			logf(format, args...)
		}
	}
	if to < 0 || to >= len(s.groups) {
		return nil, fmt.Errorf("%w: cluster: move to group %d of %d", kg.ErrConfig, to, len(s.groups))
	}
	rootIRI, err := kg.IRI(ontology.SessionIRI(root))
	if err != nil {
		return nil, err
	}
	hs, err := s.holders(ctx, root)
	if err != nil {
		return nil, err
	}
	rep := &MoveReport{Root: root, From: -1, To: to}
	unsealed, moving := -1, -1 // the group holding the tree unsealed; a group it is sealed toward
	for _, h := range hs {
		switch {
		case h.movedTo < 0:
			unsealed = h.group
		case h.group == to:
			return nil, fmt.Errorf("cluster: session %s moved out of group %d before: a tree never goes back to a group it left", root, to)
		case h.movedTo == to:
			rep.From, rep.Resumed = h.group, true // sealed by an earlier run: finish it
		default:
			moving = h.movedTo
		}
	}
	switch {
	case rep.Resumed:
	case unsealed == to:
		return nil, fmt.Errorf("cluster: session %s is in group %d already", root, to)
	case unsealed >= 0:
		rep.From = unsealed
	case moving >= 0:
		return nil, fmt.Errorf("cluster: session %s is moving to group %d: finish that move first (MoveTree to %d)", root, moving, moving)
	default:
		return nil, fmt.Errorf("%w: cluster: no group holds session %s", kg.ErrNotFound, root)
	}
	from := s.groups[rep.From]
	var sealed int64 // the seal's offset, or an offset past it
	if !rep.Resumed {
		if err := s.checkMovable(ctx, rep.From, to, rootIRI); err != nil {
			return nil, err
		}
		say("sealing the tree of %s in group %d", root, rep.From)
		if sealed, err = from.writeOp(ctx, opSeal, sealUpdate(from.topic, rootIRI, rep.From, to)); err != nil {
			return nil, fmt.Errorf("cluster: seal the tree of %s in group %d: %w", root, rep.From, err)
		}
	} else if sealed = from.logEnd(ctx); sealed < 0 {
		return nil, &kg.Error{Op: "move", Err: fmt.Errorf("cluster: group %d: Kafka does not tell the end of its log", rep.From), Status: http.StatusServiceUnavailable}
	}
	from.catchUp(ctx)
	sessions, deleted, err := sealedTree(ctx, from, rootIRI, to)
	if err != nil {
		return nil, err
	}
	rep.Sessions, rep.Deleted = sessions, deleted
	if len(sessions) == 0 {
		say("the tree of %s left group %d already", root, rep.From)
		s.learn(to, root)
		return rep, nil
	}
	dest := s.groups[to]
	dest.catchUp(ctx)
	copied, err := dest.Ask(ctx, "ASK { GRAPH "+termOf(rootIRI)+" { ?s ?p ?o } }")
	if err != nil {
		return nil, fmt.Errorf("cluster: group %d: %w", to, err)
	}
	copiedAt := dest.logEnd(ctx) // the copy's offset, or one past it
	if !copied && beforeCopy != nil && beforeCopy() {
		return nil, fmt.Errorf("cluster: move of %s stopped after its seal (a test's)", root)
	}
	if !copied {
		data, quads, err := treeQuads(ctx, from, sessions, deleted, to)
		if err != nil {
			return nil, fmt.Errorf("cluster: read the tree of %s from group %d: %w", root, rep.From, err)
		}
		if len(data) > MaxRecordBytes {
			return nil, &kg.Error{Op: "move", Status: http.StatusRequestEntityTooLarge, Body: fmt.Sprintf("the tree of %s is %d bytes of N-Quads: a move copies it as one record of at most %d bytes (it stays sealed in group %d: run the move again once the limit allows, or delete sessions of it)", root, len(data), MaxRecordBytes, rep.From)}
		}
		say("copying %d sessions (%d quads, %d bytes) into group %d", len(sessions), quads, len(data), to)
		copiedAt, err = dest.writeAt(ctx, "load quads", &kgo.Record{Value: data, Headers: []kgo.RecordHeader{
			{Key: headerOp, Value: []byte(opLoadQuads)}, afterHeader(from.topic, sealed),
		}})
		if err != nil {
			return nil, fmt.Errorf("cluster: copy the tree of %s into group %d: %w", root, to, err)
		}
		rep.Quads, rep.Bytes = quads, len(data)
	}
	say("removing the tree of %s from group %d", root, rep.From)
	if copiedAt < 0 {
		return nil, &kg.Error{Op: "move", Err: fmt.Errorf("cluster: group %d: Kafka does not tell the end of its log", to), Status: http.StatusServiceUnavailable}
	}
	if _, err := from.writeOp(ctx, opDropMoved, dropUpdate(sessions, deleted, rep.From), afterHeader(dest.topic, copiedAt)); err != nil {
		return nil, fmt.Errorf("cluster: remove the tree of %s from group %d: %w", root, rep.From, err)
	}
	s.mu.Lock()
	for _, iri := range append(sessions, deleted...) {
		s.tree[ontology.SessionID(iri)] = to
	}
	s.mu.Unlock()
	return rep, nil
}

// holder is a group whose replicas hold something of a session: sealed
// toward group movedTo (a move) or not (movedTo -1); whether they hold its
// graph, a PROV record of its deletion, and, sealed, its trails:group of
// another group than movedTo (pending: the move has not finished).
type holder struct {
	group, movedTo          int
	graph, deleted, pending bool
}

// holders asks every group, at the end of its log, whether it holds
// session id, and whether it sealed it.
func (s *Sharded) holders(ctx context.Context, id string) ([]holder, error) {
	sess, err := kg.Term(kg.MustIRI(ontology.SessionIRI(id)))
	if err != nil {
		return nil, err
	}
	rg := termOf(kg.MustIRI(ontology.ReplicaGraph))
	q := "SELECT ?to ?graph ?deleted ?pending WHERE { { GRAPH ?g { " + sess + " ?p ?o } } UNION { GRAPH ?g { ?x ?p " + sess + " } }\n" +
		"  OPTIONAL { GRAPH " + rg + " { ?seal " + termOf(kg.MustIRI(ontology.SealedSession)) + " " + sess + " ; " + termOf(kg.MustIRI(ontology.MovedTo)) + " ?to } }\n" +
		"  BIND(EXISTS { GRAPH " + sess + " { ?a ?b ?c } } AS ?graph)\n" +
		"  BIND(EXISTS { ?d " + termOf(kg.MustIRI(ontology.ProvInvalidated)) + " " + sess + " } AS ?deleted)\n" +
		"  BIND(BOUND(?to) && EXISTS { GRAPH " + rg + " { " + sess + " " + termOf(kg.MustIRI(ontology.Group)) + " ?n } FILTER(?n != ?to) } AS ?pending) } LIMIT 1"
	var hs []holder
	for i, c := range s.groups {
		c.catchUp(ctx) // a session another writer created is there
		res, err := c.Select(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("group %d: %w", i, err)
		}
		if len(res.Solutions) == 0 {
			continue
		}
		sol := res.Solutions[0]
		h := holder{group: i, movedTo: -1, graph: sol.String("graph") == "true", deleted: sol.String("deleted") == "true", pending: sol.String("pending") == "true"}
		if to, err := sol.Int("to"); err == nil {
			h.movedTo = to
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// groupOf returns the group of a session that the holders hs say: while
// its tree moves, the old group, which holds it unchanged (writes are
// refused there and wait for the move: updateIn); else the group that
// holds its graph and did not seal it; else the one holding the record of
// its deletion; else one that holds something naming it (a reference);
// else, with moving true, the group its tree moved to. It returns -1
// when no group holds anything of it.
func groupOf(hs []holder) (g int, moving bool) {
	for _, rank := range []func(holder) bool{
		func(h holder) bool { return h.movedTo >= 0 && h.pending },
		func(h holder) bool { return h.movedTo < 0 && h.graph },
		func(h holder) bool { return h.movedTo < 0 && h.deleted },
		func(h holder) bool { return h.movedTo < 0 },
	} {
		for _, h := range hs {
			if rank(h) {
				return h.group, false
			}
		}
	}
	for _, h := range hs {
		return h.movedTo, true
	}
	return -1, false
}

// checkMovable returns an error when the tree of root (in group from)
// may not move to group to: root is a fork, or a branch label of the
// tree is a label of a session of group to.
func (s *Sharded) checkMovable(ctx context.Context, from, to int, root rdf.IRI) error {
	r := termOf(root)
	fork, err := s.groups[from].Ask(ctx, "ASK { GRAPH "+r+" { "+r+" "+termOf(kg.MustIRI(ontology.ParentSession))+" ?p } }")
	if err != nil {
		return fmt.Errorf("group %d: %w", from, err)
	}
	if fork {
		return fmt.Errorf("cluster: session %s is a fork: move its tree's root", strings.TrimPrefix(root.String(), ontology.SessionBase))
	}
	res, err := s.groups[from].Select(ctx, "SELECT DISTINCT ?b WHERE { ?s "+termOf(kg.MustIRI(ontology.ParentSession))+"* "+r+" . GRAPH ?s { ?s "+termOf(kg.MustIRI(ontology.Branch))+" ?b } FILTER(?b != \"main\") }")
	if err != nil {
		return fmt.Errorf("group %d: %w", from, err)
	}
	if len(res.Solutions) == 0 {
		return nil
	}
	var labels strings.Builder
	for _, sol := range res.Solutions {
		labels.WriteString(termOf(sol["b"]) + " ")
	}
	dest := s.groups[to]
	dest.catchUp(ctx)
	taken, err := dest.Select(ctx, "SELECT ?b WHERE { VALUES ?b { "+labels.String()+"} ?o a "+termOf(kg.MustIRI(ontology.Session))+" ; "+termOf(kg.MustIRI(ontology.Branch))+" ?b } LIMIT 1")
	if err != nil {
		return fmt.Errorf("group %d: %w", to, err)
	}
	if len(taken.Solutions) > 0 {
		return fmt.Errorf("cluster: the branch label %s of the tree of %s is a label of group %d too (labels are unique within a group)", taken.Solutions[0].String("b"), strings.TrimPrefix(root.String(), ontology.SessionBase), to)
	}
	return nil
}

// members is the pattern binding ?s to each session of root's family:
// every session whose trails:parentSession or prov:wasDerivedFrom links
// reach root (its forks, theirs, a rewind's archives, the forks a Detach
// cut off, which keep their derivation), live (?live true: its graph is
// there) or deleted (a PROV record invalidated it), as the dataset holds
// them.
func members(root rdf.IRI) string {
	sc := termOf(kg.MustIRI(ontology.Session))
	return "?s (" + termOf(kg.MustIRI(ontology.ParentSession)) + "|" + termOf(kg.MustIRI(ontology.ProvWasDerivedFrom)) + ")* " + termOf(root) + " .\n" +
		"  { GRAPH ?s { ?s a " + sc + " } BIND(true AS ?live) } UNION { ?del " + termOf(kg.MustIRI(ontology.ProvInvalidated)) + " ?s FILTER NOT EXISTS { GRAPH ?s { ?s a " + sc + " } } BIND(false AS ?live) }"
}

// sealUpdate is the seal record's update: a seal of log topic's
// partition 0 for every session of root's family (members), as the
// replica holds it when it applies the record, naming group to; and a
// trails:group of group from for each that has none (a session from
// before the cluster had groups), which the move's last record removes:
// its absence says the move finished.
func sealUpdate(topic string, root rdf.IRI, from, to int) string {
	log := kg.MustIRI(ontology.LogIRI(topic, 0))
	rg, grp := termOf(kg.MustIRI(ontology.ReplicaGraph)), termOf(kg.MustIRI(ontology.Group))
	return "INSERT { GRAPH " + rg + " { ?s " + grp + " " + groupTerm(from) + " } }\n" +
		"WHERE { " + members(root) + "\n  FILTER NOT EXISTS { GRAPH " + rg + " { ?s " + grp + " ?any } } } ;\n" +
		"INSERT { GRAPH " + rg + " { ?seal " + termOf(kg.MustIRI(ontology.SealedIn)) + " " + termOf(log) + " ; " +
		termOf(kg.MustIRI(ontology.SealedSession)) + " ?s ; " + termOf(kg.MustIRI(ontology.MovedTo)) + " " + groupTerm(to) + " } }\n" +
		"WHERE { " + members(root) + "\n" +
		"  BIND(IRI(CONCAT(" + termOf(kg.String(log.String()+"/sealed/")) + ", STRAFTER(STR(?s), " + termOf(kg.String(ontology.SessionBase)) + "))) AS ?seal) }"
}

// groupTerm is group g as trails:group and trails:movedTo write it.
func groupTerm(g int) string {
	return termOf(rdf.NewTypedLiteral(strconv.Itoa(g), kg.MustIRI("http://www.w3.org/2001/XMLSchema#nonNegativeInteger")))
}

// sealedTree returns the sessions of root's family that c's log sealed
// toward group to, live and deleted, or none when none of them still has
// its trails:group of another group than to there (the move's last
// record applied: the move finished).
func sealedTree(ctx context.Context, c *Client, root rdf.IRI, to int) (live, deleted []string, err error) {
	rg, grp := termOf(kg.MustIRI(ontology.ReplicaGraph)), termOf(kg.MustIRI(ontology.Group))
	q := "SELECT DISTINCT ?s ?live ?pending WHERE { GRAPH " + rg + " { ?seal " + termOf(kg.MustIRI(ontology.SealedIn)) + " " + termOf(kg.MustIRI(ontology.LogIRI(c.topic, 0))) + " ; " +
		termOf(kg.MustIRI(ontology.SealedSession)) + " ?s ; " + termOf(kg.MustIRI(ontology.MovedTo)) + " ?to } FILTER(?to = " + strconv.Itoa(to) + ")\n" +
		"  " + members(root) + "\n" +
		"  BIND(EXISTS { GRAPH " + rg + " { ?s " + grp + " ?n } FILTER(?n != " + strconv.Itoa(to) + ") } AS ?pending) } ORDER BY ?s"
	res, err := c.Select(ctx, q)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: the sealed tree of %s: %w", root, err)
	}
	pending := false
	for _, sol := range res.Solutions {
		pending = pending || sol.String("pending") == "true"
		if sol.String("live") == "true" {
			live = append(live, sol.String("s"))
		} else {
			deleted = append(deleted, sol.String("s"))
		}
	}
	if !pending {
		return nil, nil, nil
	}
	return live, deleted, nil
}

// treeQuads reads, from c's replica, the quads of a moved family's
// sessions (their IRIs; live ones with a graph, deleted ones without):
// each live session's graph; every quad of another graph whose subject is
// one of the sessions or an IRI under one, or is no session's IRI and is
// the subject of a quad naming one (a PROV activity: a fork's, a
// deletion's), leaving out the replica, values, fences and ontology graphs
// and other sessions' graphs; and a trails:group of group to for each
// session. It returns them as N-Quads.
func treeQuads(ctx context.Context, c *Client, sessions, deleted []string, to int) ([]byte, int, error) {
	var b bytes.Buffer
	n := 0
	rg := termOf(kg.MustIRI(ontology.ReplicaGraph))
	var values strings.Builder
	for _, s := range sessions {
		g := kg.MustIRI(s)
		nt, err := c.GetGraph(ctx, g)
		if err != nil {
			return nil, 0, err
		}
		for line := range strings.Lines(string(nt)) {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			body, ok := strings.CutSuffix(line, ".")
			if !ok {
				return nil, 0, fmt.Errorf("%w: graph %s: a line that is no triple: %.80q", kg.ErrProtocol, s, line)
			}
			b.WriteString(strings.TrimRight(body, " \t") + " " + termOf(g) + " .\n")
			n++
		}
	}
	for _, s := range append(slices.Clone(sessions), deleted...) {
		b.WriteString(termOf(kg.MustIRI(s)) + " " + termOf(kg.MustIRI(ontology.Group)) + " " + groupTerm(to) + " " + rg + " .\n")
		n++
		values.WriteString(termOf(kg.String(s)) + " ")
	}
	q := "SELECT DISTINCT ?g ?s ?p ?o WHERE { VALUES ?t { " + values.String() + "}\n" +
		"  GRAPH ?g { ?s ?q ?b }\n" +
		"  FILTER(?g NOT IN (" + rg + ", " + termOf(kg.MustIRI(ontology.ValuesGraph)) + ", " + termOf(kg.MustIRI(ontology.FencesGraph)) + ", " + termOf(kg.MustIRI(ontology.OntologyGraph)) + ")" +
		" && !STRSTARTS(STR(?g), " + termOf(kg.String(ontology.SessionBase)) + ") && !STRSTARTS(STR(?g), " + termOf(kg.String(ontology.StagingBase)) + "))\n" +
		"  FILTER(STR(?s) = ?t || STRSTARTS(STR(?s), CONCAT(?t, \"/\")) || isIRI(?b) && !STRSTARTS(STR(?s), " + termOf(kg.String(ontology.SessionBase)) + ") && (STR(?b) = ?t || STRSTARTS(STR(?b), CONCAT(?t, \"/\"))))\n" +
		"  GRAPH ?g { ?s ?p ?o } }"
	res, err := c.Select(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	for _, sol := range res.Solutions {
		var line strings.Builder
		for _, v := range []string{"s", "p", "o", "g"} {
			t, err := kg.Term(sol[v])
			if err != nil {
				return nil, 0, fmt.Errorf("a quad of graph %s: %w", sol.String("g"), err)
			}
			line.WriteString(t + " ")
		}
		b.WriteString(line.String() + ".\n")
		n++
	}
	return b.Bytes(), n, nil
}

// dropUpdate is the last record of a move from group from to group to:
// it removes the trails:group of from of every session of the family,
// live or deleted. The old group keeps the graphs, sealed: a read that
// chose the old group before the move finished finds the tree there as it
// was when the move finished (no write changed it since the seal:
// writers wait for this record before they write in the new group).
func dropUpdate(live, deleted []string, from int) string {
	var all strings.Builder
	for _, s := range append(slices.Clone(live), deleted...) {
		all.WriteString(termOf(kg.MustIRI(s)) + " ")
	}
	rg, grp := termOf(kg.MustIRI(ontology.ReplicaGraph)), termOf(kg.MustIRI(ontology.Group))
	return "DELETE { GRAPH " + rg + " { ?s " + grp + " ?n } } WHERE { VALUES ?s { " + all.String() + "} GRAPH " + rg + " { ?s " + grp + " ?n } FILTER(?n = " + strconv.Itoa(from) + ") }"
}

// writeOp sends update as a record of a move (op opSeal or opDropMoved),
// with headers more, and waits for its outcome, as Update does. It
// returns the record's offset.
func (c *Client) writeOp(ctx context.Context, op, update string, more ...kgo.RecordHeader) (int64, error) {
	return c.writeAt(ctx, "update", &kgo.Record{Value: []byte(update), Headers: append([]kgo.RecordHeader{{Key: headerOp, Value: []byte(op)}}, more...)})
}

// updateIn sends update (with the records of the groups of the sessions
// fresh that it creates) to group g's log, the staging graphs puts sent
// ahead there; when the log's appliers refuse it because its tree moved,
// it waits for the tree's copy in the new group and sends both there.
func (s *Sharded) updateIn(ctx context.Context, g int, fresh []string, puts []*stagedPut, update string, opts ...kg.UpdateOption) error {
	for hop := 0; ; hop++ {
		u := update
		if len(fresh) > 0 {
			u += groupOps(fresh, g)
		}
		err := s.groups[g].Update(ctx, u, opts...)
		to, moved := movedTo(err)
		if !moved || hop == maxHops {
			if err == nil && len(fresh) > 0 {
				s.learn(g, fresh...)
			}
			return err
		}
		var stored []string
		for _, id := range routed(update, sessionIDs(update), opts) {
			if !slices.Contains(fresh, id) {
				stored = append(stored, id)
			}
		}
		if err := s.awaitMove(ctx, g, to, stored); err != nil {
			return err
		}
		for _, p := range puts {
			if err := s.groups[to].PutGraph(ctx, p.g, p.mediaType, p.data); err != nil {
				return err
			}
		}
		s.mu.Lock()
		for _, id := range stagingIDs(update) {
			s.staging[id] = stagingEntry{group: to, at: time.Now()}
		}
		s.mu.Unlock()
		g = to
	}
}

// awaitMove waits, for at most the groups' Timeout, until the move of
// the tree of the sessions ids from group from to group to finished: to
// holds something of each of them (a tree arrives whole, in one record)
// and from holds no trails:group of another group of any of them (the
// move's last record applied).
// Then it learns the new group of each session from sealed and moved
// (the whole tree: a request naming two of its sessions must find both in
// one group). Not before: until then readers that learnt from read
// there, and must not miss a write. It returns a *kg.Error with status 503 when the move does
// not finish in time.
func (s *Sharded) awaitMove(ctx context.Context, from, to int, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var there, gone strings.Builder // ASK bodies: something of each id in to; no trails:group of another group of any in from
	for _, id := range ids {
		t := termOf(kg.MustIRI(ontology.SessionIRI(id)))
		there.WriteString("FILTER EXISTS { { GRAPH ?g { " + t + " ?p ?o } } UNION { GRAPH ?g { ?x ?p " + t + " } } }\n")
		gone.WriteString("FILTER NOT EXISTS { GRAPH " + termOf(kg.MustIRI(ontology.ReplicaGraph)) + " { " + t + " " + termOf(kg.MustIRI(ontology.Group)) + " ?n } FILTER(?n != " + strconv.Itoa(to) + ") }\n")
	}
	for attempt := 0; ; attempt++ {
		done := false
		s.groups[to].catchUp(ctx)
		if ok, err := s.groups[to].Ask(ctx, "ASK { "+there.String()+"}"); err == nil && ok {
			s.groups[from].catchUp(ctx)
			if ok, err := s.groups[from].Ask(ctx, "ASK { "+gone.String()+"}"); err == nil && ok {
				done = true
			}
		}
		if done {
			break
		}
		if err := proc.Sleep(ctx, backoff(attempt)); err != nil {
			return &kg.Error{Op: "update", Status: http.StatusServiceUnavailable, Body: fmt.Sprintf("session %s's tree is moving from replica group %d to %d and the move has not finished (a move that stopped: run it again)", ids[0], from, to), Err: kg.ErrUnavailable}
		}
	}
	// Learnt only now: until the move finished, the old group served the
	// tree's reads.
	seals, err := readSeals(ctx, s.groups[from], kg.MustIRI(ontology.LogIRI(s.groups[from].topic, 0)))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		for id, sl := range seals {
			if h, ok := s.tree[id]; !sl.held && (!ok || h == from) {
				s.tree[id] = sl.to
			}
		}
	}
	for _, id := range ids {
		s.tree[id] = to
	}
	return nil
}

// sealsGrew reports whether group g's appliers told c of more trees
// moved out than this Sharded has read, and if so reads the seals,
// learning the group of each session moved out (sealed, its move ended).
// A tree still moving stays in g: its reads find it there, its writes are
// refused and wait for the copy (updateIn).
func (s *Sharded) sealsGrew(ctx context.Context, g int) bool {
	c := s.groups[g]
	if _, err := c.reader(ctx); err != nil {
		return false // the read fails on its own
	}
	seen := c.movesSeen()
	s.mu.Lock()
	known := s.moves[g]
	s.mu.Unlock()
	if seen <= known {
		return false
	}
	seals, err := readSeals(ctx, c, kg.MustIRI(ontology.LogIRI(c.topic, 0)))
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := 0
	for id, sl := range seals {
		if sl.held {
			continue
		}
		out++
		if h, ok := s.tree[id]; !ok || h == g {
			s.tree[id] = sl.to
		}
	}
	s.moves[g] = max(s.moves[g], out)
	return true
}

// PurgeMoved removes, in every group, the graphs that the moves out of
// it left (MoveTree keeps them, sealed and unchanged, so that a read that
// chose the old group before the move ended still finds the tree): the
// graphs of the sessions whose seal in the group's log says they moved
// and whose move ended (no trails:group of another group left). An audit
// replica keeps them (it holds the sessions' trails:group of the group
// they moved to). Run it once every read that started before those moves
// ended has ended: the readers' Timeout after them. It returns, by group,
// how many sessions' graphs it removed.
func PurgeMoved(ctx context.Context, s *Sharded) (map[int]int, error) {
	rg, grp := termOf(kg.MustIRI(ontology.ReplicaGraph)), termOf(kg.MustIRI(ontology.Group))
	out := map[int]int{}
	for g, c := range s.groups {
		frozen := "GRAPH " + rg + " { ?seal " + termOf(kg.MustIRI(ontology.SealedIn)) + " " + termOf(kg.MustIRI(ontology.LogIRI(c.topic, 0))) + " ; " +
			termOf(kg.MustIRI(ontology.SealedSession)) + " ?s ; " + termOf(kg.MustIRI(ontology.MovedTo)) + " ?to }\n" +
			"  FILTER NOT EXISTS { GRAPH " + rg + " { ?s " + grp + " ?n } FILTER(?n != ?to) }\n" +
			"  FILTER NOT EXISTS { GRAPH " + rg + " { ?s " + grp + " ?n } FILTER(?n = ?to) }\n"
		c.catchUp(ctx)
		res, err := c.Select(ctx, "SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { "+frozen+"  FILTER EXISTS { GRAPH ?s { ?a ?b ?c } } }")
		if err != nil {
			return out, fmt.Errorf("cluster: group %d: %w", g, err)
		}
		n, err := res.Solutions[0].Int("n")
		if err != nil || n == 0 {
			continue
		}
		if err := c.Update(ctx, "DELETE { GRAPH ?s { ?a ?b ?c } } WHERE { "+frozen+"  GRAPH ?s { ?a ?b ?c } }"); err != nil {
			return out, fmt.Errorf("cluster: group %d: %w", g, err)
		}
		out[g] = n
	}
	return out, nil
}
