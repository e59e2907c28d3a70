package kg_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

// hostile are the strings every value path must carry byte-exact.
var hostile = []struct{ name, value string }{
	{"empty", ""},
	{"plain", "hello"},
	{"double quote", `say "hi"`},
	{"single quote", `it's`},
	{"backslash", `C:\path\n\x`},
	{"escape text", `\u0041 \U0001F600 \" \\`},
	{"newline", "line1\nline2\r\nline3"},
	{"tab", "a\tb"},
	{"triple quotes", `""" and ''' inside`},
	{"braces", "} } { INSERT DATA { <urn:x> <urn:y> <urn:z> } }"},
	{"hash", "# not a comment\n#"},
	{"dollar", "$id ?x $"},
	{"angle", "<urn:not-an-iri> < >"},
	{"emoji", "👩‍💻 ok 🎉 \u200d"},
	{"nul", "a\x00b"},
	{"controls", "\x01\x02\x1b[31m\x7f\u0085"},
	{"bom", "\ufeffbom"},
	{"long", strings.Repeat("Lorem \"ipsum\"\n", 5000)},
}

func TestStringsRoundTripThroughFuseki(t *testing.T) {
	fusekitest.Parallel(t)
	c := newClient(t)
	ctx := context.Background()
	g := kg.MustIRI("urn:test:roundtrip:" + uuid.NewString())
	p := kg.MustIRI("urn:test:value")
	var d kg.Data
	for _, h := range hostile {
		d.Add(g, kg.MustIRI("urn:test:s:"+url.PathEscape(h.name)), p, kg.String(h.value))
	}
	u, err := d.InsertData()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, u); err != nil {
		t.Fatalf("insert: %v", err)
	}
	q, err := kg.Bind("SELECT ?s ?v WHERE { GRAPH $g { ?s $p ?v } }", kg.Params{"g": g, "p": p})
	if err != nil {
		t.Fatal(err)
	}
	// Both ways of reading a SELECT carry every value byte-exact.
	for _, format := range []struct {
		name string
		run  func(context.Context, string) (*kg.Results, error)
	}{{"select", c.Select}, {"rows", rowsOf(c)}} {
		res, err := format.run(ctx, q)
		if err != nil {
			t.Fatalf("%s query: %v", format.name, err)
		}
		got := map[string]string{}
		for _, s := range res.Solutions {
			name, _ := url.PathUnescape(strings.TrimPrefix(s.String("s"), "urn:test:s:"))
			got[name] = s.String("v")
		}
		for _, h := range hostile {
			t.Run(format.name+"/"+h.name, func(t *testing.T) {
				v, ok := got[h.name]
				if !ok {
					t.Fatalf("not stored")
				}
				if v != h.value {
					t.Fatalf("got %q, want %q", truncate(v), truncate(h.value))
				}
			})
		}
	}
	// The same values as query parameters find what was stored.
	for _, h := range hostile {
		q, err := kg.Bind("ASK { GRAPH $g { ?s $p $v } }", kg.Params{"g": g, "p": p, "v": kg.String(h.value)})
		if err != nil {
			t.Fatal(err)
		}
		ok, err := c.Ask(ctx, q)
		if err != nil || !ok {
			t.Errorf("%s: ASK by value: got %v, %v; want true", h.name, ok, err)
		}
	}
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}

func TestInvalidValuesAreRefusedBeforeSending(t *testing.T) {
	c, ct := newCounting(t)
	g := kg.MustIRI("urn:test:invalid")
	for _, tc := range []struct {
		name string
		term rdf.Term
	}{
		{"invalid UTF-8", kg.String("ok \xff\xfe not")},
		{"truncated rune", kg.String("\xf0\x9f\x98")},
		{"blank node", rdf.Blank{}},
		{"bad datatype", rdf.NewTypedLiteral("1", rdf.IRI{})},
		{"nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ct.n.Load()
			var d kg.Data
			d.Add(g, kg.MustIRI("urn:test:s"), kg.MustIRI("urn:test:p"), tc.term)
			u, err := d.InsertData()
			if !errors.Is(err, kg.ErrInvalidTerm) {
				t.Fatalf("Data: got %v, want ErrInvalidTerm", err)
			}
			if _, err := kg.Bind("ASK { ?s ?p $v }", kg.Params{"v": tc.term}); !errors.Is(err, kg.ErrInvalidTerm) {
				t.Fatalf("Bind: got %v, want ErrInvalidTerm", err)
			}
			if u != "" {
				t.Fatalf("got update text %q, want none", u)
			}
			if got := ct.n.Load() - before; got != 0 {
				t.Fatalf("got %d requests, want 0", got)
			}
		})
	}
	_ = c
}

func TestIRI(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"https://w3id.org/trails/ns#Session", true},
		{"urn:uuid:0190c5d2-0000-7000-8000-000000000000", true},
		{"", false},
		{"relative/path", false},
		{"http://x/a b", false},
		{"http://x/<a>", false},
		{"http://x/{a}", false},
		{"http://x/\xff", false},
		{"http://x/a\x00", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := kg.IRI(tc.in)
			if got := err == nil; got != tc.ok {
				t.Fatalf("got ok=%v (%v), want ok=%v", got, err, tc.ok)
			}
			if err != nil && !errors.Is(err, kg.ErrInvalidTerm) {
				t.Fatalf("got %v, want ErrInvalidTerm", err)
			}
		})
	}
}

func TestBind(t *testing.T) {
	id := kg.String(`x" } ; DROP ALL ; #`)
	for _, tc := range []struct {
		name    string
		query   string
		params  kg.Params
		want    string
		wantErr error
	}{
		{"string param", `ASK { ?s <urn:id> $id }`, kg.Params{"id": id},
			`ASK { ?s <urn:id> "x\" } ; DROP ALL ; #" }`, nil},
		{"iri and int", `SELECT * { $s ?p ?o FILTER(?o < $n) }`, kg.Params{"s": kg.MustIRI("urn:a"), "n": kg.Int(5)},
			`SELECT * { <urn:a> ?p ?o FILTER(?o < "5"^^<http://www.w3.org/2001/XMLSchema#integer>) }`, nil},
		{"repeated", `$a $a`, kg.Params{"a": kg.Int(1)},
			`"1"^^<http://www.w3.org/2001/XMLSchema#integer> "1"^^<http://www.w3.org/2001/XMLSchema#integer>`, nil},
		{"inside strings, IRIs and comments", "# $a\n\"$a\" '$a' \"\"\"$a\"\"\" <urn:$a> ?a $a", kg.Params{"a": kg.Int(1)},
			"# $a\n\"$a\" '$a' \"\"\"$a\"\"\" <urn:$a> ?a \"1\"^^<http://www.w3.org/2001/XMLSchema#integer>", nil},
		{"escaped quote in string", `"a\"$a" $a`, kg.Params{"a": kg.String("v")}, `"a\"$a" "v"`, nil},
		{"lang", `$l`, kg.Params{"l": mustLang(t, "hi", "en-GB")}, `"hi"@en-GB`, nil},
		{"datetime keeps fraction", `$t`, kg.Params{"t": kg.DateTime(time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600)))},
			`"2026-01-02T02:04:05.123456789Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>`, nil},
		{"unbound", `ASK { $s ?p $o }`, kg.Params{"s": kg.MustIRI("urn:a")}, "", kg.ErrUnboundParam},
		{"unused", `ASK { ?s ?p ?o }`, kg.Params{"s": kg.MustIRI("urn:a")}, "", kg.ErrUnboundParam},
		{"lone dollar", `"a" $ b`, nil, `"a" $ b`, nil},
		{"nul escaped", `$v`, kg.Params{"v": kg.String("a\x00b\x1f")}, `"a\u0000b\u001F"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kg.Bind(tc.query, tc.params)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func mustLang(tb testing.TB, v, lang string) rdf.Literal {
	tb.Helper()
	l, err := rdf.NewLangLiteral(v, lang)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

func TestTypedValuesRoundTrip(t *testing.T) {
	fusekitest.Parallel(t)
	c := newClient(t)
	ctx := context.Background()
	g := kg.MustIRI("urn:test:typed:" + uuid.NewString())
	s := kg.MustIRI("urn:test:typed")
	when := time.Date(2026, 11, 21, 5, 35, 1, 123000000, time.UTC)
	var d kg.Data
	d.Add(g, s, kg.MustIRI("urn:test:n"), kg.Int(-42))
	d.Add(g, s, kg.MustIRI("urn:test:t"), kg.DateTime(when))
	u, _ := d.InsertData()
	if err := c.Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	q, _ := kg.Bind("SELECT ?n ?t { GRAPH $g { $s <urn:test:n> ?n ; <urn:test:t> ?t } }", kg.Params{"g": g, "s": s})
	res, err := c.Select(ctx, q)
	if err != nil || len(res.Solutions) != 1 {
		t.Fatalf("query: %v, %v", res, err)
	}
	n, err := res.Solutions[0].Int("n")
	if err != nil || n != -42 {
		t.Fatalf("got %v (%v), want -42", n, err)
	}
	tm, err := res.Solutions[0].Time("t")
	if err != nil || !tm.Equal(when) {
		t.Fatalf("got %v (%v), want %v", tm, err, when)
	}
	if _, err := res.Solutions[0].Int("missing"); !errors.Is(err, kg.ErrProtocol) {
		t.Fatalf("got %v, want ErrProtocol for an unbound variable", err)
	}
}

func TestDataGroupsByGraph(t *testing.T) {
	fusekitest.Parallel(t)
	var d kg.Data
	g1, g2 := kg.MustIRI("urn:g1"), kg.MustIRI("urn:g2")
	d.Add(g1, kg.MustIRI("urn:a"), kg.MustIRI("urn:p"), kg.Int(1))
	d.Add(g2, kg.MustIRI("urn:b"), kg.MustIRI("urn:p"), kg.String("x"))
	d.Add(g1, kg.MustIRI("urn:c"), kg.MustIRI("urn:p"), kg.MustIRI("urn:d"))
	got, err := d.Quads()
	want := "GRAPH <urn:g1> {\n<urn:a> <urn:p> \"1\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n<urn:c> <urn:p> <urn:d> .\n}\n" +
		"GRAPH <urn:g2> {\n<urn:b> <urn:p> \"x\" .\n}\n"
	if err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	if d.Len() != 3 {
		t.Fatalf("got %d, want 3", d.Len())
	}
}

func newClient(tb testing.TB) *kg.Client {
	tb.Helper()
	return fusekitest.New(tb)
}

func TestBindTables(t *testing.T) {
	tb := kg.Table{Vars: []string{"s", "n"}, Rows: [][]rdf.Term{
		{kg.MustIRI("urn:a"), kg.Int(1)},
		{kg.MustIRI("urn:b"), nil},
	}}
	got, err := kg.BindTables("SELECT * { $rows ?s ?p $o }", kg.Params{"o": kg.String("x")}, map[string]kg.Table{"rows": tb})
	want := `SELECT * { VALUES (?s ?n) { (<urn:a> "1"^^<http://www.w3.org/2001/XMLSchema#integer>) (<urn:b> UNDEF) } ?s ?p "x" }`
	if err != nil || got != want {
		t.Fatalf("got %s, %v; want %s", got, err, want)
	}
	bad := kg.Table{Vars: []string{"s"}, Rows: [][]rdf.Term{{kg.Int(1), kg.Int(2)}}}
	if _, err := kg.BindTables("$rows", nil, map[string]kg.Table{"rows": bad}); !errors.Is(err, kg.ErrInvalidTerm) {
		t.Fatalf("got %v, want ErrInvalidTerm for a row of the wrong width", err)
	}
	if _, err := kg.BindTables("ASK {}", nil, map[string]kg.Table{"rows": tb}); !errors.Is(err, kg.ErrUnboundParam) {
		t.Fatalf("got %v, want ErrUnboundParam for an unused table", err)
	}
}

// TestSelectTerms checks that Select and Rows read every kind of term
// tab-separated results hold: IRIs, Turtle's bare numbers and booleans,
// strings with escapes, language tags, custom datatypes, unbound.
func TestSelectTerms(t *testing.T) {
	fusekitest.Parallel(t)
	c := newClient(t)
	ctx := context.Background()
	q := `SELECT ?iri ?int ?neg ?dec ?dbl ?bool ?str ?lang ?typed ?dt ?unbound WHERE {
  BIND(<urn:x:y> AS ?iri) BIND(42 AS ?int) BIND(-7 AS ?neg) BIND(1.5 AS ?dec) BIND(2.5e3 AS ?dbl)
  BIND(true AS ?bool) BIND("a\tb\"c" AS ?str) BIND("hi"@en-GB AS ?lang) BIND("2"^^<urn:dt> AS ?typed)
  BIND("2026-11-21T05:35:01.123Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> AS ?dt)
}`
	const xsd = "http://www.w3.org/2001/XMLSchema#"
	want := map[string]string{
		"iri":   "<urn:x:y>",
		"int":   `"42"^^<` + xsd + `integer>`,
		"neg":   `"-7"^^<` + xsd + `integer>`,
		"dec":   `"1.5"^^<` + xsd + `decimal>`,
		"dbl":   `"2.5e3"^^<` + xsd + `double>`,
		"bool":  `"true"^^<` + xsd + `boolean>`,
		"str":   `"a\tb\"c"`,
		"lang":  `"hi"@en-GB`,
		"typed": `"2"^^<urn:dt>`,
		"dt":    `"2026-11-21T05:35:01.123Z"^^<` + xsd + `dateTime>`,
	}
	if fusekitest.TestStore() == kg.Oxigraph {
		// Oxigraph sends the canonical forms: a lower-case language tag
		// (tags are case-insensitive) and a double's canonical lexical form.
		want["lang"] = `"hi"@en-gb`
		want["dbl"] = `"2500"^^<` + xsd + `double>`
	}
	for _, format := range []struct {
		name string
		run  func(context.Context, string) (*kg.Results, error)
	}{{"select", c.Select}, {"rows", rowsOf(c)}} {
		t.Run(format.name, func(t *testing.T) {
			res, err := format.run(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Vars) != 11 || len(res.Solutions) != 1 {
				t.Fatalf("got %d vars and %d solutions, want 11 and 1", len(res.Vars), len(res.Solutions))
			}
			sol := res.Solutions[0]
			if _, ok := sol["unbound"]; ok {
				t.Errorf("?unbound: got %v, want unbound", sol["unbound"])
			}
			for v, w := range want {
				got, err := kg.Term(sol[v])
				if err != nil {
					t.Fatalf("?%s: %v", v, err)
				}
				if got != w {
					t.Errorf("?%s: got %s, want %s", v, got, w)
				}
			}
		})
	}
}
