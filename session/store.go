package session

import (
	"context"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
)

// Querier is what a Store needs of the SPARQL transport: *kg.Client
// implements it, and a program may wrap one (to count, log or trace the
// requests) and pass that to NewStore. A wrapper of a *cluster.Client
// must also pass on its Replicated method (Replicated() bool): a Store
// fills in the values a store would make (the time a shared value
// changed) only for a Querier that says it is replicated, and without
// that each replica fills them in with its own clock.
type Querier interface {
	// Select runs a SELECT query and returns its whole answer.
	Select(ctx context.Context, query string) (*kg.Results, error)
	// Rows runs a SELECT query and returns its rows as they arrive.
	Rows(ctx context.Context, query string) (*kg.Rows, error)
	// Ask runs an ASK query.
	Ask(ctx context.Context, query string) (bool, error)
	// Update runs a SPARQL Update request, one atomic transaction.
	Update(ctx context.Context, update string, opts ...kg.UpdateOption) error
}

var _ Querier = (*kg.Client)(nil)

// Store persists sessions in a Fuseki dataset. It holds no state of its own
// besides its options and the writes waiting to share the next request
// (WithGroupCommit), so any number of Stores (in one process or many) may
// share a dataset. It is safe for concurrent use.
type Store struct {
	c        Querier
	clock    func() time.Time
	maxDepth int
	maxKids  int      // WithMaxChildren: the most forks a session may have, 0 for no limit
	scope    string   // ForPrincipal: the only principal whose sessions this Store sees
	batch    *batcher // WithGroupCommit: the writes waiting for the one in flight (batch.go); nil when off
	cache    *Cache   // WithCache: the turns RawOnly loads read; nil when off
	sign     *signing // WithSigning: the key and witness of each write's statement (witness.go); nil when off
	patch    *patcher // WithConditionalPatch: whether appends go as conditional patches (batchpatch.go); nil when off
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
// (default: the current time, UTC, in milliseconds). A write stamped with
// a time outside years 0000 to 9999 fails with ErrInvalid, naming the
// field, and sends nothing.
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

// DefaultMaxChildren is how many forks a session may have unless the Store
// says otherwise (WithMaxChildren): a guard against fork bombs.
const DefaultMaxChildren = 8

// WithMaxChildren sets how many forks a session may have (default
// DefaultMaxChildren); n <= 0 means no limit. Forks archived by a rewind
// (those with trails:rewoundFrom) do not count, nor do deleted or detached
// ones. Persist checks it inside the update that creates a fork, so of
// forks racing for the last free place exactly one lands and the others
// get ErrTooManyChildren.
func WithMaxChildren(n int) StoreOption {
	return func(st *Store) { st.maxKids = max(n, 0) }
}

// NewStore returns a Store over the dataset of c. Group commit is on
// (WithGroupCommit) unless c routes each request by the session tree it
// names (a RoutesByTree method that returns true, as *cluster.Sharded
// has): one request must then stay inside one tree's group.
func NewStore(c Querier, opts ...StoreOption) *Store {
	st := &Store{c: c, clock: now, maxDepth: MaxForkDepth, maxKids: DefaultMaxChildren, batch: &batcher{}, patch: &patcher{}}
	for _, o := range opts {
		o(st)
	}
	if r, ok := c.(treeRouted); ok && r.RoutesByTree() {
		st.batch = nil
	}
	return st
}

// treeRouted is what a Querier may tell of how it routes requests: by the
// session tree each names (package cluster's Sharded), where a request
// carrying several trees' writes could span groups.
type treeRouted interface{ RoutesByTree() bool }

// With returns a copy of st with opts applied on top of st's own: the
// copy shares st's client and, unless opts turn it off, st's group commit
// queue. An adapter given a Store uses it to add what it needs (package
// adk: a Cache) without changing the caller's Store.
func (st *Store) With(opts ...StoreOption) *Store {
	cp := *st
	for _, o := range opts {
		o(&cp)
	}
	return &cp
}

func (st *Store) now() time.Time { return st.clock().UTC().Truncate(time.Millisecond) }

// replicated is what a Querier tells whose updates several stores apply
// (package cluster: records of a replicated log, applied by each
// replica): each update must make the same changes wherever and whenever
// it applies, so the Store fills in what it would otherwise leave to the
// store (the time of a shared value's change, NOW()).
type replicated interface{ Replicated() bool }

// writerTime returns, when the Querier is replicated, this writer's time
// as a term for an update to carry instead of the store's NOW(); nil
// otherwise.
func (st *Store) writerTime() rdf.Term {
	if r, ok := st.c.(replicated); ok && r.Replicated() {
		return kg.DateTime(st.now())
	}
	return nil
}
