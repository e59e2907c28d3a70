package session_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// provValues returns the values of predicate p on the Fork activity that
// generated session child, as the PROV graph holds them.
func provValues(tb testing.TB, c *kg.Client, child, p string) []string {
	tb.Helper()
	q, err := kg.Bind(`SELECT ?v WHERE { GRAPH $prov {
		$child <http://www.w3.org/ns/prov#wasGeneratedBy> ?act . ?act $p ?v } }`, kg.Params{
		"prov": kg.MustIRI(ontology.ProvGraph), "child": kg.MustIRI(ontology.SessionIRI(child)), "p": kg.MustIRI(p),
	})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Query(context.Background(), q)
	if err != nil {
		tb.Fatal(err)
	}
	var vs []string
	for _, row := range res.Solutions {
		vs = append(vs, row.String("v"))
	}
	return vs
}

// TestForkMetadata: a fork's type, initiator, reason and intention are
// written on its PROV activity, and read back by prov.Reader.ForkRecord;
// a fork made without them records none and reads as an explicit fork by
// a user.
func TestForkMetadata(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 4)
	mustAnchor(t, st, root.ID, "task_start", map[string]string{"context": "Working on feature X"})

	f, err := st.Fork(ctx, root.ID, -1,
		session.ForkAtAnchor("task_start"),
		session.WithIntention("Implement feature X", "Parent needs feature X implemented\nwith \"quotes\""),
		session.WithForkType(session.ForkAutoRegenerate),
		session.WithCreatedBy(session.CreatedBySystem),
		session.WithReason("try another model"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, st, f.ID); got.ForkedAt != 4 || len(got.Turns) != 4 || got.ParentID != root.ID {
		t.Fatalf("got fork of %s at %d with %d turns, want of %s at 4 with 4", got.ParentID, got.ForkedAt, len(got.Turns), root.ID)
	}
	for _, tc := range []struct {
		pred string
		want string
	}{
		{ontology.NextSteps, "Implement feature X"},
		{ontology.ContextSummary, "Parent needs feature X implemented\nwith \"quotes\""},
		{ontology.ForkType, "auto-regenerate"},
		{ontology.CreatedBy, "system"},
		{ontology.Reason, "try another model"},
		{ontology.FromAnchor, ontology.AnchorIRI(ontology.SessionIRI(root.ID), "task_start")},
		{ontology.ForkPoint, "4"},
	} {
		if got := provValues(t, c, f.ID, tc.pred); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("<%s>: got %q, want [%q]", tc.pred, got, tc.want)
		}
	}
	r := prov.NewReader(c)
	rec, err := r.ForkRecord(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Parent != root.ID || rec.At != 4 || rec.Type != "auto-regenerate" || rec.CreatedBy != "system" ||
		rec.Reason != "try another model" || rec.NextSteps != "Implement feature X" ||
		rec.ContextSummary != "Parent needs feature X implemented\nwith \"quotes\"" || rec.Branch != f.Branch ||
		rec.Anchor != ontology.AnchorIRI(ontology.SessionIRI(root.ID), "task_start") || rec.Turn != "" {
		t.Fatalf("got record %+v", rec)
	}

	// No options: nothing recorded, read as the defaults.
	plain := mustFork(t, root, 2)
	mustPersist(t, st, plain)
	for _, p := range []string{ontology.ForkType, ontology.CreatedBy, ontology.Reason, ontology.NextSteps,
		ontology.ContextSummary, ontology.FromAnchor, ontology.BeforeTurn} {
		if got := provValues(t, c, plain.ID, p); len(got) != 0 {
			t.Errorf("<%s>: got %q, want nothing for a fork without metadata", p, got)
		}
	}
	rec, err = r.ForkRecord(ctx, plain.ID)
	if err != nil || rec.Type != prov.DefaultForkType || rec.CreatedBy != prov.DefaultCreatedBy || rec.At != 2 {
		t.Fatalf("got %+v, %v; want an explicit fork by a user at 2", rec, err)
	}
	if _, err := r.ForkRecord(ctx, root.ID); !errors.Is(err, prov.ErrNotFound) {
		t.Fatalf("fork record of a root: got %v, want prov.ErrNotFound", err)
	}

	// Values that cannot be used are refused before anything is sent.
	for _, tc := range []struct {
		name string
		opt  session.ForkOption
	}{
		{"fork type", session.WithForkType("sideways")},
		{"creator", session.WithCreatedBy("robot")},
		{"reason", session.WithReason("\xff")},
		{"intention", session.WithIntention("ok", "\xfe")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := root.Fork(1, tc.opt); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			before := ct.requests.Load()
			// Store.Fork loads first (requests), then refuses before writing.
			if _, err := st.Fork(ctx, root.ID, 1, tc.opt); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("Store.Fork: got %v, want ErrInvalid", err)
			}
			if sent := ct.requests.Load() - before; sent != 2 {
				t.Fatalf("Store.Fork: got %d requests, want the 2 of Load", sent)
			}
		})
	}
	if _, err := st.Fork(ctx, newID(), 0); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Store.Fork of an unknown session: got %v, want ErrNotFound", err)
	}
	if _, err := st.Fork(ctx, root.ID, -1, session.ForkAtAnchor("nope")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Store.Fork at an unknown anchor: got %v, want ErrNotFound", err)
	}
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
	scoped := session.NewStore(c, session.ForPrincipal("bob"))
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

// tripleCountOf counts the values of predicate p on session id.
func tripleCountOf(tb testing.TB, c *kg.Client, id, p string) int {
	tb.Helper()
	return queryInt(tb, c, `SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { $s $p ?o } }`,
		kg.Params{"s": kg.MustIRI(ontology.SessionIRI(id)), "p": kg.MustIRI(p)})
}

// TestAncestry: root to session, with tags, in one request.
func TestAncestry(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 3)
	mid := mustFork(t, root, 2)
	appendN(mid, 2, "mid")
	mustPersist(t, st, mid)
	leaf := mustFork(t, mid, 3)
	mustPersist(t, st, leaf)
	tag := "lineage-" + newID()[24:]
	if err := st.Tag(ctx, mid.ID, tag); err != nil {
		t.Fatal(err)
	}
	before := ct.requests.Load()
	got, err := st.Ancestry(ctx, leaf.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := ct.requests.Load() - before; n != 1 {
		t.Fatalf("got %d requests, want 1", n)
	}
	var ids []string
	for _, in := range got {
		ids = append(ids, in.ID)
	}
	if want := []string{root.ID, mid.ID, leaf.ID}; !slices.Equal(ids, want) {
		t.Fatalf("got %v, want %v (root first)", ids, want)
	}
	if in := got[1]; in.ParentID != root.ID || in.ForkedAt != 2 || in.OwnTurns != 2 || in.Turns != 4 || !slices.Equal(in.Tags, []string{tag}) {
		t.Fatalf("got %+v for mid", in)
	}
	if in := got[2]; in.Turns != 3 || in.OwnTurns != 0 || len(in.Tags) != 0 {
		t.Fatalf("got %+v for leaf", in)
	}
	if got, err := st.Ancestry(ctx, root.ID); err != nil || len(got) != 1 || got[0].ParentID != "" {
		t.Fatalf("ancestry of a root: got %+v, %v; want itself", got, err)
	}
	if _, err := st.Ancestry(ctx, newID()); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
}

// TestLoadRoundTripsWithAnchors: anchors and tags along the chain cost
// Load no request more than before: two, at any depth.
func TestLoadRoundTripsWithAnchors(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	s := persisted(t, st, "alice", 2)
	for depth := range 6 {
		mustAnchor(t, st, s.ID, "a"+itoa(depth), map[string]string{"depth": itoa(depth)})
		if err := st.Tag(ctx, s.ID, "t"+itoa(depth)); err != nil {
			t.Fatal(err)
		}
		s = mustFork(t, mustLoad(t, st, s.ID), len(s.Turns))
		appendN(s, 2, "f")
		mustPersist(t, st, s)
	}
	before := ct.requests.Load()
	got := mustLoad(t, st, s.ID)
	if n := ct.requests.Load() - before; n > 3 || n != 2 {
		t.Fatalf("Load: got %d requests, want 2 (at most 3)", n)
	}
	if len(got.Anchors) != 6 {
		t.Fatalf("got %d anchors, want 6 (one per ancestor)", len(got.Anchors))
	}
	for depth := range 6 {
		if a := got.Anchors["a"+itoa(depth)]; a.Index != 2+2*depth || a.State["depth"] != itoa(depth) {
			t.Fatalf("anchor a%d: got %+v, want index %d", depth, a, 2+2*depth)
		}
	}
}

// TestAnchorsAndTagsConform: a session graph with anchors and tags
// conforms to the SHACL shapes.
func TestAnchorsAndTagsConform(t *testing.T) {
	fusekitest.RequireFuseki(t, "the SHACL endpoint")
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	s := persisted(t, st, "alice", 2)
	mustAnchor(t, st, s.ID, "task_start", map[string]string{"context": "x"})
	mustAnchor(t, st, s.ID, "bare", nil)
	if err := st.Tag(ctx, s.ID, "experiment", "ünïcode"); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Validate(ctx, ontology.Shapes, ontology.SessionIRI(s.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Conforms {
		t.Fatalf("got violations: %+v", rep.Results)
	}
}
