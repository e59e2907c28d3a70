package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/witness"
)

// The queries of rewinds, read once.
var (
	uRewind       = query("rewind.ru")
	qVerifyRewind = query("verify-rewind.rq")
	qRewindWhy    = query("rewind-why.rq")
	qRewinds      = query("rewinds.rq")
)

// RewindOptions qualify a Rewind. The zero value records no reason and
// the session's own principal as who rewound it.
type RewindOptions struct {
	// Reason says why the session is rewound, in words, on the rewind's
	// PROV activity and on the archive's fork record (trails:reason).
	Reason string
	// By names the principal who rewinds, for the PROV records (default:
	// the session's own principal).
	By string
}

// RewindResult says what a Rewind did.
type RewindResult struct {
	Archive    string   // id of the archive: the fork at To that holds the abandoned turns
	To         int      // the index rewound to: the session's new length
	Moved      int      // turns moved into the archive (the session had To+Moved)
	Anchors    []string // names of the anchors moved into the archive, sorted
	Reparented []string // ids of the forks re-parented to the archive, oldest first
}

// RewindRecord is one rewind of a session, as its PROV record says.
type RewindRecord struct {
	Archive    string   // id of the archive holding the abandoned turns
	To         int      // the index rewound to
	Reparented []string // ids of the forks moved to the archive, sorted
	Principal  string   // who rewound it
	Reason     string   // why, "" when none was given
	Time       time.Time
}

// Rewind makes stored session id continue from index to (design note 004) without
// deleting anything: the session keeps its id, and the turns it owns from
// index to on move, untouched (same IRI, role, content, branch and
// creation time), into a new archive session, an ordinary fork of the
// session at to (fresh id and fork label, the session's principal,
// trails:rewoundFrom the session), so that Load and Replay of the archive
// give the abandoned history. The session's anchors beyond to move to the
// archive too, as do its forks made beyond to, which depend on the
// abandoned turns (they are re-parented to the archive; forks made at or
// before to stay). Everything is one SPARQL Update, guarded by a compare and
// swap on the session's turn count and digest, parent, fork point and
// rewind count: a writer appending at the same time either lands before
// (and the rewind fails) or fails itself, and nothing is half done. PROV
// records a trails:Rewind activity and the archive's trails:Fork.
//
// It returns the session as Load would now return it, ready to Append and
// Persist: the turns it writes from now on have IRIs of the session's new
// generation (ontology.TurnIRIGen), so they never take the IRI of a moved
// turn, and a Session value loaded before the rewind can no longer be
// persisted (ErrConflict). Turn IDs handed out before stay valid: those of
// moved turns now name turns of the archive.
//
// Rewinding into the prefix the session inherits (to < ForkedAt) is
// refused: fork the parent at to instead.
//
// It returns ErrInvalid for a bad id or reason, or to out of range
// (ForkedAt <= to < the history's length; to equal to the length has
// nothing to rewind); the errors of Load (ErrNotFound, ErrParentMissing,
// ...); ErrForkDepth when a re-parented fork's chain would exceed the
// store's depth limit; ErrForbidden when a Store scoped to a principal
// would re-parent another principal's fork; ErrNotForkable for a worker
// (its archive would be a fork of it); ErrState when the session is in a
// terminal state; ErrConflict when the session or its forks changed while
// it was being rewound, or it was stored before turn counts existed
// (persist it once first); or a store error wrapping the kg error. After
// a lost answer Rewind fences its update before asking whether it applied
// (as Persist says): a refusal means nothing was written, and so does a
// store error, unless the store could not be reached to fence the update.
//
// With WithSigning it signs the heads of the session and of its archive;
// when one does not reach the witness it returns the session and the
// result, the rewind being stored, and an error matching ErrNotWitnessed.
func (st *Store) Rewind(ctx context.Context, id string, to int, opts RewindOptions) (_ *Session, _ RewindResult, err error) {
	ctx, call := telemetry.Start(ctx, "session.Rewind", id)
	defer func() { call.End(err) }()
	s, r, heads, err := st.rewind(ctx, id, to, opts)
	if err != nil {
		return nil, RewindResult{}, fmt.Errorf("rewind %s to %d: %w", shownID(id), to, err)
	}
	if err := st.attest(ctx, witness.KindHead, heads...); err != nil {
		return s, r, fmt.Errorf("rewind %s to %d: %w", shownID(id), to, err)
	}
	return s, r, nil
}

// rewindPlan is one attempt at a rewind: what the update writes.
type rewindPlan struct {
	s       *Session // as loaded
	to      int
	archive *Session
	forks   []Info        // the forks to re-parent
	anchors []string      // names of the anchors to move
	opts    RewindOptions // By set
	heads   []ackedHead   // once applied: the heads of the session and of its archive
}

func (st *Store) rewind(ctx context.Context, id string, to int, opts RewindOptions) (*Session, RewindResult, []ackedHead, error) {
	if err := checkID(id); err != nil {
		return nil, RewindResult{}, nil, err
	}
	if !utf8.ValidString(opts.Reason) || !utf8.ValidString(opts.By) {
		return nil, RewindResult{}, nil, fmt.Errorf("%w: reason or principal is not valid UTF-8", ErrInvalid)
	}
	if to < 0 {
		return nil, RewindResult{}, nil, fmt.Errorf("%w: index %d is negative", ErrInvalid, to)
	}
	s, _, err := st.load(ctx, id, -1)
	if err != nil {
		return nil, RewindResult{}, nil, err
	}
	switch n := len(s.Turns); {
	case to > n:
		return nil, RewindResult{}, nil, fmt.Errorf("%w: index %d out of range %d..%d (the session has %d turns)", ErrInvalid, to, s.ForkedAt, n-1, n)
	case to == n:
		return nil, RewindResult{}, nil, fmt.Errorf("%w: nothing to rewind: the session has %d turns", ErrInvalid, n)
	case to < s.ForkedAt:
		return nil, RewindResult{}, nil, fmt.Errorf("%w: index %d lies in the prefix the session inherits from %s (its own turns start at %d): fork that session at %d instead",
			ErrInvalid, to, s.ParentID, s.ForkedAt, to)
	}
	if s.Kind == KindWorker {
		return nil, RewindResult{}, nil, fmt.Errorf("%w: a worker cannot be rewound (its archive would be a fork of it)", ErrNotForkable)
	}
	if s.State.Terminal() {
		return nil, RewindResult{}, nil, fmt.Errorf("%w: the session is %s", ErrState, s.State)
	}
	if opts.By == "" {
		opts.By = s.Principal
	}
	p := &rewindPlan{s: s, to: to, opts: opts}
	if p.forks, err = st.rewindForks(ctx, s, to); err != nil {
		return nil, RewindResult{}, nil, err
	}
	for _, a := range s.Anchors {
		if a.Session == id && a.Index > to {
			p.anchors = append(p.anchors, a.Name)
		}
	}
	slices.Sort(p.anchors)
	for range maxPersistRounds {
		p.archive = &Session{
			ID:        uuid.Must(uuid.NewV7()).String(),
			Principal: s.Principal,
			App:       s.App,
			ParentID:  id,
			ForkedAt:  to,
			Branch:    newBranch(),
			Kind:      KindBranch,
		}
		ok, err := st.applyRewind(ctx, p)
		if err != nil {
			return nil, RewindResult{}, nil, err
		}
		if ok {
			s, r := p.result()
			return s, r, p.heads, nil
		}
		if taken, err := st.rewindRefused(ctx, p); !taken {
			return nil, RewindResult{}, nil, err
		}
		// The random fork label was taken: try another.
	}
	return nil, RewindResult{}, nil, fmt.Errorf("%w: no free fork label for the archive", ErrConflict)
}

// rewindForks returns the forks of s made beyond to, which a rewind to to
// re-parents to its archive. It refuses when that would make a chain
// deeper than the store allows, or when a scoped Store would change
// another principal's fork.
func (st *Store) rewindForks(ctx context.Context, s *Session, to int) ([]Info, error) {
	if s.depth+1 > st.maxDepth {
		return nil, fmt.Errorf("%w: the archive would have %d ancestors, more than %d", ErrForkDepth, s.depth+1, st.maxDepth)
	}
	tree, err := st.unscoped().tree(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	var forks []Info
	for _, c := range tree.Children {
		if c.ForkedAt <= to {
			continue
		}
		if !st.visible(c.Principal) {
			return nil, fmt.Errorf("%w: fork %s of %s, forked beyond %d, belongs to %s and would be re-parented to the archive", ErrForbidden, c.ID, s.ID, to, termsafe.Quote(c.Principal))
		}
		// Each session under c moves one level down: c from s.depth+1
		// ancestors to s.depth+2, and so on below.
		deepest := s.depth + 1 + height(c)
		if deepest > st.maxDepth {
			return nil, fmt.Errorf("%w: re-parenting fork %s to the archive would give a session under it %d ancestors, more than %d", ErrForkDepth, c.ID, deepest, st.maxDepth)
		}
		forks = append(forks, c.Info)
	}
	return forks, nil
}

// height returns the number of levels of the tree under n, n included.
func height(n *Node) int {
	h := 0
	for _, c := range n.Children {
		h = max(h, height(c))
	}
	return h + 1
}

// applyRewind sends the update of plan p and reports whether it applied.
func (st *Store) applyRewind(ctx context.Context, p *rewindPlan) (bool, error) {
	s, a, to := p.s, p.archive, p.to
	g, ga := sessionIRI(s.ID), sessionIRI(a.ID)
	own, keep, moved := s.Turns[s.ForkedAt:], s.Turns[s.ForkedAt:to], s.Turns[to:]
	now := st.now()

	var d kg.Data
	addSession(&d, a, now)
	addHead(&d, ga, len(moved), digest(moved))
	d.Add(ga, ga, iri(ontology.RewoundFrom), g)
	if slices.ContainsFunc(moved, Turn.Structured) {
		d.Add(ga, ga, iri(ontology.StructuredTurns), kg.Bool(true)) // so that Load reads the moved turns' fields
	}
	prov.AddFork(&d, prov.Fork{Child: a.ID, Parent: s.ID, At: to, Principal: p.opts.By, Time: now, Reason: p.opts.Reason})
	rec := prov.Rewind{Session: s.ID, Archive: a.ID, To: to, Principal: p.opts.By, Time: now, Reason: p.opts.Reason}
	forks := make([][]rdf.Term, len(p.forks))
	for i, f := range p.forks {
		rec.Reparented = append(rec.Reparented, f.ID)
		forks[i] = []rdf.Term{sessionIRI(f.ID)}
	}
	prov.AddRewind(&d, rec)
	if err := d.Err(); err != nil {
		return false, fmt.Errorf("%w: %v", ErrInvalid, err) // the principal or reason: the rest was checked
	}
	parent := g
	if s.ParentID != "" {
		parent = sessionIRI(s.ParentID)
	}
	keepHead, head := digests(own, len(keep))
	u, err := withTables("rewind", uRewind, &d, kg.Params{
		"s": g, "a": ga, "parent": parent, "at": kg.Int(s.ForkedAt),
		"own": kg.Int(len(own)), "head": kg.String(head), "prev": kg.Int(s.gen),
		"gen": kg.Int(s.gen + 1), "keep": kg.Int(len(keep)), "keepHead": kg.String(keepHead),
		"to": kg.Int(to), "branch": kg.String(a.Branch), "nforks": kg.Int(len(p.forks)),
	}, map[string]kg.Table{"forks": {Vars: []string{"c"}, Rows: forks}})
	if err != nil {
		return false, err
	}
	lost, err := st.send(ctx, u) // fence.go
	if err != nil {
		return false, err
	}
	ok, err := st.c.Ask(ctx, bindOrPanic("verify-rewind", qVerifyRewind, kg.Params{"s": g, "a": ga, "moved": kg.Int(len(moved))}))
	if err == nil && !ok && lost != nil {
		return false, lost // fenced: it did not apply, and never will
	}
	if ok && st.sign != nil {
		chain := chainDigests("", s.Turns) // the turns keep their digests: Rewind moves them untouched
		keepChain := ""
		if len(keep) > 0 {
			keepChain = chain[to-1]
		}
		before := ackedHead{own: len(s.Turns) - s.ForkedAt}
		if before.own > 0 {
			before.chain = chain[len(chain)-1]
		}
		kept := ackedHead{id: s.ID, own: len(keep), digest: keepHead, chain: keepChain, parent: s.ParentID, at: s.ForkedAt}
		p.heads = []ackedHead{kept.replacing(before),
			{id: a.ID, own: len(moved), digest: digest(moved), chain: chain[len(chain)-1], parent: a.ParentID, at: a.ForkedAt}}
	}
	return ok, err
}

// rewindRefused says why the update of p did not apply: it reports true
// when only the archive's random fork label was taken (try another), else
// the error to return.
func (st *Store) rewindRefused(ctx context.Context, p *rewindPlan) (bool, error) {
	q := bindOrPanic("rewind-why", qRewindWhy, kg.Params{"s": sessionIRI(p.s.ID), "branch": kg.String(p.archive.Branch)})
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return false, err
	}
	if len(res.Solutions) != 1 {
		return false, fmt.Errorf("%w: %d state rows for one session", ErrCorrupt, len(res.Solutions))
	}
	row := res.Solutions[0]
	s := p.s
	if st := State(row.String("state")); st.Terminal() {
		return false, fmt.Errorf("%w: the session is %s", ErrState, st)
	}
	if _, ok := row["exists"]; !ok {
		return false, fmt.Errorf("%w: the session was deleted while it was being rewound", ErrConflict)
	}
	if _, ok := row["own"]; !ok {
		return false, fmt.Errorf("%w: the session was stored before turn counts existed: persist it once, then rewind it", ErrConflict)
	}
	own, _ := row.Int("own")
	gen := 0
	if _, ok := row["rewinds"]; ok {
		gen, _ = row.Int("rewinds")
	}
	if own != len(s.Turns)-s.ForkedAt || row.String("head") != digest(s.Turns[s.ForkedAt:]) || gen != s.gen {
		return false, fmt.Errorf("%w: the session changed while it was being rewound (another writer appended or rewound it); load it and retry", ErrConflict)
	}
	if _, ok := row["taken"]; ok {
		return true, nil
	}
	return false, fmt.Errorf("%w: the session's forks or fork fields changed while it was being rewound; retry", ErrConflict)
}

// result returns the session as the rewind of p left it, and what was done.
func (p *rewindPlan) result() (*Session, RewindResult) {
	s, to := p.s, p.to
	r := RewindResult{Archive: p.archive.ID, To: to, Moved: len(s.Turns) - to, Anchors: p.anchors}
	for _, f := range p.forks {
		r.Reparented = append(r.Reparented, f.ID)
	}
	s.Turns = slices.Clip(s.Turns[:to])
	s.Values = foldValues(s.initials, 2*to, s.Turns, s.pre, sharedOf(s.Values))
	s.Anchors = anchorsUpTo(s.Anchors, to)
	s.gen++
	s.fresh = to
	s.seen = seen{}
	return s, r
}

// Rewinds returns the rewinds of session id, oldest first, as PROV
// recorded them (the records outlive the archives).
//
// It returns ErrInvalid for a bad id, ErrNotFound when the session is not
// stored (or not visible to a Store scoped to a principal), ErrCorrupt when
// a record cannot be read, or a store error wrapping the kg error.
func (st *Store) Rewinds(ctx context.Context, id string) (_ []RewindRecord, err error) {
	ctx, call := telemetry.Start(ctx, "session.Rewinds", id)
	defer func() { call.End(err) }()
	recs, err := st.rewinds(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("rewinds of %s: %w", shownID(id), err)
	}
	return recs, nil
}

func (st *Store) rewinds(ctx context.Context, id string) ([]RewindRecord, error) {
	if _, err := st.Info(ctx, id); err != nil {
		return nil, err
	}
	res, err := st.c.Select(ctx, bindOrPanic("rewinds", qRewinds, kg.Params{"s": sessionIRI(id)}))
	if err != nil {
		return nil, err
	}
	recs := make([]RewindRecord, 0, len(res.Solutions))
	for _, row := range res.Solutions {
		r := RewindRecord{Archive: ontology.SessionID(row.String("archive")), Principal: row.String("principal"), Reason: row.String("reason")}
		if r.To, err = row.Int("to"); err != nil {
			return nil, fmt.Errorf("%w: rewind to %s: %v", ErrCorrupt, r.Archive, err)
		}
		if r.Time, err = row.Time("time"); err != nil {
			return nil, fmt.Errorf("%w: rewind to %s: %v", ErrCorrupt, r.Archive, err)
		}
		for _, c := range strings.Fields(row.String("reparented")) {
			r.Reparented = append(r.Reparented, ontology.SessionID(c))
		}
		slices.Sort(r.Reparented)
		recs = append(recs, r)
	}
	return recs, nil
}
