package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	names := targetNames(shortPlan())
	reported := map[int]bool{12: true, len(names) - 1: true} // the rows that only report a figure
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
	got, n, err := floorOf(u, "OLD", "NEW")
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
	if _, _, err := floorOf("INSERT DATA { <a> <b> <c> }", "x", "y"); err == nil {
		t.Errorf("an update without an INSERT template: got no error")
	}
}
