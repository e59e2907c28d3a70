package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

func TestDelete(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 3)
	f := mustFork(t, root, 2)
	appendN(f, 1, "f")
	mustPersist(t, st, f)

	err := st.Delete(ctx, root.ID, session.DeleteOptions{})
	if !errors.Is(err, session.ErrHasChildren) {
		t.Fatalf("got %v, want ErrHasChildren", err)
	}
	sameSession(t, mustLoad(t, st, root.ID), root)

	if err := st.Delete(ctx, f.ID, session.DeleteOptions{By: "operator"}); err != nil {
		t.Fatalf("delete leaf: %v", err)
	}
	if _, err := st.Load(ctx, f.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("load deleted: got %v, want ErrNotFound", err)
	}
	if err := st.Delete(ctx, f.ID, session.DeleteOptions{}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("delete twice: got %v, want ErrNotFound", err)
	}
	// Its graph is gone; its PROV records stay, with the deletion.
	q, _ := kg.Bind(`PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX dcterms: <http://purl.org/dc/terms/>
SELECT ?fork ?del ?who WHERE {
  $s prov:wasGeneratedBy ?fork . ?fork a trails:Fork .
  ?del a trails:Deletion ; prov:invalidated $s ; prov:wasAssociatedWith/dcterms:identifier ?who .
}`, kg.Params{"s": kg.MustIRI(ontology.SessionIRI(f.ID))})
	res, err := c.Select(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Solutions) != 1 || res.Solutions[0].String("who") != "operator" {
		t.Fatalf("got PROV %+v, want the fork and one deletion by operator", res.Solutions)
	}
	if _, err := c.GetGraph(ctx, kg.MustIRI(ontology.SessionIRI(f.ID))); !errors.Is(err, kg.ErrNotFound) {
		t.Fatalf("the deleted session's graph: got %v, want ErrNotFound", err)
	}
	if err := st.Delete(ctx, root.ID, session.DeleteOptions{}); err != nil {
		t.Fatalf("delete the root once its fork is gone: %v", err)
	}
}

// TestNoResurrection: a write that comes late, from a copy held before the
// delete, does not bring a deleted session back.
func TestNoResurrection(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	s := persisted(t, st, "alice", 2)
	late := *s // another writer's copy, taken before the delete
	late.Turns = append([]session.Turn(nil), s.Turns...)
	if err := st.Delete(ctx, s.ID, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	late.Append("user", "a late turn")
	if err := st.Persist(ctx, &late); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("late persist: got %v, want ErrConflict", err)
	}
	if _, err := st.Load(ctx, s.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("load after the late persist: got %v, want ErrNotFound", err)
	}
}
