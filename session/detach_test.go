package session_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

func TestDetach(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 5)
	mid := mustFork(t, root, 3)
	appendN(mid, 3, "mid")
	mustPersist(t, st, mid)
	leaf := mustFork(t, mid, 5)
	appendN(leaf, 2, "leaf")
	mustPersist(t, st, leaf)
	before := mustLoad(t, st, leaf.ID)

	plan, err := st.PlanDetach(ctx, leaf.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameSession(t, mustLoad(t, st, leaf.ID), before) // the plan changed nothing
	r, err := st.DetachReport(ctx, leaf.ID, session.DetachOptions{})
	if err != nil {
		t.Fatalf("detach: %v", err)
	}
	if r.Copied != 5 || r.From[root.ID] != 3 || r.From[mid.ID] != 2 || r.Parent != mid.ID {
		t.Fatalf("got %+v, want 5 copied: 3 from the root, 2 from mid", r)
	}
	if !reflect.DeepEqual(plan, r) {
		t.Fatalf("plan %+v, done %+v: want the same", plan, r)
	}
	after := mustLoad(t, st, leaf.ID)
	sameHistory(t, after.Turns, before.Turns)
	if after.ParentID != "" || after.ForkedAt != 0 || after.Depth() != 0 {
		t.Fatalf("got parent %q at %d depth %d, want a root", after.ParentID, after.ForkedAt, after.Depth())
	}
	if after.Branch != leaf.Branch {
		t.Fatalf("got branch %q, want the label it had, %q", after.Branch, leaf.Branch)
	}
	// Its ancestors can go now.
	if err := st.Delete(ctx, mid.ID, session.DeleteOptions{}); err != nil {
		t.Fatalf("delete former parent: %v", err)
	}
	if err := st.Delete(ctx, root.ID, session.DeleteOptions{}); err != nil {
		t.Fatalf("delete former root: %v", err)
	}
	sameHistory(t, mustLoad(t, st, leaf.ID).Turns, before.Turns)
	// It can grow as a root.
	after.Append("user", "after detach")
	mustPersist(t, st, after)
	sameSession(t, mustLoad(t, st, leaf.ID), after)
	// Detaching a root does nothing; the stale pre-detach copy conflicts.
	if err := st.Detach(ctx, leaf.ID, session.DetachOptions{}); err != nil {
		t.Fatalf("detach a root: %v", err)
	}
	leaf.Append("user", "stale writer")
	if err := st.Persist(ctx, leaf); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("persist the pre-detach copy: got %v, want ErrConflict", err)
	}
	// PROV keeps the derivation and records the detach.
	q, _ := kg.Bind(`PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { $s prov:wasDerivedFrom $p . ?d a trails:Detach ; prov:used $p , $s . }`,
		kg.Params{"s": kg.MustIRI(ontology.SessionIRI(leaf.ID)), "p": kg.MustIRI(ontology.SessionIRI(mid.ID))})
	if ok, err := c.Ask(ctx, q); err != nil || !ok {
		t.Fatalf("PROV of the detach: got %v, %v; want true", ok, err)
	}
}
