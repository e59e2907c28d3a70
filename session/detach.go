package session

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/witness"
)

// The queries of Detach, read once.
var (
	uDetach     = query("detach.ru")
	qVerifyRoot = query("verify-detached.rq")
)

// DetachOptions qualify a Detach. The zero value records the detach in
// PROV as done by the fork's own principal.
type DetachOptions struct {
	// By names the principal who detaches, for the PROV record (default:
	// the fork's own principal).
	By string
}

// DetachResult says what a Detach materialized.
type DetachResult struct {
	Copied int            // turns copied into the fork
	From   map[string]int // how many of them came from each ancestor, by id
	Parent string         // the former parent's id
}

// Detach makes fork id independent of its ancestors: it copies the prefix
// the fork inherits into the fork's own graph (each copy keeps its index,
// role, content, creation time and branch, and points at the original with
// trails:copiedFrom; a merge turn keeps the child's result it records:
// status, range, artifacts), copies the anchors its ancestors named inside
// that prefix, links the fork's own tool results to the copies of the
// calls they answer (prov:wasGeneratedBy, in place of the links to the
// parent's calls), and removes the parent link and fork point, in one
// atomic update, recorded in PROV as a trails:Detach activity. A content
// over 64 KiB is not sent back to the store: the update copies it from the
// original turn, if that still holds the content Detach read (its SHA-256),
// so that a fork of a session holding a 16 MiB turn detaches in seconds. Afterwards
// Load returns the same history, the session is a root (it keeps its
// branch label and its prov:wasDerivedFrom link), and its former parent can
// be deleted. Detaching a root does nothing.
//
// It returns ErrInvalid for a bad id, the errors of Load (ErrNotFound,
// ErrParentMissing: a fork whose prefix is gone cannot be detached;
// ErrForkCycle: a session on a parent cycle has no prefix to materialize,
// and Delete with Cascade is what removes a cycle), ErrCorrupt when a turn
// of the prefix no longer matches its hash-chain digest (it was edited in
// the store: a copy would hide that), ErrConflict when the fork changed
// while it was being detached (nothing was written), or a store error
// wrapping the kg error. Detach learns whether its update applied from its
// own PROV activity, so that another writer's change to the fork right
// after it does not turn a detach into a reported conflict; after a lost
// answer it first fences the update (as Persist says). After a store
// error the fork was not detached, unless the store could not be reached
// to fence the update: Info tells.
//
// With WithSigning it signs the fork's head (its copied prefix now its own
// turns); when that does not reach the witness the fork is detached all
// the same and it returns an error matching ErrNotWitnessed.
func (st *Store) Detach(ctx context.Context, id string, opts DetachOptions) (err error) {
	ctx, call := telemetry.Start(ctx, "session.Detach", id)
	defer func() { call.End(err) }()
	_, err = st.detachReport(ctx, id, opts)
	return err
}

// DetachReport is Detach, also saying what was materialized. For a root it
// returns a zero DetachResult.
func (st *Store) DetachReport(ctx context.Context, id string, opts DetachOptions) (_ DetachResult, err error) {
	ctx, call := telemetry.Start(ctx, "session.DetachReport", id)
	defer func() { call.End(err) }()
	return st.detachReport(ctx, id, opts)
}

// detachReport is DetachReport, without a span of its own.
func (st *Store) detachReport(ctx context.Context, id string, opts DetachOptions) (DetachResult, error) {
	r, h, err := st.detach(ctx, id, opts)
	if err != nil {
		return DetachResult{}, fmt.Errorf("detach %s: %w", id, err)
	}
	if h.id != "" {
		if err := st.attest(ctx, witness.KindHead, h); err != nil {
			return r, fmt.Errorf("detach %s: %w", id, err)
		}
	}
	return r, nil
}

// PlanDetach returns what Detach would materialize, without
// changing anything: the dry run of a detach. It returns the errors of
// Detach that can be known in advance.
func (st *Store) PlanDetach(ctx context.Context, id string) (_ DetachResult, err error) {
	ctx, call := telemetry.Start(ctx, "session.PlanDetach", id)
	defer func() { call.End(err) }()
	s, owners, err := st.load(ctx, id, -1)
	if err != nil {
		return DetachResult{}, fmt.Errorf("plan detach %s: %w", id, err)
	}
	return detachResult(s, owners), nil
}

// detachResult says what detaching s (loaded with owners) materializes.
func detachResult(s *Session, owners []string) DetachResult {
	if s.ParentID == "" {
		return DetachResult{}
	}
	r := DetachResult{Copied: s.ForkedAt, From: map[string]int{}, Parent: s.ParentID}
	for _, t := range s.Turns[:s.ForkedAt] {
		r.From[ontology.SessionID(owners[t.Index])]++
	}
	return r
}

func (st *Store) detach(ctx context.Context, id string, opts DetachOptions) (DetachResult, ackedHead, error) {
	s, owners, err := st.load(ctx, id, -1)
	if err != nil {
		return DetachResult{}, ackedHead{}, err
	}
	if s.ParentID == "" {
		return DetachResult{}, ackedHead{}, nil
	}
	principal := cmp.Or(opts.By, s.Principal)
	g := sessionIRI(id)
	own := s.Turns[s.ForkedAt:]
	head := digest(own)
	all := digest(s.Turns)
	res := detachResult(s, owners)

	facts, err := st.mergeFacts(ctx, s.Turns[:s.ForkedAt])
	if err != nil {
		return DetachResult{}, ackedHead{}, err
	}
	chain := chainDigests("", s.Turns[:s.ForkedAt]) // a copy keeps its place in the chain
	if err := st.sameDigests(ctx, s.Turns[:s.ForkedAt], chain); err != nil {
		return DetachResult{}, ackedHead{}, err
	}
	var d kg.Data
	sg := newCopy() // long contents are copied inside the store, not sent back
	act := kg.MustIRI(ontology.ActivityIRI("detach", uuid.Must(uuid.NewV7()).String()))
	copies := make([]Turn, s.ForkedAt) // as stored in g: a copied tool result links the copied call
	for i, t := range s.Turns[:s.ForkedAt] {
		copyIRI := addTurn(&d, sg, g, t, chain[i])
		copies[i] = t
		copies[i].ID = copyIRI.String()
		d.Add(g, copyIRI, iri(ontology.CopiedFrom), kg.MustIRI(t.ID)) // Load read it: after a rewind, not always TurnIRI(owner, index)
		d.Add(g, copyIRI, iri(ontology.ProvWasGeneratedBy), act)
		for _, po := range facts[t.ID] {
			d.Add(g, copyIRI, po.p, po.o)
		}
	}
	linkResults(&d, g, copies, 0)
	unlink := relinkOwnResults(&d, g, s.Turns, copies)
	addInheritedAnchors(&d, g, s) // the positions named inside the prefix
	addDetachedStart(&d, g, s)    // the values its ancestors started with
	addHead(&d, g, len(s.Turns), all)
	prov.AddDetach(&d, act, prov.Detach{Session: id, Parent: s.ParentID, Copied: s.ForkedAt, Principal: principal, Time: st.now()})
	u, err := withStagedTables("detach", uDetach, sg, &d, kg.Params{
		"s": g, "parent": sessionIRI(s.ParentID), "at": kg.Int(s.ForkedAt),
		"own": kg.Int(len(own)), "head": kg.String(head),
	}, map[string]kg.Table{"unlink": unlink})
	if err != nil {
		return DetachResult{}, ackedHead{}, err
	}
	lost, err := st.send(ctx, u) // fence.go
	if err != nil {
		return DetachResult{}, ackedHead{}, err
	}
	q, err := bind("verify-detached", qVerifyRoot, kg.Params{"s": g, "act": act, "prov": kg.MustIRI(ontology.ProvGraph)})
	if err != nil {
		return DetachResult{}, ackedHead{}, err
	}
	ok, err := st.c.Ask(ctx, q)
	switch {
	case err != nil:
		return DetachResult{}, ackedHead{}, err
	case !ok && lost != nil:
		return DetachResult{}, ackedHead{}, lost // fenced: it did not apply, and never will
	case !ok:
		return DetachResult{}, ackedHead{}, fmt.Errorf("%w: the fork changed while it was being detached; retry", ErrConflict)
	}
	before := ackedHead{own: len(own)}
	if len(own) > 0 {
		before.chain = chainHead(chainAt(chain, len(chain)-1), own)
	}
	after := ackedHead{id: id, own: len(s.Turns), digest: all, chain: chainHead(chainAt(chain, len(chain)-1), own)}
	return res, after.replacing(before), nil
}

// relinkOwnResults adds to d, for each own turn of fork s (history turns,
// from s.ForkedAt on) holding a tool result whose call lies in the prefix
// that Detach copies, the link to the copy of that call (copies: the
// prefix as stored in g, their IDs the copies' IRIs), and returns the
// links to the originals that the detach update must delete (?ut
// prov:wasGeneratedBy ?uc): once detached, the fork's results must not
// point into its former parent, which may be deleted.
func relinkOwnResults(d *kg.Data, g rdf.IRI, turns, copies []Turn) kg.Table {
	unlink := kg.Table{Vars: []string{"ut", "uc"}}
	at := len(copies)
	moved := append(slices.Clip(copies), turns[at:]...)
	for i := at; i < len(turns); i++ {
		t := turns[i]
		if !t.Structured() {
			continue
		}
		for k, p := range t.Structure.Parts {
			if p.Kind != PartToolResult || p.CallID == "" {
				continue
			}
			old, now := findCall(turns[:i+1], k, p.CallID), findCall(moved[:i+1], k, p.CallID)
			if old == now || old == "" || now == "" {
				continue
			}
			ti := kg.MustIRI(t.ID)
			unlink.Rows = append(unlink.Rows, []rdf.Term{ti, kg.MustIRI(old)})
			d.Add(g, ti, iri(ontology.ProvWasGeneratedBy), kg.MustIRI(now))
		}
	}
	return unlink
}

// fact is a predicate and object of a turn beyond the seven every turn has.
type fact struct {
	p rdf.IRI
	o rdf.Term
}

// mergeFacts returns, by turn ID, the merge properties of the merge turns
// among turns (see Merge), in one query, or none without asking when
// there is no merge turn.
func (st *Store) mergeFacts(ctx context.Context, turns []Turn) (map[string][]fact, error) {
	var rows [][]rdf.Term
	for _, t := range turns {
		if t.Role == MergeRole {
			rows = append(rows, []rdf.Term{kg.MustIRI(t.ID)})
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	q, err := kg.BindTables(qMergeFacts, nil, map[string]kg.Table{"turns": {Vars: []string{"t"}, Rows: rows}})
	if err != nil {
		return nil, fmt.Errorf("merge-facts: %w", err)
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	facts := make(map[string][]fact, len(rows))
	for _, row := range res.Solutions {
		p, ok := row["p"].(rdf.IRI)
		if !ok {
			return nil, fmt.Errorf("%w: merge-facts: a predicate that is not an IRI", ErrCorrupt)
		}
		t := row.String("t")
		facts[t] = append(facts[t], fact{p: p, o: row["o"]})
	}
	return facts, nil
}
