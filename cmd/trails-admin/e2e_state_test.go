package main_test

import (
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
)

// The documented field names of the JSON of state and expire.
var (
	stateFields      = []string{"session", "state", "expires_at", "cancel_requested"}
	transitionFields = []string{"from", "to", "changed", "activity", "flagged"}
	expireFields     = []string{"now", "expired", "dry_run"}
)

// TestStateLifecycle: a session's state shown and changed, a refused
// transition, its descendants flagged for cancellation when it completes,
// and the audit queries of state changes and cancellation flags.
func TestStateLifecycle(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	show := r.mustRun(t, 0, "state", f.root)
	suspend := r.mustRun(t, 0, "state", f.b, "suspended", "--reason", "waiting for the user")
	complete := r.mustRun(t, 0, "state", f.root, "completed", "--reason", "answer given")
	again := r.mustRun(t, 0, "state", f.root, "completed")
	flagged := r.mustRun(t, 0, "state", f.a)
	refused := r.mustRun(t, 1, "state", f.root, "active")
	bogus := r.mustRun(t, 2, "state", f.root, "finished")
	reasonAlone := r.mustRun(t, 2, "state", f.root, "--reason", "why")
	changes := r.mustRun(t, 0, "audit", "state-changes", "--param", "session="+f.root, "--json")
	cancels := r.mustRun(t, 0, "audit", "cancel-requested", "--json")
	golden(t, "state", []string{f.c.Endpoint()}, "the family: root (a, b below it; fc of agent-9 too) and other",
		show, suspend, complete, again, flagged, refused, bogus, reasonAlone, changes, cancels)

	for _, want := range []string{"flagged 3 descendants for cancellation: " + f.a + ", " + f.b + ", " + f.fc} {
		if !strings.Contains(complete.stdout, want) {
			t.Errorf("state completed: stdout lacks %q:\n%s", want, complete.stdout)
		}
	}
	if !strings.Contains(flagged.stdout, "requested (an ancestor ended") {
		t.Errorf("state of a flagged fork:\n%s", flagged.stdout)
	}
	if n := strings.Count(cancels.stdout, `"ancestorState": "completed"`); n != 3 { // a, b, fc
		t.Errorf("cancel-requested: got %d flags, want 3:\n%s", n, cancels.stdout)
	}

	js := decode[map[string]any](t, r.mustRun(t, 0, "state", f.other, "failed", "--json"))
	hasFields(t, "state --json", js, append(stateFields, "transition")...)
	tr := object(t, "transition", js["transition"])
	hasFields(t, "transition", tr, transitionFields...)
	if js["state"] != "failed" || tr["from"] != "active" || tr["changed"] != true || len(array(t, "flagged", tr["flagged"])) != 0 {
		t.Errorf("state --json: got %v", js)
	}
}

// TestExpire: expiries set with state --expires, a dry run, an expire
// that marks the sessions due, and a second run that marks none.
func TestExpire(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	setRoot := r.mustRun(t, 0, "state", f.root, "--expires", "2026-03-01T11:00:00Z")
	setOther := r.mustRun(t, 0, "state", f.other, "--expires", "2026-03-01T12:00:00Z")
	r.mustRun(t, 0, "state", f.other, "suspended")
	early := r.mustRun(t, 0, "expire", "--now", "2026-03-01T10:59:59Z")
	dry := r.mustRun(t, 0, "expire", "--now", "2026-03-01T11:00:00Z", "--dry-run")
	first := r.mustRun(t, 0, "expire", "--now", "2026-03-01T11:00:00Z", "--by", "janitor")
	second := r.mustRun(t, 0, "expire", "--now", "2026-03-01T11:00:00Z")
	root := r.mustRun(t, 0, "state", f.root)
	child := r.mustRun(t, 0, "state", f.a)
	later := r.mustRun(t, 0, "expire", "--now", "2026-03-02T00:00:00Z", "--json")
	lateExpiry := r.mustRun(t, 1, "state", f.root, "--expires", "never")
	badNow := r.mustRun(t, 2, "expire", "--now", "tomorrow")
	golden(t, "expire", []string{f.c.Endpoint()}, "the family: root (a, b, fc below it) and other",
		setRoot, setOther, early, dry, first, second, root, child, later, lateExpiry, badNow)

	if !strings.Contains(first.stdout, "expired 1 session at 2026-03-01T11:00:00Z") {
		t.Errorf("first expire: got %q", first.stdout)
	}
	if !strings.Contains(second.stdout, "expired 0 sessions") {
		t.Errorf("second expire: got %q", second.stdout)
	}
	js := decode[map[string]any](t, later)
	hasFields(t, "expire --json", js, expireFields...)
	if js["expired"] != float64(1) || js["dry_run"] != false {
		t.Errorf("expire --json: got %v, want other expired", js)
	}
	st := decode[map[string]any](t, r.mustRun(t, 0, "state", f.other, "--json"))
	hasFields(t, "state --json", st, stateFields...)
	if st["state"] != "expired" || st["expires_at"] == nil {
		t.Errorf("state --json of other: got %v", st)
	}
}
