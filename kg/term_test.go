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
		// A time Trails could not read back in every store and tool.
		{"year 57868 (milliseconds taken for seconds)", kg.DateTime(time.Unix(1764284400000, 0))},
		{"year -5", kg.DateTime(time.Date(-5, 1, 2, 3, 4, 5, 0, time.UTC))},
		{"year 10000", kg.DateTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))},
		{"not a date-time", rdf.NewTypedLiteral("yesterday", kg.MustIRI("http://www.w3.org/2001/XMLSchema#dateTime"))},
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

func TestCheckTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    time.Time
		ok   bool
	}{
		{"now", time.Now(), true},
		{"year 0000", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"last instant of 9999", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), true},
		{"9999 in UTC+2 is 9999 in UTC", time.Date(10000, 1, 1, 1, 0, 0, 0, time.FixedZone("", 2*3600)), true},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"year -1", time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC), false},
		{"milliseconds taken for seconds", time.Unix(time.Now().UnixMilli(), 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := kg.CheckTime(tc.t)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, kg.ErrInvalidTerm)) {
				t.Fatalf("got %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestParseDateTime(t *testing.T) {
	for _, tc := range []struct {
		lexical string
		want    time.Time
	}{
		{"2026-11-27T10:00:00.123Z", time.Date(2026, 11, 27, 10, 0, 0, 123e6, time.UTC)},
		{"2026-11-27T10:00:00+02:00", time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)},
		{"2026-11-27T10:00:00", time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}, // no zone: UTC
		{"57877-12-12T08:00:00Z", time.Date(57877, 12, 12, 8, 0, 0, 0, time.UTC)},
		{"10000-02-29T00:00:00.5Z", time.Date(10000, 2, 29, 0, 0, 0, 5e8, time.UTC)},
		{"-0005-01-02T03:04:05Z", time.Date(-5, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"-12345-06-07T00:00:00-01:00", time.Date(-12345, 6, 7, 1, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.lexical, func(t *testing.T) {
			got, err := kg.ParseDateTime(tc.lexical)
			if err != nil || !got.Equal(tc.want) {
				t.Fatalf("got %v (%v), want %v", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "yesterday", "202-01-01T00:00:00Z", "02026-01-01T00:00:00Z", "10001-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "--2026-01-01T00:00:00Z", "2026-01-01"} {
		if got, err := kg.ParseDateTime(bad); !errors.Is(err, kg.ErrInvalidTerm) {
			t.Errorf("%q: got %v, %v, want ErrInvalidTerm", bad, got, err)
		}
	}
	// Every time DateTime makes reads back equal, in range or not.
	for _, tm := range []time.Time{time.Now(), time.Unix(time.Now().UnixMilli(), 0), time.Date(-5, 1, 2, 3, 4, 5, 6, time.UTC)} {
		if got, err := kg.ParseDateTime(kg.DateTime(tm).String()); err != nil || !got.Equal(tm) {
			t.Errorf("%v: got %v (%v)", tm, got, err)
		}
	}
}

// TestTimesBeyondYear9999Read: a literal with a year of five digits or a
// negative year, written by another writer (or by an older Trails), is a
// valid XSD 1.1 date-time and reads as one.
func TestTimesBeyondYear9999Read(t *testing.T) {
	fusekitest.Parallel(t)
	c := newClient(t)
	ctx := context.Background()
	g := kg.MustIRI("urn:test:years:" + uuid.NewString())
	const xsd = "^^<http://www.w3.org/2001/XMLSchema#dateTime>"
	u, _ := kg.Bind(`INSERT DATA { GRAPH $g { <urn:test:a> <urn:test:t> "57877-12-12T08:00:00Z"`+xsd+` . <urn:test:b> <urn:test:t> "-0005-01-02T03:04:05Z"`+xsd+` } }`, kg.Params{"g": g})
	if err := c.Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	q, _ := kg.Bind("SELECT ?s ?t { GRAPH $g { ?s <urn:test:t> ?t } } ORDER BY ?s", kg.Params{"g": g})
	res, err := c.Select(ctx, q)
	if err != nil || len(res.Solutions) != 2 {
		t.Fatalf("query: %v, %v", res, err)
	}
	for i, want := range []time.Time{time.Date(57877, 12, 12, 8, 0, 0, 0, time.UTC), time.Date(-5, 1, 2, 3, 4, 5, 0, time.UTC)} {
		if got, err := res.Solutions[i].Time("t"); err != nil || !got.Equal(want) {
			t.Errorf("row %d: got %v (%v), want %v", i, got, err, want)
		}
	}
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
