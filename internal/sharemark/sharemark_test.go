package sharemark

import (
	"errors"
	"testing"
)

func TestSplit(t *testing.T) {
	a := Op{G: "<g>", Owner: "<o>", Change: "<c>", Node: "<n>", Text: "DELETE { GRAPH <v> { <n> ?p ?o } } WHERE { GRAPH <g> { <o> <p> \"x ;\\n#trails:share-value\" } }"}
	b := Op{G: "<g>", Owner: "<o2>", Change: "<c2>", Node: "<n2>", Text: "INSERT { <a> <b> <c> ;\n <d> <e> } WHERE { }"}
	for _, tc := range []struct {
		name, in, rest string
		ops            []Op
	}{
		{"none", "INSERT DATA { <a> <b> <c> }", "INSERT DATA { <a> <b> <c> }", nil},
		{"between", "INSERT DATA { <a> <b> <c> } ;\n" + Mark(a) + " ;\n" + Mark(b) + " ;\nADD <x> TO <x>", "INSERT DATA { <a> <b> <c> }\n ;\nADD <x> TO <x>", []Op{a, b}},
		{"last", "INSERT DATA { <a> <b> <c> } ;\n" + Mark(a), "INSERT DATA { <a> <b> <c> }\n", []Op{a}},
		{"alone", Mark(a) + " ;\n" + Mark(b), "\n", []Op{a, b}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest, ops, err := Split(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if rest != tc.rest {
				t.Errorf("rest %q, want %q", rest, tc.rest)
			}
			if len(ops) != len(tc.ops) {
				t.Fatalf("%d operations, want %d", len(ops), len(tc.ops))
			}
			for i := range ops {
				if ops[i] != tc.ops[i] {
					t.Errorf("operation %d: %+v, want %+v", i, ops[i], tc.ops[i])
				}
			}
		})
	}
}

func TestSplitMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"no end":         "INSERT DATA { <a> <b> <c> } ;\n\n#trails:share-value <g> <o> <c> <n>\nDELETE WHERE { ?s ?p ?o }",
		"three IRIs":     "INSERT DATA { <a> <b> <c> } ;\n\n#trails:share-value <g> <o> <c>\nX\n#trails:end-share-value\n",
		"not an IRI":     "INSERT DATA { <a> <b> <c> } ;\n\n#trails:share-value <g> <o> <c> n\nX\n#trails:end-share-value\n",
		"not after ' ;'": "INSERT DATA { <a> <b> <c> }\n#trails:share-value <g> <o> <c> <n>\nX\n#trails:end-share-value\n",
	} {
		if _, _, err := Split(in); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}
