package session

import (
	"strings"
	"testing"
)

// TestPrologueJoin: the prologues of texts joined into one request are
// declared once, at its start (Oxigraph takes no PREFIX after ';'), and
// texts binding one prefix name to different IRIs are not joined.
func TestPrologueJoin(t *testing.T) {
	for _, tc := range []struct {
		name  string
		texts []string
		want  []bool // each text joined
		pro   string // the joined prologue
	}{
		{"same prefixes", []string{
			"# comment\nPREFIX a: <http://a/>\nINSERT DATA { a:x a:p 1 }",
			"PREFIX a: <http://a/> PREFIX b: <http://b#>\nINSERT DATA { b:x a:p 2 }",
		}, []bool{true, true}, "PREFIX a: <http://a/>\nPREFIX b: <http://b#>\n"},
		{"no prologue", []string{"INSERT DATA { <x> <p> 1 }"}, []bool{true}, ""},
		{"a clash", []string{
			"PREFIX a: <http://a/>\nINSERT DATA { a:x a:p 1 }",
			"PREFIX a: <http://other/>\nINSERT DATA { a:x a:p 1 }",
		}, []bool{true, false}, "PREFIX a: <http://a/>\n"},
		{"a clash within one text", []string{"PREFIX a: <http://a/> PREFIX a: <http://b/> ASK {}"}, []bool{false}, ""},
		{"a base", []string{"BASE <http://a/>\nINSERT DATA { <x> <p> 1 }"}, []bool{false}, ""},
		{"lower case, empty name", []string{"prefix : <http://e/>\nINSERT DATA { :x :p 1 }"}, []bool{true}, "PREFIX : <http://e/>\n"},
		{"a hash inside an IRI", []string{"PREFIX t: <https://w3id.org/trails/ns#> # the vocabulary\nASK { ?s t:p 1 }"}, []bool{true}, "PREFIX t: <https://w3id.org/trails/ns#>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pro := prologue{}
			for i, q := range tc.texts {
				body, _, ok := pro.join(q)
				if ok != tc.want[i] {
					t.Fatalf("text %d: joined %v, want %v", i, ok, tc.want[i])
				}
				if ok && (strings.Contains(strings.ToUpper(body), "PREFIX") || strings.HasPrefix(strings.TrimSpace(body), "#")) {
					t.Errorf("text %d: body %q keeps its prologue", i, body)
				}
				if !ok && body != q {
					t.Errorf("text %d: refused, got body %q, want the text unchanged", i, body)
				}
			}
			if got := pro.String(); got != tc.pro {
				t.Errorf("got prologue %q, want %q", got, tc.pro)
			}
		})
	}
}

// TestChecksCombine: every query that confirms a write (verify-*.rq)
// joins the one query that confirms a batch's members, rather than being
// asked alone.
func TestChecksCombine(t *testing.T) {
	for _, name := range []string{"verify-append.rq", "verify-create.rq", "verify-head.rq", "verify-merge.rq", "verify-detached.rq", "verify-rewind.rq"} {
		pro := prologue{}
		body, _, ok := pro.join(query(name))
		if !ok {
			t.Errorf("%s: its prologue does not join", name)
			continue
		}
		if p, found := askPattern(body); !found || !strings.HasPrefix(p, "{") {
			t.Errorf("%s: no ASK pattern found in %q", name, body)
		}
	}
}
