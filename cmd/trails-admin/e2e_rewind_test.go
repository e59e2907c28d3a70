package main_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
)

// The documented field names of the JSON of rewind and rewinds.
var (
	rewindFields    = []string{"session", "archive", "to", "moved", "anchors", "reparented"}
	rewindRecFields = []string{"archive", "to", "reparented", "principal", "reason", "time"}
)

// TestRewind: rewind a fork whose own fork lies beyond the index rewound
// to (it is re-parented to the archive), what show, replay, tree, rewinds
// and the audit query print afterwards, and the refusals.
func TestRewind(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	rewind := r.mustRun(t, 0, "rewind", f.a, "--to", "3", "--reason", "13 was a guess")
	archive := archiveOf(t, rewind)
	show := r.mustRun(t, 0, "show", f.a)
	replay := r.mustRun(t, 0, "replay", archive)
	replayB := r.mustRun(t, 0, "replay", f.b)
	tree := r.mustRun(t, 0, "tree", f.root)
	rewinds := r.mustRun(t, 0, "rewinds", f.a)
	audit := r.mustRun(t, 0, "audit", "rewinds-of", "--param", "session="+f.a)
	never := r.mustRun(t, 0, "rewinds", f.root)
	nothing := r.mustRun(t, 2, "rewind", f.a, "--to", "3")
	beyond := r.mustRun(t, 2, "rewind", f.a, "--to", "9")
	prefix := r.mustRun(t, 2, "rewind", f.a, "--to", "1")
	unknown := r.mustRun(t, 1, "rewind", anID, "--to", "1")
	check := r.mustRun(t, 0, "check")
	golden(t, "rewind", []string{f.c.Endpoint()}, "the family; a (fork of root at 2, 4 turns) rewound to 3: b, forked at 4, is re-parented",
		rewind, show, replay, replayB, tree, rewinds, audit, never, nothing, beyond, prefix, unknown, check)

	if !strings.Contains(rewind.stdout, "re-parented fork "+f.b) {
		t.Errorf("rewind does not say that %s was re-parented:\n%s", f.b, rewind.stdout)
	}
	if n := strings.Count(replay.stdout, "\n"); n != 4 {
		t.Errorf("the archive replays %d lines, want the 4 turns of a before the rewind:\n%s", n, replay.stdout)
	}

	js := decode[map[string]any](t, r.mustRun(t, 0, "rewind", f.root, "--to", "3", "--by", "operator", "--json"))
	hasFields(t, "rewind --json", js, rewindFields...)
	if js["session"] != f.root || js["to"] != float64(3) || js["moved"] != float64(1) || len(array(t, "reparented", js["reparented"])) != 0 {
		t.Errorf("rewind --json: got %v, want root rewound to 3, 1 turn moved, nothing re-parented", js)
	}
	recs := decode[[]map[string]any](t, r.mustRun(t, 0, "rewinds", f.a, "--json"))
	if len(recs) != 1 {
		t.Fatalf("rewinds --json: got %v, want one", recs)
	}
	hasFields(t, "rewinds --json", recs[0], rewindRecFields...)
	if recs[0]["archive"] != archive || recs[0]["reason"] != "13 was a guess" || recs[0]["principal"] != "agent-7" ||
		!slices.Equal(array(t, "reparented", recs[0]["reparented"]), []any{f.b}) {
		t.Errorf("rewinds --json: got %v", recs[0])
	}
}

// TestRewindUsage: rewind needs an id and --to; nothing is asked of the
// store.
func TestRewindUsage(t *testing.T) {
	fusekitest.Parallel(t)
	r := runner{endpoint: noStore}
	noTo := r.mustRun(t, 2, "rewind", anID)
	badTo := r.mustRun(t, 2, "rewind", anID, "--to", "three")
	noID := r.mustRun(t, 2, "rewind", "--to", "1")
	rewindsNoID := r.mustRun(t, 2, "rewinds")
	golden(t, "rewind-usage", nil, "", noTo, badTo, noID, rewindsNoID)
}

// archiveOf returns the archive id a run of rewind printed.
func archiveOf(tb testing.TB, res result) string {
	tb.Helper()
	_, rest, ok := strings.Cut(res.stdout, "; archive ")
	if !ok || len(rest) < 36 {
		tb.Fatalf("rewind: no archive in %q", res.stdout)
	}
	return rest[:36]
}
