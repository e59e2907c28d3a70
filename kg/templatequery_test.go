package kg_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

// paths records the path of every request and answers 404, as a Fuseki
// without Trails' module does, to those for the template-query endpoint
// when notFound is set.
type paths struct {
	next     http.RoundTripper
	notFound bool
	mu       atomic.Pointer[[]string]
}

func (p *paths) RoundTrip(r *http.Request) (*http.Response, error) {
	for {
		old := p.mu.Load()
		var list []string
		if old != nil {
			list = slices.Clone(*old)
		}
		list = append(list, r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
		if p.mu.CompareAndSwap(old, &list) {
			break
		}
	}
	if p.notFound && strings.HasSuffix(r.URL.Path, "/template-query") {
		return &http.Response{StatusCode: http.StatusNotFound, Status: "404 Not Found", Body: io.NopCloser(strings.NewReader("no endpoint")), Header: http.Header{}, Request: r}, nil
	}
	return p.next.RoundTrip(r)
}

func (p *paths) sent() []string {
	if l := p.mu.Load(); l != nil {
		return *l
	}
	return nil
}

// TestSelectTemplate: a template and its values sent apart to Trails'
// module answer what the bound text answers through the query endpoint
// (IRIs, typed and language-tagged literals, a property path, rows
// that leave a variable unbound), the same template again with other
// values too (the server keeps its parse); a template that is no SELECT
// or does not parse is a 400 and a parameter without a value fails
// before anything is sent; a Fuseki without the module (404) gets the
// bound text at its query endpoint, then and afterwards.
func TestSelectTemplate(t *testing.T) {
	fusekitest.RequireFuseki(t, "Trails' module for Fuseki (template-query)")
	fusekitest.Parallel(t)
	ctx := context.Background()
	p := &paths{next: &http.Transport{}}
	c := fusekitest.Client(t, kg.Config{Endpoint: fusekitest.Endpoint(t), HTTPClient: &http.Client{Transport: p}})
	g := "<urn:test:template:" + uuid.NewString() + ">"
	if err := c.Update(ctx, "INSERT DATA { GRAPH "+g+` {
		<urn:a> <urn:next> <urn:b> . <urn:b> <urn:next> <urn:c> .
		<urn:a> <urn:label> "a"@en , "7"^^<http://www.w3.org/2001/XMLSchema#integer> .
		<urn:c> <urn:label> "tab\there" .
	} }`); err != nil {
		t.Fatal(err)
	}
	tmpl := "# walk: a test template\nSELECT ?s ?l WHERE { GRAPH " + g + " { $from <urn:next>* ?s OPTIONAL { ?s $p ?l } } } ORDER BY ?s ?l"
	for _, params := range []kg.Params{
		{"from": kg.MustIRI("urn:a"), "p": kg.MustIRI("urn:label")},
		{"from": kg.MustIRI("urn:b"), "p": kg.MustIRI("urn:label")},
		{"from": kg.MustIRI("urn:a"), "p": kg.MustIRI("urn:none")},
	} {
		got, err := c.SelectTemplate(ctx, tmpl, params)
		if err != nil {
			t.Fatal(err)
		}
		bound, err := kg.Bind(tmpl, params)
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.Select(ctx, bound)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Solutions) == 0 {
			t.Fatalf("the bound query has no rows: the test compares nothing")
		}
		sameResults(t, got, want)
	}
	if n := slices.Index(p.sent(), "template-query"); n < 0 {
		t.Fatalf("requests %v: none to template-query", p.sent())
	}
	status := func(err error) int {
		var ke *kg.Error
		if !errors.As(err, &ke) {
			return 0
		}
		return ke.Status
	}
	if _, err := c.SelectTemplate(ctx, "ASK { $s ?p ?o }", kg.Params{"s": kg.MustIRI("urn:a")}); status(err) != http.StatusBadRequest {
		t.Errorf("an ASK template: %v, want 400", err)
	}
	if _, err := c.SelectTemplate(ctx, "SELECT * WHERE { $s ?p ", kg.Params{"s": kg.MustIRI("urn:a")}); status(err) != http.StatusBadRequest {
		t.Errorf("a template that does not parse: %v, want 400", err)
	}
	before := len(p.sent())
	if _, err := c.SelectTemplate(ctx, tmpl, kg.Params{"from": kg.MustIRI("urn:a")}); !errors.Is(err, kg.ErrUnboundParam) || len(p.sent()) != before {
		t.Errorf("a parameter without a value: %v after %d requests, want ErrUnboundParam and none", err, len(p.sent())-before)
	}

	// Without the module: the bound text, at the query endpoint.
	p.notFound = true
	params := kg.Params{"from": kg.MustIRI("urn:a"), "p": kg.MustIRI("urn:label")}
	bound, _ := kg.Bind(tmpl, params)
	want, err := c.Select(ctx, bound)
	if err != nil {
		t.Fatal(err)
	}
	before = len(p.sent())
	got, err := c.SelectTemplate(ctx, tmpl, params)
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if s := p.sent()[before:]; !slices.Equal(s, []string{"template-query", "query"}) {
		t.Errorf("without the module, first: requests %v, want template-query (404) then query", s)
	}
	before = len(p.sent())
	if got, err = c.SelectTemplate(ctx, tmpl, params); err != nil {
		t.Fatal(err)
	}
	sameResults(t, got, want)
	if s := p.sent()[before:]; !slices.Equal(s, []string{"query"}) {
		t.Errorf("without the module, afterwards: requests %v, want query alone", s)
	}
}

// sameResults fails t unless got and want hold the same variables and
// rows, in order.
func sameResults(t *testing.T, got, want *kg.Results) {
	t.Helper()
	if !slices.Equal(got.Vars, want.Vars) || len(got.Solutions) != len(want.Solutions) {
		t.Fatalf("got %v and %d rows, want %v and %d", got.Vars, len(got.Solutions), want.Vars, len(want.Solutions))
	}
	for i := range want.Solutions {
		for _, v := range want.Vars {
			g, w := got.Solutions[i][v], want.Solutions[i][v]
			if (g == nil) != (w == nil) || (g != nil && !rdf.TermsEqual(g, w)) {
				t.Errorf("row %d, ?%s: got %v, want %v", i, v, g, w)
			}
		}
	}
}

// TestModuleMethods: each endpoint of Trails' module takes POST alone
// and answers any other method 405, saying what it takes; a Store turns
// the patch path off on a 405 and a client falls back from the template
// endpoint on one, so the answer must be 405, not a 400 or a 500.
func TestModuleMethods(t *testing.T) {
	fusekitest.RequireFuseki(t, "Trails' module for Fuseki")
	fusekitest.Parallel(t)
	for ep, says := range map[string]string{
		"fenced-patch":      "POST an RDF Patch",
		"conditional-patch": "POST records",
		"template-query":    "POST a SELECT template",
	} {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
			req, err := http.NewRequest(method, fusekitest.Endpoint(t)+"/"+ep, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(string(body), says) {
				t.Errorf("%s %s: %d %.200q, want 405 saying %q", method, ep, resp.StatusCode, body, says)
			}
		}
	}
}
