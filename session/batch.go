package session

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/appendhint"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
)

// Group commit (issue 21): one TDB2 write transaction costs about the same
// whatever its size, so the conditional writes of a Store that are sent
// while another is in flight wait for it and then leave together, as one
// SPARQL Update request: one transaction, one commit. Each keeps its own
// condition and learns its own outcome, so the code that writes reads as
// if it wrote alone (commit).
//
// A write that finds nothing in flight goes at once, as it went before
// there was batching (alone): no waiting for company. Writes arriving
// while a request is in flight queue, in order of arrival; when the
// request is answered, up to maxMembers of them (at most maxBatchBytes of
// update text) leave in the next request. So two writes racing on one
// session run in the order they came, as two requests would: the second's
// compare and swap sees the first's effect and fails.
//
// In a batch each write's operations are the conditional ones it would
// send alone minus what fails the request when the condition fails (see
// write.batched): a member whose condition fails stores nothing, and its
// neighbours store theirs. After the request one query asks every
// member's outcome at once (checks): each member learns whether it
// applied, whether the request was answered or its answer was lost.
//
// A member's outcome must come from something only its own write can
// produce: a check that describes the state the write leaves (a session
// with this id, creation time and principal) may be met by another
// member of the same batch that wrote the same (two Creates of one id in
// one millisecond), and both would be told they applied. So a member with
// an ack graph (a quad its update inserts only if its condition held)
// copies that quad, in the same request, into the batch's receipt graph
// (receiptOps: {receipt} trails:applied {ack}, under ontology.StagingBase)
// before dropping its ack graph, and checks asks the receipts. After a
// lost answer the request is fenced first (fence.go): it either committed,
// receipts and all, or never will. Members without an ack graph (state
// changes, and every write on a store without acks) keep their check,
// which names what only they write (a turn with its chain digest, an
// activity IRI).
//
// The receipt graph outlives its request by design: it is dropped by the
// Store's next request that goes through commit (a batch or a lone
// write), once the batch's checks have been asked (takeReceipts), so that
// receipts cost no request and no commit of their own. A Store that
// stops writing, or a process that dies, leaves the last few: they hold
// no session data, no query reads them, check ignores them and
// admin.Dataset.SweepStaging removes them.
//
// Waits are bounded: one request is in flight at a time and the queue
// leaves in order, at most maxMembers a request, so a write waits for at
// most the request in flight and those carrying the writes queued before
// it (each bounded by the kg client's Timeout and MaxAttempts); a write
// whose context ends while it waits leaves the queue unsent. A new kind
// of write joins by calling commit (or apply / applyAcked) with its
// conditional update and its check, instead of sending the update itself.

// Limits of one batch.
const (
	// maxMembers is the most writes one request carries.
	maxMembers = 64
	// maxBatchBytes bounds the update text of one request; a write
	// larger than it goes alone.
	maxBatchBytes = 4 << 20
)

// write is one conditional write, as commit sends it.
type write struct {
	// update is the write's operations: each conditional, so that when
	// the write's condition does not hold (a lost compare and swap) they
	// store nothing; safe to repeat (once applied, the condition no longer
	// holds).
	update string
	// ack, when not zero, is the graph the update writes one quad into only
	// if its condition held (Store.ackGraph): alone, the update is sent
	// with acked(ack), which fails the request when the condition failed,
	// so that its answer says whether it applied; in a batch the quad is
	// copied into the batch's receipt graph and the ack graph dropped (a
	// member must not fail its batch), and the receipt tells (receiptOps).
	ack rdf.IRI
	// check is an ASK query: whether what the update writes is stored,
	// asked after a lost answer to a lone write, and in a batch for a
	// write without ack. "" means the caller asks the store itself once
	// commit returns.
	check string
	// gone, when not zero, is the session whose deletion takes check's
	// evidence with it: after a lost answer, a check that does not hold
	// while gone is recorded deleted says nothing (the write may have
	// landed before the Delete), and the write is not confirmed (issue 22,
	// seed 973475663517: an append answered ErrConflict "was deleted"
	// though its shared values were stored).
	gone rdf.IRI
	// hint, when not "", is the appendhint.Hint of the update, encoded,
	// which a lone write sends with it (kg.Hint) for a replica's applier.
	hint string
	// app is that hint, decoded: with it the write can go as a
	// conditional patch (batchpatch.go).
	app *appendhint.Hint
}

// alone returns the update as the write sends it by itself.
func (w write) alone() string {
	if w.ack == (rdf.IRI{}) {
		return w.update
	}
	return w.update + acked(w.ack)
}

// batched returns the update as a member of a batch with receipt graph r
// sends it: with an ack, the update copies its acknowledgement into r
// (receiptOps).
func (w write) batched(r rdf.IRI) string {
	if w.ack == (rdf.IRI{}) {
		return w.update
	}
	return w.update + receiptOps(w.ack, r)
}

// batcher gathers the writes of one Store into shared requests. Safe for
// concurrent use.
type batcher struct {
	mu       sync.Mutex
	busy     bool       // a request is in flight
	queue    []*pending // writes waiting for it, in order of arrival
	receipts []rdf.IRI  // receipt graphs whose checks were asked, for the next request to drop
}

// pending is a write waiting for or riding in a batch.
type pending struct {
	ctx  context.Context
	w    write
	text string // w.update, without its receipt operations, which name the batch
	done chan struct{}
	ok   bool
	err  error
}

// WithGroupCommit turns group commit on (the default) or off. On, the
// conditional writes of the Store (appends, creates, forks made by
// Persist, merges and state changes) that are sent while another of its
// writes is in flight wait for it and then go together, in one SPARQL
// Update request, one store transaction; each keeps its own compare and
// swap and learns its own outcome, as if it were alone. A write that finds
// nothing in flight goes at once, as it would with group commit off. On
// Fuseki with Trails' module the shared request is a conditional patch
// (WithConditionalPatch). Off, every write is a request of its own. A
// Querier that routes requests by session tree (RoutesByTree,
// *cluster.Sharded) turns it off: see NewStore.
func WithGroupCommit(on bool) StoreOption {
	return func(st *Store) {
		st.batch = nil
		if on {
			st.batch = &batcher{}
		}
	}
}

// commit sends w and reports whether it applied: true when its condition
// held and what it writes is stored; false with no error when it is not
// stored and never will be (its condition did not hold, or the request
// that carried it was lost and has been fenced: the caller reads the
// store to say why, and may write again). A store error means the write
// was not confirmed: it may have applied all the same, or may still (the
// fence after a lost answer could not be sent; or the caller's context
// ended while its batch was in flight). When w.check is "", true means
// only that the request carrying w was answered with success, or fenced
// after its answer was lost: the caller asks the store whether w applied.
func (st *Store) commit(ctx context.Context, w write) (bool, error) {
	b := st.batch
	if b == nil {
		return st.sendAlone(ctx, w, false)
	}
	b.mu.Lock()
	if !b.busy {
		b.busy = true
		b.mu.Unlock()
		return st.sendAlone(ctx, w, true)
	}
	p := &pending{ctx: ctx, w: w, text: w.update, done: make(chan struct{})}
	b.queue = append(b.queue, p)
	b.mu.Unlock()
	select {
	case <-p.done:
		return p.ok, p.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	for i, q := range b.queue {
		if q == p { // still waiting: it leaves, never sent
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			b.mu.Unlock()
			return false, &kg.Error{Op: "update", Err: ctx.Err()}
		}
	}
	b.mu.Unlock()
	// In flight: it may or may not apply, as an update whose caller gave up.
	return false, &kg.Error{Op: "update", Err: ctx.Err()}
}

// next lets the next writes go once the request in flight has been
// answered: the next batch, in a goroutine of its own, or nobody.
func (st *Store) next() {
	b := st.batch
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.busy = false
		return
	}
	group := b.take()
	go st.sendGroup(group)
}

// take removes from the queue the writes of the next request, in order
// of arrival: at most maxMembers, at most maxBatchBytes of text (but
// always the first; the receipt operations, a few hundred bytes a member,
// are not counted), all of whose prologues agree. b.mu is held.
func (b *batcher) take() []*pending {
	var (
		n, size int
		pro     = prologue{}
	)
	for n < len(b.queue) && n < maxMembers {
		p := b.queue[n]
		size += len(p.text)
		if n > 0 && size > maxBatchBytes {
			break
		}
		if _, _, ok := pro.join(p.text); !ok {
			if n == 0 {
				n = 1 // goes alone
			}
			break
		}
		n++
	}
	group := make([]*pending, n)
	copy(group, b.queue)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	return group
}

// sendGroup sends the writes of group, the next to leave, and gives each
// its outcome.
func (st *Store) sendGroup(group []*pending) {
	// The request belongs to no one member: the end of one member's
	// context does not stop the others' (its own waiter returns at once).
	ctx := context.WithoutCancel(group[0].ctx)
	if len(group) == 1 { // alone after all: the single request's way
		p := group[0]
		p.ok, p.err = st.sendAlone(ctx, p.w, true)
		close(p.done)
		return
	}
	if st.sendPatchGroup(ctx, group) {
		return
	}
	gate, gates := st.gateGraph()
	var receipt rdf.IRI // the batch's receipt graph, when a member has an ack
	for _, p := range group {
		if p.w.ack != (rdf.IRI{}) {
			receipt, _ = st.ackGraph()
			break
		}
	}
	pro := prologue{}
	bodies := make([]string, len(group))
	for i, p := range group {
		bodies[i], _, _ = pro.join(p.w.batched(receipt)) // agreed in take
	}
	text := pro.String() + strings.Join(bodies, "\n;\n")
	drops, dropped := st.takeReceipts()
	text += drops
	opts := []kg.UpdateOption{kg.Idempotent()}
	if gates {
		text += gateOps(gate)
		if r, ok := st.c.(replicated); ok && r.Replicated() {
			if h, ok := groupHint(group, bodies, len(pro.String()), receipt, gate, dropped); ok {
				opts = append(opts, kg.Hint(appendhint.GroupKey, h))
			}
		}
	}
	err := st.c.Update(batchContext(ctx, group), text, opts...)
	if err != nil {
		st.keepReceipts(dropped) // a repeated DROP SILENT is harmless
	}
	if errors.Is(err, kg.ErrBadRequest) {
		// The store refused the text (a member it cannot take): each goes
		// alone, in order, before the writes queued behind, so that one
		// cannot fail the others. Nothing was stored, receipts neither.
		for _, p := range group {
			p.ok, p.err = st.sendAlone(ctx, p.w, false)
			close(p.done)
		}
		st.next()
		return
	}
	st.next()
	st.outcomes(ctx, group, receipt, gate, gates, err)
}

// outcomes gives each member of group its outcome once the request that
// carried them, with receipt graph receipt and gate (when gates), ended
// with err.
func (st *Store) outcomes(ctx context.Context, group []*pending, receipt, gate rdf.IRI, gates bool, err error) {
	// settled: the request was answered, or its answer was lost and it is
	// fenced (fence.go): each member's check now says whether it is
	// stored. Unsettled, a check that holds is still true (the member
	// landed), but one that does not may be answered before the request
	// commits: that member is not confirmed.
	settled := err == nil
	if err != nil && gates && unsettled(err, true) {
		fctx, cancel := settleContext(ctx)
		settled = st.fence(fctx, gate) == nil
		cancel()
	}
	applied, cerr := st.checks(ctx, group, receipt)
	if receipt != (rdf.IRI{}) {
		st.keepReceipts([]rdf.IRI{receipt}) // asked: the next request drops it
	}
	for i, p := range group {
		if err != nil && cerr == nil && settled && !applied[i] && st.blind(ctx, p.w) {
			p.err = err // its session was deleted: the check says nothing
			close(p.done)
			continue
		}
		switch {
		case cerr != nil && err != nil:
			p.err = err // not confirmed: reported
		case cerr != nil:
			p.err = cerr
		case applied[i]:
			p.ok = true
		case !settled:
			p.err = err // not confirmed: it may land yet
		case p.w.check == "" && p.w.ack == (rdf.IRI{}):
			p.ok = true // settled: the caller asks the store itself
		}
		// Otherwise not stored, and it never will be: refused, or never
		// applied, which the caller's read of the store tells apart (as
		// after a lone write whose answer was lost).
		close(p.done)
	}
}

// groupHint returns the group hint (appendhint.Group, encoded) of the
// batch of group whose members' bodies (their batched texts without
// their prologues) follow a prologue of pro bytes, joined by "\n;\n",
// with receipt graph receipt, gate and receipt graphs to drop dropped:
// a replica's applier may write it as one conditional patch record
// (cluster's decided path). false when a body is not as the hint must
// describe it.
func groupHint(group []*pending, bodies []string, pro int, receipt, gate rdf.IRI, dropped []rdf.IRI) (string, bool) {
	g := appendhint.Group{Prologue: pro, Gate: gate.String()}
	if receipt != (rdf.IRI{}) {
		g.Receipt = receipt.String()
	}
	for _, d := range dropped {
		g.Drop = append(g.Drop, d.String())
	}
	at := pro
	for i, p := range group {
		cut := len(p.w.batched(receipt)) - len(bodies[i]) // what the prologue's join took from the text's start
		n := len(p.w.update) - cut
		if n < 0 {
			return "", false
		}
		m := appendhint.Member{Span: [2]int{at, at + n}}
		if p.w.ack != (rdf.IRI{}) {
			m.Ack = p.w.ack.String()
		}
		if h := p.w.app; h != nil && h.Cond[0] >= cut && h.Data[0] >= cut {
			a := *h
			shift := at - cut
			a.Cond = [2]int{h.Cond[0] + shift, h.Cond[1] + shift}
			a.Data = [2]int{h.Data[0] + shift, h.Data[1] + shift}
			m.Append = &a
		}
		g.Members = append(g.Members, m)
		at += len(bodies[i]) + len("\n;\n")
	}
	return g.Encode(), true
}

// batchContext returns ctx for the request carrying group, a batch:
// its span named after the members' query when they share one, with the
// batch's size and links to the members' spans (internal/telemetry).
func batchContext(ctx context.Context, group []*pending) context.Context {
	name := telemetry.QueryName(group[0].text)
	members := make([]context.Context, len(group))
	for i, p := range group {
		members[i] = p.ctx
		if telemetry.QueryName(p.text) != name {
			name = ""
		}
	}
	return telemetry.WithBatch(ctx, name, members)
}

// sendAlone sends w as one request of its own and, with release, lets
// the next writes go once it has been answered.
func (st *Store) sendAlone(ctx context.Context, w write, release bool) (bool, error) {
	if ok, sent, err := st.sendPatchAlone(ctx, w, release); sent {
		return ok, err
	}
	telemetry.Committed(ctx)
	if w.ack == (rdf.IRI{}) {
		return st.sendApplied(ctx, w, release)
	}
	// The update fails when its condition does not hold, so that its
	// answer tells: it is sent once, as repeated after it applied, it
	// would fail. Its ack graph, a name of its own, is its gate too.
	drops, dropped := st.takeReceipts()
	var opts []kg.UpdateOption
	if w.hint != "" && drops == "" {
		opts = append(opts, kg.Hint(appendhint.Key, w.hint))
	}
	err := st.update(ctx, w.alone()+drops+gateOps(w.ack), release, opts...)
	if err == nil {
		return true, nil
	}
	st.keepReceipts(dropped)
	if !unsettled(err, false) {
		var ke *kg.Error
		if errors.As(err, &ke) && ke.Status >= 500 {
			return false, nil // refused and rolled back: the caller reads the state again
		}
		return false, err // the store refused the request itself (credentials, ...)
	}
	return st.settle(ctx, w.ack, w, err) // no answer came: it may have applied, or be on its way
}

// sendApplied sends the update (safe to repeat) of w, a write without
// ack, as one request and asks its check; with release, it lets the next
// writes go once the update has been answered, before the check.
func (st *Store) sendApplied(ctx context.Context, w write, release bool) (bool, error) {
	drops, dropped := st.takeReceipts()
	u := w.update + drops
	gate, gates := st.gateGraph()
	if gates {
		u += gateOps(gate)
	}
	err := st.update(ctx, u, release, kg.Idempotent())
	if err != nil {
		st.keepReceipts(dropped)
		if !gates || !unsettled(err, true) {
			return false, err
		}
		return st.settle(ctx, gate, w, err)
	}
	if w.check == "" {
		return true, nil
	}
	return st.c.Ask(ctx, w.check)
}

// settle learns the outcome of write w with gate g whose answer was lost
// (lost): it fences g, then asks w's check (fence.go). When the check is
// "", true means only that the write can no longer apply: the caller asks
// the store whether it did. When the fence fails, or the check does not
// hold and w.gone was deleted (the Delete may have taken what w wrote),
// lost is returned: the write may have applied, or may still.
func (st *Store) settle(ctx context.Context, g rdf.IRI, w write, lost error) (bool, error) {
	fctx, cancel := settleContext(ctx)
	defer cancel()
	if err := st.fence(fctx, g); err != nil {
		return false, lost
	}
	if w.check == "" {
		return true, nil
	}
	ok, err := st.c.Ask(fctx, w.check)
	if err != nil || ok {
		return ok, err
	}
	if st.blind(fctx, w) {
		return false, lost
	}
	return false, nil
}

// blind reports whether a check of w that did not hold says nothing: w's
// session (w.gone) is recorded deleted, or the store cannot tell.
func (st *Store) blind(ctx context.Context, w write) bool {
	if w.gone == (rdf.IRI{}) {
		return false
	}
	q, err := bind("deleted", qDeleted, kg.Params{"s": w.gone})
	if err != nil {
		return true
	}
	gone, err := st.c.Ask(ctx, q)
	return err != nil || gone
}

// update sends update u and, with release, lets the next writes go once
// it has been answered (or has failed in any way).
func (st *Store) update(ctx context.Context, u string, release bool, opts ...kg.UpdateOption) error {
	if release {
		defer st.next()
	}
	return st.c.Update(ctx, u, opts...)
}
