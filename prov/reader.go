package prov

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Sentinel errors of the package; errors from the store are *kg.Error values
// and match kg's sentinels instead.
var (
	// ErrInvalid: an argument cannot be used (an empty session id, a
	// parameter value not of its kind, an unknown query). Nothing was sent.
	ErrInvalid = errors.New("prov: invalid argument")
	// ErrNotFound: the session does not exist.
	ErrNotFound = errors.New("prov: not found")
	// ErrInconsistent: the store holds records Trails does not write, such
	// as a parent link that is not a session IRI or a cycle of parents.
	ErrInconsistent = errors.New("prov: inconsistent records")
)

// Querier is what a Reader needs of the store: the whole answer to a
// SELECT query (the answers are a few rows each). *kg.Client is one.
type Querier interface {
	Select(ctx context.Context, query string) (*kg.Results, error)
}

var _ Querier = (*kg.Client)(nil)

// Reader answers questions about forks, lineage, detaches and deletions
// with the queries in queries/*.rq. It is safe for concurrent use.
type Reader struct {
	q Querier
}

// NewReader returns a Reader that queries the store through q, usually a
// *kg.Client.
func NewReader(q Querier) *Reader { return &Reader{q: q} }

// ForkRecord is a fork as the PROV graph records it, with the child's
// branch.
type ForkRecord struct {
	Fork
	// Branch is the child's branch label, "" when the child session no
	// longer exists.
	Branch string
}

// LineageEntry is one session on a lineage chain.
type LineageEntry struct {
	Session  string // the session's id
	Parent   string // its parent's id, "" for a root, a detached or a missing session
	ForkedAt int    // its trails:forkedAtIndex, 0 when it has no parent
	Missing  bool   // no trails:Session exists for it: its graph was dropped
}

// Orphan is a session whose chain of ancestors is broken.
type Orphan struct {
	Session string // the session's id
	Missing string // the id of the first ancestor on its chain that does not exist
	// Deletion is the IRI of the Deletion activity that removed Missing,
	// "" when none was recorded.
	Deletion string
}

// ForksOf returns the direct forks of the session with the given id, oldest
// first, including forks whose child was since deleted or detached. A
// session with no forks, or none that exists, has none.
//
// It returns an error matching ErrInvalid for an empty id, ErrInconsistent
// for records Trails does not write, or a *kg.Error from the store.
func (r *Reader) ForksOf(ctx context.Context, sessionID string) ([]ForkRecord, error) {
	s, err := sessionTerm(sessionID)
	if err != nil {
		return nil, fmt.Errorf("forks of %s: %w", sessionID, err)
	}
	res, err := r.query(ctx, "forks-of", kg.Params{"session": s})
	if err != nil {
		return nil, fmt.Errorf("forks of %s: %w", sessionID, err)
	}
	forks, err := forkRecords(res)
	if err != nil {
		return nil, fmt.Errorf("forks of %s: %w", sessionID, err)
	}
	return forks, nil
}

// ForksBy returns the forks the principal made from time from (inclusive)
// to time to (exclusive), oldest first, including forks whose child was
// since deleted or detached.
//
// It returns an error matching ErrInvalid for an empty principal, one that
// is not UTF-8, or a window that ends before it starts, ErrInconsistent for
// records Trails does not write, or a *kg.Error from the store.
func (r *Reader) ForksBy(ctx context.Context, principal string, from, to time.Time) ([]ForkRecord, error) {
	switch {
	case principal == "" || !utf8.ValidString(principal):
		return nil, fmt.Errorf("forks by %s: %w: principal is empty or not UTF-8", termsafe.Quote(principal), ErrInvalid)
	case to.Before(from):
		return nil, fmt.Errorf("forks by %s: %w: window ends (%v) before it starts (%v)", termsafe.Quote(principal), ErrInvalid, to, from)
	}
	res, err := r.query(ctx, "forks-by-principal", kg.Params{
		"principal": kg.String(principal), "from": kg.DateTime(from), "to": kg.DateTime(to),
	})
	if err != nil {
		return nil, fmt.Errorf("forks by %s: %w", principal, err)
	}
	forks, err := forkRecords(res)
	if err != nil {
		return nil, fmt.Errorf("forks by %s: %w", principal, err)
	}
	return forks, nil
}

// Lineage returns the session with the given id and its ancestors, the
// session first and the root last: entry i+1 is the parent of entry i. A
// root or detached session's lineage is itself alone. When an ancestor's
// graph was dropped the chain ends with it, marked Missing.
//
// It returns an error matching ErrInvalid for an empty id, ErrNotFound when
// the session does not exist, ErrInconsistent when the parent links do not
// form one chain (a cycle, two parents, a link that is not a session IRI),
// or a *kg.Error from the store.
func (r *Reader) Lineage(ctx context.Context, sessionID string) ([]LineageEntry, error) {
	s, err := sessionTerm(sessionID)
	if err != nil {
		return nil, fmt.Errorf("lineage of %s: %w", sessionID, err)
	}
	res, err := r.query(ctx, "lineage", kg.Params{"session": s})
	if err != nil {
		return nil, fmt.Errorf("lineage of %s: %w", sessionID, err)
	}
	chain, err := lineage(res)
	if err != nil {
		return nil, fmt.Errorf("lineage of %s: %w", sessionID, err)
	}
	if len(chain) == 0 || chain[0].Session != sessionID || chain[0].Missing {
		return nil, fmt.Errorf("lineage of %s: %w", sessionID, ErrNotFound)
	}
	return chain, nil
}

// lineage reads the rows of lineage.rq and checks that they form one chain
// ordered by depth.
func lineage(res *kg.Results) ([]LineageEntry, error) {
	chain := make([]LineageEntry, 0, len(res.Solutions))
	for i, row := range res.Solutions {
		depth, err := row.Int("depth")
		if err != nil {
			return nil, err
		}
		if depth != i {
			return nil, fmt.Errorf("%w: %s at depth %d, want %d: the parent links form no single chain (a cycle or two parents)", ErrInconsistent, row.String("ancestor"), depth, i)
		}
		var e LineageEntry
		if e.Session, err = sessionID(row["ancestor"]); err != nil {
			return nil, err
		}
		if t, ok := row["parent"]; ok {
			if e.Parent, err = sessionID(t); err != nil {
				return nil, err
			}
		}
		if _, ok := row["forkedAtIndex"]; ok {
			if e.ForkedAt, err = row.Int("forkedAtIndex"); err != nil {
				return nil, err
			}
		}
		e.Missing = row.String("exists") != "true"
		if i > 0 && chain[i-1].Parent != e.Session {
			return nil, fmt.Errorf("%w: %s at depth %d is not the parent of %s", ErrInconsistent, e.Session, i, chain[i-1].Session)
		}
		chain = append(chain, e)
	}
	if n := len(chain); n > 0 && chain[n-1].Parent != "" {
		return nil, fmt.Errorf("%w: the chain ends at %s, which has a parent", ErrInconsistent, chain[n-1].Session)
	}
	return chain, nil
}

// Orphans returns the sessions whose parent or another ancestor no longer
// exists, with the first missing ancestor on each chain, ordered by that
// ancestor and then by session id.
//
// It returns an error matching ErrInconsistent for records Trails does not
// write, or a *kg.Error from the store.
func (r *Reader) Orphans(ctx context.Context) ([]Orphan, error) {
	res, err := r.query(ctx, "orphans", nil)
	if err != nil {
		return nil, fmt.Errorf("orphans: %w", err)
	}
	orphans := make([]Orphan, 0, len(res.Solutions))
	for _, row := range res.Solutions {
		var o Orphan
		if o.Session, err = sessionID(row["session"]); err != nil {
			return nil, fmt.Errorf("orphans: %w", err)
		}
		if o.Missing, err = sessionID(row["missing"]); err != nil {
			return nil, fmt.Errorf("orphans: %w", err)
		}
		o.Deletion = row.String("deletion")
		orphans = append(orphans, o)
	}
	return orphans, nil
}

// Run runs the query with the given name (see Queries) with its
// parameters given as strings, by name with or without the '$', and
// returns the rows as the store sent them. It serves trails-admin audit.
//
// It returns an error matching ErrInvalid for an unknown query, a missing
// or unknown parameter or a value not of its parameter's kind (see Kind),
// ErrNotFound when a session-id parameter names a session of which the
// store has no record (neither the session nor a PROV record naming it:
// a deleted session's records still count), or a *kg.Error from the store.
func (r *Reader) Run(ctx context.Context, name string, params map[string]string) (*kg.Results, error) {
	q, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("run %s: %w: no such query (see Queries)", name, ErrInvalid)
	}
	text, err := q.Bind(params)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	if err := r.known(ctx, q, params); err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	res, err := r.q.Select(ctx, text)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	return res, nil
}

// qKnown lists which of the given sessions the store has a record of.
//
//go:embed known.rq
var qKnown string

// known fails with ErrNotFound unless the store has a record of every
// session q's session-id parameters name in params (which q.Bind has
// checked). One request, and none for a query without such parameters.
func (r *Reader) known(ctx context.Context, q Query, params map[string]string) error {
	given := make(map[string]string, len(params))
	for k, v := range params {
		given[strings.TrimPrefix(k, "$")] = v
	}
	want := map[string]string{} // IRI -> id
	table := kg.Table{Vars: []string{"s"}}
	for _, p := range q.Params {
		if p.Kind != KindSessionID {
			continue
		}
		t, err := p.Kind.Term(given[p.Name])
		if err != nil {
			return fmt.Errorf("$%s: %w", p.Name, err)
		}
		if _, dup := want[t.String()]; !dup {
			want[t.String()] = given[p.Name]
			table.Rows = append(table.Rows, []rdf.Term{t})
		}
	}
	if len(want) == 0 {
		return nil
	}
	text, err := kg.BindTables(qKnown, nil, map[string]kg.Table{"sessions": table})
	if err != nil {
		return err
	}
	res, err := r.q.Select(ctx, text)
	if err != nil {
		return err
	}
	for _, row := range res.Solutions {
		if t, ok := row["s"]; ok {
			delete(want, t.String())
		}
	}
	if len(want) > 0 {
		first := slices.Min(slices.Collect(maps.Keys(want)))
		return fmt.Errorf("session %s: %w (the store has no record of it)", termsafe.Quote(want[first]), ErrNotFound)
	}
	return nil
}

// query runs the named embedded query with terms for its parameters.
func (r *Reader) query(ctx context.Context, name string, params kg.Params) (*kg.Results, error) {
	q, ok := Lookup(name)
	if !ok {
		panic("prov: no embedded query " + name)
	}
	text, err := q.bind(params)
	if err != nil {
		return nil, err
	}
	return r.q.Select(ctx, text)
}

// forkRecords reads rows with the columns of forks-of.rq and
// forks-by-principal.rq.
func forkRecords(res *kg.Results) ([]ForkRecord, error) {
	forks := make([]ForkRecord, 0, len(res.Solutions))
	for _, row := range res.Solutions {
		var f ForkRecord
		var err error
		if f.Child, err = sessionID(row["child"]); err != nil {
			return nil, err
		}
		if f.Parent, err = sessionID(row["parent"]); err != nil {
			return nil, err
		}
		if f.At, err = row.Int("forkPoint"); err != nil {
			return nil, err
		}
		if f.Time, err = row.Time("time"); err != nil {
			return nil, err
		}
		f.Principal = row.String("principal")
		f.Branch = row.String("branch")
		forks = append(forks, f)
	}
	return forks, nil
}

// sessionID returns the id of the session whose IRI is t, failing with
// ErrInconsistent when t is not the IRI Trails mints for a session.
func sessionID(t rdf.Term) (string, error) {
	iri, ok := t.(rdf.IRI)
	if !ok {
		return "", fmt.Errorf("%w: %v is not a session IRI", ErrInconsistent, t)
	}
	enc, ok := strings.CutPrefix(iri.String(), ontology.SessionBase)
	if !ok {
		return "", fmt.Errorf("%w: %s is not a session IRI", ErrInconsistent, iri.String())
	}
	id, err := url.PathUnescape(enc)
	if err != nil || id == "" || ontology.SessionIRI(id) != iri.String() {
		return "", fmt.Errorf("%w: %s is not a session IRI", ErrInconsistent, iri.String())
	}
	return id, nil
}
