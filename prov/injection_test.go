package prov_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// injectionPayloads would change a query's meaning if a value were pasted
// into SPARQL text: they close a string (each quote form, or "\u0022",
// which SPARQL decodes before parsing) or an IRI, end a line inside a string
// or start a comment, or name variables and parameters.
var injectionPayloads = []string{
	`"} ; DROP ALL ; INSERT DATA {"`,
	`'} ; DROP ALL ; INSERT DATA {'`,
	`"""} ; DROP ALL ; INSERT DATA {"""`,
	`'''} ; DROP ALL ; INSERT DATA {'''`,
	`\u0022} ; DROP ALL ; INSERT DATA {\u0022`,
	`\U00000022 } ; DROP ALL ; #`,
	"x\" .\n# a comment\n} ; DROP ALL ; INSERT DATA { <urn:a> <urn:b> \"",
	"x\n} ; DROP ALL ; #",
	"x\r\n} } ; CLEAR ALL ; #",
	"# } ; DROP ALL",
	`>`, `<`, `<urn:evil>`,
	`> } ; DROP ALL ; INSERT DATA { <urn:a> <urn:b> <urn:c`,
	`"`, `'`, `\`, `\"`, `"""`,
	`$`, `$principal`, `$session`, `$from`, `?x`, `?principal`, `{`, `}`, `;`,
	`") } UNION { ?s ?p ?o } #`,
	`"^^<http://www.w3.org/2001/XMLSchema#dateTime>`,
	`2026-03-01T00:00:00Z" || true || "`,
	"nul \x00 inside",
	"\u2028 line separator \u0085",
}

// refusedPayloads are not valid as any parameter: empty or not UTF-8.
var refusedPayloads = []string{"", "\xff", "a\xed\xa0\x80b"}

// TestAuditInjection runs the audit queries (Reader.Run, Query.Bind and the
// Reader's methods) with every payload as every parameter. A payload is
// bound as an RDF term of its parameter's kind and matches only itself as
// data, or it is refused with ErrInvalid; nothing the store holds changes.
func TestAuditInjection(t *testing.T) {
	c := fusekitest.New(t)
	r := prov.NewReader(c)
	ctx := context.Background()

	// One fork record per payload, whose child id and principal are the
	// payload, all of one parent, in a window of time no other test uses.
	parent := newID(t)
	start := time.Date(2031, 7, 1, 0, 0, 0, 0, time.UTC)
	var d kg.Data
	for i, p := range injectionPayloads {
		prov.AddFork(&d, prov.Fork{Child: p, Parent: parent, At: i, Principal: p, Time: start.Add(time.Duration(i) * time.Minute)})
	}
	update(t, c, &d)
	canary := iri("urn:trails-test:canary:" + newID(t))
	var cd kg.Data
	cd.Add(canary, canary, iri("urn:trails-test:says"), kg.String("still here"))
	update(t, c, &cd)
	t.Cleanup(func() {
		drop, _ := kg.Bind("DROP SILENT GRAPH $g", kg.Params{"g": canary})
		c.Update(context.Background(), drop)
	})
	before := countAll(t, c)
	window := map[string]string{"from": "2031-07-01", "to": "2031-07-02"}
	ran := 0

	t.Run("forks of the parent", func(t *testing.T) {
		forks, err := r.ForksOf(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, f := range forks {
			got[f.Child] = f.Principal
		}
		for _, p := range injectionPayloads {
			if got[p] != p {
				t.Errorf("fork with child and principal %q: got principal %q", p, got[p])
			}
		}
		if len(forks) != len(injectionPayloads) {
			t.Errorf("got %d forks, want %d", len(forks), len(injectionPayloads))
		}
	})

	t.Run("each payload as each parameter", func(t *testing.T) {
		for _, p := range injectionPayloads {
			// $principal (string): the one fork of that principal.
			forks, err := r.ForksBy(ctx, p, start, start.Add(24*time.Hour))
			ran++
			if err != nil || len(forks) != 1 || forks[0].Child != p || forks[0].Principal != p {
				t.Errorf("ForksBy(%q): got %+v, %v; want its one fork", p, forks, err)
			}
			res, err := r.Run(ctx, "forks-by-principal", with(window, "principal", p))
			ran++
			if err != nil || len(res.Solutions) != 1 || res.Solutions[0].String("principal") != p {
				t.Errorf("run forks-by-principal principal=%q: got %v, %v; want one row", p, res, err)
			}
			// $session (session-id): an IRI of the session base; only the
			// payload's own fork matches.
			res, err = r.Run(ctx, "forks-of", map[string]string{"session": p})
			ran++
			if err != nil || len(res.Solutions) != 0 {
				t.Errorf("run forks-of session=%q: got %v, %v; want no rows", p, res, err)
			}
			res, err = r.Run(ctx, "lineage", map[string]string{"$session": p})
			ran++
			if err != nil || len(res.Solutions) != 1 || res.Solutions[0].String("ancestor") != ontology.SessionIRI(p) {
				t.Errorf("run lineage session=%q: got %v, %v; want the payload's IRI alone", p, res, err)
			}
			if _, err := r.Lineage(ctx, p); !errors.Is(err, prov.ErrNotFound) {
				t.Errorf("Lineage(%q): got %v, want ErrNotFound", p, err)
			}
			// $from and $to (dateTime): not a date-time.
			for _, k := range []string{"from", "to"} {
				_, err := r.Run(ctx, "deletions", with(window, k, p))
				ran++
				if !errors.Is(err, prov.ErrInvalid) {
					t.Errorf("run deletions %s=%q: got %v, want ErrInvalid", k, p, err)
				}
			}
			// The payload as a parameter name.
			_, err = r.Run(ctx, "orphans", map[string]string{p: "x"})
			ran++
			if !errors.Is(err, prov.ErrInvalid) {
				t.Errorf("run orphans with a parameter named %q: got %v, want ErrInvalid", p, err)
			}
		}
		for _, p := range refusedPayloads {
			for _, tc := range []struct{ query, param string }{
				{"forks-of", "session"}, {"lineage", "session"}, {"forks-by-principal", "principal"}, {"deletions", "from"},
			} {
				if p == "" && tc.param == "principal" {
					continue // an empty string is a string (ForksBy refuses it; Run finds no fork by it)
				}
				params := map[string]string{tc.param: p}
				if tc.query == "forks-by-principal" || tc.query == "deletions" {
					params = with(window, tc.param, p)
				}
				_, err := r.Run(ctx, tc.query, params)
				ran++
				if !errors.Is(err, prov.ErrInvalid) {
					t.Errorf("run %s %s=%q: got %v, want ErrInvalid", tc.query, tc.param, p, err)
				}
			}
		}
	})

	t.Run("each kind round-trips through the store", func(t *testing.T) {
		kinds := []prov.Kind{prov.KindIRI, prov.KindSessionID, prov.KindString, prov.KindDateTime, prov.KindInteger}
		accepted := map[prov.Kind]int{}
		for _, k := range kinds {
			for _, p := range append(append([]string(nil), injectionPayloads...), refusedPayloads...) {
				term, err := k.Term(p)
				if err != nil {
					if !errors.Is(err, prov.ErrInvalid) {
						t.Errorf("%s %q: got %v, want a term or ErrInvalid", k, p, err)
					}
					continue
				}
				accepted[k]++
				q, err := kg.Bind("SELECT ?v WHERE { BIND($v AS ?v) }", kg.Params{"v": term})
				if err != nil {
					t.Errorf("%s %q: bind: %v", k, p, err)
					continue
				}
				res, err := c.Select(ctx, q)
				ran++
				if err != nil || len(res.Solutions) != 1 {
					t.Errorf("%s %q: the store answered %v, %v\n%s", k, p, res, err, q)
					continue
				}
				if got := res.Solutions[0]["v"]; !sameTerm(got, term) {
					t.Errorf("%s %q: came back as %v, want %v", k, p, got, term)
				}
			}
		}
		t.Logf("payloads accepted by kind: %v (of %d)", accepted, len(injectionPayloads)+len(refusedPayloads))
	})

	t.Run("every query binds or refuses every payload", func(t *testing.T) {
		for _, q := range prov.Queries() {
			for _, param := range q.Params {
				for _, p := range append(append([]string(nil), injectionPayloads...), refusedPayloads...) {
					values := map[string]string{}
					for _, o := range q.Params {
						values[o.Name] = map[prov.Kind]string{
							prov.KindSessionID: parent, prov.KindString: "x", prov.KindDateTime: "2031-07-01",
							prov.KindInteger: "1", prov.KindIRI: "urn:x",
						}[o.Kind]
					}
					values[param.Name] = p
					text, err := q.Bind(values)
					if err != nil {
						if !errors.Is(err, prov.ErrInvalid) {
							t.Errorf("%s $%s=%q: got %v, want ErrInvalid", q.Name, param.Name, p, err)
						}
						continue
					}
					// The bound text is one query: the store parses it and
					// answers rows, never an update or a syntax error.
					if _, err := c.Select(ctx, text); err != nil {
						t.Errorf("%s $%s=%q: %v\n%s", q.Name, param.Name, p, err, text)
					}
					ran++
				}
			}
		}
	})

	if after := countAll(t, c); after != before {
		t.Errorf("the store holds %d triples after the payloads, want %d as before", after, before)
	}
	if ok, err := c.Ask(ctx, "ASK { GRAPH <"+canary.String()+"> { ?s ?p ?o } }"); err != nil || !ok {
		t.Errorf("the canary graph is gone (%v, %v)", ok, err)
	}
	t.Logf("%d payloads (and %d refused ones): %d queries run against the store, triples unchanged", len(injectionPayloads), len(refusedPayloads), ran)
}

// with returns a copy of m with k set to v.
func with(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for mk, mv := range m {
		if mk != k {
			out[mk] = mv
		}
	}
	return out
}

// countAll counts every triple of every named graph.
func countAll(tb testing.TB, c *kg.Client) int {
	tb.Helper()
	res, err := c.Select(context.Background(), "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
	if err != nil {
		tb.Fatal(err)
	}
	n, err := res.Solutions[0].Int("n")
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// sameTerm compares terms with their datatypes (rdf.TermsEqual ignores a
// literal's datatype). A date-time comes back in the store's canonical form,
// so it is compared as a time.
func sameTerm(a, b rdf.Term) bool {
	la, aok := a.(rdf.Literal)
	lb, bok := b.(rdf.Literal)
	if aok != bok {
		return false
	}
	if !aok {
		return a.String() == b.String() && fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b)
	}
	if la.DataType.String() != lb.DataType.String() {
		return false
	}
	if la.DataType.String() == ontology.XSDDateTime {
		ta, err1 := time.Parse(time.RFC3339Nano, la.String())
		tb, err2 := time.Parse(time.RFC3339Nano, lb.String())
		return err1 == nil && err2 == nil && ta.Equal(tb)
	}
	return la.String() == lb.String() && strings.EqualFold(la.Lang(), lb.Lang())
}
