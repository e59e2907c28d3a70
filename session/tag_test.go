package session_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// tripleCountOf counts the values of predicate p on session id.
func tripleCountOf(tb testing.TB, c *kg.Client, id, p string) int {
	tb.Helper()
	return queryInt(tb, c, `SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { $s $p ?o } }`,
		kg.Params{"s": kg.MustIRI(ontology.SessionIRI(id)), "p": kg.MustIRI(p)})
}

func TestTags(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()
	x, y, z := "x-"+newID()[24:], "y-"+newID()[24:], "z-"+newID()[24:]
	a := persisted(t, st, "alice", 1)
	b := persisted(t, st, "bob", 1)
	fork := mustFork(t, a, 1)
	mustPersist(t, st, fork)

	tags := func(id string) []string {
		t.Helper()
		in, err := st.Info(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return in.Tags
	}
	listed := func(opts ...session.ListOption) []string {
		t.Helper()
		infos, err := st.List(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, in := range infos {
			ids = append(ids, in.ID)
		}
		return ids
	}

	if got := tags(a.ID); got == nil || len(got) != 0 {
		t.Fatalf("got tags %#v, want an empty slice", got)
	}
	for range 2 { // idempotent
		if err := st.Tag(ctx, a.ID, y, x); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Tag(ctx, b.ID, x); err != nil {
		t.Fatal(err)
	}
	if err := st.Tag(ctx, fork.ID, z, x); err != nil {
		t.Fatal(err)
	}
	if got, want := tags(a.ID), []string{x, y}; !slices.Equal(got, want) {
		t.Fatalf("got tags %v, want %v (sorted, once each)", got, want)
	}
	if got := tripleCountOf(t, c, a.ID, ontology.Tag); got != 2 {
		t.Fatalf("got %d tag triples, want 2", got)
	}

	for _, tc := range []struct {
		name string
		opts []session.ListOption
		want []string // newest first
	}{
		{"one tag", []session.ListOption{session.ByTag(x)}, []string{fork.ID, b.ID, a.ID}},
		{"two tags", []session.ListOption{session.ByTag(x), session.ByTag(z)}, []string{fork.ID}},
		{"tag and principal", []session.ListOption{session.ByTag(x), session.ByPrincipal("bob")}, []string{b.ID}},
		{"tag and roots", []session.ListOption{session.ByTag(x), session.Roots()}, []string{b.ID, a.ID}},
		{"unused tag", []session.ListOption{session.ByTag("none-" + newID())}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := listed(tc.opts...); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	// Every listing carries the tags.
	bs, err := st.Branches(ctx, a.ID)
	if err != nil || len(bs) != 1 || !slices.Equal(bs[0].Tags, []string{x, z}) {
		t.Fatalf("branches of a: got %+v, %v; want the fork tagged %s and %s", bs, err, x, z)
	}

	for range 2 { // idempotent, and a tag it lacks is no error
		if err := st.Untag(ctx, a.ID, x, z); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := tags(a.ID), []string{y}; !slices.Equal(got, want) {
		t.Fatalf("got tags %v after untag, want %v", got, want)
	}
	if got, want := listed(session.ByTag(x)), []string{fork.ID, b.ID}; !slices.Equal(got, want) {
		t.Fatalf("ByTag after untag: got %v, want %v", got, want)
	}

	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"tag unknown session", st.Tag(ctx, newID(), x), session.ErrNotFound},
		{"untag unknown session", st.Untag(ctx, newID(), x), session.ErrNotFound},
		{"bad id", st.Tag(ctx, "nope", x), session.ErrInvalid},
		{"empty tag", st.Tag(ctx, a.ID, ""), session.ErrInvalid},
		{"tag with a space", st.Tag(ctx, a.ID, "two words"), session.ErrInvalid},
		{"ByTag with a space", func() error { _, err := st.List(ctx, session.ByTag("a b")); return err }(), session.ErrInvalid},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	before := ct.requests.Load()
	if err := st.Tag(ctx, a.ID, "ok", "not ok"); !errors.Is(err, session.ErrInvalid) || ct.requests.Load() != before {
		t.Fatalf("a bad tag among good ones: got %v after %d requests, want ErrInvalid after none", err, ct.requests.Load()-before)
	}
	scoped := session.NewStore(querier(t, c), session.ForPrincipal("bob"))
	if err := scoped.Tag(ctx, a.ID, x); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("tag another principal's session: got %v, want ErrNotFound", err)
	}
	if got := listed(session.ByTag(y)); !slices.Equal(got, []string{a.ID}) {
		t.Fatalf("got %v, want only %s", got, a.ID)
	}
	if infos, err := scoped.List(ctx, session.ByTag(x)); err != nil || len(infos) != 1 || infos[0].ID != b.ID {
		t.Fatalf("ByTag in a scoped store: got %+v, %v; want only %s", infos, err, b.ID)
	}
}

// TestTagsAtCreation: Session.Tags are stored by the Persist that creates
// the session, in its update, and found by ByTag; a bad one refuses the
// whole Persist, storing nothing; a later Persist ignores them.
func TestTagsAtCreation(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	x := "named-" + newID()[24:]

	s := session.New("alice")
	s.Tags = []string{x}
	s.Append("user", "hi")
	mustPersist(t, st, s)
	in, err := st.Info(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in.Tags, []string{x}) {
		t.Errorf("got tags %v, want [%s]", in.Tags, x)
	}
	infos, err := st.List(ctx, session.ByTag(x))
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].ID != s.ID {
		t.Errorf("ByTag(%s): got %v, want %s alone", x, infos, s.ID)
	}

	s.Tags = []string{"ignored-" + x}
	s.Append("assistant", "hello")
	mustPersist(t, st, s)
	if in, err := st.Info(ctx, s.ID); err != nil || !slices.Equal(in.Tags, []string{x}) {
		t.Errorf("after an append: got tags %v (%v), want [%s]", in.Tags, err, x)
	}

	bad := session.New("alice")
	bad.Tags = []string{"a b"}
	bad.Append("user", "hi")
	if err := st.Persist(ctx, bad); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("a tag with a space: got %v, want ErrInvalid", err)
	}
	if _, err := st.Info(ctx, bad.ID); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("after the refused Persist: got %v, want ErrNotFound", err)
	}
	if err := session.CheckTag("a b"); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("CheckTag(\"a b\"): got %v, want ErrInvalid", err)
	}
	if err := session.CheckTag(x); err != nil {
		t.Errorf("CheckTag(%q): %v", x, err)
	}
}
