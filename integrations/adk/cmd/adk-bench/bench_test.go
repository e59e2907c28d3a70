package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trails-kg/trails/ontology"
)

// TestShort runs the whole benchmark at tiny sizes, against ADK's SQLite
// service and a Fuseki of its own, into a file with notes around the
// markers, and checks that the notes are kept and that the report has
// every section and every target, each judged. It asserts nothing about
// time.
func TestShort(t *testing.T) {
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	notes := "# Notes kept\n\n" + beginMarker + "\nold report\n" + endMarker + "\n\nMore notes.\n"
	if err := os.WriteFile(out, []byte(notes), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-short", "-o", out}, &stdout, &stderr); err != nil {
		t.Fatalf("adk-bench -short: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	for _, kept := range []string{"# Notes kept", "More notes.", beginMarker, endMarker} {
		if !strings.Contains(report, kept) {
			t.Errorf("the report file lost %q, which is outside the markers", kept)
		}
	}
	if strings.Contains(report, "old report") {
		t.Errorf("the old report between the markers is still there")
	}
	for _, s := range sections {
		if !strings.Contains(report, "\n"+s+"\n") {
			t.Errorf("no section %q in the report:\n%s", s, report)
		}
	}
	p := shortPlan()
	names := targetNames(p)
	reported := map[int]bool{9: true, 11: true, 14: true, len(names) - 1: true} // the rows that only report a figure
	for i, name := range names {
		row := lineStarting(report, "| "+name+" |")
		ok := strings.HasSuffix(row, "| meets |") || strings.HasSuffix(row, "| misses |")
		if reported[i] {
			ok = strings.HasSuffix(row, "| reported |")
		}
		if !ok {
			t.Errorf("Targets row %q: got %q, want it to end in meets or misses (or reported)", name, row)
		}
	}
	if !strings.Contains(report, " targets met") {
		t.Errorf("no summary line under the targets table")
	}
	for _, backend := range []string{"| ADK database on SQLite |", "| Trails on Fuseki |"} {
		if !strings.Contains(report, backend) {
			t.Errorf("the concurrent writers' table has no row %q", backend)
		}
	}
	for _, w := range []struct{ n, per int }{{p.writers, p.perWriter}, {p.many, p.perMany}} {
		row := cells(lineStarting(report, fmt.Sprintf("| Fuseki's floor: raw `INSERT DATA`, %d appends a request |", w.n)))
		if len(row) < 5 || number(row[4]) <= 0 { // appends/s
			t.Errorf("the floor row of %d writers: got %q, want one with appends/s above 0", w.n, row)
		}
		name := floorName(w.n, w.per)
		target := cells(lineStarting(report, "| "+name+" |"))
		if rate, _, _ := strings.Cut(strings.Join(target[min(1, len(target)):], ""), "/s"); number(rate) <= 0 {
			t.Errorf("Targets row %q: got %q, want the floor's appends/s above 0 in the Trails column", name, target)
		}
	}
}

// cells returns the cells of a markdown table row after the first,
// trimmed.
func cells(row string) []string {
	c := strings.Split(strings.Trim(row, "|"), " | ")
	for i := range c {
		c[i] = strings.TrimSpace(c[i])
	}
	return c[1:]
}

// number returns the number s, or -1 when s is none.
func number(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return v
}

func lineStarting(report, prefix string) string {
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestUsage checks the command line without starting anything.
func TestUsage(t *testing.T) {
	noMarkers := filepath.Join(t.TempDir(), "notes.md")
	if err := os.WriteFile(noMarkers, []byte("# Notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a part of it
		stderr string // a part of it
	}{
		{name: "help", args: []string{"-h"}, code: exitOK, stdout: "Usage: adk-bench"},
		{name: "unknown flag", args: []string{"-bogus"}, code: exitUsage, stderr: "Run \"adk-bench -h\""},
		{name: "argument", args: []string{"now"}, code: exitUsage, stderr: "takes flags only"},
		{name: "file without markers", args: []string{"-o", noMarkers}, code: exitUsage, stderr: "has no lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stdout, &stderr)
			if got := exitCode(err); got != tt.code {
				t.Errorf("exit code: got %d, want %d (err %v)", got, tt.code, err)
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout: got %q, want it to contain %q", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr: got %q, want it to contain %q", stderr.String(), tt.stderr)
			}
		})
	}
}

// TestFloorOf checks that the floor's INSERT DATA is made of an append's
// INSERT templates, ground, with the session id replaced.
func TestFloorOf(t *testing.T) {
	u := `PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH <urn:s:OLD> { <urn:s:OLD> trails:ownTurns ?n } }
INSERT {
  GRAPH <urn:s:OLD> {
<urn:s:OLD/turn/1> <urn:p> "a" .
<urn:s:OLD> <urn:n> "2" .
}

}
WHERE {
  GRAPH <urn:s:OLD> { <urn:s:OLD> trails:ownTurns ?n }
}
 ;
DELETE { GRAPH <urn:values> { <urn:v> ?p ?o } }
INSERT {
  GRAPH <urn:values> {
    <urn:v> a <urn:T> , <urn:E> ;
      <urn:from> <urn:s:OLD/turn/1/value/0> ;
      <urn:value> ?v .
  }
}
WHERE {
  OPTIONAL { GRAPH <urn:values> { <urn:v> ?p ?o } }
}
`
	got, n, err := floorOf(u, strings.NewReplacer("OLD", "NEW"))
	if err != nil {
		t.Fatal(err)
	}
	want := `INSERT DATA {
GRAPH <urn:s:NEW> {
<urn:s:NEW/turn/1> <urn:p> "a" .
<urn:s:NEW> <urn:n> "2" .
}
GRAPH <urn:values> {
    <urn:v> a <urn:T> , <urn:E> ;
      <urn:from> <urn:s:NEW/turn/1/value/0> ;
      <urn:value> "null"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON> .
  }
}
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if n != 6 {
		t.Errorf("got %d triples, want 6", n)
	}
	if _, _, err := floorOf("INSERT DATA { <a> <b> <c> }", strings.NewReplacer("x", "y")); err == nil {
		t.Errorf("an update without an INSERT template: got no error")
	}
}

// TestFloorBatch checks the floor of a request of group commit, built as
// session/batch.go builds one: one PREFIX prologue, the members joined by
// "\n;\n", each with the receipt operations of its ack graph, then the
// drop of an earlier receipt graph and the request's gate. Each member's
// INSERT templates are an append's triples, ground; receipts and gates
// are not.
func TestFloorBatch(t *testing.T) {
	iri := func(s string) string { return "<" + s + ">" }
	const values = "<https://w3id.org/trails/graph/values>"
	receipt, old, gate := iri(ontology.StagingBase+"receipt"), iri(ontology.StagingBase+"old"), iri(ontology.StagingBase+"gate")
	applied, fences, fencedAt := iri(ontology.Applied), iri(ontology.FencesGraph), iri(ontology.FencedAt)
	member := func(id string) string { // an append to session urn:s:id, with ack graph ack-id
		ack := iri(ontology.StagingBase + "ack-" + id)
		return `DELETE { GRAPH <urn:s:` + id + `> { <urn:s:` + id + `> trails:ownTurns ?n } }
INSERT {
  GRAPH <urn:s:` + id + `> {
<urn:s:` + id + `/turn/1> <urn:p> "a" .
<urn:s:` + id + `> <urn:n> "2" .
}
GRAPH ` + ack + ` {
` + ack + ` ` + ack + ` ` + ack + ` .
}

}
WHERE {
  GRAPH <urn:s:` + id + `> { <urn:s:` + id + `> trails:ownTurns ?n }
} ;
DELETE { GRAPH ` + values + ` { <urn:v> ?p ?o } }
INSERT {
  GRAPH ` + values + ` {
    <urn:v> a <urn:T> , <urn:E> ;
      <urn:from> <urn:s:` + id + `/turn/1/change/0> ;
      <urn:changedAt> ?now ;
      <urn:value> ?v .
    <urn:s:` + id + `/turn/1/change/0> <urn:sharedAt> ?now .
  }
}
WHERE {
  OPTIONAL { GRAPH ` + values + ` { <urn:v> ?p ?o } }
  BIND(NOW() AS ?now)
}` + // receiptOps
			" ;\nINSERT { GRAPH " + receipt + " { " + receipt + " " + applied + " " + ack + " } } WHERE { GRAPH " + ack + " { " + ack + " " + ack + " " + ack + " } } ;\nDROP SILENT GRAPH " + ack + "\n"
	}
	ids := []string{"A", "B", "C"}
	var bodies []string
	for _, id := range ids {
		bodies = append(bodies, member(id))
	}
	u := "PREFIX trails: <https://w3id.org/trails/ns#>\n" + strings.Join(bodies, "\n;\n") +
		" ;\nDROP SILENT GRAPH " + old + "\n" + // takeReceipts
		" ;\nINSERT { GRAPH " + gate + " { " + gate + " " + gate + " " + gate + " } } WHERE { FILTER NOT EXISTS { GRAPH " + fences + " { " + gate + " " + fencedAt + " ?fencedAt } } }" +
		" ;\nADD " + gate + " TO " + gate + " ;\nDROP GRAPH " + gate + "\n" // gateOps
	renamed := strings.NewReplacer("urn:s:A", "urn:s:X", "urn:s:B", "urn:s:Y", "urn:s:C", "urn:s:Z")

	ms := members(u)
	if len(ms) != len(ids) {
		t.Fatalf("got %d members, want %d", len(ms), len(ids))
	}
	const perMember = 9 // 2 of the turn, the ack quad, 6 of the shared value
	var want strings.Builder
	for i, m := range ms {
		g, n, err := ground("\n"+m, renamed)
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		if n != perMember {
			t.Errorf("member %d: got %d triples, want %d", i, n, perMember)
		}
		to := map[string]string{"A": "X", "B": "Y", "C": "Z"}[ids[i]]
		for _, in := range []string{"<urn:s:" + to + "/turn/1> <urn:p>", "GRAPH " + values, "<urn:s:" + to + "/turn/1/change/0> <urn:sharedAt>", iri(ontology.StagingBase + "ack-" + ids[i])} {
			if !strings.Contains(g, in) {
				t.Errorf("member %d: got\n%s\nwant it to hold %q", i, g, in)
			}
		}
		for _, out := range []string{"urn:s:" + ids[i], receipt, gate, old, "DROP", "WHERE", "?"} {
			if strings.Contains(g, out) {
				t.Errorf("member %d: got\n%s\nwant nothing of %q", i, g, out)
			}
		}
		want.WriteString(g)
	}
	got, n, err := floorOf(u, renamed)
	if err != nil {
		t.Fatal(err)
	}
	if w := "INSERT DATA {\n" + want.String() + "}\n"; got != w {
		t.Errorf("floorOf the whole batch: got\n%s\nwant its members' triples\n%s", got, w)
	}
	if n != len(ids)*perMember {
		t.Errorf("floorOf the whole batch: got %d triples, want %d", n, len(ids)*perMember)
	}
}
