package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/appendhint"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/witness"
)

// The queries of Persist, read once.
var (
	qState        = query("state.rq")
	qStoredTurns  = query("stored-turns.rq")
	uCreateRoot   = query("create-root.ru")
	uAppend       = query("append.ru")
	uAppendOld    = query("append-legacy.ru")
	qVerifyHead   = query("verify-head.rq")
	qVerifyCreate = query("verify-create.rq")
	qVerifyAppend = query("verify-append.rq")
)

// maxPersistRounds bounds how often Persist re-reads the store after its
// update did not apply (a lost race, a taken branch label).
const maxPersistRounds = 4

// Create stores s, a session (root or fork) not stored yet, as Persist
// does, but refuses when a session with its id is stored or was stored
// and deleted: where Persist of a value with a stored session's id and no
// new turns succeeds having written nothing (its Initial values
// ignored), Create returns ErrExists. Of Creates racing on one id, one
// succeeds. After a store error the session may have been created all
// the same (the answer was lost): Load tells.
//
// It returns ErrExists (also for a value that was stored or loaded
// already), or the errors of Persist (ErrNotWitnessed: created, but its
// signed head did not reach the witness, see WithSigning).
func (st *Store) Create(ctx context.Context, s *Session) (err error) {
	ctx, call := telemetry.Start(ctx, "session.Create", s.id())
	defer func() { call.End(err) }()
	if s == nil {
		return fmt.Errorf("create: %w: nil session", ErrInvalid)
	}
	if s.seen.ok || s.From != 0 {
		return fmt.Errorf("create %s: %w: the value was stored or loaded already", s.ID, ErrExists)
	}
	s.create = true
	defer func() { s.create = false }()
	if err := st.persist(ctx, s); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := st.attest(ctx, witness.KindHead, seenHead(s, seen{})); err != nil {
		return fmt.Errorf("create %s: %w", s.ID, err)
	}
	return nil
}

// Persist writes what the store lacks of s, in one SPARQL Update request, so
// that a persist is atomic: on the first persist of a fork its metadata and
// PROV record, and every turn not stored yet. Persisting an unchanged session
// writes nothing; repeating a persist after a timeout is harmless.
//
// Stored turns are immutable: the store keeps, per session, its turn count
// and a digest of its turns, and Persist appends only if both are still
// what the caller's history says (compare and swap inside the update), so of
// two writers racing on one session one wins and the other gets ErrConflict
// with nothing changed. A fork is persisted only once its parent is stored
// with at least ForkedAt turns in its effective history. Turns with a zero
// Created are stamped now. If a fork's random branch label is already used in
// the store, Persist gives the fork (and its own turns) a new one.
//
// It returns ErrInvalid for bad input (nothing is sent), ErrConflict when the
// stored history or fork fields differ from s, the session was rewound since
// s was loaded (Store.Rewind), the session was deleted (also a tail from
// LoadTail or Store.Fork whose parent was deleted with it), or the parent
// has fewer than ForkedAt turns,
// an *AncestorError (ErrParentMissing) when the parent is not stored,
// ErrForkDepth when the parent chain would exceed the limit,
// ErrNotForkable when the parent is a worker, ErrTooManyChildren when the
// parent has as many forks as the Store allows (WithMaxChildren; both are
// checked inside the update that creates the fork, so of forks racing for
// the last free place one lands), ErrState when turns would be appended
// to a session that is completed, failed or expired (checked inside the
// append too; a fork of such a session is allowed), or a store error
// wrapping the kg error.
//
// Contents over 64 KiB do not go into the SPARQL Update, whose parser
// is slow on long literals: Persist sends them first through the Graph
// Store Protocol into a staging graph of their own, which the update
// copies from and drops in the same request, whether its compare and swap
// applied or not; after a failed update Persist drops it itself
// (MaxTurnBytes). A staging graph is never read as session data; one that
// outlives its write (a crash between the two requests) is what the
// operators' check reports and sweep removes (package admin, rule staging).
//
// An append by a value that Persist stored before (an agent persisting
// after every event), and the update that creates a session or a fork, is
// one request on Fuseki and Oxigraph: the update's
// compare and swap, when it does not hold, fails the whole request
// (ackGraph), and Persist then takes the full path, which reads the
// store's state and reports ErrConflict or ErrState as above. Elsewhere,
// and on the full path, the update is followed by an ASK (apply). Sent
// while another write of the Store is in flight, the update waits for it
// and goes with the others waiting, in one request, and one query after
// it says which applied (group commit: WithGroupCommit).
//
// A new session with a TTL gets its expiry (trails:expiresAt, its
// creation time plus TTL) in the update that creates it.
//
// An update whose answer is lost (an attempt timed out, the connection
// was cut, ctx ended) may still reach the store after Persist asked
// whether it applied. So on Fuseki and Oxigraph every update carries a
// gate that fails it once fenced, and after a lost answer Persist fences
// it before asking (ontology.FencesGraph): the answer agrees with the
// store. ErrConflict and ErrState mean nothing was written. After a store
// error nothing was written either, unless the store could not be reached
// to fence the update, ctx ended while the update waited in a batch, or
// the session was deleted before Persist could ask (the Delete may have
// taken what the update wrote, but not its shared values): then the
// outcome is unknown, and Load tells.
//
// With WithSigning, a Persist that wrote signs the session's new head and
// adds it to the witness; when that fails it returns an error matching
// ErrNotWitnessed: the write is stored, the witness does not know it.
func (st *Store) Persist(ctx context.Context, s *Session) (err error) {
	ctx, call := telemetry.Start(ctx, "session.Persist", s.id())
	defer func() { call.End(err) }()
	if s == nil {
		return fmt.Errorf("persist: %w: nil session", ErrInvalid)
	}
	before := s.seen
	if err := st.persist(ctx, s); err != nil {
		return err
	}
	if after := s.seen; !after.ok || before.ok && before.own == after.own && before.head == after.head {
		return nil // nothing written, and this value knew it stored
	}
	if err := st.attest(ctx, witness.KindHead, seenHead(s, s.replaced)); err != nil {
		return fmt.Errorf("persist %s: %w", s.ID, err)
	}
	return nil
}

// persist is Persist without signing: what Persist, Create and the writes
// made of a Persist (a tail's, Fork's of a parent stored before the hash
// chain, Merge's first count of a parent) share.
func (st *Store) persist(ctx context.Context, s *Session) error {
	if s.From != 0 {
		return st.persistTail(ctx, s) // tail.go
	}
	// Turns this value stored already were checked and stamped when it
	// stored them: an append costs what the new turns cost.
	from := s.ForkedAt
	if sn := s.seen; sn.ok && s.ForkedAt+sn.own <= len(s.Turns) {
		from = s.ForkedAt + sn.own
	}
	dropTemps(s, from)
	if err := s.validate(from); err != nil {
		return fmt.Errorf("persist %s: %w", s.ID, err)
	}
	if err := st.checkStaging(s.Turns[from:]); err != nil {
		return fmt.Errorf("persist %s: %w", s.ID, err)
	}
	if !st.visible(s.Principal) {
		return fmt.Errorf("persist %s: %w: the session's principal is %q, the store's %q", s.ID, ErrForbidden, s.Principal, st.scope)
	}
	for i := from; i < len(s.Turns); i++ {
		if s.Turns[i].Created.IsZero() {
			s.Turns[i].Created = st.now()
		}
		s.Turns[i].ID = s.turnID(i) // of the session's generation
	}
	if err := st.leanForPersist(ctx, s, from, true); err != nil { // lean.go
		return fmt.Errorf("persist %s: %w", s.ID, err)
	}
	if done, err := st.appendSeen(ctx, s); err != nil {
		return fmt.Errorf("persist %s: %w", s.ID, err)
	} else if done {
		return nil
	}
	if err := st.leanForPersist(ctx, s, from, false); err != nil {
		return fmt.Errorf("persist %s: %w", s.ID, err)
	}
	for range maxPersistRounds {
		done, err := st.persistOnce(ctx, s)
		if err != nil {
			return fmt.Errorf("persist %s: %w", s.ID, err)
		}
		if done {
			return nil // the path that applied set s.seen
		}
	}
	return fmt.Errorf("persist %s: %w: the session kept changing under this writer", s.ID, ErrConflict)
}

// appendSeen appends the new turns of s with no state query, when s was
// persisted before by this value: the compare and swap on the count and
// digest it saw guards the write. Its cost is that of the new turns: the
// digest goes on from the hash state seen kept, and of the stored turns
// only the last is compared with what was stored (an older stored turn
// changed in memory is not noticed here, and never written). It reports
// false (and changes nothing) when it does not apply or the store moved on;
// Persist then takes the full path.
func (st *Store) appendSeen(ctx context.Context, s *Session) (bool, error) {
	sn := s.seen
	s.seen = seen{}
	own := s.Turns[s.ForkedAt:]
	if !sn.ok || sn.own >= len(own) || sn.state == nil {
		return false, nil
	}
	if sn.own > 0 && !sameTurn(own[sn.own-1], sn.last) {
		return false, nil // the caller changed stored turns: the full path says how
	}
	head := sn.head
	all, state, err := digestOn(sn.state, own[sn.own:])
	if err != nil {
		return false, nil
	}
	if err := ownBranch(s, own[sn.own:]); err != nil {
		return false, err
	}
	g := sessionIRI(s.ID)
	chain := chainDigests(sn.chain, own[sn.own:])
	var d kg.Data
	sg := st.newStaging()
	for i, t := range own[sn.own:] {
		addTurn(&d, sg, g, t, chain[i])
	}
	linkResults(&d, g, s.Turns, s.ForkedAt+sn.own)
	addHead(&d, g, len(own), all)
	// Refused (false, nil): the full path reads the store and says why.
	return st.sendAppend(ctx, s, &d, sg, sn.own, head, sn.chain, all, state, chain[len(chain)-1])
}

// ackGraph returns a new graph IRI for acked, and whether the store is
// one whose update fails on it (Fuseki and Oxigraph, whose profiles the
// kg client tells); on another store the fast path asks, after its
// update, whether it applied, as the full path does.
//
// SPARQL Update answers only "done", never how many triples a
// conditional update changed. So the fast path's update writes a quad
// into a graph of its own only if its compare and swap holds, and its
// last operations (acked) fail the whole request when that graph does
// not exist: the store rolls the request back and answers with an error.
// An update that applied has been answered 2xx, in one round trip; one
// that failed, for whatever reason, sends Persist down the full path,
// whose state query says whether the session moved on (ErrConflict),
// the update landed after all (an answer lost), or the store fails. The
// graph is made and dropped in one request (one transaction), so no
// reader ever sees it; it is named under the staging graphs' base
// (ontology.StagingBase and a uuid), those of other short-lived writes.
func (st *Store) ackGraph() (rdf.IRI, bool) {
	p, ok := st.c.(profiled)
	if !ok || (p.Store() != kg.Fuseki && p.Store() != kg.Oxigraph) {
		return rdf.IRI{}, false
	}
	return kg.MustIRI(ontology.StagingBase + uuid.Must(uuid.NewV7()).String()), true
}

// profiled is what a Querier may tell of its store (kg.Client does).
type profiled interface{ Store() kg.Store }

var _ profiled = (*kg.Client)(nil)

// acked returns the operations that end the fast path's update: they
// fail when graph ack does not exist and remove it when it does. Fuseki
// (Jena 5.6) treats a missing graph as empty in DROP but refuses it as
// the source of ADD; Oxigraph (0.5.13) does the opposite: each store
// refuses one of the two. No PREFIX (see share-value.ru).
func acked(ack rdf.IRI) string {
	g, _ := kg.Term(ack)
	return " ;\nADD " + g + " TO " + g + " ;\nDROP GRAPH " + g + "\n"
}

// appendParams binds append.ru for session s (graph g) holding own turns
// of its own with digest head, the last of its effective history with
// chain digest prev, and the fork fields of s (its parent and fork point).
func appendParams(s *Session, g rdf.IRI, own int, head, prev string) kg.Params {
	pi := -1 // no turn of its own: the chain head lies in an ancestor, checked when the fork was created
	if own > 0 {
		pi = s.ForkedAt + own - 1
	}
	up := "" // a root
	if s.ParentID != "" {
		up = ontology.SessionIRI(s.ParentID)
	}
	return kg.Params{"s": g, "own": kg.Int(own), "head": kg.String(head), "gen": kg.Int(s.gen),
		"pi": kg.Int(pi), "prev": kg.String(prev), "forkOf": kg.String(up), "forkAt": kg.Int(s.ForkedAt)}
}

// persistOnce reads the stored state of s, writes what is missing and
// reports whether the store now holds s. false with no error means the
// update lost a race and the state must be read again.
func (st *Store) persistOnce(ctx context.Context, s *Session) (bool, error) {
	g := sessionIRI(s.ID)
	parent := g
	if s.ParentID != "" {
		parent = sessionIRI(s.ParentID)
	}
	q, err := bind("state", qState, kg.Params{"s": g, "parent": parent, "branch": kg.String(s.Branch), "k": kg.Int(s.ForkedAt - 1), "last": kg.Int(len(s.Turns) - 1)})
	if err != nil {
		return false, err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return false, err
	}
	if len(res.Solutions) != 1 {
		return false, fmt.Errorf("%w: %d state rows for one session", ErrCorrupt, len(res.Solutions))
	}
	row := res.Solutions[0]
	own := s.Turns[s.ForkedAt:]
	if _, ok := row["exists"]; !ok {
		return st.create(ctx, s, row)
	}
	if s.create {
		return false, fmt.Errorf("%w: a session with this id is stored", ErrExists)
	}
	if err := sameOwner(s, row); err != nil {
		return false, err
	}
	if err := sameFork(s, row); err != nil {
		return false, err
	}
	if err := sameKind(s, row); err != nil {
		return false, err
	}
	if err := sameGen(s, row); err != nil {
		return false, err
	}
	if _, ok := row["own"]; !ok {
		if err := appendable(row); err != nil {
			return false, err
		}
		return st.appendLegacy(ctx, s)
	}
	n, err := row.Int("own")
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if n > len(own) {
		return false, fmt.Errorf("%w: the store holds %d turns of its own, the caller %d", ErrConflict, n, len(own))
	}
	head, all, state := digestsState(own, n)
	if head != row.String("head") {
		return false, fmt.Errorf("%w: the %d stored turns differ from the caller's", ErrConflict, n)
	}
	chain := chainDigests("", s.Turns)
	if n == len(own) {
		// The head digest covers role, content and time: the chain digest
		// of the last turn covers every field (and the turns before).
		if d := row.String("lastdigest"); d != "" && n > 0 && d != chainAt(chain, len(chain)-1) {
			return false, fmt.Errorf("%w: the %d stored turns differ from the caller's (in their fields beyond role, content and time)", ErrConflict, n)
		}
		s.seen = seenAfter(s, all, state, chainAt(chain, len(chain)-1))
		s.replaced = s.seen // found stored: a statement of it replaces nothing
		return true, nil    // nothing to write
	}
	if err := appendable(row); err != nil {
		return false, err
	}
	if err := ownBranch(s, own[n:]); err != nil {
		return false, err
	}
	var d kg.Data
	sg := st.newStaging()
	for i, t := range own[n:] {
		addTurn(&d, sg, g, t, chain[s.ForkedAt+n+i])
	}
	linkResults(&d, g, s.Turns, s.ForkedAt+n)
	addHead(&d, g, len(own), all)
	return st.sendAppend(ctx, s, &d, sg, n, head, chainAt(chain, s.ForkedAt+n-1), all, state, chain[len(chain)-1])
}

// sendAppend sends the append of the own turns of s from index n on,
// whose quads d (and staging graph sg) hold, as append.ru's compare and
// swap: s holds n turns of its own with head digest head, its last
// stored turn has chain digest prev. all and state are the head digest
// and hash state of every own turn, last the chain digest of the last:
// when the append applied, they become what s has seen.
//
// With an ack (Fuseki, Oxigraph), a success answer says it applied,
// whatever a Delete or a Rewind does before a question could be asked
// (issue 22, seed 533897560508: the full path, which asked after the
// answer, found the session deleted and answered ErrConflict for an
// append that had landed).
func (st *Store) sendAppend(ctx context.Context, s *Session, d *kg.Data, sg *staging, n int, head, prev, all string, state hashState, last string) (bool, error) {
	own := s.Turns[s.ForkedAt:]
	w, err := st.appendWrite(s, d, sg, n, head, prev, own[n:], all, last)
	if err != nil {
		return false, err
	}
	ok, err := st.applyWrite(ctx, w, sg)
	if ok {
		s.seen = seenAfter(s, all, state, last)
		s.replaced = seen{ok: true, own: n}
		if n > 0 {
			s.replaced.chain = prev
		}
	}
	return ok, err
}

// appendWrite returns the write of append.ru for session s: the quads d
// (and staging graph sg) of its new turns more, after n own turns with
// head digest head, the last of which has chain digest prev; all is the
// head digest of its own turns after the append, last the chain digest
// of the last new turn. It adds the ack's quad to d, and hints a lone
// append for a replica's applier (appendhint).
func (st *Store) appendWrite(s *Session, d *kg.Data, sg *staging, n int, head, prev string, more []Turn, all, last string) (write, error) {
	g := sessionIRI(s.ID)
	data, err := d.Quads()
	if err != nil {
		return write{}, invalidTerm(err)
	}
	ack, acks := st.ackGraph()
	if acks {
		d.Add(ack, ack, ack, ack) // written only if the compare and swap holds
	}
	u, err := withStaged("append", uAppend, sg, d, appendParams(s, g, n, head, prev))
	if err != nil {
		return write{}, err
	}
	share := shareValues(g, s, time.Time{}, more, st.writerTime())
	w := write{update: u + share, ack: ack, check: appended(g, more[len(more)-1], last), gone: g}
	if acks && share == "" && sg.empty() {
		if h, ok := appendHint(u, data, ack, s, n, head, prev, n+len(more), all, last); ok {
			w.hint, w.app = h.Encode(), &h
		}
	}
	return w, nil
}

// appendHint returns the hint of append update u, append.ru bound for s
// with the quads data and ack graph ack, from n own turns with head
// digest head (the last with chain digest prev) to own turns with head
// digest all, the last with chain digest last; false when u is not as
// the hint must describe it.
func appendHint(u, data string, ack rdf.IRI, s *Session, n int, head, prev string, own int, all, last string) (appendhint.Hint, bool) {
	at := strings.Index(u, data+"GRAPH "+termOrPanic(ack))
	where := strings.LastIndex(u, "WHERE {")
	end := strings.LastIndex(u, "}")
	if at < 0 || where < at || end < where {
		return appendhint.Hint{}, false
	}
	h := appendhint.Hint{
		Session: sessionIRI(s.ID).String(), Ack: ack.String(),
		Cond: [2]int{where + len("WHERE {"), end}, Data: [2]int{at, at + len(data)},
		Own: n, Head: head, Prev: prev, Gen: s.gen, ForkAt: s.ForkedAt,
		NewOwn: own, NewHead: all, Last: last,
	}
	if s.ParentID != "" {
		h.ForkOf = ontology.SessionIRI(s.ParentID)
	}
	if n == 0 {
		h.Prev = ""
	}
	return h, true
}

// create writes s, which the store does not hold yet.
func (st *Store) create(ctx context.Context, s *Session, row kg.Solution) (bool, error) {
	g := sessionIRI(s.ID)
	own := s.Turns[s.ForkedAt:]
	if _, ok := row["deleted"]; ok {
		err := ErrConflict
		if s.create {
			err = ErrExists
		}
		return false, fmt.Errorf("%w: the session was deleted (%s); a late write does not bring it back", err, row.String("deleted"))
	}
	depth := 0
	chain := chainDigests("", s.Turns)
	base := chainAt(chain, s.ForkedAt-1) // the digest that stands for the prefix the fork inherits
	if s.ParentID != "" {
		var again bool
		var err error
		if depth, again, err = st.admitFork(ctx, s, row, base); err != nil || again {
			return false, err
		}
	}
	if err := ownBranch(s, own); err != nil {
		return false, err
	}
	now := st.now()
	var d kg.Data
	addSession(&d, s, now)
	addExpiry(&d, s, now)
	sg := st.newStaging()
	addInitial(&d, sg, g, s)
	for i, t := range own {
		addTurn(&d, sg, g, t, chain[s.ForkedAt+i])
	}
	linkResults(&d, g, s.Turns, s.ForkedAt)
	_, head, state := digestsState(own, 0)
	addHead(&d, g, len(own), head)
	ack, acks := st.ackGraph()
	if acks {
		d.Add(ack, ack, ack, ack) // written only if the session is new
	}
	var u string
	var err error
	if s.ParentID == "" {
		u, err = withStaged("create-root", uCreateRoot, sg, &d, kg.Params{"s": g})
	} else {
		u, err = st.forkUpdate(&d, sg, s, row, now, base)
	}
	if err != nil {
		return false, err
	}
	u += shareValues(g, s, now, own, st.writerTime())
	last, lastDigest := g, ""
	if len(own) > 0 {
		last, lastDigest = kg.MustIRI(own[len(own)-1].ID), chainAt(chain, len(chain)-1)
	}
	verify := bindOrPanic("verify-create", qVerifyCreate, kg.Params{"s": g, "created": kg.DateTime(now),
		"agent": kg.MustIRI(ontology.AgentIRI(s.Principal)), "t": last, "digest": kg.String(lastDigest)})
	ok, err := st.applyAcked(ctx, u, ack, verify, g, sg) // no ack: apply
	if ok {
		s.seen = seenAfter(s, head, state, chainAt(chain, len(chain)-1))
		s.replaced = seen{} // new with this write
	}
	if ok {
		s.depth = depth
	}
	return ok, err
}

// apply sends update u, a compare and swap that stores nothing when its
// condition fails, and then learns from check (an ASK) whether it applied:
// SPARQL Update returns no row count, so this is how Persist learns
// whether its update took effect. The question is about what this update
// wrote, not about the head, which another writer may already have moved
// on. The update is safe to repeat (its condition no longer holds once it
// applied). It goes through the Store's group commit (commit): alone, or
// with the writes sent meanwhile.
//
// With sg (non-nil) the update takes long contents from a staging graph,
// which apply sends first; the update drops it in the same request
// (staging). When the update did not apply, apply removes the staging
// graph itself.
func (st *Store) apply(ctx context.Context, u, check string, gone rdf.IRI, sg *staging) (bool, error) {
	return st.applyWrite(ctx, write{update: u, check: check, gone: gone}, sg)
}

// applyAcked is apply for an update that writes graph ack only if its
// condition holds: alone, it goes with acked(ack), which fails the whole
// request when the condition failed, so that the answer tells whether it
// applied in one round trip (a server error: it did not, the store rolled
// the request back; no answer: check tells); in a batch, check tells
// (commit). With a zero ack (a store without acks) it is apply.
func (st *Store) applyAcked(ctx context.Context, u string, ack rdf.IRI, check string, gone rdf.IRI, sg *staging) (bool, error) {
	return st.applyWrite(ctx, write{update: u, ack: ack, check: check, gone: gone}, sg)
}

// applyWrite sends sg's staged contents, then commits w.
func (st *Store) applyWrite(ctx context.Context, w write, sg *staging) (bool, error) {
	if err := sg.send(ctx, st.c); err != nil {
		sg.drop(ctx, st.c) // a PUT whose answer was lost may have landed
		return false, err
	}
	ok, err := st.commit(ctx, w)
	if !ok {
		sg.drop(ctx, st.c)
	}
	return ok, err
}

// applySeen is apply for an update that stores all of s's own turns, whose
// digest is head with hash state state, the last turn of its effective
// history having chain digest chain: once it applied, s.seen says so, for
// the next Persist's fast path. The legacy append's way (sendAppend is
// the others').
func (st *Store) applySeen(ctx context.Context, s *Session, u string, sg *staging, check, head string, state hashState, chain string) (bool, error) {
	ok, err := st.apply(ctx, u, check, sessionIRI(s.ID), sg)
	if ok {
		s.seen = seenAfter(s, head, state, chain)
		s.replaced = seen{} // stored before turn counts: its statements begin here
	}
	return ok, err
}

// appended is the question whether turn t of session g, as this writer
// holds it, is stored: the last turn of an append, which wrote all or
// nothing, with chain digest digest (which covers every field of the turn
// and of those before it, so another writer's turn alike in role, content
// and time does not pass for it).
func appended(g rdf.IRI, t Turn, digest string) string {
	return bindOrPanic("verify-append", qVerifyAppend, kg.Params{
		"s": g, "t": kg.MustIRI(t.ID), // stamped by Persist
		"digest": kg.String(digest),
	})
}

// appendLegacy persists s whose stored form predates trails:ownTurns: it
// compares the stored turns one by one, then writes the missing ones with a
// count and digest.
func (st *Store) appendLegacy(ctx context.Context, s *Session) (bool, error) {
	g := sessionIRI(s.ID)
	q, err := bind("stored-turns", qStoredTurns, kg.Params{"s": g})
	if err != nil {
		return false, err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return false, err
	}
	stored, err := readTurns(res, func(int) string { return MainBranch })
	if err != nil {
		return false, err
	}
	own := s.Turns[s.ForkedAt:]
	if len(stored) > len(own) {
		return false, fmt.Errorf("%w: the store holds %d turns, the caller %d", ErrConflict, len(stored), len(own))
	}
	for i, t := range stored {
		m := own[i]
		if t.Index != m.Index || t.Role != m.Role || t.Content != m.Content || !t.Created.Equal(m.Created) {
			return false, fmt.Errorf("%w: stored turn %d differs from the caller's", ErrConflict, t.Index)
		}
	}
	if err := ownBranch(s, own[len(stored):]); err != nil {
		return false, err
	}
	chain := chainDigests("", s.Turns)
	var d kg.Data
	sg := st.newStaging()
	for i, t := range own[len(stored):] {
		addTurn(&d, sg, g, t, chain[s.ForkedAt+len(stored)+i])
	}
	linkResults(&d, g, s.Turns, s.ForkedAt+len(stored))
	_, head, state := digestsState(own, 0)
	addHead(&d, g, len(own), head)
	u, err := withStaged("append-legacy", uAppendOld, sg, &d, kg.Params{"s": g, "next": kg.Int(len(stored))})
	if err != nil {
		return false, err
	}
	u += shareValues(g, s, time.Time{}, own[len(stored):], st.writerTime())
	if len(own) == len(stored) {
		return st.applySeen(ctx, s, u, sg, bindOrPanic("verify-head", qVerifyHead, kg.Params{"s": g, "own": kg.Int(len(own)), "head": kg.String(head)}), head, state, chainAt(chain, len(chain)-1))
	}
	return st.applySeen(ctx, s, u, sg, appended(g, own[len(own)-1], chainAt(chain, len(chain)-1)), head, state, chainAt(chain, len(chain)-1))
}
