package main_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The documented field names of the JSON of anchor, fork, show's anchors
// and fork record, and tag.
var (
	anchorFields  = []string{"name", "index", "session", "state", "created"}
	forkFields    = []string{"id", "parent", "forked_at", "branch", "kind"}
	forkRecFields = []string{"type", "created_by", "reason", "next_steps", "context_summary", "anchor", "turn"}
	tagFields     = []string{"session", "tags"}
)

// forkedID returns the id a run of fork printed.
func forkedID(tb testing.TB, res result) string {
	tb.Helper()
	id := strings.TrimSpace(res.stdout)
	if len(id) != 36 || strings.Contains(id, "\n") {
		tb.Fatalf("trails-admin %s: got stdout %q, want one session id", strings.Join(res.args, " "), res.stdout)
	}
	return id
}

// TestAnchorFork: anchors named with anchor, forks made at an anchor with
// an intention and metadata, and what show prints of them.
func TestAnchorFork(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	anchorRoot := r.mustRun(t, 0, "anchor", f.root, "task_start", "--state", "context=Working on feature X", "--state", "owner=agent-7")
	again := r.mustRun(t, 1, "anchor", f.root, "task_start")
	anchorA := r.mustRun(t, 0, "anchor", f.a, "mid")
	showA := r.mustRun(t, 0, "show", f.a)
	fork := r.mustRun(t, 0, "fork", f.a, "--anchor", "mid", "--type", "auto-regenerate", "--created-by", "system",
		"--reason", "try another prime", "--next-steps", "Find a prime above 20.", "--summary", "The user asked for primes.\nTwo digits wanted.")
	child := forkedID(t, fork)
	showChild := r.mustRun(t, 0, "show", child)
	forkRoot := r.mustRun(t, 0, "fork", f.root, "--anchor", "task_start")
	audit := r.mustRun(t, 0, "audit", "fork", "--param", "session="+child)
	golden(t, "anchor-fork", []string{f.c.Endpoint()}, "the family; root anchored after its 4 turns, a after its 4",
		anchorRoot, again, anchorA, showA, fork, showChild, forkRoot, audit)

	for _, want := range []string{"anchor    mid at 4, named by " + f.a, "fork      auto-regenerate, created by system, at anchor mid",
		"intention Find a prime above 20.", "context   The user asked for primes.", "          Two digits wanted."} {
		if !strings.Contains(showChild.stdout, want) {
			t.Errorf("show of the fork lacks %q:\n%s", want, showChild.stdout)
		}
	}
	if strings.Contains(showA.stdout, "task_start") {
		t.Errorf("show %s lists the root's anchor at 4, beyond its fork point 2:\n%s", f.a, showA.stdout)
	}

	js := decode[map[string]any](t, r.mustRun(t, 0, "show", child, "--json"))
	hasFields(t, "show", js, append(slices.Clone(showFields), "fork", "anchors")...)
	hasFields(t, "session", object(t, "session", js["session"]), append(slices.Clone(infoFields), "tags")...)
	rec := object(t, "fork", js["fork"])
	hasFields(t, "fork", rec, forkRecFields...)
	if rec["type"] != "auto-regenerate" || rec["created_by"] != "system" || rec["next_steps"] != "Find a prime above 20." ||
		rec["anchor"] != ontology.AnchorIRI(ontology.SessionIRI(f.a), "mid") {
		t.Errorf("got fork record %v", rec)
	}
	anchors := array(t, "anchors", js["anchors"])
	if len(anchors) != 1 {
		t.Fatalf("got anchors %v, want mid", anchors)
	}
	hasFields(t, "anchor", object(t, "anchor", anchors[0]), anchorFields...)
	turns := array(t, "turns", js["turns"])
	if len(turns) != 4 {
		t.Fatalf("got %d turns, want 4", len(turns))
	}
	for i, tn := range turns {
		tn := object(t, "turn", tn)
		hasFields(t, fmt.Sprintf("turn %d", i), tn, append(slices.Clone(turnFields), "id")...)
		owner := f.root
		if i >= 2 {
			owner = f.a
		}
		if tn["id"] != session.TurnID(owner, i) {
			t.Errorf("turn %d: got id %v, want %s", i, tn["id"], session.TurnID(owner, i))
		}
	}
	if root := decode[map[string]any](t, r.mustRun(t, 0, "show", f.root, "--json")); root["fork"] != nil {
		t.Errorf("show --json of a root: got fork %v, want null", root["fork"])
	}
	an := decode[map[string]any](t, r.mustRun(t, 0, "anchor", f.b, "end", "--json"))
	hasFields(t, "anchor --json", an, anchorFields...)
	if an["index"] != float64(5) || an["session"] != f.b {
		t.Errorf("anchor --json: got %v, want end at 5 of %s", an, f.b)
	}
}

// TestForkAt: fork at an index and before a turn, and the fork's errors.
func TestForkAt(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	turn := session.TurnID(f.root, 1) // inherited by b
	byTurn := r.mustRun(t, 0, "fork", f.b, "--turn", turn)
	replay := r.mustRun(t, 0, "replay", forkedID(t, byTurn))
	atJSON := r.mustRun(t, 0, "fork", f.b, "--at", "3", "--json")
	unknownAnchor := r.mustRun(t, 1, "fork", f.b, "--anchor", "nope")
	unknownTurn := r.mustRun(t, 1, "fork", f.b, "--turn", session.TurnID(f.root, 3)) // the root's, beyond a's fork point
	notFound := r.mustRun(t, 1, "fork", anID, "--at", "0")
	tooFar := r.mustRun(t, 2, "fork", f.b, "--at", "9")
	badType := r.mustRun(t, 2, "fork", f.b, "--at", "1", "--type", "sideways")
	golden(t, "fork-at", []string{f.c.Endpoint()}, "the family; b holds 5 turns: 0-1 from root, 2-3 from a, 4 its own",
		byTurn, replay, atJSON, unknownAnchor, unknownTurn, notFound, tooFar, badType)

	if n := strings.Count(replay.stdout, "\n"); n != 1 {
		t.Errorf("a fork before turn 1 replays %d turns, want 1:\n%s", n, replay.stdout)
	}
	v := decode[map[string]any](t, atJSON)
	hasFields(t, "fork --json", v, forkFields...)
	if v["parent"] != f.b || v["forked_at"] != float64(3) {
		t.Errorf("got %v, want a fork of %s at 3", v, f.b)
	}
}

// TestForkUsage: fork needs exactly one position; nothing is asked of the
// store.
func TestForkUsage(t *testing.T) {
	fusekitest.Parallel(t)
	r := runner{endpoint: noStore}
	none := r.mustRun(t, 2, "fork", anID)
	two := r.mustRun(t, 2, "fork", anID, "--at", "1", "--anchor", "task_start")
	negative := r.mustRun(t, 2, "fork", anID, "--at", "-1")
	noID := r.mustRun(t, 2, "fork", "--at", "1")
	anchorNoName := r.mustRun(t, 2, "anchor", anID)
	badState := r.mustRun(t, 2, "anchor", anID, "x", "--state", "novalue")
	tagNone := r.mustRun(t, 2, "tag", anID)
	golden(t, "fork-usage", nil, "", none, two, negative, noID, anchorNoName, badState, tagNone)
}

// TestTags: tag and untag (idempotent), sessions --tag, and the tags in
// show and sessions.
func TestTags(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	tag := r.mustRun(t, 0, "tag", f.root, "experiment", "prod")
	again := r.mustRun(t, 0, "tag", f.root, "experiment")
	tagA := r.mustRun(t, 0, "tag", f.a, "experiment")
	untag := r.mustRun(t, 0, "untag", f.root, "prod", "never-there")
	byTag := r.mustRun(t, 0, "sessions", "--tag", "experiment")
	byTwo := r.mustRun(t, 0, "sessions", "--tag", "experiment", "--roots")
	all := r.mustRun(t, 0, "sessions")
	show := r.mustRun(t, 0, "show", f.root)
	bad := r.mustRun(t, 2, "tag", f.root, "two words")
	missing := r.mustRun(t, 1, "tag", anID, "x")
	untagAll := r.mustRun(t, 0, "untag", f.a, "experiment", "--json")
	golden(t, "tags", []string{f.c.Endpoint()}, "the family", tag, again, tagA, untag, byTag, byTwo, all, show, bad, missing, untagAll)

	infos := decode[[]map[string]any](t, r.mustRun(t, 0, "sessions", "--tag", "experiment", "--json"))
	if len(infos) != 1 || infos[0]["id"] != f.root {
		t.Fatalf("sessions --tag experiment --json: got %v, want only %s", infos, f.root)
	}
	hasFields(t, "session", infos[0], append(slices.Clone(infoFields), "tags")...)
	if tags := array(t, "tags", infos[0]["tags"]); len(tags) != 1 || tags[0] != "experiment" {
		t.Errorf("got tags %v, want [experiment]", tags)
	}
	v := decode[map[string]any](t, untagAll)
	hasFields(t, "untag --json", v, tagFields...)
	if tags := array(t, "tags", v["tags"]); len(tags) != 0 {
		t.Errorf("untag --json: got tags %v, want []", tags)
	}
}
