package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/exit"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/ontology"
)

// TestShort runs the whole benchmark at tiny sizes, against ADK's
// database service on SQLite and on a PostgreSQL of its own, and Trails
// on a Fuseki and on an Oxigraph of its own, into a file with notes
// around the markers, and checks that the notes are kept and that the
// report has every section, every target, each judged, with a column for
// each backend, and PostgreSQL and Oxigraph beside the others in each
// scenario. It asserts nothing about time. It needs PostgreSQL's binaries
// (the Debian package postgresql) and Oxigraph (scripts/pytools); without
// either it fails, saying how to get it.
func TestShort(t *testing.T) {
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	notes := "# Notes kept\n\n" + beginMarker + "\nold report\n" + endMarker + "\n\nMore notes.\n"
	if err := os.WriteFile(out, []byte(notes), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if _, err := findPostgres(postgresBins); err != nil {
		t.Fatalf("%v (TestShort needs PostgreSQL as the bench does)", err)
	}
	root, err := fusekitest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := findOxigraph(root); err != nil {
		t.Fatalf("%v (TestShort needs Oxigraph as the bench does)", err)
	}
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
	if h := "| target | ADK on SQLite | ADK on PostgreSQL | Trails on Fuseki | Trails on Oxigraph | result |"; !strings.Contains(report, "\n"+h+"\n") {
		t.Errorf("the Targets table has no header %q", h)
	}
	reported := map[int]bool{9: true, 11: true, 14: true, len(names) - 1: true} // the rows that only report a figure
	for i, name := range names {
		row := lineStarting(report, "| "+name+" |")
		c := cells(row)
		if len(c) != 5 {
			t.Errorf("Targets row %q: got %d cells %q, want 5 (SQLite, PostgreSQL, Trails on Fuseki, on Oxigraph, result)", name, len(c), c)
		} else if ox := c[3]; ox == "" || ox == "—" {
			t.Errorf("Targets row %q: got Oxigraph's cell %q, want its figures", name, ox)
		}
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
	for _, k := range backends {
		// Two writers tables, and the pair table's rows start with the
		// backend and the session's count.
		if n := strings.Count(report, "\n| "+k.String()+" |"); n != 2 {
			t.Errorf("the writers' tables: got %d rows %q, want 2", n, k)
		}
		if !strings.Contains(report, "\n| "+k.String()+" (") {
			t.Errorf("the two writers' table has no row of %v", k)
		}
		if !strings.Contains(stderr.String(), "on "+k.String()+":") {
			t.Errorf("the progress has no line of the writers on %v", k)
		}
	}
	// Where the Trails writers' wall went, in each writers' table: their
	// update requests, the rest, and the floor, on each store.
	for _, st := range []string{"Fuseki", "Oxigraph"} {
		if n := strings.Count(report, "\n| "+st+" | the floor: raw `INSERT DATA`"); n != 2 {
			t.Errorf("the writers' phases: %d floor rows of %s, want 2 (one a writers' table)", n, st)
		}
		// Every writers' run of a few writers has group commits (and, on
		// Oxigraph, their checks): more than one writer waits while one
		// writes. On Fuseki, with Trails' module, a group commit is a
		// conditional patch whose answer says which members applied.
		kinds := []string{"`POST update (group commit)`", "`GET query (checks)`"}
		if st == "Fuseki" {
			kinds = []string{"`POST conditional-patch (group commit)`"}
		}
		for _, kind := range kinds {
			rows := linesStarting(report, "| "+st+" | "+kind+" |")
			if len(rows) != 2 {
				t.Errorf("the writers' phases: %d rows of %s's %s, want 2", len(rows), st, kind)
			}
			for _, r := range rows {
				if c := cells(r); len(c) != 7 || number(c[1]) <= 0 || !strings.HasSuffix(c[6], "%") {
					t.Errorf("the writers' phases, %s's %s: got %q, want requests and a share of the wall", st, kind, c)
				}
			}
		}
	}
	if n := strings.Count(report, "\nBytes sent per append, every request of the run: on Fuseki "); n != 2 {
		t.Errorf("the writers' bytes sent per append: %d lines, want 2", n)
	}
	for _, way := range []string{"ADK on SQLite: `AppendEvent`", "ADK on PostgreSQL: `AppendEvent`", "Trails on Fuseki: `AppendEvent`",
		"Fuseki's floor: raw `INSERT DATA`", "Trails on Oxigraph: `AppendEvent`", "Oxigraph's floor: raw `INSERT DATA`"} {
		if row := cells(lineStarting(report, "| "+way+" |")); len(row) != 5 || number(row[0]) <= 0 {
			t.Errorf("the appends' row %q: got %q, want a p50 above 0", way, row)
		}
	}
	// Trails on Oxigraph over Trails on Fuseki, and over Oxigraph's floor.
	if row := cells(lineStarting(report, "| Trails on Fuseki: `AppendEvent` |")); len(row) != 5 || ratioIn(row[4]) <= 0 {
		t.Errorf("the appends' row of Trails on Fuseki: got %q, want Trails on Oxigraph / this above 0", row)
	}
	if row := cells(lineStarting(report, "| Oxigraph's floor: raw `INSERT DATA` |")); len(row) != 5 || ratioIn(row[4]) <= 0 {
		t.Errorf("the appends' row of Oxigraph's floor: got %q, want Trails on Oxigraph / this above 0", row)
	}
	// SQLite, PostgreSQL, Trails on Fuseki p50 and p99, on Oxigraph p50
	// and p99, Fuseki / SQLite, Fuseki / PostgreSQL, Oxigraph / Fuseki,
	// round trips, KB received.
	for _, name := range []string{fmt.Sprintf("whole session (%d events)", p.appends), fmt.Sprintf("`NumRecentEvents: %d`", p.tail),
		fmt.Sprintf("whole session (%d events), no cache", p.appends), fmt.Sprintf("`NumRecentEvents: %d`, no cache", p.tail),
		fmt.Sprintf("whole session (%d events; %d Gets each)", p.longGet, p.longRuns)} {
		get := cells(lineStarting(report, "| "+name+" |"))
		if len(get) != 11 || number(get[1]) <= 0 || number(get[4]) <= 0 || ratioIn(get[7]) <= 0 || ratioIn(get[8]) <= 0 {
			t.Errorf("the Get row %q: got %q, want PostgreSQL's and Oxigraph's p50, Trails / PostgreSQL and Oxigraph / Fuseki above 0", name, get)
		}
	}
	last := fmt.Sprintf("| %d |", p.forks[len(p.forks)-1])
	fork := cells(lineStarting(report, last))
	if len(fork) != 14 || number(fork[1]) <= 0 || number(fork[3]) <= 0 || ratioIn(fork[4]) <= 0 || ratioIn(fork[6]) <= 0 {
		t.Errorf("the fork row: got %q, want PostgreSQL's copy, Oxigraph's fork, Oxigraph / Fuseki and the speed-up over PostgreSQL above 0", fork)
	}
	// Oxigraph's fork table: ms, speed-ups, quads, files (n/a), round
	// trips, KB.
	if rows := linesStarting(report, last); len(rows) != 2 {
		t.Errorf("rows of the fork of %d events: got %d, want 2 (the fork table, Oxigraph's)", p.forks[len(p.forks)-1], len(rows))
	} else if ox := cells(rows[1]); len(ox) != 7 || number(ox[0]) <= 0 || number(ox[3]) <= 0 || ox[4] != "n/a" {
		t.Errorf("Oxigraph's fork row: got %q, want its fork and quads above 0 and its files n/a", ox)
	}
	for _, w := range []struct{ n, per int }{{p.writers, p.perWriter}, {p.many, p.perMany}} {
		for _, store := range []string{"Fuseki", "Oxigraph"} {
			row := cells(lineStarting(report, fmt.Sprintf("| %s's floor: raw `INSERT DATA`, %d appends a request |", store, w.n)))
			if len(row) < 5 || number(row[4]) <= 0 { // appends/s
				t.Errorf("%s's floor row of %d writers: got %q, want one with appends/s above 0", store, w.n, row)
			}
		}
		name := floorName(w.n, w.per)
		target := cells(lineStarting(report, "| "+name+" |")) // SQLite, PostgreSQL, Trails on Fuseki, on Oxigraph, result
		if len(target) != 5 {
			t.Errorf("Targets row %q: got %q, want 5 cells", name, target)
			continue
		}
		if rate, _, _ := strings.Cut(target[2], "/s"); number(rate) <= 0 {
			t.Errorf("Targets row %q: got %q, want Fuseki's floor's appends/s above 0 in the Trails on Fuseki column", name, target)
		}
		if rate, _, _ := strings.Cut(strings.TrimPrefix(target[3], "Oxigraph's floor: "), "/s"); number(rate) <= 0 {
			t.Errorf("Targets row %q: got %q, want Oxigraph's floor's appends/s above 0 in the Trails on Oxigraph column", name, target)
		}
	}
	for _, row := range linesStarting(report, "| "+oxigraphBackend.String()+" |") { // a row in each writers table
		if c := cells(row); len(c) != 11 || number(c[9]) <= 0 {
			t.Errorf("the writers' row of Trails on Oxigraph: got %q, want commits per append above 0", c)
		}
	}
}

// ratioIn returns the number of a ratio cell ("1.23×"), -1 when none.
func ratioIn(s string) float64 { return number(strings.TrimSuffix(s, "×")) }

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
	if ls := linesStarting(report, prefix); len(ls) > 0 {
		return ls[0]
	}
	return ""
}

// linesStarting returns the lines of report that start with prefix.
func linesStarting(report, prefix string) []string {
	var out []string
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// TestFindOxigraph checks that without Oxigraph the error names the
// package to install and how.
func TestFindOxigraph(t *testing.T) {
	_, err := findOxigraph(t.TempDir()) // a checkout without scripts/pytools
	if !errors.Is(err, errNoOxigraph) {
		t.Fatalf("no scripts/pytools: got %v, want errNoOxigraph", err)
	}
	for _, want := range []string{"oxigraph==0.5.13", "scripts/pytools ensure", "python3-venv"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no scripts/pytools: got %q, want it to say %q", err, want)
		}
	}
}

// TestFindPostgres checks that the newest version's binaries are chosen
// and that without them the error names the package and the place looked
// in.
func TestFindPostgres(t *testing.T) {
	root := t.TempDir()
	glob := filepath.Join(root, "*", "bin")
	_, err := findPostgres(glob)
	if !errors.Is(err, errNoPostgres) {
		t.Fatalf("no binaries: got %v, want errNoPostgres", err)
	}
	for _, want := range []string{"Debian package postgresql", "apt-get install postgresql", glob} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no binaries: got %q, want it to say %q", err, want)
		}
	}
	for _, v := range []string{"9", "15", "13"} {
		bin := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "postgres", "pg_isready"} {
			if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Remove(filepath.Join(root, "13", "bin", "pg_isready")); err != nil { // 13 is incomplete
		t.Fatal(err)
	}
	got, err := findPostgres(glob)
	if want := filepath.Join(root, "15", "bin"); err != nil || got != want {
		t.Errorf("got %q, %v, want %q", got, err, want)
	}
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
		{name: "help", args: []string{"-h"}, code: exit.OK, stdout: "Usage: adk-bench"},
		{name: "unknown flag", args: []string{"-bogus"}, code: exit.Usage, stderr: "Run \"adk-bench -h\""},
		{name: "argument", args: []string{"now"}, code: exit.Usage, stderr: "takes flags only"},
		{name: "file without markers", args: []string{"-o", noMarkers}, code: exit.Usage, stderr: "has no lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stdout, &stderr)
			if got := exit.Code(err); got != tt.code {
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

// TestFloorConditionalPatch checks the floor of a conditional patch (how
// a Store sends plain appends on Fuseki with Trails' module): each
// record's added quads, its deletes and ASK left out, the session ids
// replaced; and the request's name in the phase table.
func TestFloorConditionalPatch(t *testing.T) {
	rec := func(ask, patch, bind string) string {
		head := fmt.Sprintf("%d %d %d", len(ask), len(patch), len(bind))
		if bind == "" {
			head = fmt.Sprintf("%d %d", len(ask), len(patch))
		}
		return "0 " + head + "\n" + ask + patch + bind
	}
	first := rec("ASK { $s ?p ?o }", "D <urn:s:OLD> <urn:n> \"1\" <urn:s:OLD> .\nA <urn:s:OLD/turn/1> <urn:p> \"a b .\" <urn:s:OLD> .\nA <urn:s:OLD> <urn:n> \"2\" <urn:s:OLD> .\n", "s\t<urn:s:OLD>\n")
	second := rec("ASK {}", "A <urn:r> <urn:applied> <urn:ack> <urn:r> .\n", "")
	update := "INSERT {\nGRAPH <urn:s:OLD> {\n<urn:s:OLD> <urn:q> \"u\" .\n}\n}\nWHERE {\n}"
	third := fmt.Sprintf("2 U %d <urn:ack2>\n", len(update)) + update
	body := patchMagic + first + second + third
	got, n, err := floorOf(body, strings.NewReplacer("OLD", "NEW"))
	if err != nil {
		t.Fatal(err)
	}
	want := `INSERT DATA {
GRAPH <urn:s:NEW> { <urn:s:NEW/turn/1> <urn:p> "a b ." . }
GRAPH <urn:s:NEW> { <urn:s:NEW> <urn:n> "2" . }
GRAPH <urn:r> { <urn:r> <urn:applied> <urn:ack> . }
GRAPH <urn:s:NEW> {
<urn:s:NEW> <urn:q> "u" .
}
}
`
	if got != want || n != 4 {
		t.Errorf("got %d triples\n%s\nwant 4\n%s", n, got, want)
	}
	if name := requestName(body); name != "group commit" {
		t.Errorf("two records: named %q, want group commit", name)
	}
	if name := requestName(patchMagic + second); name != "append" {
		t.Errorf("one record: named %q, want append", name)
	}
	if _, _, err := floorOf(patchMagic+"0 99 1\nASK {}", strings.NewReplacer()); err == nil {
		t.Errorf("a record past the body's end: got no error")
	}
}
