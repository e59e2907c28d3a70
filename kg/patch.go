package kg

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/knakk/rdf"
)

// mediaRDFPatch is RDF Patch's media type.
const mediaRDFPatch = "application/rdf-patch"

// FencedPatch sends patch, an RDF Patch, to the dataset's fenced-patch
// endpoint, which Trails' module for Fuseki serves (fuseki/module; the
// servers scripts/fuseki starts load it when it builds): the patch
// applies in one transaction only while the dataset holds offset as its
// applied offset of log (the quad log trails:appliedOffset offset in the
// graph https://w3id.org/trails/graph/replica; -1 for none). It is a
// replica applier's way to write (package cluster), safe only where one
// writer owns the dataset: a patch has no conditions of its own.
//
// It returns an *Error with status 409 when the dataset holds another
// offset (nothing changed), 400 when the store cannot read the patch
// (nothing changed), 404 when the server has no such endpoint; and what
// Update returns otherwise.
func (c *Client) FencedPatch(ctx context.Context, log rdf.IRI, offset int64, patch []byte) error {
	u := c.endpoint + "/fenced-patch?" + url.Values{"log": {log.String()}, "offset": {strconv.FormatInt(offset, 10)}}.Encode()
	return c.do(ctx, request{op: "fenced patch", method: http.MethodPost, url: u, contentType: mediaRDFPatch, body: patch})
}

// mediaConditionalPatch is the media type of ConditionalPatch's body.
const mediaConditionalPatch = "application/vnd.trails.conditional-patch"

// Conditional is a record of ConditionalPatch: an ASK query and the RDF
// Patch that applies when it holds, at a log's offset.
type Conditional struct {
	Offset int64  // the record's offset in the log
	Ask    string // a SPARQL ASK query
	Patch  []byte // an RDF Patch
	// Params, when not nil, makes Ask a template: each variable named
	// takes the term given, as if it stood in the text (Jena's
	// substitution). The server parses a template once and keeps it, so
	// records that share one and differ in their values skip the parse,
	// which costs more than the evaluation.
	Params Params
	// Update, when not "", makes the record a SPARQL Update run as it is
	// (Ask, Patch and Params unused), which only ConditionalBatch takes:
	// a write whose condition is its own. Ack, when not zero, is the
	// graph into which the update writes the quad (Ack Ack Ack) only when
	// its condition held: the record is then applied, its receipt written
	// (Gated.Receipt) and the ack graph emptied. Without an Ack the
	// record reads as applied once run.
	Update string
	Ack    rdf.IRI
	// Group, when not nil, makes the record a group of writes, which only
	// ConditionalPatch takes: unless Group.Gate is fenced (the record
	// then does not hold), its Members are applied as ConditionalBatch
	// applies its records, each on its own, with Group's receipts and
	// drops, and the record counts as applied. A replica's applier sends
	// a group commit's record so (package cluster).
	Group   *Gated
	Members []Conditional
}

// ConditionalPatch sends recs, records of log that follow offset one by
// one, to the dataset's conditional-patch endpoint, which Trails' module
// for Fuseki serves (fuseki/module): in one write transaction, and only
// while the dataset holds offset as its applied offset of log (as
// FencedPatch), it evaluates each record's ASK on the dataset as the
// records before it left it and applies the record's patch while the
// ASK holds; at the first that does not it stops. The dataset's offset
// moves to the last record applied. It returns how many records were
// applied, from the first (0: nothing changed).
//
// Its errors are FencedPatch's: an *Error with status 409 (another
// offset), 400 (a body, query or patch the store cannot read), 404 (no
// such endpoint); nothing changed with any of them.
func (c *Client) ConditionalPatch(ctx context.Context, log rdf.IRI, offset int64, recs []Conditional) (int, error) {
	body, err := conditionalBody(recs, func(r Conditional, _ int) int64 { return r.Offset })
	if err != nil {
		return 0, err
	}
	n := -1
	u := c.endpoint + "/conditional-patch?" + url.Values{"log": {log.String()}, "offset": {strconv.FormatInt(offset, 10)}}.Encode()
	err = c.do(ctx, request{op: "conditional patch", method: http.MethodPost, url: u, contentType: mediaConditionalPatch, body: body,
		handle: func(resp *http.Response) error {
			v := resp.Header.Get("Trails-Applied")
			var err error
			if n, err = strconv.Atoi(v); err != nil || n < 0 || n > len(recs) {
				return fmt.Errorf("conditional patch: an answer with Trails-Applied %q, not a count of 0 to %d records", v, len(recs))
			}
			return nil
		}})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// conditionalBody returns the body of a conditional-patch request
// carrying recs, record i at offset off(recs[i], i).
func conditionalBody(recs []Conditional, off func(Conditional, int) int64) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("trails-conditional-patch/1\n")
	for i, r := range recs {
		if r.Group != nil {
			sub, err := conditionalBody(r.Members, func(_ Conditional, j int) int64 { return int64(j) })
			if err != nil {
				return nil, fmt.Errorf("conditional patch: record %d: %w", off(r, i), err)
			}
			head := fmt.Sprintf("%d G %d %s", off(r, i), len(sub), r.Group.Gate.String())
			if r.Group.Receipt != (rdf.IRI{}) {
				head += " " + r.Group.Receipt.String()
			} else {
				head += " -"
			}
			for _, d := range r.Group.Drop {
				head += " " + d.String()
			}
			if strings.ContainsAny(head, "\n") || len(strings.Fields(head)) != 5+len(r.Group.Drop) {
				return nil, fmt.Errorf("conditional patch: record %d: a group's graph with a space", off(r, i))
			}
			b.WriteString(head + "\n")
			b.Write(sub)
			continue
		}
		if r.Update != "" {
			ack := "-"
			if r.Ack != (rdf.IRI{}) {
				ack = r.Ack.String()
				if strings.ContainsAny(ack, " \n") {
					return nil, fmt.Errorf("conditional patch: record %d: an ack graph with a space: %q", off(r, i), ack)
				}
			}
			fmt.Fprintf(&b, "%d U %d %s\n", off(r, i), len(r.Update), ack)
			b.WriteString(r.Update)
			continue
		}
		if r.Params == nil {
			fmt.Fprintf(&b, "%d %d %d\n", off(r, i), len(r.Ask), len(r.Patch))
			b.WriteString(r.Ask)
			b.Write(r.Patch)
			continue
		}
		var bind strings.Builder
		for _, name := range slices.Sorted(maps.Keys(r.Params)) {
			t, err := Term(r.Params[name])
			if err != nil {
				return nil, fmt.Errorf("conditional patch: record %d: $%s: %w", off(r, i), name, err)
			}
			bind.WriteString(name + "\t" + t + "\n")
		}
		fmt.Fprintf(&b, "%d %d %d %d\n", off(r, i), len(r.Ask), len(r.Patch), bind.Len())
		b.WriteString(r.Ask)
		b.Write(r.Patch)
		b.WriteString(bind.String())
	}
	return b.Bytes(), nil
}

// Gated is what fences a ConditionalBatch request and what it writes
// and drops besides its records.
type Gated struct {
	// Gate is the request's gate: once a quad (Gate trails:fencedAt ?t)
	// is in the graph https://w3id.org/trails/graph/fences, the request
	// is refused with nothing changed.
	Gate rdf.IRI
	// Receipt, when not zero, is the graph into which each applied update
	// record with an Ack writes its receipt (Receipt trails:applied Ack).
	Receipt rdf.IRI
	// Drop are graphs emptied in the same transaction.
	Drop []rdf.IRI
}

// ConditionalBatch sends recs, independent conditional writes (their
// Offset fields are not read), to the dataset's conditional-patch
// endpoint in its gated mode, which Trails' module for Fuseki serves
// (fuseki/module): in one write transaction, unless g.Gate is fenced, it
// evaluates each record's ASK on the dataset as the records before it
// left it and applies the record's patch when the ASK holds, whatever
// the others' outcome, or runs the record's Update; it writes the
// receipts and empties the graphs g.Drop in the same transaction. It
// returns which records applied. It is a group commit's way to write
// (package session): the gate lets a writer that lost the answer fence
// the request, then ask what it did.
//
// It returns an *Error with status 409 when gate is fenced, 400 when the
// store cannot read a query or patch, 404 when the server has no such
// endpoint (nothing changed with any of them); and what Update returns
// otherwise.
func (c *Client) ConditionalBatch(ctx context.Context, g Gated, recs []Conditional) ([]bool, error) {
	body, err := conditionalBody(recs, func(_ Conditional, i int) int64 { return int64(i) })
	if err != nil {
		return nil, err
	}
	q := url.Values{"gate": {g.Gate.String()}}
	if g.Receipt != (rdf.IRI{}) {
		q.Set("receipt", g.Receipt.String())
	}
	for _, d := range g.Drop {
		q.Add("drop", d.String())
	}
	applied := make([]bool, len(recs))
	err = c.do(ctx, request{op: "conditional patch", method: http.MethodPost, url: c.endpoint + "/conditional-patch?" + q.Encode(), contentType: mediaConditionalPatch, body: body,
		handle: func(resp *http.Response) error {
			v := resp.Header.Get("Trails-Applied-Members")
			if len(v) != len(recs) || strings.Trim(v, "01") != "" {
				return fmt.Errorf("conditional patch: an answer with Trails-Applied-Members %q, not one 0 or 1 for each of %d records", v, len(recs))
			}
			for i := range v {
				applied[i] = v[i] == '1'
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	return applied, nil
}
