package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/internal/fusekitest"
	trails "github.com/trails-kg/trails/session"
)

func TestMain(m *testing.M) { fusekitest.Main(m) }

// TestRun runs the example against a real Fuseki and checks what it
// printed and what it stored: the fork holds the parent's events before
// the fork point (the same events, shared) and its own after, the tree
// shows it under the conversation, and each branch's tool calls are its
// own.
func TestRun(t *testing.T) {
	fusekitest.Empty(t)
	endpoint := fusekitest.Endpoint(t)
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"--endpoint", endpoint}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	out := stdout.String()
	t.Logf("output:\n%s", out)

	rootID := match(t, out, `created the ADK session (\S+) `)
	forkID := match(t, out, `as the ADK session (\S+): it shares the first 4 events`)

	tree := section(t, out, "The fork tree")
	if !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(rootID)+`  main  alice  8 turns$`).MatchString(tree) ||
		!regexp.MustCompile(`(?m)^└── `+regexp.QuoteMeta(forkID)+`  \S+  @4  \+4 turns \(8 in all\)$`).MatchString(tree) {
		t.Errorf("tree: got\n%s\nwant %s (8 turns) with the fork %s at 4 under it", tree, rootID, forkID)
	}

	// The fork as printed: the parent's first question and answer, then
	// its own, which never saw the second question of the parent.
	evs := strings.Split(section(t, out, "The fork as ADK"), "\n")[1:]
	want := []string{
		`0  parent  user .* What's the weather in Lisbon\?`,
		`1  parent  weather_agent .* → get_weather {"city":"Lisbon"}  \[call-lisbon\]`,
		`2  parent  weather_agent .* ← get_weather {.*"Lisbon".*}  \[call-lisbon\]`,
		`3  parent  weather_agent .* In Lisbon it is sunny, 21 °C\.`,
		`4  own     user .* What about Madrid instead\?`,
		`5  own     weather_agent .* → get_weather {"city":"Madrid"}  \[call-madrid\]`,
		`6  own     weather_agent .* ← get_weather {.*"Madrid".*}  \[call-madrid\]`,
		`7  own     weather_agent .* In Madrid it is clear, 25 °C\.`,
	}
	if len(evs) != len(want) {
		t.Fatalf("fork events: got %d lines, want %d:\n%s", len(evs), len(want), strings.Join(evs, "\n"))
	}
	for i, w := range want {
		if !regexp.MustCompile(w).MatchString(evs[i]) {
			t.Errorf("fork event line %d: got %q, want it to match %q", i, evs[i], w)
		}
	}

	// Each branch's tool calls, its effective history's: both hold the
	// Lisbon call they share; the conversation's second call is for
	// Porto, the fork's for Madrid, and neither sees the other's.
	for _, c := range []struct{ header, has, hasNot string }{
		{"Tool calls of the conversation", "call-porto", "call-madrid"},
		{"Tool calls of the fork", "call-madrid", "call-porto"},
	} {
		s := section(t, out, c.header)
		if !strings.Contains(s, "call-lisbon") || !strings.Contains(s, c.has) || strings.Contains(s, c.hasNot) {
			t.Errorf("%s: got\n%s\nwant call-lisbon and %s, and no %s", c.header, s, c.has, c.hasNot)
		}
	}

	// What the store holds, read by a service of its own: the fork's first
	// four events are the parent's (same ids), its last four its own.
	svc := adk.NewSessionService(trails.NewStore(fusekitest.New(t)))
	get := func(id string) []*session.Event {
		t.Helper()
		r, err := svc.Get(ctx, &session.GetRequest{AppName: appName, UserID: userID, SessionID: id})
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		var evs []*session.Event
		for ev := range r.Session.Events().All() {
			evs = append(evs, ev)
		}
		return evs
	}
	parent, fork := get(rootID), get(forkID)
	if len(parent) != 8 || len(fork) != 8 {
		t.Fatalf("events: got %d in the parent and %d in the fork, want 8 and 8", len(parent), len(fork))
	}
	for i := range 8 {
		if same := parent[i].ID == fork[i].ID; same != (i < 4) {
			t.Errorf("event %d: got parent %s and fork %s, want the same id: %v", i, parent[i].ID, fork[i].ID, i < 4)
		}
	}
}

// TestRunExitCodes checks the exit codes of a bad command line and of a
// store that does not answer.
func TestRunExitCodes(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"unknown flag", []string{"--nope"}, 2},
		{"argument", []string{"extra"}, 2},
		{"help", []string{"-h"}, 0},
		{"no store", []string{"--endpoint", "http://127.0.0.1:1/trails"}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), c.args, &stdout, &stderr)
			if got := exitCode(err); got != c.want {
				t.Errorf("exit code: got %d (%v), want %d", got, err, c.want)
			}
		})
	}
}

// match returns the first group of re in out.
func match(t *testing.T, out, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output: no match for %q in\n%s", re, out)
	}
	return m[1]
}

// section returns the block of out that starts with the line beginning
// with header and ends before the next empty line.
func section(t *testing.T, out, header string) string {
	t.Helper()
	i := strings.Index(out, "\n"+header)
	if i < 0 {
		t.Fatalf("output: no section %q in\n%s", header, out)
	}
	s := out[i+1:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	return strings.TrimRight(s, "\n")
}
