package kg

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/knakk/rdf"
)

// Media types of RDF that PutGraph accepts.
const (
	NTriples = "application/n-triples"
	Turtle   = "text/turtle"
)

const (
	mediaNTriples = NTriples
	mediaNQuads   = "application/n-quads"
)

// GetGraph returns the named graph g as N-Triples, through the Graph Store
// Protocol. It is retried while the store is unavailable.
//
// It returns an *Error matching ErrNotFound when the graph does not exist
// or is empty (Fuseki keeps no empty graphs, Oxigraph does: both read as
// none), ErrUnauthorized or ErrUnavailable, or a context error.
func (c *Client) GetGraph(ctx context.Context, g rdf.IRI) ([]byte, error) {
	u, err := c.graphURL(g)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = c.do(ctx, request{
		op: "get graph", method: http.MethodGet, url: u, accept: mediaNTriples, idempotent: true,
		handle: func(resp *http.Response) error {
			if err := checkContentType(resp, mediaNTriples); err != nil {
				return err
			}
			buf.Reset()
			_, err := buf.ReadFrom(resp.Body)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(buf.Bytes())) == 0 {
		// Oxigraph keeps a named graph whose triples were all deleted and
		// serves it empty; Fuseki keeps no empty graphs. Both read as none.
		return nil, &Error{Op: "get graph", Status: http.StatusNotFound, Body: "the graph is empty"}
	}
	return buf.Bytes(), nil
}

// PutGraph replaces the named graph g with data, in the media type given
// (NTriples or Turtle), through a Graph Store PUT. It is retried while the store is unavailable, since a PUT is
// idempotent.
//
// It returns an *Error matching ErrBadRequest (the store could not parse the
// data), ErrUnauthorized or ErrUnavailable, or a context error.
func (c *Client) PutGraph(ctx context.Context, g rdf.IRI, mediaType string, data []byte) error {
	u, err := c.graphURL(g)
	if err != nil {
		return err
	}
	return c.do(ctx, request{
		op: "put graph", method: http.MethodPut, url: u, contentType: mediaType,
		body: data, idempotent: true,
	})
}

// DeleteGraph removes the named graph g (Graph Store DELETE). It is retried
// while the store is unavailable.
//
// It returns an *Error matching ErrNotFound when the graph does not exist
// (also when an earlier attempt deleted it and its answer was lost),
// ErrUnauthorized or ErrUnavailable, or a context error.
func (c *Client) DeleteGraph(ctx context.Context, g rdf.IRI) error {
	u, err := c.graphURL(g)
	if err != nil {
		return err
	}
	return c.do(ctx, request{op: "delete graph", method: http.MethodDelete, url: u, idempotent: true})
}

// Dump streams the whole dataset, every named graph, to w as N-Quads: the
// answer to a Graph Store GET without a graph, which is the whole dataset
// on Fuseki (/data) and on Oxigraph (/store). It
// makes one attempt, since what was written to w cannot be taken back.
//
// It returns an *Error matching ErrUnauthorized or ErrUnavailable (also when
// the stream breaks off), or a context error.
func (c *Client) Dump(ctx context.Context, w io.Writer) error {
	return c.do(ctx, request{
		op: "dump", method: http.MethodGet, url: c.dataURL, accept: mediaNQuads, once: true,
		handle: func(resp *http.Response) error {
			if err := checkContentType(resp, mediaNQuads); err != nil {
				return err
			}
			_, err := io.Copy(w, resp.Body)
			return err
		},
	})
}

// GraphStoreURL returns the URL of the store's Graph Store Protocol
// endpoint (Fuseki's /data, Oxigraph's /store), for a request kg does not
// make, such as a POST of TriG.
func (c *Client) GraphStoreURL() string { return c.dataURL }

func (c *Client) graphURL(g rdf.IRI) (string, error) {
	if _, err := IRI(g.String()); err != nil {
		return "", err
	}
	return withParam(c.dataURL, "graph", g.String()), nil
}

// LoadQuads adds N-Quads to the dataset (Graph Store POST to the dataset),
// each quad into its named graph; a quad without a graph goes to the stored
// default graph, which the union default graph of Trails' config hides from
// queries. Adding a quad that is present changes nothing, so the request is
// retried while the store is unavailable (data with blank nodes would be
// duplicated by a retry: Trails writes none).
//
// It returns an *Error matching ErrBadRequest (the data does not parse),
// ErrUnauthorized or ErrUnavailable, or a context error.
func (c *Client) LoadQuads(ctx context.Context, nquads []byte) error {
	return c.do(ctx, request{
		op: "load quads", method: http.MethodPost, url: c.dataURL, contentType: mediaNQuads,
		body: nquads, idempotent: true,
	})
}
