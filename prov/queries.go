package prov

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

//go:embed queries/*.rq
var queryFiles embed.FS

// Query is one of the auditors' queries in queries/*.rq. Text is the whole
// file, header comments included; it is plain SPARQL 1.1 with no GRAPH
// clause (the store's default graph is the union of all named graphs), and
// its parameters are variables written $name, so it also runs unbound in
// any SPARQL tool.
type Query struct {
	Name        string  // the file name without .rq, e.g. "forks-of"
	Description string  // one sentence saying what the query answers
	Params      []Param // in the order the header declares them
	Text        string
}

// Param is a parameter of a Query: the variable $Name, which Run replaces
// with a term of the given Kind.
type Param struct {
	Name        string // without the '$'
	Kind        Kind
	Description string
}

// Kind says what RDF term a parameter's string value becomes.
type Kind string

// Kinds of parameters, as written in a query's header.
const (
	// KindIRI is an absolute IRI, taken as is.
	KindIRI Kind = "iri"
	// KindSessionID is a session id, which becomes the session's IRI.
	KindSessionID Kind = "session-id"
	// KindString is an xsd:string literal.
	KindString Kind = "string"
	// KindDateTime is an xsd:dateTime literal, written in RFC 3339
	// (2026-03-01T10:00:00Z, fractions and offsets allowed) or as a date
	// (2026-03-01, meaning midnight UTC).
	KindDateTime Kind = "dateTime"
	// KindInteger is an xsd:integer literal.
	KindInteger Kind = "integer"
)

// Term returns the RDF term the string v stands for as a parameter of kind
// k. It fails with ErrInvalid when v is not a value of that kind.
func (k Kind) Term(v string) (rdf.Term, error) {
	if !utf8.ValidString(v) {
		return nil, fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, termsafe.Quote(v))
	}
	switch k {
	case KindIRI:
		iri, err := kg.IRI(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return iri, nil
	case KindSessionID:
		iri, err := sessionTerm(v)
		if err != nil {
			return nil, err
		}
		return iri, nil
	case KindString:
		return kg.String(v), nil
	case KindDateTime:
		t, err := parseTime(v)
		if err != nil {
			return nil, err
		}
		return kg.DateTime(t), nil
	case KindInteger:
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not an integer", ErrInvalid, termsafe.Quote(v))
		}
		return kg.Int(n), nil
	default:
		return nil, fmt.Errorf("%w: unknown parameter kind %q", ErrInvalid, string(k))
	}
}

// parseTime reads an RFC 3339 date-time or a date (midnight UTC).
func parseTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%w: %s is not a date-time (want e.g. 2026-03-01T10:00:00Z or 2026-03-01)", ErrInvalid, termsafe.Quote(v))
}

// sessionTerm returns the IRI of session id, failing with ErrInvalid for an
// empty id or one that is not UTF-8.
func sessionTerm(id string) (rdf.IRI, error) {
	if id == "" || !utf8.ValidString(id) {
		return rdf.IRI{}, fmt.Errorf("%w: session id %s is empty or not UTF-8", ErrInvalid, termsafe.Quote(id))
	}
	return kg.MustIRI(ontology.SessionIRI(id)), nil // percent-encoded: always valid
}

// queries holds the parsed files, sorted by name; a malformed file is a
// programming error caught by the tests, so parsing panics.
var queries = mustParseQueries()

func mustParseQueries() []Query {
	entries, err := queryFiles.ReadDir("queries")
	if err != nil {
		panic(err)
	}
	var qs []Query
	for _, e := range entries {
		b, err := queryFiles.ReadFile(path.Join("queries", e.Name()))
		if err != nil {
			panic(err)
		}
		q, err := parseQuery(string(b))
		if err != nil {
			panic(fmt.Sprintf("prov: queries/%s: %v", e.Name(), err))
		}
		qs = append(qs, q)
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
	return qs
}

// parseQuery reads the header of a query file: the leading comment lines
// "# name: NAME", "# description: TEXT" and, for each parameter,
// "# param: $NAME KIND — TEXT". Other comment lines are free text.
func parseQuery(text string) (Query, error) {
	q := Query{Text: text}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "#") {
			break // the header ends at the first line that is not a comment
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "#"))
		switch {
		case strings.HasPrefix(line, "name:"):
			if q.Name != "" {
				return Query{}, fmt.Errorf("two name lines")
			}
			q.Name = strings.TrimSpace(strings.TrimPrefix(line, "name:"))
		case strings.HasPrefix(line, "description:"):
			if q.Description != "" {
				return Query{}, fmt.Errorf("two description lines")
			}
			q.Description = strings.TrimSpace(strings.TrimPrefix(line, "description:"))
		case strings.HasPrefix(line, "param:"):
			p, err := parseParam(strings.TrimSpace(strings.TrimPrefix(line, "param:")))
			if err != nil {
				return Query{}, err
			}
			for _, o := range q.Params {
				if o.Name == p.Name {
					return Query{}, fmt.Errorf("param $%s declared twice", p.Name)
				}
			}
			q.Params = append(q.Params, p)
		}
	}
	if q.Name == "" || q.Description == "" {
		return Query{}, fmt.Errorf("want a '# name:' and a '# description:' line in the header")
	}
	return q, nil
}

// parseParam reads "$NAME KIND — TEXT".
func parseParam(s string) (Param, error) {
	decl, desc, ok := strings.Cut(s, " — ")
	if !ok {
		return Param{}, fmt.Errorf("param %q: want \"$name kind — description\"", s)
	}
	f := strings.Fields(decl)
	if len(f) != 2 || !strings.HasPrefix(f[0], "$") || len(f[0]) < 2 {
		return Param{}, fmt.Errorf("param %q: want \"$name kind — description\"", s)
	}
	p := Param{Name: f[0][1:], Kind: Kind(f[1]), Description: strings.TrimSpace(desc)}
	switch p.Kind {
	case KindIRI, KindSessionID, KindString, KindDateTime, KindInteger:
	default:
		return Param{}, fmt.Errorf("param $%s: unknown kind %q (want iri, session-id, string, dateTime or integer)", p.Name, f[1])
	}
	if p.Description == "" {
		return Param{}, fmt.Errorf("param $%s: no description", p.Name)
	}
	return p, nil
}

// Queries returns the auditors' queries, sorted by name, in a new slice on
// each call.
func Queries() []Query {
	qs := make([]Query, len(queries))
	for i, q := range queries {
		qs[i] = q
		qs[i].Params = append([]Param(nil), q.Params...)
	}
	return qs
}

// Lookup returns the query with the given name, and whether there is one.
func Lookup(name string) (Query, bool) {
	for _, q := range Queries() {
		if q.Name == name {
			return q, true
		}
	}
	return Query{}, false
}

// Bind returns q's text with each parameter replaced by the term its string
// value stands for (see Kind). Names may be given with or without the '$'.
// It fails with ErrInvalid when a parameter has no value, a value names no
// parameter, or a value is not of its parameter's kind.
func (q Query) Bind(values map[string]string) (string, error) {
	given := make(map[string]string, len(values))
	for k, v := range values {
		given[strings.TrimPrefix(k, "$")] = v
	}
	params := make(kg.Params, len(q.Params))
	var missing []string
	for _, p := range q.Params {
		v, ok := given[p.Name]
		if !ok {
			missing = append(missing, p.Name)
			continue
		}
		t, err := p.Kind.Term(v)
		if err != nil {
			return "", fmt.Errorf("$%s: %w", p.Name, err)
		}
		params[p.Name] = t
		delete(given, p.Name)
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%w: query %s needs a value for %s", ErrInvalid, q.Name, strings.Join(missing, ", "))
	}
	if len(given) > 0 {
		extra := make([]string, 0, len(given))
		for k := range given {
			extra = append(extra, k)
		}
		sort.Strings(extra)
		return "", fmt.Errorf("%w: query %s has no parameter %s", ErrInvalid, q.Name, strings.Join(extra, ", "))
	}
	return q.bind(params)
}

// bind fills q's text with terms. An error here means a term could not be
// serialized, or q's header and text disagree (which the tests rule out).
func (q Query) bind(params kg.Params) (string, error) {
	text, err := kg.Bind(q.Text, params)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return text, nil
}
