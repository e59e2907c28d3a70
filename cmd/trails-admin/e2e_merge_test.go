package main_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

// The documented field names of the JSON of merge.
var mergeFields = []string{"child", "parent", "status", "first", "last", "artifacts", "turn"}

// TestMerge: a fork's result merged into its parent with merge, shown by
// show and replay of the parent, listed by audit merges-into; a second
// merge and bad input refused.
func TestMerge(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	merge := r.mustRun(t, 0, "merge", f.b, "--status", "completed", "--summary", "Explained why 13:\nit is the sixth prime.",
		"--artifact", "https://example.org/notes/13", "--artifact", "notes/primes.md")
	again := r.mustRun(t, 1, "merge", f.b, "--status", "failed", "--summary", "once more")
	show := r.mustRun(t, 0, "show", f.a)
	replay := r.mustRun(t, 0, "replay", f.a)
	audit := r.mustRun(t, 0, "audit", "merges-into", "--param", "session="+f.a)
	root := r.mustRun(t, 2, "merge", f.root, "--status", "completed", "--summary", "nothing to merge into")
	missing := r.mustRun(t, 1, "merge", anID, "--status", "completed", "--summary", "x")
	badStatus := r.mustRun(t, 2, "merge", f.fc, "--status", "done", "--summary", "x")
	noSummary := r.mustRun(t, 2, "merge", f.fc, "--status", "completed")
	golden(t, "merge", []string{f.c.Endpoint()}, "the family; b (forked from a at 4, one turn of its own) is merged into a",
		merge, again, show, replay, audit, root, missing, badStatus, noSummary)

	if !slices.ContainsFunc(strings.Split(show.stdout, "\n"), func(l string) bool {
		return strings.HasPrefix(l, "   4  ") && strings.Contains(l, " merge ") && strings.HasSuffix(l, "Explained why 13:")
	}) {
		t.Errorf("show of the parent lacks the merge turn at 4:\n%s", show.stdout)
	}
	if n := strings.Count(replay.stdout, "merge "); n != 1 {
		t.Errorf("replay of the parent shows %d merge turns, want 1:\n%s", n, replay.stdout)
	}

	js := decode[map[string]any](t, r.mustRun(t, 0, "merge", f.fc, "--status", "failed", "--summary", "gave up", "--artifact", "urn:x:1", "--json"))
	hasFields(t, "merge --json", js, mergeFields...)
	if js["child"] != f.fc || js["parent"] != f.root || js["status"] != "failed" || js["first"] != float64(1) || js["last"] != float64(1) {
		t.Errorf("merge --json: got %v", js)
	}
	turn := object(t, "turn", js["turn"])
	hasFields(t, "turn", turn, append(slices.Clone(turnFields), "id")...)
	if turn["index"] != float64(4) || turn["role"] != session.MergeRole || turn["id"] != session.TurnID(f.root, 4) {
		t.Errorf("merge --json: got turn %v, want the root's turn 4", turn)
	}
	arts := array(t, "artifacts", js["artifacts"])
	if len(arts) != 1 || object(t, "artifact", arts[0])["iri"] != "urn:x:1" {
		t.Errorf("merge --json: got artifacts %v, want the IRI urn:x:1", arts)
	}
}
