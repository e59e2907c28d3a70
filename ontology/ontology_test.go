package ontology_test

import (
	"bytes"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knakk/rdf"

	"github.com/trails-kg/trails/ontology"
)

const (
	owlClass            = "http://www.w3.org/2002/07/owl#Class"
	owlObjectProperty   = "http://www.w3.org/2002/07/owl#ObjectProperty"
	owlDatatypeProperty = "http://www.w3.org/2002/07/owl#DatatypeProperty"
	rdfsIsDefinedBy     = "http://www.w3.org/2000/01/rdf-schema#isDefinedBy"
	rdfsDomain          = "http://www.w3.org/2000/01/rdf-schema#domain"
	rdfsRange           = "http://www.w3.org/2000/01/rdf-schema#range"
)

// decode parses Turtle with knakk/rdf, failing the test on any error.
func decode(tb testing.TB, name string, data []byte) []rdf.Triple {
	tb.Helper()
	ts, err := rdf.NewTripleDecoder(bytes.NewReader(data), rdf.Turtle).DecodeAll()
	if err != nil {
		tb.Fatalf("decode %s: %v", name, err)
	}
	if len(ts) == 0 {
		tb.Fatalf("decode %s: got 0 triples, want some", name)
	}
	return ts
}

// readFixture reads a file under testdata/shacl at the module root.
func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "shacl", name))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// graph indexes triples by subject and predicate; objects are kept as their
// String() form (the IRI, the literal's lexical form or the blank node id).
type graph map[string]map[string][]string

func index(ts []rdf.Triple) graph {
	g := graph{}
	for _, t := range ts {
		s, p := t.Subj.String(), t.Pred.String()
		if g[s] == nil {
			g[s] = map[string][]string{}
		}
		g[s][p] = append(g[s][p], t.Obj.String())
	}
	return g
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"trails.ttl", ontology.Vocabulary},
		{"shapes.ttl", ontology.Shapes},
		{"testdata/shacl/good.ttl", readFixture(t, "good.ttl")},
		{"testdata/shacl/bad.ttl", readFixture(t, "bad.ttl")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decode(t, tt.name, tt.data)
		})
	}
}

// TestTermsDefined checks that the trails: terms defined in trails.ttl (the
// subjects of rdfs:label in NS) are exactly ontology.Terms(), and that each is
// documented: label, comment, isDefinedBy, and domain and range for
// properties.
func TestTermsDefined(t *testing.T) {
	g := index(decode(t, "trails.ttl", ontology.Vocabulary))

	var defined []string
	for s, po := range g {
		if strings.HasPrefix(s, ontology.NS) && len(po[ontology.RDFSLabel]) > 0 {
			defined = append(defined, s)
		}
	}
	slices.Sort(defined)
	terms := ontology.Terms()
	slices.Sort(terms)
	if !slices.Equal(defined, terms) {
		t.Fatalf("terms defined in trails.ttl and ontology.Terms() differ:\ngot  %v\nwant %v", defined, terms)
	}

	for _, term := range terms {
		t.Run(strings.TrimPrefix(term, ontology.NS), func(t *testing.T) {
			po := g[term]
			for _, p := range []string{ontology.RDFSLabel, ontology.RDFSComment} {
				if got := len(po[p]); got != 1 {
					t.Errorf("%s: got %d, want 1", p, got)
				}
			}
			if got := po[rdfsIsDefinedBy]; !slices.Equal(got, []string{ontology.Ontology}) {
				t.Errorf("rdfs:isDefinedBy: got %v, want [%s]", got, ontology.Ontology)
			}
			types := po[ontology.RDFType]
			switch {
			case slices.Contains(types, owlClass):
			case slices.Contains(types, owlObjectProperty), slices.Contains(types, owlDatatypeProperty):
				for _, p := range []string{rdfsDomain, rdfsRange} {
					if got := len(po[p]); got != 1 {
						t.Errorf("%s: got %d, want 1", p, got)
					}
				}
			default:
				t.Errorf("rdf:type: got %v, want owl:Class, owl:ObjectProperty or owl:DatatypeProperty", types)
			}
		})
	}
}

// TestTermsListed checks that every constant in vocab.go naming a trails:
// term is in ontology.Terms(), and vice versa, so that a term cannot be added
// to one and forgotten in the other.
func TestTermsListed(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "vocab.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check("ontology", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, name := range pkg.Scope().Names() {
		c, ok := pkg.Scope().Lookup(name).(*types.Const)
		if !ok || c.Val().Kind() != constant.String {
			continue
		}
		v := constant.StringVal(c.Val())
		if strings.HasPrefix(v, ontology.NS) && v != ontology.NS {
			consts = append(consts, v)
		}
	}
	slices.Sort(consts)
	terms := ontology.Terms()
	slices.Sort(terms)
	if !slices.Equal(consts, terms) {
		t.Errorf("trails: constants in vocab.go and ontology.Terms() differ:\ngot  %v\nwant %v", consts, terms)
	}
}

// TestTermsUsed checks that the shapes and the fixtures use no trails: IRI
// that the vocabulary does not define (a typo in a shape's sh:path would
// otherwise make it check nothing).
func TestTermsUsed(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"shapes.ttl", ontology.Shapes},
		{"testdata/shacl/good.ttl", readFixture(t, "good.ttl")},
		{"testdata/shacl/bad.ttl", readFixture(t, "bad.ttl")},
	}
	terms := ontology.Terms()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, tr := range decode(t, tt.name, tt.data) {
				for _, term := range []rdf.Term{tr.Subj, tr.Pred, tr.Obj} {
					iri, ok := term.(rdf.IRI)
					if !ok || !strings.HasPrefix(iri.String(), ontology.NS) {
						continue
					}
					if !slices.Contains(terms, iri.String()) {
						t.Errorf("got undefined term %s", iri)
					}
				}
			}
		})
	}
}

// TestSessionID: SessionID undoes SessionIRI, escapes included, and hands
// back any other IRI as it is.
func TestSessionID(t *testing.T) {
	for _, tc := range []struct {
		name, iri, want string
	}{
		{"uuid", ontology.SessionIRI("0190a000-0000-7000-8000-00000000000a"), "0190a000-0000-7000-8000-00000000000a"},
		{"escaped", ontology.SessionIRI("a b/c%d"), "a b/c%d"},
		{"not a session", "http://example.org/x", "http://example.org/x"},
		{"bad escape", ontology.SessionBase + "%zz", ontology.SessionBase + "%zz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ontology.SessionID(tc.iri); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
