package session

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
)

//go:embed queries/*.rq queries/*.ru
var queryFS embed.FS

// query returns the text of an embedded query file, its comment header
// cut to its first line ("# append: add turns ...", which names the
// request for a reader of the store's log and adk-bench's phase table):
// the store parses every byte of every request, and the header's other
// lines, the template's documentation, were a fifth to a half of a
// write's text.
func query(name string) string {
	b, err := queryFS.ReadFile("queries/" + name)
	if err != nil {
		panic(err)
	}
	return shortHeader(string(b))
}

// shortHeader returns q without the lines of its leading comment after
// the first.
func shortHeader(q string) string {
	first, rest, ok := strings.Cut(q, "\n")
	if !ok || !strings.HasPrefix(first, "#") {
		return q
	}
	for strings.HasPrefix(rest, "#") {
		_, rest, _ = strings.Cut(rest, "\n")
	}
	return first + "\n" + rest
}

// named returns ctx naming the store requests sent with it after query
// name (the embedded file's name without its extension, or what a
// request built in code does): their spans' db.operation.name.
func named(ctx context.Context, name string) context.Context {
	return telemetry.WithQuery(ctx, name)
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

// selectTemplate runs query q, named name, with the values p (Bind's
// single terms): as a template when the Querier is a kg.Client itself
// (kg.Client.SelectTemplate: Fuseki with Trails' module then parses q
// once per server thread, not once a request), else bound, through the
// Querier's Select. Not through an interface: a Querier that wraps a
// kg.Client by embedding it would have its own Select skipped. Results
// are tab-separated either way: for a few rows too, faster than JSON to
// write and read.
func (st *Store) selectTemplate(ctx context.Context, name, q string, p kg.Params) (*kg.Results, error) {
	if c, ok := st.c.(*kg.Client); ok {
		res, err := c.SelectTemplate(ctx, q, p)
		if errors.Is(err, kg.ErrUnboundParam) || errors.Is(err, kg.ErrInvalidTerm) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return res, err
	}
	bound, err := bind(name, q, p)
	if err != nil {
		return nil, err
	}
	return st.c.Select(ctx, bound)
}

// bindOrPanic binds one of the package's own queries with values that
// validate has checked: an error is a bug.
func bindOrPanic(name, q string, p kg.Params) string {
	out, err := bind(name, q, p)
	if err != nil {
		panic(err)
	}
	return out
}

// withData binds the parameters of an update template, then puts the quads
// of d where its "#DATA" comment stands.
func withData(name, tmpl string, d *kg.Data, p kg.Params) (string, error) {
	return withTables(name, tmpl, d, p, nil)
}

// withTables is withData for a template with VALUES tables too
// (kg.BindData).
//
// A value that cannot be written (kg.ErrInvalidTerm: a time outside
// years 0000 to 9999 from the Store's clock, say) fails with ErrInvalid
// too, naming the field: it is the caller's input, and nothing is sent.
func withTables(name, tmpl string, d *kg.Data, p kg.Params, tables map[string]kg.Table) (string, error) {
	if err := d.Err(); err != nil {
		return "", invalidTerm(err)
	}
	if !strings.Contains(tmpl, "#DATA") {
		panic(name + ": no #DATA marker")
	}
	u, err := kg.BindData(tmpl, d, p, tables)
	if err != nil {
		return "", invalidTerm(fmt.Errorf("%s: %w", name, err))
	}
	return u, nil
}

// invalidTerm returns err, also wrapping ErrInvalid when it is a value
// that cannot be written (kg.ErrInvalidTerm).
func invalidTerm(err error) error {
	if errors.Is(err, kg.ErrInvalidTerm) && !errors.Is(err, ErrInvalid) {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}

// termOrPanic serializes an IRI the package made itself and checked: an
// error is a bug.
func termOrPanic(t rdf.Term) string {
	s, err := kg.Term(t)
	if err != nil {
		panic(err)
	}
	return s
}
