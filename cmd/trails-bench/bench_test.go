package main

import (
	"bytes"
	"context"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/exit"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for trails-bench as the
// peak-memory child, which the command starts by re-executing itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == childFlag || os.Args[1] == applierChildFlag) {
		os.Exit(exit.Code(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)))
	}
	os.Exit(m.Run())
}

// TestShort runs the whole benchmark at tiny sizes against a Fuseki of its
// own and checks that the report has every section and every target, each
// judged. It asserts nothing about time.
func TestShort(t *testing.T) {
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	prefix := "# Notes kept\n\n" + beginMarker + "\nold report\n" + endMarker + "\n\nMore notes.\n"
	if err := os.WriteFile(out, []byte(prefix), 0o644); err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir() // where the server's config and log go
	t.Setenv(fusekitest.EnvScratch, scratch)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-short", "-o", out}, &stdout, &stderr); err != nil {
		t.Fatalf("trails-bench -short: %v\n%s", err, stderr.String())
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("the run left %d scratch directories (%s...), want none", len(left), left[0].Name())
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
	if !strings.Contains(report, " targets met") {
		t.Errorf("no summary line under the Targets table")
	}
	checkTargets(t, report, targetColumns)
}

// TestShortOxigraph runs the whole benchmark at tiny sizes on an Oxigraph
// of its own (-store oxigraph) and checks that the report says which store
// it measured and what it left out, has every section and every target,
// each judged, and went between Oxigraph's markers, leaving Fuseki's
// report alone. Without Oxigraph (scripts/pytools) it fails, saying how
// to get it. It asserts nothing about time.
func TestShortOxigraph(t *testing.T) {
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	m := markers(kg.Oxigraph, "")
	prefix := beginMarker + "\nFuseki's report\n" + endMarker + "\n\n" + m.Begin + "\nold report\n" + m.End + "\n"
	if err := os.WriteFile(out, []byte(prefix), 0o644); err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir() // where the server's log goes
	t.Setenv(fusekitest.EnvScratch, scratch)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-short", "-store", "oxigraph", "-o", out}, &stdout, &stderr); err != nil {
		t.Fatalf("trails-bench -short -store oxigraph: %v\n%s", err, stderr.String())
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("the run left %d scratch directories (%s...), want none", len(left), left[0].Name())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	if !strings.Contains(report, beginMarker+"\nFuseki's report\n"+endMarker) {
		t.Errorf("the run on Oxigraph changed Fuseki's report:\n%s", report)
	}
	if strings.Contains(report, "old report") {
		t.Errorf("the old report between Oxigraph's markers is still there")
	}
	for _, want := range []string{
		"# Trails benchmark results on Oxigraph\n",
		"- Software: go", "Oxigraph 0.5.13 (`oxigraph serve`", "on RocksDB on disk", "Oxigraph's server does not fsync at each update",
		"against one Oxigraph, every baseline and floor included",
		"- Left out on Oxigraph: the SHACL shapes in section 7's `Check`: Oxigraph has no SHACL endpoint",
		"sections 10 and 12 (cluster, shards;",
		"| RocksDB MiB on disk |",
		"`Check()` (`check`; every rule but the SHACL shapes: Oxigraph has no SHACL endpoint)",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report does not say %q:\n%s", want, report)
		}
	}
	for _, fuseki := range []string{"Apache Jena Fuseki", "TDB2 MiB on disk", "warm the JVM up"} {
		if strings.Contains(report, fuseki) {
			t.Errorf("the report on Oxigraph says %q", fuseki)
		}
	}
	for _, s := range sections {
		if !strings.Contains(report, "\n"+s+"\n") {
			t.Errorf("no section %q in the report:\n%s", s, report)
		}
	}
	if !strings.Contains(report, " targets met") {
		t.Errorf("no summary line under the Targets table")
	}
	checkTargets(t, report, targetColumns)
}

// TestOnlySigning runs scenario 11 alone at tiny sizes (-only signing)
// and checks that the report has its section and its targets, each
// judged, and no other scenario's section. It asserts nothing about time.
func TestOnlySigning(t *testing.T) {
	t.Setenv(fusekitest.EnvScratch, t.TempDir())
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-short", "-only", "signing"}, &stdout, &stderr); err != nil {
		t.Fatalf("trails-bench -short -only signing: %v\n%s", err, stderr.String())
	}
	report := stdout.String()
	for _, s := range []string{"## Targets", "## 11. Signing and witnessing (issues 24 and 37)"} {
		if !strings.Contains(report, "\n"+s+"\n") {
			t.Errorf("no section %q in the report:\n%s", s, report)
		}
	}
	if strings.Contains(report, "\n## 9. ") {
		t.Errorf("the report of -only signing has section 9:\n%s", report)
	}
	checkTargets(t, report, []string{tSpoolAppend, tSpoolLoop, tSignAppend, tSignLoop, tSignDirAppend, tSignDirLoop})
}

// TestOnlyShards runs scenario 12 alone at tiny sizes (-only shards: one
// and two groups, a window of a second) and checks that the report has
// its section and its targets, each judged. It needs root and cgroup v1
// (the groups' CPU caps), as the scenario does. It asserts nothing about
// time.
func TestOnlyShards(t *testing.T) {
	t.Setenv(fusekitest.EnvScratch, t.TempDir())
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-short", "-only", "shards"}, &stdout, &stderr); err != nil {
		t.Fatalf("trails-bench -short -only shards: %v\n%s", err, stderr.String())
	}
	report := stdout.String()
	for _, s := range []string{"## Targets", "## 12. Shards: capacity of replica groups (issue 38)"} {
		if !strings.Contains(report, "\n"+s+"\n") {
			t.Errorf("no section %q in the report:\n%s", s, report)
		}
	}
	if strings.Contains(report, "\n## 10. ") {
		t.Errorf("the report of -only shards has section 10:\n%s", report)
	}
	checkTargets(t, report, shardsColumns)
	for _, row := range []string{"| " + tShardsLost + " |", "| " + tShardsSame + " |"} {
		if l := lineStarting(report, row); !strings.HasSuffix(l, "| meets |") {
			t.Errorf("Targets row %q: got %q, want it met (a short run loses nothing either)", row, l)
		}
	}
	if left, err := filepath.Glob(filepath.Join(cgroupCPU, "trails-bench-*")); err != nil || len(left) > 0 {
		t.Errorf("cgroups left after the run: %v (%v)", left, err)
	}
}

// TestOnlyTDB runs scenario 13 alone at tiny sizes (-only tdb, its
// databases kept with -data) and checks that the report has its section
// and the variants' table with a verdict for each, and that tdb.cfg took
// effect: the reduced variant's database has the files of its four quad
// indexes and none of GOSP's or OSPG's, the default's all six. It asserts
// nothing about time.
func TestOnlyTDB(t *testing.T) {
	t.Setenv(fusekitest.EnvScratch, t.TempDir())
	data := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-short", "-only", "tdb", "-data", data}, &stdout, &stderr); err != nil {
		t.Fatalf("trails-bench -short -only tdb: %v\n%s", err, stderr.String())
	}
	report := stdout.String()
	for _, s := range []string{"## Targets", "## 13. TDB2 tuning (issue 39, item 5)"} {
		if !strings.Contains(report, "\n"+s+"\n") {
			t.Errorf("no section %q in the report:\n%s", s, report)
		}
	}
	if strings.Contains(report, "\n## 12. ") {
		t.Errorf("the report of -only tdb has section 12:\n%s", report)
	}
	if !strings.Contains(report, "\n| measure | default | reduced | direct |\n|---|") {
		t.Errorf("no table with a column per variant (| measure | default | reduced | direct |) in the report:\n%s", report)
	}
	for _, row := range []string{"| appends/s |", "| floor quads/s |", "| `lineage` p50 ms (", "| `tool-calls` p50 ms ("} {
		if lineStarting(report, row) == "" {
			t.Errorf("the variants' table has no row %q:\n%s", row, report)
		}
	}
	verdicts := strings.Split(strings.Trim(lineStarting(report, "| verdict |"), "| "), " | ")
	if len(verdicts) != 4 || verdicts[1] != "baseline" {
		t.Fatalf("verdict row: got %q, want | verdict | baseline | keep or drop | keep or drop |", verdicts)
	}
	for i, v := range verdicts[2:] {
		if v != "keep" && v != "drop" {
			t.Errorf("verdict of variant %d: got %q, want keep or drop", i+2, v)
		}
	}

	for _, c := range []struct {
		variant      string
		have, lacked []string
	}{
		{"default", []string{"GSPO", "GPOS", "GOSP", "SPOG", "POSG", "OSPG"}, nil},
		{"reduced", []string{"GSPO", "GPOS", "SPOG", "POSG"}, []string{"GOSP", "OSPG"}},
	} {
		dir := filepath.Join(data, "tdb-"+c.variant, "databases", "trails", "Data-0001")
		for _, idx := range c.have {
			if _, err := os.Stat(filepath.Join(dir, idx+".dat")); err != nil {
				t.Errorf("%s: the quad index %s has no file: %v", c.variant, idx, err)
			}
		}
		for _, idx := range c.lacked {
			if got, _ := filepath.Glob(filepath.Join(dir, idx+".*")); len(got) > 0 {
				t.Errorf("%s: files of the dropped quad index %s: %v, want none (tdb.cfg did not take effect)", c.variant, idx, got)
			}
		}
	}
}

// TestShardsNeedCgroups: without a cgroup v1 cpu controller (here a
// directory that does not exist) -only shards fails at once, saying what
// it needs, and does not run uncapped.
func TestShardsNeedCgroups(t *testing.T) {
	old := cgroupCPU
	cgroupCPU = filepath.Join(t.TempDir(), "no-cgroup")
	t.Cleanup(func() { cgroupCPU = old })
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-short", "-only", "shards"}, &stdout, &stderr)
	if got := exit.Code(err); got != exit.Failure {
		t.Errorf("exit code: got %d, want %d (err %v)", got, exit.Failure, err)
	}
	for _, want := range []string{"needs root and the cgroup v1 cpu controller", "never runs uncapped"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr: got %q, want it to contain %q", stderr.String(), want)
		}
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout: got %q, want nothing", stdout.String())
	}
}

// checkTargets checks that for each of cols a table has a column and the
// Targets table a row ending in its verdict.
func checkTargets(tb testing.TB, report string, cols []string) {
	tb.Helper()
	for _, col := range cols {
		if !headerHas(report, col) {
			tb.Errorf("no table has a column %q", col)
		}
		row := lineStarting(report, "| "+col+" |")
		if !strings.HasSuffix(row, "| meets |") && !strings.HasSuffix(row, "| misses |") {
			tb.Errorf("Targets row for %q: got %q, want it to end in meets or misses", col, row)
		}
	}
}

// headerHas reports whether a markdown table's header row (the line above
// a |---| line) has a cell col.
func headerHas(report, col string) bool {
	lines := strings.Split(report, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if strings.HasPrefix(lines[i+1], "|---") && strings.Contains(lines[i], "| "+col+" |") {
			return true
		}
	}
	return false
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
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a part of it
		stderr string // a part of it
		env    map[string]string
	}{
		{name: "help", args: []string{"-h"}, code: exit.OK, stdout: "Usage: trails-bench"},
		{name: "unknown flag", args: []string{"-bogus"}, code: exit.Usage, stderr: "Run \"trails-bench -h\""},
		{name: "argument", args: []string{"now"}, code: exit.Usage, stderr: "takes flags only"},
		{name: "data not empty", args: []string{"-data", full}, code: exit.Usage, stderr: "not empty"},
		{name: "child without arguments", args: []string{childFlag}, code: exit.Usage, stderr: childFlag},
		{name: "only what", args: []string{"-only", "everything"}, code: exit.Usage, stderr: "wide, tail, agent, cluster, signing, shards and tdb"},
		{name: "only cluster without Kafka", args: []string{"-only", "cluster"}, env: map[string]string{"TRAILS_KAFKA_BROKERS": ""}, code: exit.Usage, stderr: "scripts/cluster start --kafka-only"},
		{name: "applier child without arguments", args: []string{applierChildFlag}, code: exit.Usage, stderr: applierChildFlag},
		{name: "only agent without its markers", args: []string{"-only", "agent", "-o", filepath.Join(full, "x")}, code: exit.Usage, stderr: "trails-bench:agent:begin"},
		{name: "store what", args: []string{"-store", "generic"}, code: exit.Usage, stderr: "fuseki (the default) or oxigraph"},
		{name: "only cluster on oxigraph", args: []string{"-store", "oxigraph", "-only", "cluster"}, code: exit.Usage, stderr: "-only cluster runs on Fuseki only"},
		{name: "only shards on oxigraph", args: []string{"-store", "oxigraph", "-only", "shards"}, code: exit.Usage, stderr: "-only shards runs on Fuseki only"},
		{name: "only tdb on oxigraph", args: []string{"-store", "oxigraph", "-only", "tdb"}, code: exit.Usage, stderr: "-only tdb runs on Fuseki only"},
		{name: "oxigraph without its markers", args: []string{"-store", "oxigraph", "-o", filepath.Join(full, "x")}, code: exit.Usage, stderr: "trails-bench:oxigraph:begin"},
		{name: "fuseki with the tests on oxigraph", args: []string{"-short"}, env: map[string]string{fusekitest.EnvStore: "oxigraph"}, code: exit.Usage, stderr: "-store oxigraph"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
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

// TestApplyOffsets reads the offsets of apply requests shaped as the
// applier's guard (cluster/applier.go) writes them. It failed before the
// guard became one operation that checks and moves the offset: the
// cluster's phase table then traced no append.
func TestApplyOffsets(t *testing.T) {
	term := func(x rdf.Term) string {
		s, err := kg.Term(x)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rg, l, off := term(kg.MustIRI(ontology.ReplicaGraph)), term(kg.MustIRI("urn:trails:log:t/0")), term(kg.MustIRI(ontology.AppliedOffset))
	at := func(n int) string { return "GRAPH " + rg + " { " + l + " " + off + " " + term(kg.Int(n)) + " }" }
	rec := "INSERT DATA { GRAPH <urn:x> { <urn:a> <urn:b> 1 } }"
	for _, c := range []struct {
		name       string
		body       string
		prev, last int64
	}{
		{"moved", "DELETE { " + at(41) + " } INSERT { " + at(57) + " } WHERE { " + at(41) + " } ;\n" + rec, 41, 57},
		{"first", "INSERT { " + at(9) + " } WHERE { FILTER NOT EXISTS { GRAPH " + rg + " { " + l + " " + off + " ?any } } } ;\n" + rec, -1, 9},
		{"no guard", rec, -1, -1},
	} {
		prev, last := applyOffsets([]byte(c.body))
		if prev != c.prev || last != c.last {
			t.Errorf("%s: applyOffsets = %d, %d; want %d, %d", c.name, prev, last, c.prev, c.last)
		}
	}
	// A conditional patch (the decided path's requests): its query's
	// offset, and as many records as its answer's Trails-Applied counts.
	for _, c := range []struct {
		name, offset, answer string
		prev, last           int64
	}{
		{"moved", "41", "16", 41, 57},
		{"first", "-1", "10", -1, 9},
		{"none applied", "41", "0", 41, 41},
		{"no count", "41", "", 41, 41},
		{"no offset", "", "3", -1, -1},
	} {
		prev, last := conditionalOffsets(url.Values{"offset": {c.offset}}, c.answer)
		if prev != c.prev || last != c.last {
			t.Errorf("conditional patch, %s: conditionalOffsets = %d, %d; want %d, %d", c.name, prev, last, c.prev, c.last)
		}
	}
}
