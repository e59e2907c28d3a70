package session

// The parent chain of a session: the session and its ancestors, root last,
// as chain.rq (one request, whatever the depth) finds them. Each row of the
// chain query is decoded here, into a link (a session's description) or
// an anchor or tag of one; list.rq and its kin share the session columns.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// maxIndex bounds the turn indices and counts Load believes: beyond it the
// stored value is corrupt (and sums could overflow).
const maxIndex = 1 << 40

// link is one session of a parent chain, as the chain query found it
// (readLink).
type link struct {
	iri       string
	exists    bool
	parent    string // IRI, "" for a root
	at        int    // fork point, 0 for a root
	branch    string
	own       int
	hasOwn    bool   // own is known (trails:ownTurns is stored)
	head      string // the digest of its own turns (trails:headDigest; chain.rq only)
	principal string
	created   time.Time
	anchors   []Anchor // the anchors it named
	tags      []string
	kind      string    // trails:kind, "" when stored without one (see kindOf)
	life      lifecycle // its state, expiry and cancellation flag
	// rewinds is how many times it was rewound (trails:rewinds): the
	// generation of the turn IRIs it writes now (Session.turnID).
	rewinds int
	// archive: it holds the abandoned turns of a rewind (trails:rewoundFrom).
	archive bool
	// structured: it holds structured turns (trails:structuredTurns).
	structured bool
	app        string        // its app (trails:app), "" for none
	initial    []valueChange // the values it starts with (Session.Initial, as stored)
	// shared holds, on the chain's first link only, the current values of
	// its principal's user: keys and its app's app: keys.
	shared map[string]json.RawMessage
	// agent and appi are the IRIs of its agent (trails:principal) and app
	// (trails:app) when the row had no ?principal or ?app: its own graph
	// does not describe them (chain.rq reads the identifiers there), so
	// chainAgents looks them up elsewhere.
	agent, appi string
}

// readLink reads the description of a session from a row of chain.rq (or
// of a query with the same columns: list.rq, compare-chain.rq, ...):
// ?s ?exists ?parent ?at ?branch ?own ?principal ?created ?kind, the
// lifecycle (?state ?expires ?cancel) and the rewinds (?rewinds
// ?rewoundFrom), all but ?s optional. A value out of range is ErrCorrupt.
func readLink(row kg.Solution) (*link, error) {
	l := &link{iri: row.String("s"), parent: row.String("parent"), branch: row.String("branch"), principal: row.String("principal"),
		kind: row.String("kind"), head: row.String("head")}
	if err := storedKind(l.iri, l.kind); err != nil {
		return nil, err
	}
	_, l.exists = row["exists"]
	if _, ok := row["principal"]; !ok {
		l.agent = row.String("agent")
	}
	if _, ok := row["app"]; !ok {
		l.appi = row.String("appi")
	}
	var err error
	if _, ok := row["at"]; ok {
		if l.at, err = row.Int("at"); err != nil || l.at < 0 {
			return nil, fmt.Errorf("%w: session %s: fork point %q", ErrCorrupt, ontology.SessionID(l.iri), row.String("at"))
		}
	}
	if _, ok := row["own"]; ok {
		if l.own, err = row.Int("own"); err != nil || l.own < 0 {
			return nil, fmt.Errorf("%w: session %s: turn count %q", ErrCorrupt, ontology.SessionID(l.iri), row.String("own"))
		}
		l.hasOwn = true
	}
	if _, ok := row["created"]; ok {
		if l.created, err = row.Time("created"); err != nil {
			return nil, fmt.Errorf("%w: session %s: %v", ErrCorrupt, ontology.SessionID(l.iri), err)
		}
	}
	if _, ok := row["rewinds"]; ok {
		if l.rewinds, err = row.Int("rewinds"); err != nil || l.rewinds < 0 || l.rewinds > maxIndex {
			return nil, fmt.Errorf("%w: session %s: rewind count %s", ErrCorrupt, ontology.SessionID(l.iri), termsafe.Quote(row.String("rewinds")))
		}
	}
	_, l.archive = row["rewoundFrom"]
	_, l.structured = row["structured"]
	l.app = row.String("app")
	if l.life, err = readLifecycle(row); err != nil {
		return nil, fmt.Errorf("%w: session %s: %v", ErrCorrupt, ontology.SessionID(l.iri), err)
	}
	return l, nil
}

// lifecycle is a session's lifecycle as a query row holds it.
type lifecycle struct {
	state   State
	expires time.Time
	cancel  bool
}

// readLifecycle reads the optional ?state, ?expires and ?cancel columns of
// a row: a session with no state is active.
func readLifecycle(row kg.Solution) (lifecycle, error) {
	l := lifecycle{state: StateActive}
	if v, ok := row.Literal("state"); ok {
		if l.state = State(v); !l.state.valid() {
			return lifecycle{}, fmt.Errorf("unknown state %s", termsafe.Quote(v))
		}
	}
	if _, ok := row["expires"]; ok {
		t, err := row.Time("expires")
		if err != nil {
			return lifecycle{}, err
		}
		l.expires = t.UTC()
	}
	l.cancel = row.String("cancel") == "true"
	return l, nil
}

// setOn copies the lifecycle to a loaded session.
func (l lifecycle) setOn(s *Session) {
	s.State, s.ExpiresAt, s.CancelRequested = l.state, l.expires, l.cancel
}

// setInfo copies the lifecycle to an Info.
func (l lifecycle) setInfo(in *Info) {
	in.State, in.ExpiresAt, in.CancelRequested = l.state, l.expires, l.cancel
}

// chainExtra reads a row of chain.rq that is not a session's description:
// an anchor of ?s (?anchor bound) or a tag of ?s (?tag bound), adding it to
// anchors or tags by session IRI. It reports whether the row was one.
func chainExtra(row kg.Solution, anchors map[string][]Anchor, tags map[string][]string) (bool, error) {
	s := row.String("s")
	if _, ok := row["tag"]; ok {
		tags[s] = append(tags[s], row.String("tag"))
		return true, nil
	}
	if _, ok := row["anchor"]; !ok {
		return false, nil
	}
	a, err := readAnchor(row, "aindex", "astate", "acreated")
	if err != nil {
		return true, fmt.Errorf("session %s: %w", ontology.SessionID(s), err)
	}
	a.Name, a.Session = row.String("aname"), ontology.SessionID(s)
	anchors[s] = append(anchors[s], a)
	return true, nil
}

// chain returns session id and its ancestors, self first, root last. It
// detects a cycle before the depth limit, whatever the cycle's length.
func (st *Store) chain(ctx context.Context, id string) ([]*link, error) {
	res, err := st.selectTemplate(ctx, "chain", qChain, kg.Params{"self": kg.MustIRI(ontology.SessionIRI(id))})
	if err != nil {
		return nil, err
	}
	links := make(map[string]*link, len(res.Solutions))
	anchors, tags := map[string][]Anchor{}, map[string][]string{}
	var vals chainValues
	for _, row := range res.Solutions {
		if extra, err := vals.add(row); extra || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if extra, err := chainExtra(row, anchors, tags); extra || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if err := addLink(links, row); err != nil {
			return nil, err
		}
	}
	chain, err := st.walk(links, id)
	if err != nil {
		return nil, err
	}
	if err := st.chainAgents(ctx, chain); err != nil {
		return nil, err
	}
	for _, l := range chain {
		l.anchors, l.tags = anchors[l.iri], tags[l.iri]
		sortAnchors(l.anchors)
		l.initial = vals.initial[l.iri]
		for k, c := range l.initial {
			l.initial[k].pos = 2 * l.at
			if c.at >= 0 {
				l.initial[k].pos = 2 * c.at
			}
		}
		slices.SortFunc(l.initial, startOrder)
	}
	chain[0].shared = vals.shared
	return chain, nil
}

// chainAgents fills in the principal and app of each session of chain
// whose own graph does not describe its agent or app (written by hand,
// say) from their descriptions elsewhere in the store, in one request,
// made only when there is such a session. An agent or app described with
// two identifiers is ErrCorrupt, as a session with two principals is
// (addLink).
func (st *Store) chainAgents(ctx context.Context, chain []*link) error {
	var iris []string
	for _, l := range chain {
		for _, a := range []string{l.agent, l.appi} {
			if a != "" && !slices.Contains(iris, a) {
				iris = append(iris, a)
			}
		}
	}
	if len(iris) == 0 {
		return nil
	}
	ids, err := st.agentPrincipals(ctx, iris)
	if err != nil {
		return err
	}
	for _, l := range chain {
		for _, f := range []struct {
			iri string
			id  *string
		}{{l.agent, &l.principal}, {l.appi, &l.app}} {
			switch p := ids[f.iri]; {
			case f.iri == "" || len(p) == 0:
			case len(p) > 1:
				return fmt.Errorf("%w: session %s has two parents, fork points, branches, principals or apps", ErrCorrupt, ontology.SessionID(l.iri))
			default:
				*f.id = p[0]
			}
		}
	}
	return nil
}

// addLink reads a session row of a chain query into links; a session with
// two rows has two values of a field that has one, which is ErrCorrupt.
func addLink(links map[string]*link, row kg.Solution) error {
	l, err := readLink(row)
	if err != nil {
		return err
	}
	if _, dup := links[l.iri]; dup {
		return fmt.Errorf("%w: session %s has two parents, fork points, branches or principals", ErrCorrupt, ontology.SessionID(l.iri))
	}
	links[l.iri] = l
	return nil
}

// walk follows the parent links of session id through links (the
// sessions a chain query found, by IRI) and returns its chain, self first,
// root last. It detects a cycle before the depth limit, whatever the
// cycle's length, and checks what Load relies on: every fork has a branch
// label and a fork point within its parent's history. It returns
// ErrNotFound when id is not among links, an *AncestorError, ErrForkCycle,
// ErrForkDepth or ErrCorrupt.
func (st *Store) walk(links map[string]*link, id string) ([]*link, error) {
	self := ontology.SessionIRI(id)
	var chain []*link
	seen := make(map[string]bool)
	for cur := self; cur != ""; {
		if seen[cur] {
			return nil, fmt.Errorf("%w: %s is its own ancestor", ErrForkCycle, ontology.SessionID(cur))
		}
		seen[cur] = true
		l := links[cur]
		if l == nil || !l.exists {
			if cur == self {
				return nil, ErrNotFound
			}
			if len(chain)-1 >= st.maxDepth {
				break // too deep anyway: report that
			}
			return nil, &AncestorError{Session: id, Missing: ontology.SessionID(cur)}
		}
		chain = append(chain, l)
		cur = l.parent
	}
	if len(chain)-1 > st.maxDepth {
		return nil, fmt.Errorf("%w: %d ancestors, more than %d", ErrForkDepth, len(chain)-1, st.maxDepth)
	}
	for k, l := range chain {
		if l.parent != "" && l.branch == "" {
			return nil, fmt.Errorf("%w: fork %s has no branch label", ErrCorrupt, ontology.SessionID(l.iri))
		}
		if l.at > maxIndex || l.own > maxIndex {
			return nil, fmt.Errorf("%w: session %s: fork point %d or turn count %d out of range", ErrCorrupt, ontology.SessionID(l.iri), l.at, l.own)
		}
		if k+1 < len(chain) {
			if p := chain[k+1]; p.hasOwn && l.at > p.at+p.own {
				return nil, fmt.Errorf("%w: fork %s is forked at %d, beyond the %d turns of its parent %s", ErrCorrupt, ontology.SessionID(l.iri), l.at, p.at+p.own, ontology.SessionID(p.iri))
			}
		}
	}
	return chain, nil
}

// span is the part of an effective history one session of the chain owns:
// indices lo <= i < hi (hi < 0: no upper bound).
type span struct {
	l      *link
	lo, hi int
}

// spansOf returns what each session of the chain (self first) contributes
// to the history below upTo (upTo < 0: all): self owns [at, upTo), each
// ancestor [its at, the smallest fork point below it). Empty spans are left
// out.
func spansOf(chain []*link, upTo int) []span {
	var spans []span
	hi := upTo
	for k, l := range chain {
		if k > 0 {
			if c := chain[k-1].at; hi < 0 || c < hi {
				hi = c
			}
		}
		if hi < 0 || l.at < hi {
			spans = append(spans, span{l: l, lo: l.at, hi: hi})
		}
	}
	return spans
}

// The query of the parent chain, read once.
var (
	qChain = query("chain.rq")
)

// Ancestry returns session id and its ancestors as Infos, the root first
// and the session last (design note 003's ancestry, from root to session), read
// with the one request that Load uses to walk the chain.
//
// It returns the errors of Load that concern the chain: ErrInvalid,
// ErrNotFound, an *AncestorError (ErrParentMissing), ErrForkCycle,
// ErrForkDepth, ErrCorrupt, or a store error wrapping the kg error.
func (st *Store) Ancestry(ctx context.Context, id string) (_ []Info, err error) {
	ctx, call := telemetry.Start(ctx, "session.Ancestry", id)
	defer func() { call.End(err) }()
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
			ID:        ontology.SessionID(l.iri),
			Principal: l.principal,
			Branch:    branchOrMain(l.branch),
			ForkedAt:  l.at,
			OwnTurns:  l.own,
			Created:   l.created,
			Tags:      splitTags(strings.Join(l.tags, " ")),
		}
		if l.parent != "" {
			in.ParentID = ontology.SessionID(l.parent)
		}
		l.life.setInfo(&in)
		if !l.hasOwn {
			in.OwnTurns = counts[l.iri]
		}
		in.Turns = in.ForkedAt + in.OwnTurns
		infos[len(chain)-1-k] = in
	}
	return infos, nil
}
