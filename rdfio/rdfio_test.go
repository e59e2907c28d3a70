package rdfio_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/rdfio"
)

// trailsPrefixes are the prefixes Trails' TriG export declares (session's
// trigPrefixes), for the golden file.
var trailsPrefixes = []rdfio.Prefix{
	{Name: "rdf", NS: "http://www.w3.org/1999/02/22-rdf-syntax-ns#"},
	{Name: "xsd", NS: "http://www.w3.org/2001/XMLSchema#"},
	{Name: "dcterms", NS: "http://purl.org/dc/terms/"},
	{Name: "prov", NS: ontology.ProvNS},
	{Name: "trails", NS: ontology.NS},
	{Name: "session", NS: ontology.SessionBase},
	{Name: "agent", NS: ontology.AgentBase},
}

// decodeAll reads every quad of src, failing tb on an error.
func decodeAll(tb testing.TB, src []byte, f rdfio.Format) []rdfio.Quad {
	tb.Helper()
	qs, err := decode(src, f)
	if err != nil {
		tb.Fatalf("decode: %v", err)
	}
	return qs
}

// decode reads the quads of src up to the first error.
func decode(src []byte, f rdfio.Format) ([]rdfio.Quad, error) {
	dec := rdfio.NewDecoder(bytes.NewReader(src), f)
	var qs []rdfio.Quad
	for {
		q, err := dec.Decode()
		if err == io.EOF {
			return qs, nil
		}
		if err != nil {
			return qs, err
		}
		qs = append(qs, q)
	}
}

// encode writes qs in format f.
func encode(tb testing.TB, qs []rdfio.Quad, f rdfio.Format, prefixes ...rdfio.Prefix) []byte {
	tb.Helper()
	var b bytes.Buffer
	enc := rdfio.NewEncoder(&b, f, prefixes...)
	for _, q := range qs {
		if err := enc.Encode(q); err != nil {
			tb.Fatalf("encode %v: %v", q, err)
		}
	}
	if err := enc.Close(); err != nil {
		tb.Fatalf("close: %v", err)
	}
	return b.Bytes()
}

// withoutLines returns qs with Line 0.
func withoutLines(qs []rdfio.Quad) []rdfio.Quad {
	out := make([]rdfio.Quad, len(qs))
	for i, q := range qs {
		q.Line = 0
		out[i] = q
	}
	return out
}

func readFile(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func sameQuads(tb testing.TB, got, want []rdfio.Quad) {
	tb.Helper()
	got, want = withoutLines(got), withoutLines(want)
	if len(got) != len(want) {
		tb.Fatalf("got %d quads, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			tb.Fatalf("quad %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

// TestGolden decodes the golden export of session's tests and encodes it
// again: the bytes must be the same, and both formats the same quads.
func TestGolden(t *testing.T) {
	dir := filepath.Join("..", "testdata", "export", "golden")
	nq := readFile(t, filepath.Join(dir, "tree.nq"))
	trig := readFile(t, filepath.Join(dir, "tree.trig"))
	nqQuads := decodeAll(t, nq, rdfio.NQuads)
	trigQuads := decodeAll(t, trig, rdfio.TriG)
	if got := encode(t, nqQuads, rdfio.NQuads); !bytes.Equal(got, nq) {
		t.Errorf("N-Quads: got\n%s\nwant\n%s", got, nq)
	}
	if got := encode(t, trigQuads, rdfio.TriG, trailsPrefixes...); !bytes.Equal(got, trig) {
		t.Errorf("TriG: got\n%s\nwant\n%s", got, trig)
	}
	set := func(qs []rdfio.Quad) map[rdfio.Quad]bool {
		m := make(map[rdfio.Quad]bool)
		for _, q := range withoutLines(qs) {
			m[q] = true
		}
		return m
	}
	a, b := set(nqQuads), set(trigQuads)
	if len(a) != len(b) {
		t.Fatalf("got %d quads in TriG, want %d (N-Quads)", len(b), len(a))
	}
	for q := range a {
		if !b[q] {
			t.Errorf("quad %v of the N-Quads is not in the TriG", q)
		}
	}
}

// TestFeatures decodes the syntax fixtures of Import and writes them back
// in both formats.
func TestFeatures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     rdfio.Format
		quads int
	}{
		{"features.nq", rdfio.NQuads, 10},
		{"features.trig", rdfio.TriG, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qs := decodeAll(t, readFile(t, filepath.Join("..", "testdata", "export", "syntax", tc.name)), tc.f)
			if tc.quads > 0 && len(qs) != tc.quads {
				t.Errorf("got %d quads, want %d", len(qs), tc.quads)
			}
			for _, f := range []rdfio.Format{rdfio.NQuads, rdfio.TriG} {
				sameQuads(t, decodeAll(t, encode(t, qs, f, trailsPrefixes...), f), qs)
			}
		})
	}
}

func iri(s string) rdf.IRI { return kg.MustIRI(s) }

func lit(v, dt string) rdf.Literal { return rdf.NewTypedLiteral(v, iri(dt)) }

func blank(l string) rdf.Blank {
	b, _ := rdf.NewBlank(l)
	return b
}

const xsd = "http://www.w3.org/2001/XMLSchema#"

// TestDecode reads small inputs, with the line of each quad.
func TestDecode(t *testing.T) {
	s, p, g := iri("http://e.org/s"), iri("http://e.org/p"), iri("http://e.org/g")
	en, _ := rdf.NewLangLiteral("hi", "en-GB")
	for _, tc := range []struct {
		name string
		f    rdfio.Format
		in   string
		want []rdfio.Quad
	}{
		{"empty", rdfio.NQuads, "", nil},
		{"comments and blank lines", rdfio.NQuads, "# c\n\n  \r\n", nil},
		{"triple", rdfio.NQuads, "<http://e.org/s> <http://e.org/p> <http://e.org/o> .", []rdfio.Quad{{S: s, P: p, O: iri("http://e.org/o"), Line: 1}}},
		{"quad on line 3", rdfio.NQuads, "\r\n# x\n<http://e.org/s> <http://e.org/p> \"v\" <http://e.org/g> . # c\n",
			[]rdfio.Quad{{S: s, P: p, O: kg.String("v"), G: g, Line: 3}}},
		{"blank nodes", rdfio.NQuads, "_:a <http://e.org/p> _:b.c _:g .\n", []rdfio.Quad{{S: blank("a"), P: p, O: blank("b.c"), G: blank("g"), Line: 1}}},
		{"escapes", rdfio.NQuads, `<http://e.org/\u0073> <http://e.org/p> "a\tb\u00e9\U0001F389\"" .`,
			[]rdfio.Quad{{S: s, P: p, O: kg.String("a\tbé🎉\""), Line: 1}}},
		{"lang and type", rdfio.NQuads, "<http://e.org/s> <http://e.org/p> \"hi\"@en-GB .\n<http://e.org/s> <http://e.org/p> \"05\"^^<" + xsd + "integer> .\n",
			[]rdfio.Quad{{S: s, P: p, O: en, Line: 1}, {S: s, P: p, O: lit("05", xsd+"integer"), Line: 2}}},
		{"trig lists", rdfio.TriG, "PREFIX e: <http://e.org/>\n\nGRAPH e:g {\n  e:s a e:C ;\n    e:p 1, -2.5,\n 1e3, true ;\n    e:p '''a\nb''' .\n}\n",
			[]rdfio.Quad{
				{S: s, P: iri(ontology.RDFType), O: iri("http://e.org/C"), G: g, Line: 4},
				{S: s, P: p, O: lit("1", xsd+"integer"), G: g, Line: 5},
				{S: s, P: p, O: lit("-2.5", xsd+"decimal"), G: g, Line: 5},
				{S: s, P: p, O: lit("1e3", xsd+"double"), G: g, Line: 6},
				{S: s, P: p, O: lit("true", xsd+"boolean"), G: g, Line: 6},
				{S: s, P: p, O: kg.String("a\nb"), G: g, Line: 7},
			}},
		{"trig base and trailing dots", rdfio.TriG, "@base <http://e.org/> .\n@prefix e: <http://e.org/> .\n<g> { <s> e:p e:o. e:s e:p \"x\"^^e:t }",
			[]rdfio.Quad{{S: s, P: p, O: iri("http://e.org/o"), G: g, Line: 3}, {S: s, P: p, O: lit("x", "http://e.org/t"), G: g, Line: 3}}},
		{"trig empty graph", rdfio.TriG, "GRAPH <http://e.org/g> { }", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decode([]byte(tc.in), tc.f)
			if err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("quad %d: got %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestSyntaxError reads input that does not parse: the quads before the
// error come first, then a *SyntaxError at the line and column at fault,
// and again on the next call.
func TestSyntaxError(t *testing.T) {
	ok := "<http://e.org/s> <http://e.org/p> <http://e.org/o> .\n"
	for _, tc := range []struct {
		name      string
		f         rdfio.Format
		in        string
		quads     int
		line, col int
	}{
		{"garbage", rdfio.NQuads, ok + "not RDF\n", 1, 2, 1},
		{"bad escape", rdfio.NQuads, ok + ok + `<http://e.org/s> <http://e.org/p> "\q" .`, 2, 3, 36},
		{"escape cut by the end", rdfio.NQuads, `<http://e.org/s> <http://e.org/p> "\u00`, 0, 1, 36},
		{"escape cut by a line end", rdfio.NQuads, "<http://e.org/s> <http://e.org/p> \"\\u0\"\n" + ok, 0, 1, 36},
		{"surrogate", rdfio.NQuads, `<http://e.org/s> <http://e.org/p> "\uD800" .`, 0, 1, 36},
		{"relative IRI", rdfio.NQuads, "<s> <http://e.org/p> <http://e.org/o> .", 0, 1, 4},
		{"missing dot", rdfio.NQuads, ok + "<http://e.org/s> <http://e.org/p> <http://e.org/o>\n" + ok, 1, 2, 51},
		{"two on a line", rdfio.NQuads, strings.TrimSuffix(ok, "\n") + " " + ok, 0, 1, 54},
		{"line break in a string", rdfio.NQuads, "<http://e.org/s> <http://e.org/p> \"a\nb\" .", 0, 1, 37},
		{"literal predicate", rdfio.NQuads, `<http://e.org/s> "p" "o" .`, 0, 1, 18},
		{"trig default graph", rdfio.TriG, "{ <http://e.org/s> <http://e.org/p> 1 }", 0, 1, 1},
		{"trig triples outside", rdfio.TriG, "<http://e.org/s> <http://e.org/p> 1 .", 0, 1, 18},
		{"turtle unterminated string", rdfio.TriG, "<http://e.org/s> <http://e.org/p> \"abc .\n<http://e.org/s> <http://e.org/p> 1 .\n", 0, 1, 41},
		{"turtle error in a later object", rdfio.TriG, "<http://e.org/s> <http://e.org/p> 1, 2 ;\n  <http://e.org/q> 1e .", 0, 2, 22},
		{"trig unclosed", rdfio.TriG, "GRAPH <http://e.org/g> {\n<http://e.org/s> <http://e.org/p> 1 .\n", 1, 3, 1},
		{"trig undeclared prefix", rdfio.TriG, "GRAPH <http://e.org/g> {\n  e:s <http://e.org/p> 1 }", 0, 2, 3},
		{"trig anonymous blank", rdfio.TriG, "GRAPH <http://e.org/g> { <http://e.org/s> <http://e.org/p> [] }", 0, 1, 60},
		{"trig blank predicate", rdfio.TriG, "GRAPH <http://e.org/g> { <http://e.org/s> _:p 1 }", 0, 1, 43},
		{"trig after long string", rdfio.TriG, "GRAPH <http://e.org/g> { <http://e.org/s> <http://e.org/p> \"\"\"a\nb\"\"\" ? }", 1, 2, 6},
		{"trig bad exponent", rdfio.TriG, "GRAPH <http://e.org/g> { <http://e.org/s> <http://e.org/p> 1e }", 0, 1, 62},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := rdfio.NewDecoder(strings.NewReader(tc.in), tc.f)
			n := 0
			var err error
			for {
				if _, err = dec.Decode(); err != nil {
					break
				}
				n++
			}
			var se *rdfio.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *SyntaxError", err)
			}
			if n != tc.quads || se.Line != tc.line || se.Col != tc.col {
				t.Errorf("got %d quads and an error at %d:%d (%v), want %d quads and %d:%d", n, se.Line, se.Col, se, tc.quads, tc.line, tc.col)
			}
			if _, again := dec.Decode(); again != err {
				t.Errorf("got %v on the next call, want %v", again, err)
			}
		})
	}
}

// TestInvalidFixtures decodes the inputs Import refuses: those that do
// not parse give a *SyntaxError at the line the fixture's README names
// (the second, after one valid quad); the others decode.
func TestInvalidFixtures(t *testing.T) {
	syntax := map[string]bool{
		"bad-escape.nq": true, "garbage.nq": true, "missing-dot.nq": true, "relative-iri.nq": true,
		"surrogate-escape.nq": true, "two-on-a-line.nq": true, "unterminated-string.nq": true,
		"anonymous-blank.trig": true, "collection.trig": true, "default-graph-block.trig": true,
		"default-graph.trig": true, "newline-in-string.trig": true, "unclosed-graph.trig": true,
		"undeclared-prefix.trig": true, "turtle-unterminated-string.trig": true,
	}
	names, err := filepath.Glob(filepath.Join("..", "testdata", "export", "invalid", "*.*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		f := rdfio.NQuads
		switch filepath.Ext(name) {
		case ".trig":
			f = rdfio.TriG
		case ".nq":
		default:
			continue
		}
		base := filepath.Base(name)
		t.Run(base, func(t *testing.T) {
			qs, err := decode(readFile(t, name), f)
			var se *rdfio.SyntaxError
			if got := errors.As(err, &se); got != syntax[base] {
				t.Fatalf("got %v, want a syntax error: %v", err, syntax[base])
			}
			if se == nil && err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			if se != nil && len(qs) == 0 && f == rdfio.NQuads {
				t.Errorf("got no quad before %v, want the valid first one", se)
			}
		})
	}
}

// TestEncode writes a few quads in both formats.
func TestEncode(t *testing.T) {
	s, p, g := iri("http://e.org/ns#s"), iri("http://e.org/ns#p"), iri("http://e.org/ns#g")
	qs := []rdfio.Quad{
		{S: s, P: iri(ontology.RDFType), O: iri("http://e.org/ns#C"), G: g},
		{S: s, P: p, O: lit("7", xsd+"integer"), G: g},
		{S: s, P: p, O: lit("07", xsd+"integer"), G: g},
		{S: s, P: iri("http://e.org/ns#q"), O: kg.String("a\n\"b\""), G: g},
		{S: blank("x"), P: p, O: lit("1.5", xsd+"decimal"), G: g},
		{S: s, P: p, O: iri("http://e.org/other/o"), G: iri("http://e.org/ns#h")},
	}
	nq := `<http://e.org/ns#s> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://e.org/ns#C> <http://e.org/ns#g> .
<http://e.org/ns#s> <http://e.org/ns#p> "7"^^<http://www.w3.org/2001/XMLSchema#integer> <http://e.org/ns#g> .
<http://e.org/ns#s> <http://e.org/ns#p> "07"^^<http://www.w3.org/2001/XMLSchema#integer> <http://e.org/ns#g> .
<http://e.org/ns#s> <http://e.org/ns#q> "a\n\"b\"" <http://e.org/ns#g> .
_:x <http://e.org/ns#p> "1.5"^^<http://www.w3.org/2001/XMLSchema#decimal> <http://e.org/ns#g> .
<http://e.org/ns#s> <http://e.org/ns#p> <http://e.org/other/o> <http://e.org/ns#h> .
`
	trig := `PREFIX e: <http://e.org/ns#>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>

GRAPH e:g {
    e:s a e:C ;
        e:p 7, "07"^^xsd:integer ;
        e:q "a\n\"b\"" .

    _:x e:p "1.5"^^xsd:decimal .
}

GRAPH e:h {
    e:s e:p <http://e.org/other/o> .
}
`
	prefixes := []rdfio.Prefix{{Name: "e", NS: "http://e.org/ns#"}, {Name: "xsd", NS: xsd}}
	if got := string(encode(t, qs, rdfio.NQuads, prefixes...)); got != nq {
		t.Errorf("N-Quads: got\n%s\nwant\n%s", got, nq)
	}
	if got := string(encode(t, qs, rdfio.TriG, prefixes...)); got != trig {
		t.Errorf("TriG: got\n%s\nwant\n%s", got, trig)
	}
	if got := string(encode(t, nil, rdfio.TriG, prefixes...)); got != "PREFIX e: <http://e.org/ns#>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n" {
		t.Errorf("TriG of nothing: got %q, want the prefixes", got)
	}
}

// TestEncodeRefuses gives an Encoder what it cannot write.
func TestEncodeRefuses(t *testing.T) {
	s, p := iri("http://e.org/s"), iri("http://e.org/p")
	for _, tc := range []struct {
		name string
		f    rdfio.Format
		q    rdfio.Quad
		want error
	}{
		{"invalid UTF-8", rdfio.NQuads, rdfio.Quad{S: s, P: p, O: kg.String("\xff")}, kg.ErrInvalidTerm},
		{"blank predicate", rdfio.NQuads, rdfio.Quad{S: s, P: blank("p"), O: s}, kg.ErrInvalidTerm},
		{"bad blank label", rdfio.NQuads, rdfio.Quad{S: blank("a b"), P: p, O: s}, kg.ErrInvalidTerm},
		{"literal subject", rdfio.NQuads, rdfio.Quad{S: kg.String("s"), P: p, O: s}, kg.ErrInvalidTerm},
		{"nil object", rdfio.NQuads, rdfio.Quad{S: s, P: p}, kg.ErrInvalidTerm},
		{"default graph in TriG", rdfio.TriG, rdfio.Quad{S: s, P: p, O: s}, rdfio.ErrDefaultGraph},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			enc := rdfio.NewEncoder(&b, tc.f)
			if err := enc.Encode(tc.q); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// failWriter fails every write.
type failWriter struct{}

var errWrite = errors.New("write failed")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

// TestEncodeWriterError: the writer's error comes back, at the latest
// from Close, and stays.
func TestEncodeWriterError(t *testing.T) {
	enc := rdfio.NewEncoder(failWriter{}, rdfio.NQuads)
	q := rdfio.Quad{S: iri("http://e.org/s"), P: iri("http://e.org/p"), O: kg.String(strings.Repeat("x", 100<<10))}
	if err := enc.Encode(q); !errors.Is(err, errWrite) {
		t.Errorf("got %v, want %v", err, errWrite)
	}
	if err := enc.Close(); !errors.Is(err, errWrite) {
		t.Errorf("Close: got %v, want %v", err, errWrite)
	}
}

// errReader fails after its data.
type errReader struct{ data []byte }

var errRead = errors.New("read failed")

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, errRead
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestDecodeReaderError: the quads before a read error come, then the
// error as it is.
func TestDecodeReaderError(t *testing.T) {
	dec := rdfio.NewDecoder(&errReader{data: []byte("<http://e.org/s> <http://e.org/p> <http://e.org/o> .\n")}, rdfio.NQuads)
	if _, err := dec.Decode(); err != nil {
		t.Fatalf("got %v, want a quad", err)
	}
	if _, err := dec.Decode(); err != errRead {
		t.Errorf("got %v, want %v", err, errRead)
	}
}

// TestLongLine reads an N-Quads line longer than the Decoder's buffer.
func TestLongLine(t *testing.T) {
	v := strings.Repeat("é", 200<<10)
	in := "<http://e.org/s> <http://e.org/p> \"" + v + "\" .\n<http://e.org/s> <http://e.org/p> \"\" ."
	qs := decodeAll(t, []byte(in), rdfio.NQuads)
	if len(qs) != 2 || qs[0].O != kg.String(v) || qs[1].Line != 2 {
		t.Errorf("got %d quads, want 2: the long literal on line 1, the empty one on line 2", len(qs))
	}
}

// FuzzRoundTrip decodes any input without panicking; the quads read
// before the first error, written in either format, read back the same.
// The seeds are small inputs under testdata/fuzz/FuzzRoundTrip (the golden
// files, which TestGolden reads, would make each minimization slow).
func FuzzRoundTrip(f *testing.F) {
	f.Fuzz(roundTrip)
}

// roundTrip is the body of FuzzRoundTrip.
func roundTrip(t *testing.T, data []byte, trig bool) {
	in := rdfio.NQuads
	if trig {
		in = rdfio.TriG
	}
	qs, _ := decode(data, in)
	for _, out := range []rdfio.Format{rdfio.NQuads, rdfio.TriG} {
		var b bytes.Buffer
		enc := rdfio.NewEncoder(&b, out, trailsPrefixes...)
		var written []rdfio.Quad
		for _, q := range qs {
			err := enc.Encode(q)
			switch {
			case err == nil:
				written = append(written, q)
			case errors.Is(err, rdfio.ErrDefaultGraph) && q.G == nil && out == rdfio.TriG:
			case errors.Is(err, kg.ErrInvalidTerm) && !validLiteral(q.O):
			default:
				t.Fatalf("encode %v as %v: %v", q, out, err)
			}
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := decode(b.Bytes(), out)
		if err != nil {
			t.Fatalf("decode %v: %v\n%s", out, err, b.Bytes())
		}
		sameQuads(t, got, written)
	}
}

// validLiteral reports whether t is not a literal that is not valid UTF-8.
func validLiteral(t rdf.Term) bool {
	l, ok := t.(rdf.Literal)
	return !ok || utf8.ValidString(l.String())
}
