package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// ForkType says how a fork came about (design note 003). It is recorded on the
// fork's PROV activity (trails:forkType).
type ForkType string

// The fork types.
const (
	// ForkExplicit: someone asked for the fork. The default.
	ForkExplicit ForkType = "explicit"
	// ForkAutoEdit: made because a message was edited.
	ForkAutoEdit ForkType = "auto-edit"
	// ForkAutoRegenerate: made because a response was regenerated.
	ForkAutoRegenerate ForkType = "auto-regenerate"
)

// Creator says on whose initiative a fork was made (design note 003): a person
// or the system itself. Who acted is the session's principal; it is
// recorded on the fork's PROV activity (trails:createdBy).
type Creator string

// The creators of a fork.
const (
	// CreatedByUser: a person asked for the fork. The default.
	CreatedByUser Creator = "user"
	// CreatedBySystem: the system made it, e.g. an agent runtime
	// delegating work to a subagent.
	CreatedBySystem Creator = "system"
)

// forkSpec is what the options of a Fork asked for: a position other than
// an index, and the metadata Persist records with the fork.
type forkSpec struct {
	anchor, turn       string // ForkAtAnchor, ForkAtTurn
	hasAnchor, hasTurn bool
	typ                ForkType
	creator            Creator
	reason             string
	nextSteps, summary string
	err                error // the first option value that cannot be used

	// Set by position: the IRIs of the anchor or turn forked at.
	anchorIRI, turnIRI string
}

// spec returns the forkSpec of new fork s, made on first use.
func (s *Session) spec() *forkSpec {
	if s.fork == nil {
		s.fork = &forkSpec{}
	}
	return s.fork
}

// fail keeps the first error of an option.
func (f *forkSpec) fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

// ForkAtAnchor forks at the anchor named name of the session forked (one
// of its Anchors, set by Load): the child inherits the turns that existed
// when the anchor was made. Give -1 as Fork's index. Fork returns
// ErrNotFound when the session has no anchor of that name. PROV records
// the anchor (trails:fromAnchor).
func ForkAtAnchor(name string) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.anchor, f.hasAnchor = name, true
	}
}

// ForkAtTurn forks before the turn with ID id (Turn.ID) of the session
// forked: that turn is the first one the child does not inherit, so the
// fork point is its index (design note 004's "rewind before invocation"; the turn
// may be one the session inherited). Give -1 as Fork's index. Fork returns
// ErrNotFound when no turn of the session has that ID. PROV records the
// turn (trails:beforeTurn).
func ForkAtTurn(id string) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.turn, f.hasTurn = id, true
	}
}

// WithIntention records with the fork the intention it starts with (seed
// 001's AgentIntention): what the child is to do next and a summary of
// the context it starts from. Either may be empty. Persist writes them on
// the fork's PROV activity (trails:nextSteps, trails:contextSummary);
// prov.Reader.ForkRecord reads them back.
func WithIntention(nextSteps, contextSummary string) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.nextSteps, f.summary = nextSteps, contextSummary
		if !utf8.ValidString(nextSteps) || !utf8.ValidString(contextSummary) {
			f.fail(fmt.Errorf("%w: intention is not valid UTF-8", ErrInvalid))
		}
	}
}

// WithForkType records how the fork came about (default ForkExplicit).
// Fork returns ErrInvalid for a type not listed.
func WithForkType(t ForkType) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.typ = t
		switch t {
		case ForkExplicit, ForkAutoEdit, ForkAutoRegenerate:
		default:
			f.fail(fmt.Errorf("%w: fork type %s: want %q, %q or %q", ErrInvalid, termsafe.Quote(string(t)), ForkExplicit, ForkAutoEdit, ForkAutoRegenerate))
		}
	}
}

// WithCreatedBy records on whose initiative the fork was made (default
// CreatedByUser). Fork returns ErrInvalid for a creator not listed.
func WithCreatedBy(c Creator) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.creator = c
		if c != CreatedByUser && c != CreatedBySystem {
			f.fail(fmt.Errorf("%w: created by %s: want %q or %q", ErrInvalid, termsafe.Quote(string(c)), CreatedByUser, CreatedBySystem))
		}
	}
}

// WithReason records why the fork was made, in words.
func WithReason(reason string) ForkOption {
	return func(s *Session) {
		f := s.spec()
		f.reason = reason
		if !utf8.ValidString(reason) {
			f.fail(fmt.Errorf("%w: reason is not valid UTF-8", ErrInvalid))
		}
	}
}

// position returns the fork point of a fork of parent asked for with index
// at and the options in f (nil: no options). A position option needs at to
// be -1.
func (f *forkSpec) position(parent *Session, at int) (int, error) {
	if f == nil {
		return at, nil
	}
	if f.err != nil {
		return 0, f.err
	}
	switch {
	case f.hasAnchor && f.hasTurn:
		return 0, fmt.Errorf("%w: ForkAtAnchor and ForkAtTurn both given", ErrInvalid)
	case (f.hasAnchor || f.hasTurn) && at != -1:
		return 0, fmt.Errorf("%w: index %d given beside ForkAtAnchor or ForkAtTurn; give -1", ErrInvalid, at)
	case f.hasAnchor:
		a, ok := parent.Anchors[f.anchor]
		if !ok {
			return 0, fmt.Errorf("%w: no anchor named %s in the session's history", ErrNotFound, termsafe.Quote(f.anchor))
		}
		owner := a.Session
		if owner == "" {
			owner = parent.ID
		}
		f.anchorIRI = ontology.AnchorIRI(ontology.SessionIRI(owner), a.Name)
		return a.Index, nil
	case f.hasTurn:
		for _, t := range parent.Turns {
			if t.ID == f.turn && t.ID != "" {
				if _, err := kg.IRI(t.ID); err != nil {
					return 0, fmt.Errorf("%w: turn id %s: %v", ErrInvalid, termsafe.Quote(t.ID), err)
				}
				f.turnIRI = t.ID
				return t.Index, nil
			}
		}
		return 0, fmt.Errorf("%w: no turn with id %s in the session's history", ErrNotFound, termsafe.Quote(f.turn))
	}
	return at, nil
}

// describe adds what f asked to record to the PROV record of the fork.
func (f *forkSpec) describe(r *prov.Fork) {
	if f == nil {
		return
	}
	r.Type, r.CreatedBy = string(f.typ), string(f.creator)
	r.Reason, r.NextSteps, r.ContextSummary = f.reason, f.nextSteps, f.summary
	r.Anchor, r.Turn = f.anchorIRI, f.turnIRI
}

// Fork loads session id, forks it at index at with opts as Session.Fork
// does (at -1 with ForkAtAnchor or ForkAtTurn), and persists the fork,
// with no turns of its own yet, its PROV record and the metadata the
// options give: the way to fork a stored session, as a runtime delegating
// to a subagent does. The fork can be appended to and persisted again.
//
// It returns the errors of Load, of Session.Fork and of Persist.
func (st *Store) Fork(ctx context.Context, id string, at int, opts ...ForkOption) (*Session, error) {
	s, err := st.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	f, err := s.Fork(at, opts...)
	if err != nil {
		return nil, err
	}
	if err := st.Persist(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// The queries of tags, read once.
var (
	uTag       = query("tag.ru")
	uUntag     = query("untag.ru")
	qListByTag = query("list-by-tag.rq")
)

// Tag adds tags to stored session id, in its graph (trails:tag). Adding a
// tag the session has changes nothing.
//
// It returns ErrInvalid for a bad id or a tag that is empty, longer than
// 128 characters or holds white space, control characters (C0, DEL, C1) or
// bidi controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C),
// which could make it print as another text (nothing is sent), ErrNotFound when the session is not stored (or not visible to a
// Store scoped to a principal), or a store error wrapping the kg error.
func (st *Store) Tag(ctx context.Context, id string, tags ...string) error {
	if err := st.tag(ctx, uTag, id, tags); err != nil {
		return fmt.Errorf("tag %s: %w", shownID(id), err)
	}
	return nil
}

// Untag removes tags from stored session id. Removing a tag the session
// does not have changes nothing.
//
// It returns the errors of Tag.
func (st *Store) Untag(ctx context.Context, id string, tags ...string) error {
	if err := st.tag(ctx, uUntag, id, tags); err != nil {
		return fmt.Errorf("untag %s: %w", shownID(id), err)
	}
	return nil
}

// tag runs update u (tag.ru or untag.ru) for session id and tags.
func (st *Store) tag(ctx context.Context, u, id string, tags []string) error {
	if err := checkID(id); err != nil {
		return err
	}
	rows := make([][]rdf.Term, 0, len(tags))
	for _, t := range tags {
		if err := checkLabel("tag", t); err != nil {
			return err
		}
		rows = append(rows, []rdf.Term{kg.String(t)})
	}
	if _, err := st.Info(ctx, id); err != nil {
		return err // ErrNotFound, also for another principal's session
	}
	if len(tags) == 0 {
		return nil
	}
	up, err := kg.BindTables(u, kg.Params{"s": sessionIRI(id)}, map[string]kg.Table{"tags": {Vars: []string{"tag"}, Rows: rows}})
	if err != nil {
		return err
	}
	return st.c.Update(ctx, up, kg.Idempotent())
}

// ByTag keeps the sessions tagged t; given several times, the sessions
// with every tag given.
func ByTag(t string) ListOption { return func(c *listConfig) { c.tags = append(c.tags, t) } }

// listByTag returns the sessions with every tag of tags (at least one),
// narrowed to principal p unless p is "", newest first.
func (st *Store) listByTag(ctx context.Context, tags []string, p string) ([]Info, error) {
	for _, t := range tags {
		if err := checkLabel("tag", t); err != nil {
			return nil, err
		}
	}
	q, err := bind("list-by-tag", qListByTag, kg.Params{"tag": kg.String(tags[0])})
	if err != nil {
		return nil, err
	}
	infos, err := st.infos(ctx, q)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(infos, func(in Info) bool {
		if p != "" && in.Principal != p {
			return true
		}
		for _, t := range tags[1:] {
			if !slices.Contains(in.Tags, t) {
				return true
			}
		}
		return false
	}), nil
}

// splitTags reads the ?tags column of the list queries: the tags joined
// by spaces (a tag holds none), in any order. It returns them sorted, and
// an empty slice (not nil) when there are none.
func splitTags(s string) []string {
	tags := strings.Fields(s)
	slices.Sort(tags)
	return slices.Compact(tags)
}

// Ancestry returns session id and its ancestors as Infos, the root first
// and the session last (design note 003's ancestry, from root to session), read
// with the one request that Load uses to walk the chain.
//
// It returns the errors of Load that concern the chain: ErrInvalid,
// ErrNotFound, an *AncestorError (ErrParentMissing), ErrForkCycle,
// ErrForkDepth, ErrCorrupt, or a store error wrapping the kg error.
func (st *Store) Ancestry(ctx context.Context, id string) ([]Info, error) {
	infos, err := st.ancestry(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("ancestry of %s: %w", shownID(id), err)
	}
	return infos, nil
}

func (st *Store) ancestry(ctx context.Context, id string) ([]Info, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	chain, err := st.chain(ctx, id)
	if err != nil {
		return nil, err
	}
	if !st.visible(chain[0].principal) {
		return nil, ErrNotFound
	}
	var legacy []string
	for _, l := range chain {
		if !l.hasOwn {
			legacy = append(legacy, l.iri)
		}
	}
	counts := map[string]int{}
	if len(legacy) > 0 {
		if counts, err = st.countTurns(ctx, legacy); err != nil {
			return nil, err
		}
	}
	infos := make([]Info, len(chain))
	for k, l := range chain {
		in := Info{
			ID:        idOf(l.iri),
			Principal: l.principal,
			Branch:    branchOrMain(l.branch),
			ForkedAt:  l.at,
			OwnTurns:  l.own,
			Created:   l.created,
			Tags:      splitTags(strings.Join(l.tags, " ")),
		}
		if l.parent != "" {
			in.ParentID = idOf(l.parent)
		}
		l.life.setInfo(&in) // state.go
		if !l.hasOwn {
			in.OwnTurns = counts[l.iri]
		}
		in.Turns = in.ForkedAt + in.OwnTurns
		infos[len(chain)-1-k] = in
	}
	return infos, nil
}
