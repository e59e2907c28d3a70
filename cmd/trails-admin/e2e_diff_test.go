package main_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

// diffFields are the documented field names of diff --json.
var diffFields = []string{"a", "b", "common", "divergence", "copied", "shared", "a_tail", "b_tail"}

// TestDiff runs diff on the family (see seedFamily), each case on a fresh
// one.
func TestDiff(t *testing.T) {
	fusekitest.Parallel(t)
	tests := []struct {
		name  string
		args  func(f family) []string
		code  int
		check func(t *testing.T, f family, res result)
	}{
		{name: "diff-siblings", args: func(f family) []string { return []string{"diff", f.a, f.fc} }},
		{name: "diff-cousins", args: func(f family) []string { return []string{"diff", f.b, f.fc} }},
		{name: "diff-root-grandchild", args: func(f family) []string { return []string{"diff", f.root, f.b} }},
		{name: "diff-child-parent", args: func(f family) []string { return []string{"diff", f.b, f.a} }},
		{name: "diff-same", args: func(f family) []string { return []string{"diff", f.b, f.b} }},
		{name: "diff-unrelated", args: func(f family) []string { return []string{"diff", f.root, f.other} }},
		{name: "diff-blocks", args: func(f family) []string { return []string{"diff", f.root, f.b, "--blocks"} }},
		{name: "diff-json", args: func(f family) []string { return []string{"diff", f.b, f.fc, "--json"} },
			check: func(t *testing.T, f family, res result) {
				v := decode[map[string]any](t, res)
				hasFields(t, "diff", v, diffFields...)
				if v["a"] != f.b || v["b"] != f.fc || v["common"] != f.root || v["divergence"] != float64(1) {
					t.Errorf("got a %v, b %v, common %v, divergence %v; want %s, %s, %s, 1",
						v["a"], v["b"], v["common"], v["divergence"], f.b, f.fc, f.root)
				}
				for field, n := range map[string]int{"shared": 1, "a_tail": 4, "b_tail": 1} {
					turns := array(t, field, v[field])
					if len(turns) != n {
						t.Errorf("got %d turns in %s, want %d", len(turns), field, n)
					}
					for i, tn := range turns {
						hasFields(t, fmt.Sprintf("%s turn %d", field, i), object(t, "turn", tn), turnFields...)
					}
				}
			}},
		{name: "diff-json-same", args: func(f family) []string { return []string{"diff", f.root, f.root, "--json"} },
			check: func(t *testing.T, f family, res result) {
				v := decode[map[string]any](t, res)
				// Empty tails are [], not null.
				if len(array(t, "a_tail", v["a_tail"])) != 0 || len(array(t, "b_tail", v["b_tail"])) != 0 {
					t.Errorf("got tails %v and %v, want none", v["a_tail"], v["b_tail"])
				}
			}},
		{name: "diff-not-found", args: func(f family) []string { return []string{"diff", f.a, anID} }, code: 1},
		{name: "diff-bad-id", args: func(f family) []string { return []string{"diff", "not-an-id", f.a} }, code: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := seedFamily(t)
			r := storeRunner(t)
			res := r.mustRun(t, tt.code, tt.args(f)...)
			golden(t, tt.name, []string{f.c.Endpoint()}, "", res)
			if tt.check != nil {
				tt.check(t, f, res)
			}
		})
	}
}

// TestDiffDetached: a detached fork diffs with its former parent and
// sibling as before, with no common ancestor and its copies counted.
func TestDiffDetached(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	before := r.mustRun(t, 0, "diff", f.b, f.fc, "--json")
	r.mustRun(t, 0, "detach", f.b)
	sibling := r.mustRun(t, 0, "diff", f.b, f.fc)
	parent := r.mustRun(t, 0, "diff", f.b, f.a)
	after := r.mustRun(t, 0, "diff", f.b, f.fc, "--json")
	golden(t, "diff-detached", []string{f.c.Endpoint()}, "the family with b detached", sibling, parent)

	bv, av := decode[map[string]any](t, before), decode[map[string]any](t, after)
	if av["common"] != "" || av["copied"] != float64(1) {
		t.Errorf("after the detach: got common %v, copied %v; want none, 1", av["common"], av["copied"])
	}
	// The turns' ids are their IRIs: b's copies now, the originals before.
	for _, v := range []map[string]any{av, bv} {
		for _, k := range []string{"shared", "a_tail", "b_tail"} {
			for _, tn := range array(t, k, v[k]) {
				delete(object(t, "turn", tn), "id")
			}
		}
	}
	for _, k := range []string{"divergence", "shared", "a_tail", "b_tail"} {
		if fmt.Sprint(av[k]) != fmt.Sprint(bv[k]) {
			t.Errorf("%s after the detach: got %v, want %v as before", k, av[k], bv[k])
		}
	}
}

// TestDiffUsage: usage errors reach no store.
func TestDiffUsage(t *testing.T) {
	fusekitest.Parallel(t)
	r := runner{endpoint: noStore}
	one := r.mustRun(t, 2, "diff", anID)
	three := r.mustRun(t, 2, "diff", anID, anID, anID)
	help := r.mustRun(t, 0, "diff", "-h")
	golden(t, "diff-usage", nil, "", one, three, help)
}

// TestDiffWrap: long content is wrapped to the columns' width, at spaces
// where it can, a word longer than a column is cut, line breaks and
// indentation are kept, tabs become spaces.
func TestDiffWrap(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	st := session.NewStore(c)
	ctx := context.Background()
	root := session.New("agent-7")
	root.Append("user", "Summarize the incident report and list every follow-up action with its owner, please.")
	if err := st.Persist(ctx, root); err != nil {
		t.Fatal(err)
	}
	a, err := root.Fork(1)
	if err != nil {
		t.Fatal(err)
	}
	a.Append("assistant", "See https://example.org/reports/2026/incident-0042/summary-and-actions.html for the whole text.")
	b, err := root.Fork(1)
	if err != nil {
		t.Fatal(err)
	}
	b.Append("assistant", "Actions:\n  1. rotate the keys\t(ops)\n  2. add an alert on 5xx rates above two percent (sre)")
	for _, s := range []*session.Session{a, b} {
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	r := storeRunner(t)
	cols := r.mustRun(t, 0, "diff", a.ID, b.ID)
	blocks := r.mustRun(t, 0, "diff", a.ID, b.ID, "--blocks")
	golden(t, "diff-wrap", []string{c.Endpoint()}, "", cols, blocks)
	for _, l := range strings.Split(cols.stdout, "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line of %d characters, want at most 80: %q", n, l)
		}
	}
}
