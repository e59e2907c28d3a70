package kg

import (
	"context"
	"net/http"
)

const mediaSPARQLUpdate = "application/sparql-update"

// UpdateOption changes how Update sends a request.
type UpdateOption func(*request)

// Idempotent marks an update as safe to apply twice (e.g. INSERT DATA of
// triples that are either all new or all present, or a DELETE WHERE), so
// Update may retry it while the store is unavailable. Without it an update
// is retried only when the connection was refused, which proves it was never
// received.
func Idempotent() UpdateOption {
	return func(r *request) { r.idempotent = true }
}

// References says that the update names the sessions ids (Trails
// session ids) only as references: through IRIs under them (a turn's, a
// part's, a tool call's), as objects of the triples it writes, and
// neither reads nor writes their data. Only a router reads it:
// cluster.Sharded sends the update to the replica group of the other
// sessions it names, which need not hold the references (see
// cluster.Sharded.Update). Every other Querier, Client among them,
// ignores it, and the text sent is the same. A writer that needs
// something of a referenced session (the IRI of one of its tool calls)
// reads it first and writes it as a term: the update must not read it,
// since the datasets it is applied to may lack that session (another
// group's replicas) or hold it (an audit replica, which holds every
// group).
func References(ids ...string) UpdateOption {
	return func(r *request) { r.references = append(r.references, ids...) }
}

// ReferencesOf returns the session ids that opts name as references
// (References), in order; nil when none does. It is for a Querier that
// routes updates by the sessions they name.
func ReferencesOf(opts ...UpdateOption) []string {
	var r request
	for _, o := range opts {
		o(&r)
	}
	return r.references
}

// Hint attaches value under key to an update, for a Querier that can use
// it: a *cluster.Client sends each hint as a header of the update's record
// in the replicated log, where a replica's applier may read it (an
// append's hint lets it decide the append's condition by reading and
// apply its data as data). Client, and every Querier that knows no
// hints, ignores it; the text sent is the same. A hint never changes
// what an update does on a store that runs its text.
func Hint(key, value string) UpdateOption {
	return func(r *request) { r.hints = append(r.hints, [2]string{key, value}) }
}

// HintsOf returns the hints of opts (Hint), key and value, in order; nil
// when none has one.
func HintsOf(opts ...UpdateOption) [][2]string {
	var r request
	for _, o := range opts {
		o(&r)
	}
	return r.hints
}

// Update sends a SPARQL Update request as an application/sparql-update body
// (never form-encoded, so there is no size cap). Fuseki applies one request,
// however many ';'-separated operations it holds, as one transaction. On a
// store whose updates are not serializable (Store.SerialUpdates) it first
// waits for the update in flight from this process to be answered. The
// text must hold no value formatted by hand: build it with Bind or Data.
//
// It returns an *Error matching ErrBadRequest (the store refused the
// update), ErrUnauthorized, ErrNotFound or ErrUnavailable, or a context
// error. After ErrUnavailable or a context error the update may or may not
// have been applied; a caller that must know asks the store.
func (c *Client) Update(ctx context.Context, update string, opts ...UpdateOption) error {
	req := request{
		op:          "update",
		method:      http.MethodPost,
		url:         c.updateURL,
		contentType: mediaSPARQLUpdate,
		body:        []byte(update),
		text:        update,
	}
	for _, o := range opts {
		o(&req)
	}
	unlock, err := c.lockUpdates(ctx) // one at a time where the store needs it (profile.go)
	if err != nil {
		return err
	}
	defer unlock()
	return c.do(ctx, req)
}
