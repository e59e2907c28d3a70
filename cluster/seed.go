package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/trails-kg/trails/kg"
)

// Errors of Seed.
var (
	// ErrNotEmpty: the dataset to seed holds data already.
	ErrNotEmpty = errors.New("cluster: the dataset is not empty")
	// ErrNoOffset: the copied dataset holds no applied offset of the topic.
	ErrNoOffset = errors.New("cluster: no applied offset of the topic")
)

// Seed copies the dataset of a running replica, from, into to, the empty
// dataset of a new replica, and returns the offset the copy holds for
// topic ("" means DefaultTopic): an Applier on to then applies the log
// from the record after it, and the new replica converges to the others
// without replaying the log from its start (which retention may have
// removed).
//
// The copy is one Graph Store GET of from's whole dataset (N-Quads, read
// in one transaction: the data and its offset agree) and one POST into to
// (one transaction: all or nothing), held in memory between the two.
// Blank nodes (the ontology graph's shapes) get to's own labels.
//
// It returns an error matching ErrNotEmpty when to holds any quad, and
// ErrNoOffset when the copy holds no offset for topic (from is not a
// replica of that log).
func Seed(ctx context.Context, from, to *kg.Client, topic string) (int64, error) {
	if topic == "" {
		topic = DefaultTopic
	}
	used, err := to.Ask(ctx, "ASK { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }")
	if err != nil {
		return 0, fmt.Errorf("seed: %s: %w", to.Endpoint(), err)
	}
	if used {
		return 0, fmt.Errorf("seed: %w: %s holds data already: a replica is seeded into an empty dataset", ErrNotEmpty, to.Endpoint())
	}
	var b bytes.Buffer
	if err := from.Dump(ctx, &b); err != nil {
		return 0, fmt.Errorf("seed: copy %s: %w", from.Endpoint(), err)
	}
	if err := to.LoadQuads(ctx, b.Bytes()); err != nil {
		return 0, fmt.Errorf("seed: load the copy into %s: %w", to.Endpoint(), err)
	}
	off, err := StoredOffset(ctx, to, topic)
	if err != nil {
		return 0, fmt.Errorf("seed: %w", err)
	}
	if off < 0 {
		return 0, fmt.Errorf("seed: %w: the copy of %s holds no offset of topic %q: not a replica of that log (the copy stays in %s)", ErrNoOffset, from.Endpoint(), topic, to.Endpoint())
	}
	return off, nil
}

// StoredOffset returns the offset of topic's log ("" means DefaultTopic)
// that store, a replica's dataset, holds as applied (-1 when it holds
// none): its Applier applies the log from the record after it. A new
// replica started on a copy of another's dataset (Seed, or a file copy of
// a stopped replica's database) starts there.
//
// It returns kg's errors, and one matching kg.ErrProtocol when the
// dataset holds several offsets for the topic or one that is not an
// integer.
func StoredOffset(ctx context.Context, store *kg.Client, topic string) (int64, error) {
	if topic == "" {
		topic = DefaultTopic
	}
	a, err := NewApplier(ApplierConfig{Brokers: []string{"-"}, Topic: topic, Store: store})
	if err != nil {
		return 0, err
	}
	off, err := a.stored(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", store.Endpoint(), err)
	}
	return off, nil
}
