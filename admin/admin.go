// Package admin is the operators' work on a whole Trails dataset: loading
// the vocabulary (Init), checking its integrity (Check), backing it up and
// restoring it (Export, Import), marking sessions whose time to live ended
// as expired (Expire), drawing every fork tree (Forest), adding the hash
// chain to old turns (Rechain) and comparing the store with the writers'
// signed heads in a witness (Verify). Server reaches what SPARQL does not,
// Fuseki's admin API: compaction (Compact) and backups (Backup), which
// Dataset.Restore loads back.
//
// These operations see every principal's sessions, so they live on a type
// of their own, Dataset, built from the kg client: an agent holds a
// session.Store (scoped to its principal with session.ForPrincipal), which
// has none of them, and only a program given the client can build a
// Dataset. Package admin uses package session for what concerns one
// session (loading it, its hash chain, its tree) and returns session's
// sentinel errors (session.ErrInvalid, session.ErrNotFound, ...), so
// callers test with errors.Is as they do for a Store.
package admin

import (
	"context"
	"embed"
	"fmt"
	"io"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// Dataset is the whole dataset of a kg client, as an operator sees it:
// every session of every principal, the PROV graph and the ontology graph.
// It holds no state of its own besides its options, so it may share its
// dataset with any number of Stores and Datasets. It is safe for
// concurrent use.
type Dataset struct {
	c     Querier
	st    *session.Store // unscoped: it sees every session
	clock func() time.Time
	sign  *signing // WithSigning; nil: Import and Rechain sign nothing
}

// Option configures a Dataset.
type Option func(*Dataset)

// WithClock sets the clock that stamps the PROV records Expire writes,
// and on a replicated Querier (a *cluster.Client) the shared values an
// Import sets (default: the current time, UTC, in milliseconds).
func WithClock(now func() time.Time) Option {
	return func(ds *Dataset) { ds.clock = now }
}

// Querier is what a Dataset needs of the SPARQL transport: a Store's
// queries and updates, SHACL validation and the Graph Store Protocol.
// *kg.Client implements it.
type Querier interface {
	session.Querier
	// Validate validates the union graph (graph "") against shapes.
	Validate(ctx context.Context, shapes []byte, graph string) (*kg.Report, error)
	// GetGraph returns graph g as N-Triples.
	GetGraph(ctx context.Context, g rdf.IRI) ([]byte, error)
	// PutGraph replaces graph g with data of the given media type.
	PutGraph(ctx context.Context, g rdf.IRI, mediaType string, data []byte) error
	// Dump writes the whole dataset as N-Quads to w.
	Dump(ctx context.Context, w io.Writer) error
	// LoadQuads adds N-Quads to the dataset.
	LoadQuads(ctx context.Context, nquads []byte) error
}

var _ Querier = (*kg.Client)(nil)

// eachRow runs a SELECT query on c and calls row with each solution as it
// arrives, so that a large answer is never held whole. An answer cut off
// after its first rows is not asked for again: the call fails with
// kg.ErrUnavailable and the operation (Check, Export) can be run again.
func eachRow(ctx context.Context, c Querier, q string, row func(kg.Solution) error) error {
	rows, err := c.Rows(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Solution()); err != nil {
			return err
		}
	}
	return rows.Err()
}

// New returns the Dataset of client c.
func New(c Querier, opts ...Option) *Dataset {
	ds := &Dataset{c: c, clock: time.Now}
	for _, o := range opts {
		o(ds)
	}
	ds.st = session.NewStore(c, session.WithClock(ds.clock))
	return ds
}

func (ds *Dataset) now() time.Time { return ds.clock().UTC().Truncate(time.Millisecond) }

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

// bind is kg.Bind for the package's own queries, whose parameters are
// always valid: an error here is a bug, reported with the query's name.
func bind(name, q string, p kg.Params) (string, error) {
	out, err := kg.Bind(q, p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// sessionIRI returns the IRI (and graph) of session id.
func sessionIRI(id string) rdf.IRI { return kg.MustIRI(ontology.SessionIRI(id)) }
