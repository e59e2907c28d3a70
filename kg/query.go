package kg

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/knakk/sparql"
)

const (
	mediaSPARQLQuery   = "application/sparql-query"
	mediaSPARQLResults = "application/sparql-results+json"
)

// Results holds the whole answer to a SELECT query (see Select).
type Results struct {
	Vars      []string   // the projected variables, in order
	Solutions []Solution // the rows, in the order the store sent them
}

// Solution is one row of a SELECT answer: variable name to RDF term.
// Unbound variables are absent.
type Solution map[string]rdf.Term

// String returns the lexical form of the term bound to v (an IRI's string, a
// literal's value), or "" when v is unbound.
func (s Solution) String(v string) string {
	if t, ok := s[v]; ok {
		return t.String()
	}
	return ""
}

// Int returns the integer bound to v. It fails when v is unbound or not a
// literal of an XSD integer type.
func (s Solution) Int(v string) (int, error) {
	t, ok := s[v]
	if !ok {
		return 0, fmt.Errorf("%w: ?%s is unbound", ErrProtocol, v)
	}
	l, ok := t.(rdf.Literal)
	if !ok || !integerTypes[l.DataType.String()] {
		return 0, fmt.Errorf("%w: ?%s = %s is not an xsd:integer", ErrProtocol, v, describe(t))
	}
	n, err := strconv.Atoi(l.String())
	if err != nil {
		return 0, fmt.Errorf("%w: ?%s = %q is not an integer", ErrProtocol, v, l.String())
	}
	return n, nil
}

// Time returns the xsd:dateTime bound to v, read by ParseDateTime (so a
// year beyond 9999 or before 0000, which Trails never writes, still
// reads). It fails with ErrProtocol when v is unbound or not a date-time
// literal.
func (s Solution) Time(v string) (time.Time, error) {
	t, ok := s[v]
	if !ok {
		return time.Time{}, fmt.Errorf("%w: ?%s is unbound", ErrProtocol, v)
	}
	l, ok := t.(rdf.Literal)
	if !ok || l.DataType.String() != xsdDateTime {
		return time.Time{}, fmt.Errorf("%w: ?%s = %s is not an xsd:dateTime", ErrProtocol, v, describe(t))
	}
	tm, err := ParseDateTime(l.String())
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: ?%s = %q is not a date-time", ErrProtocol, v, l.String())
	}
	return tm, nil
}

// Literal returns the lexical form of the literal bound to v; ok is false
// when v is unbound or bound to an IRI or blank node.
func (s Solution) Literal(v string) (string, bool) {
	l, ok := s[v].(rdf.Literal)
	if !ok {
		return "", false
	}
	return l.String(), true
}

// integerTypes are the XSD datatypes whose values are integers.
var integerTypes = map[string]bool{}

func init() {
	for _, n := range []string{"integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
		"nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte"} {
		integerTypes["http://www.w3.org/2001/XMLSchema#"+n] = true
	}
}

// describe names a term for an error message.
func describe(t rdf.Term) string {
	switch t := t.(type) {
	case rdf.Literal:
		return fmt.Sprintf("%q^^<%s>", truncate(t.String()), t.DataType.String())
	case rdf.IRI:
		return "<" + t.String() + ">"
	default:
		return "a blank node"
	}
}

// Ask runs an ASK query and returns its answer, read from SPARQL JSON
// results (tab-separated results have no form for a boolean). It returns
// the same errors as Rows.
func (c *Client) Ask(ctx context.Context, query string) (bool, error) {
	var answer bool
	err := c.do(ctx, c.queryRequest("ask", query, func(resp *http.Response) error {
		if err := checkContentType(resp, mediaSPARQLResults); err != nil {
			return err
		}
		raw, err := sparql.ParseJSON(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: results: %v", ErrProtocol, err)
		}
		if raw.Head.Vars != nil || raw.Results.Bindings != nil {
			return fmt.Errorf("%w: a SELECT answer to an ASK query", ErrProtocol)
		}
		answer = raw.Boolean
		return nil
	}))
	return answer, err
}

// Ping checks that the dataset answers queries with the client's
// credentials, by asking the cheapest query there is. It makes one attempt.
// It returns an *Error matching ErrUnauthorized, ErrNotFound (no such
// dataset), ErrUnavailable or ErrBadRequest, or a context error.
func (c *Client) Ping(ctx context.Context) error {
	req := c.queryRequest("ping", "ASK {}", nil)
	req.once = true // a ping reports, it does not insist
	return c.do(ctx, req)
}

// queryRequest builds a query request. Short queries go in the URL of a GET
// (cacheable, logged by Fuseki); long ones as an application/sparql-query
// body, which has no size cap.
func (c *Client) queryRequest(op, query string, handle func(*http.Response) error) request {
	req := request{op: op, accept: mediaSPARQLResults, idempotent: true, handle: handle, text: query}
	if len(query) <= 2000 && !strings.ContainsAny(query, "\x00") {
		req.method = http.MethodGet
		req.url = c.queryURL + "?query=" + url.QueryEscape(query)
	} else {
		req.method = http.MethodPost
		req.url = c.queryURL
		req.contentType = mediaSPARQLQuery
		req.body = []byte(query)
	}
	return req
}
