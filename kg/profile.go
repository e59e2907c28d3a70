package kg

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// Store names a store profile: where a store serves SPARQL Query, SPARQL
// Update and the Graph Store Protocol, and whether it has a SHACL endpoint.
type Store string

// The store profiles.
const (
	// Fuseki is Apache Jena Fuseki, the default: the dataset URL followed by
	// /query, /update, /data (Graph Store) and /shacl (SHACL validation).
	Fuseki Store = "fuseki"
	// Oxigraph is the Oxigraph server: the server URL followed by /query,
	// /update and /store (Graph Store); it has no SHACL endpoint. Run it
	// with --union-default-graph, as Trails reads the union of the named
	// graphs. Its updates are not serializable (see SerialUpdates).
	Oxigraph Store = "oxigraph"
	// Generic is any SPARQL 1.1 store: Config's QueryURL, UpdateURL and
	// GraphStoreURL give its three endpoints; it has no SHACL endpoint.
	// Nothing is known of its isolation, so its updates are treated as
	// Oxigraph's (see SerialUpdates).
	Generic Store = "generic"
)

// Stores lists the store profiles, the default first.
var Stores = []Store{Fuseki, Oxigraph, Generic}

// ErrUnsupported: the store's profile has no endpoint for the operation
// (SHACL validation on a store other than Fuseki). Nothing was sent.
var ErrUnsupported = errors.New("kg: not supported by the store")

// ParseStore returns the profile named s ("" is Fuseki), or an error
// wrapping ErrConfig naming the profiles there are.
func ParseStore(s string) (Store, error) {
	if s == "" {
		return Fuseki, nil
	}
	for _, st := range Stores {
		if Store(strings.ToLower(s)) == st {
			return st, nil
		}
	}
	return "", fmt.Errorf("%w: store %q: want fuseki, oxigraph or generic", ErrConfig, s)
}

// SerialUpdates reports whether the clients of this process send their
// updates to the store one at a time. Trails' conditional writes (an
// update whose WHERE checks the state its INSERT changes) need each update
// to be serializable: of two racing writers, exactly one may see the old
// state. Fuseki (TDB2) runs one write transaction at a time. Oxigraph
// 0.5.13 does not: two updates that read the same triples and write
// different ones can both commit (seen with Trails' racing forks and
// state changes), and even updates that write a common triple both
// committed. On such a store every Client of this process that sends
// updates to one update URL waits for the one before to be answered, so
// writers in one process keep the guarantees; writers in two processes
// sharing the store do not, and must not be run (docs/stores.md).
func (s Store) SerialUpdates() bool { return s != Fuseki }

// updateLocks holds one lock per update URL of a store whose updates are
// sent one at a time (SerialUpdates): a channel of one slot, so that a
// waiter can give up when its context ends.
var updateLocks sync.Map // update URL → chan struct{}

// lockUpdates waits until no other update of this process to the client's
// store is in flight, and returns the function that lets the next one go.
// It does nothing on a store whose updates are serializable, or for a
// client configured with NoUpdateLock.
func (c *Client) lockUpdates(ctx context.Context) (func(), error) {
	if !c.serial {
		return func() {}, nil
	}
	v, _ := updateLocks.LoadOrStore(c.updateURL, make(chan struct{}, 1))
	lock := v.(chan struct{})
	select {
	case lock <- struct{}{}:
		return func() { <-lock }, nil
	case <-ctx.Done():
		return nil, &Error{Op: "update", Err: fmt.Errorf("waiting for the update before: %w", ctx.Err())}
	}
}

// Store returns the profile of the store the client talks to.
func (c *Client) Store() Store { return c.store }

// layout sets the client's endpoint URLs from its profile and cfg's
// overrides; c.endpoint is the dataset (or server) URL, "" for a generic
// store given no Endpoint.
func (c *Client) layout(cfg Config) error {
	st, err := ParseStore(string(cfg.Store))
	if err != nil {
		return err
	}
	c.store = st
	c.serial = st.SerialUpdates() && !cfg.NoUpdateLock
	switch st {
	case Fuseki:
		c.queryURL, c.updateURL, c.dataURL, c.shaclURL = c.endpoint+"/query", c.endpoint+"/update", c.endpoint+"/data", c.endpoint+"/shacl"
	case Oxigraph:
		c.queryURL, c.updateURL, c.dataURL = c.endpoint+"/query", c.endpoint+"/update", c.endpoint+"/store"
	case Generic:
		if cfg.QueryURL == "" || cfg.UpdateURL == "" || cfg.GraphStoreURL == "" {
			return fmt.Errorf("%w: the generic store needs its query, update and Graph Store URLs", ErrConfig)
		}
	}
	for _, o := range []struct {
		name, val string
		dst       *string
	}{
		{"query URL", cfg.QueryURL, &c.queryURL},
		{"update URL", cfg.UpdateURL, &c.updateURL},
		{"Graph Store URL", cfg.GraphStoreURL, &c.dataURL},
	} {
		if o.val == "" {
			continue
		}
		u, err := url.Parse(o.val)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrConfig, o.name, redact(err))
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return fmt.Errorf("%w: %s %q: want an absolute http(s) URL without credentials or fragment", ErrConfig, o.name, u.Redacted())
		}
		*o.dst = u.String()
	}
	if c.endpoint == "" {
		c.endpoint = c.queryURL
	}
	return nil
}

// withParam returns u with the query parameter k=v added.
func withParam(u, k, v string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + k + "=" + url.QueryEscape(v)
}
