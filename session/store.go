package session

import (
	"context"
	"embed"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// querier is what a Store needs of the SPARQL transport.
type querier interface {
	Query(ctx context.Context, query string) (*kg.Results, error)
	Select(ctx context.Context, query string) (*kg.Results, error)
	SelectRows(ctx context.Context, query string, start func(vars []string) error, row func(kg.Solution) error) error
	Ask(ctx context.Context, query string) (bool, error)
	Update(ctx context.Context, update string, opts ...kg.UpdateOption) error
	Validate(ctx context.Context, shapes []byte, graph string) (*kg.Report, error)
	GetGraph(ctx context.Context, g rdf.IRI) ([]byte, error)
	PutGraph(ctx context.Context, g rdf.IRI, mediaType string, data []byte) error
	Dump(ctx context.Context, w io.Writer) error
	LoadQuads(ctx context.Context, nquads []byte) error
}

var _ querier = (*kg.Client)(nil)

// Store persists sessions in a Fuseki dataset. It holds no state of its own
// besides its options, so any number of Stores (in one process or many) may
// share a dataset. It is safe for concurrent use.
type Store struct {
	c        querier
	clock    func() time.Time
	maxDepth int
	maxKids  int    // WithMaxChildren: the most forks a session may have, 0 for no limit (limits.go)
	scope    string // ForPrincipal: the only principal whose sessions this Store sees
}

// ForPrincipal scopes a Store to principal p: it lists, loads, replays,
// forks, detaches and deletes only p's sessions (any other is ErrNotFound,
// as if absent), persists only sessions whose Principal is p, and refuses
// (ErrForbidden) to persist a fork of another principal's session unless
// it was made with AcrossPrincipals. A Store without it sees everything.
// No Store, scoped or not, has the operators' whole-dataset operations
// (Init, Check, Export, Import, the Expire sweep, Forest, Rechain of every
// session): those are package admin's, on an admin.Dataset built from the
// kg client, which an agent given only a Store cannot reach.
func ForPrincipal(p string) StoreOption {
	return func(st *Store) { st.scope = p }
}

// unscoped returns a copy of st that sees every session.
func (st *Store) unscoped() *Store {
	u := *st
	u.scope = ""
	return &u
}

// visible reports whether a session of principal p is visible to st.
func (st *Store) visible(p string) bool { return st.scope == "" || p == st.scope }

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithClock sets the clock that stamps session creation and PROV records
// (default: the current time, UTC, in milliseconds).
func WithClock(now func() time.Time) StoreOption {
	return func(st *Store) { st.clock = now }
}

// WithMaxDepth lowers the longest parent chain Persist accepts and Load
// walks; values outside 1..MaxForkDepth are ignored.
func WithMaxDepth(n int) StoreOption {
	return func(st *Store) {
		if n >= 1 && n <= MaxForkDepth {
			st.maxDepth = n
		}
	}
}

// NewStore returns a Store over the dataset of c.
func NewStore(c *kg.Client, opts ...StoreOption) *Store {
	st := &Store{c: c, clock: now, maxDepth: MaxForkDepth, maxKids: DefaultMaxChildren}
	for _, o := range opts {
		o(st)
	}
	return st
}

func (st *Store) now() time.Time { return st.clock().UTC().Truncate(time.Millisecond) }

//go:embed queries/*.rq queries/*.ru
var queryFS embed.FS

// query returns the text of an embedded query file.
func query(name string) string {
	b, err := queryFS.ReadFile("queries/" + name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// The queries, read once.
var (
	qChain        = query("chain.rq")
	qTurns        = query("turns.rq")
	qTurnsLegacy  = query("turns-legacy.rq")
	qState        = query("state.rq")
	qStoredTurns  = query("stored-turns.rq")
	qList         = query("list.rq")
	qListBy       = query("list-by-principal.rq")
	qListRoots    = query("list-roots.rq")
	qAgentIDs     = query("agent-ids.rq")
	qBranches     = query("branches.rq")
	qCountTurns   = query("count-turns.rq")
	uCreateRoot   = query("create-root.ru")
	uCreateFork   = query("create-fork.ru")
	uAppend       = query("append.ru")
	uAppendOld    = query("append-legacy.ru")
	uDelete       = query("delete.ru")
	qStored       = query("stored-sessions.rq")
	uDetach       = query("detach.ru")
	qVerifyHead   = query("verify-head.rq")
	qVerifyCreate = query("verify-create.rq")
	qVerifyAppend = query("verify-append.rq")
	qVerifyRoot   = query("verify-detached.rq")
	qInfo         = query("info.rq")
	qDescendants  = query("descendants.rq")
)

// sessionIRI returns the IRI (and graph) of session id.
func sessionIRI(id string) rdf.IRI { return kg.MustIRI(ontology.SessionIRI(id)) }

// idOf returns the session id in a session IRI, or the IRI itself when it
// is not one of ours.
func idOf(iri string) string {
	if rest, ok := strings.CutPrefix(iri, ontology.SessionBase); ok {
		if id, err := url.PathUnescape(rest); err == nil {
			return id
		}
	}
	return iri
}

// iri is kg.MustIRI for the vocabulary's constants.
func iri(s string) rdf.IRI { return kg.MustIRI(s) }

// bind is kg.Bind for the package's own queries, whose parameters are
// always valid: an error here is a bug, reported with the query's name.
func bind(name, q string, p kg.Params) (string, error) {
	out, err := kg.Bind(q, p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
