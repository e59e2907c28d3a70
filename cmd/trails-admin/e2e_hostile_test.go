package main_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// hostile is a dataset whose every field an agent or a user wrote tries
// to act on the terminal that prints it.
type hostile struct {
	c                    *kg.Client
	root, fork, rewound  string
	rootTurns, forkTurns int
}

// The hostile values: a window title and a bell, a screen clear, a cursor
// move, a C1 CSI, bidi overrides, and a newline followed by a line that
// looks like a turn of replay.
const (
	evilPrincipal = "agent\x1b]0;pwned\x07-7\u202e"
	evilRole      = "user\n   1  main           assistant  forged turn"
	evilContent   = "Plan a trip.\x1b[2J\x1b[H\nDay 2: \u202eevil\u202c and a\ttab\r\nthird line\u009b2J"
	evilReason    = "why\x1b[2J\n   9  main  user  forged"
)

// seedHostile wipes the dataset and stores the hostile sessions: a root
// of three turns (an anchor with hostile state, a tag with a bidi override
// written as an older version could), a fork of it at 1 with a hostile
// reason and intention and one turn, merged back with a hostile summary and
// artifact, the root suspended for a hostile reason, and a third session
// rewound for one.
func seedHostile(tb testing.TB) hostile {
	tb.Helper()
	c := fusekitest.Empty(tb)
	st := session.NewStore(c)
	ctx := context.Background()
	must := func(what string, err error) {
		tb.Helper()
		if err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
	}
	root := session.New(evilPrincipal)
	root.Append("system", "Be brief.")
	root.Append(evilRole, evilContent)
	root.Append("assistant\x1b[31m", "ok\x1b[1A")
	must("persist root", st.Persist(ctx, root))
	_, err := st.Anchor(ctx, root.ID, "plan", map[string]string{"note": "v\x1b[2J\u202e\u0085"})
	must("anchor", err)
	var d kg.Data
	g := kg.MustIRI(ontology.SessionIRI(root.ID))
	d.Add(g, g, kg.MustIRI(ontology.Tag), kg.String("exe.\u202etxt"))
	u, err := d.InsertData()
	must("tag", err)
	must("tag", c.Update(ctx, u))

	f, err := st.Fork(ctx, root.ID, 1, session.WithReason(evilReason),
		session.WithIntention("next\u202e steps", "context\n\x1b]0;title\x07second line"))
	must("fork", err)
	f.Append("assistant", "\x1b[1Afork answer")
	must("persist fork", st.Persist(ctx, f))
	_, err = st.Merge(ctx, f.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "done\x1b[2J\nnext line",
		Artifacts: []session.Artifact{{Text: "art\x1b]0;t\x07\u202e"}}})
	must("merge", err)
	_, err = st.SetState(ctx, root.ID, session.StateSuspended, session.StateOptions{Reason: "pause\x1b[2J\u202e"})
	must("suspend", err)

	other := session.New(evilPrincipal)
	for _, c := range []string{"one", "two", "three"} {
		other.Append("user", c)
	}
	must("persist other", st.Persist(ctx, other))
	_, _, err = st.Rewind(ctx, other.ID, 1, session.RewindOptions{Reason: evilReason})
	must("rewind", err)
	return hostile{c: c, root: root.ID, fork: f.ID, rewound: other.ID, rootTurns: 4, forkTurns: 2}
}

// turnLine matches a turn line of show and replay: an index right-aligned
// in 4 columns, two spaces, a branch.
var turnLine = regexp.MustCompile(`^ {0,3}\d+  (main|fork-)`)

// TestHostileText: every text output of every command that prints stored
// values escapes control and bidi characters, a role cannot forge a turn
// line, dot and mermaid labels cannot be broken out of, and an error
// echoes a long value cut.
func TestHostileText(t *testing.T) {
	fusekitest.Parallel(t)
	h := seedHostile(t)
	r := storeRunner(t)
	runs := []result{
		r.mustRun(t, 0, "show", h.root),
		r.mustRun(t, 0, "show", h.fork),
		r.mustRun(t, 0, "replay", h.root),
		r.mustRun(t, 0, "sessions"),
		r.mustRun(t, 0, "sessions", "--principal", evilPrincipal),
		r.mustRun(t, 0, "tree", h.root),
		r.mustRun(t, 0, "tree", h.root, "--format", "dot"),
		r.mustRun(t, 0, "tree", h.root, "--format", "mermaid"),
		r.mustRun(t, 0, "diff", h.root, h.fork),
		r.mustRun(t, 0, "diff", h.root, h.fork, "--blocks"),
		r.mustRun(t, 0, "audit", "fork", "--param", "session="+h.fork),
		r.mustRun(t, 0, "audit", "state-changes", "--param", "session="+h.root),
		r.mustRun(t, 0, "rewinds", h.rewound),
		r.mustRun(t, 0, "state", h.root),
		r.mustRun(t, 0, "tag", h.root, "fine"),
		r.mustRun(t, 2, "tag", h.root, "exe.\u202etxt"),
		r.mustRun(t, 2, "anchor", h.root, "a\u202eb"),
		r.mustRun(t, 2, "anchor", h.root, "a\x1b[2Jb"),
		r.mustRun(t, 2, "state", h.root, "done\x1b[2J"),
	}
	golden(t, "hostile", []string{h.c.Endpoint()}, "sessions whose every field tries to act on the terminal", runs...)
	long := r.mustRun(t, 2, "tag", h.root, strings.Repeat("x", 100<<10))
	longAnchor := r.mustRun(t, 2, "anchor", h.root, strings.Repeat("\x1b", 100<<10))
	longParam := r.mustRun(t, 2, "audit", "forks-by-principal", "--param", "principal=agent-7",
		"--param", "from="+strings.Repeat("\u202e", 100<<10/3)+"x", "--param", "to=2026-03-02")
	runs = append(runs, long, longAnchor, longParam)

	for _, res := range runs {
		for _, out := range []string{res.stdout, res.stderr} {
			for _, c := range out {
				if termsafe.Unsafe(c) && c != '\n' && c != '\t' {
					t.Errorf("trails-admin %s: printed %U:\n%s", termsafe.Cut(strings.Join(res.args, " "), 200), c, termsafe.String(out))
					break
				}
			}
		}
	}
	for _, res := range []result{long, longAnchor, longParam} {
		if len(res.stderr) > 1024 || !strings.Contains(res.stderr, "…(102400 bytes)") {
			t.Errorf("trails-admin %s …: got stderr of %d bytes, want the value cut to %d characters and its length:\n%s",
				res.args[0], len(res.stderr), termsafe.MaxQuoted, termsafe.Cut(res.stderr, 1000))
		}
	}
	for _, c := range []struct {
		res   result
		turns int
	}{{runs[0], h.rootTurns}, {runs[1], h.forkTurns}, {runs[2], h.rootTurns}} {
		n := 0
		for _, l := range strings.Split(c.res.stdout, "\n") {
			if turnLine.MatchString(l) {
				n++
			}
		}
		if n != c.turns {
			t.Errorf("trails-admin %s: %d lines look like turns, want %d:\n%s", strings.Join(c.res.args, " "), n, c.turns, c.res.stdout)
		}
	}
	quotes := strings.NewReplacer(`\\`, "", `\"`, "") // dot escapes quotes; mermaid has no escapes
	for _, res := range runs[6:8] {                   // dot, mermaid
		for _, l := range strings.Split(res.stdout, "\n") {
			if res.args[3] == "mermaid" && strings.Contains(l, `\"`) || strings.Count(quotes.Replace(l), `"`)%2 != 0 {
				t.Errorf("tree --format %s: a label is broken out of in %q", res.args[3], l)
			}
		}
	}
}
