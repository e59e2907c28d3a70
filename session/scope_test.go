package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

func TestForPrincipal(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	alice, bob := "alice-"+newID(), "bob-"+newID()
	aliceRoot := persisted(t, st, alice, 3)
	bobRoot := persisted(t, st, bob, 3)
	asAlice := session.NewStore(querier(t, c), session.ForPrincipal(alice))

	t.Run("lists and loads only its own", func(t *testing.T) {
		list, err := asAlice.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range list {
			if in.Principal != alice {
				t.Fatalf("listed %s of %q", in.ID, in.Principal)
			}
		}
		if len(list) != 1 || list[0].ID != aliceRoot.ID {
			t.Fatalf("got %d sessions, want alice's one", len(list))
		}
		if others, err := asAlice.List(ctx, session.ByPrincipal(bob)); err != nil || len(others) != 0 {
			t.Fatalf("ByPrincipal(bob) in alice's store: got %v, %v; want none", others, err)
		}
		sameSession(t, mustLoad(t, asAlice, aliceRoot.ID), aliceRoot)
		for name, call := range map[string]func() error{
			"load":   func() error { _, err := asAlice.Load(ctx, bobRoot.ID); return err },
			"replay": func() error { _, err := asAlice.Replay(ctx, bobRoot.ID); return err },
			"info":   func() error { _, err := asAlice.Info(ctx, bobRoot.ID); return err },
			"tree":   func() error { _, err := asAlice.Tree(ctx, bobRoot.ID); return err },
			"delete": func() error { return asAlice.Delete(ctx, bobRoot.ID, session.DeleteOptions{}) },
			"detach": func() error { return asAlice.Detach(ctx, bobRoot.ID, session.DetachOptions{}) },
		} {
			if err := call(); !errors.Is(err, session.ErrNotFound) {
				t.Errorf("%s of bob's session: got %v, want ErrNotFound", name, err)
			}
		}
		sameSession(t, mustLoad(t, st, bobRoot.ID), bobRoot) // untouched
	})

	t.Run("persists only its own", func(t *testing.T) {
		s := session.New(bob)
		s.Append("user", "hi")
		if err := asAlice.Persist(ctx, s); !errors.Is(err, session.ErrForbidden) {
			t.Fatalf("got %v, want ErrForbidden", err)
		}
	})

	t.Run("forks across principals only when asked", func(t *testing.T) {
		f := mustFork(t, bobRoot, 2)
		f.Principal = alice
		f.Append("user", "alice continues bob's conversation")
		if err := asAlice.Persist(ctx, f); !errors.Is(err, session.ErrForbidden) {
			t.Fatalf("got %v, want ErrForbidden", err)
		}
		if _, err := st.Load(ctx, f.ID); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("the refused fork was stored: %v", err)
		}
		f, err := bobRoot.Fork(2, session.AcrossPrincipals())
		if err != nil {
			t.Fatal(err)
		}
		f.Principal = alice
		f.Append("user", "alice continues bob's conversation")
		mustPersist(t, asAlice, f)
		got := mustLoad(t, asAlice, f.ID) // alice's fork loads with bob's prefix
		sameSession(t, got, f)
		q, _ := kg.Bind(`PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX dcterms: <http://purl.org/dc/terms/>
ASK { $f prov:wasGeneratedBy ?act . ?act trails:acrossPrincipals true ; prov:wasAssociatedWith/dcterms:identifier $alice }`,
			kg.Params{"f": kg.MustIRI(ontology.SessionIRI(f.ID)), "alice": kg.String(alice)})
		if ok, err := c.Ask(ctx, q); err != nil || !ok {
			t.Fatalf("PROV of the fork across principals: got %v, %v; want the flag and alice", ok, err)
		}
		// The operators' forest shows her fork under bob's session, not as
		// an orphan.
		forest, err := admin.New(c).Forest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, top := range forest {
			top.Walk(func(n *session.Node) {
				if n.ID == f.ID {
					found = true
					if n.ParentMissing {
						t.Errorf("alice's fork of bob's session shown as an orphan")
					}
				}
			})
		}
		if !found {
			t.Fatalf("alice's fork %s not in the forest", f.ID)
		}
	})

}

// TestPersistKeepsOwner: a session value that names a stored session of
// another principal or app is not that session: Persist refuses it with
// ErrConflict and the stored session is untouched, through a Store scoped
// to the caller's principal too. Before, a turn appended to a value with a
// stored session's id (one without turns, whose empty head any caller
// matches) was written into the other principal's session.
func TestPersistKeepsOwner(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	empty := session.New("alice")
	empty.App = "shop"
	mustPersist(t, st, empty)
	asMallory := session.NewStore(querier(t, c), session.ForPrincipal("mallory"))
	for _, tc := range []struct {
		name string
		st   *session.Store
		mod  func(s *session.Session)
	}{
		{"another principal, scoped store", asMallory, func(s *session.Session) { s.Principal = "mallory" }},
		{"another principal", st, func(s *session.Session) { s.Principal = "mallory" }},
		{"another app", st, func(s *session.Session) { s.App = "bank" }},
	} {
		v := session.New("alice")
		v.ID, v.App = empty.ID, "shop"
		tc.mod(v)
		v.Append("user", "not yours")
		if err := tc.st.Persist(ctx, v); !errors.Is(err, session.ErrConflict) {
			t.Errorf("%s: got %v, want ErrConflict", tc.name, err)
		}
	}
	got := mustLoad(t, st, empty.ID)
	if len(got.Turns) != 0 || got.Principal != "alice" || got.App != "shop" {
		t.Errorf("stored session: got %d turns, principal %q, app %q; want 0, alice, shop", len(got.Turns), got.Principal, got.App)
	}
	// A value without an app takes the stored one, and may append.
	v := session.New("alice")
	v.ID = empty.ID
	v.Append("user", "mine")
	mustPersist(t, st, v)
	if v.App != "shop" || len(mustLoad(t, st, empty.ID).Turns) != 1 {
		t.Errorf("the owner's append: app %q, want shop, and one turn stored", v.App)
	}
}
