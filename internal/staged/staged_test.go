package staged

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trails-kg/trails/kg"
)

func TestChunk(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		n    int
	}{
		{"empty", "", 4},
		{"short", "abc", 4},
		{"exact", "abcd", 4},
		{"ascii", strings.Repeat("abcdefg", 100), 16},
		{"emoji across every cut", strings.Repeat("a🎉", 300), 16},
		{"two-byte", strings.Repeat("é", 301), 5},
		{"NUL and quotes", strings.Repeat("\x00\"\\\n", 77), 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := chunk(tc.s, tc.n)
			if got := strings.Join(cs, ""); got != tc.s {
				t.Fatalf("joined: got %q, want %q", got, tc.s)
			}
			for i, c := range cs {
				if len(c) > tc.n || !utf8.ValidString(c) || (len(c) == 0 && len(cs) > 1) {
					t.Fatalf("chunk %d: got %q (%d bytes), want 1..%d bytes of UTF-8", i, c, len(c), tc.n)
				}
			}
		})
	}
}

func TestBind(t *testing.T) {
	var empty Set
	if got, err := empty.Bind("INSERT DATA { }"); err != nil || got != "INSERT DATA { }" || empty.Drop() != "" {
		t.Fatalf("empty set: got %q, %v, drop %q; want the template unchanged", got, err, empty.Drop())
	}
	var st Set
	g := kg.MustIRI("https://example.org/g")
	st.Add(g, g, kg.MustIRI("https://example.org/p"), kg.String(strings.Repeat("x", Chunk+1)))
	if _, err := st.Bind("INSERT { #DATA } WHERE { }"); err == nil {
		t.Fatalf("a template without #STAGED: got no error, want one")
	}
	u, err := st.Bind("INSERT {\n#DATA\n} WHERE {\n#STAGED\n}")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"?staged0 }", "?staged0_0 .", "?staged0_1 .", "CONCAT(?staged0_0, ?staged0_1)"} {
		if !strings.Contains(u, want) {
			t.Errorf("update: got %q, want it to hold %q", u, want)
		}
	}
	if !st.Sends() || !strings.HasPrefix(st.Drop(), " ;\nDROP SILENT GRAPH <https://w3id.org/trails/id/staging/") {
		t.Errorf("drop: got %q, want the staging graph dropped", st.Drop())
	}
}
