package cluster_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/knakk/rdf"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// TestShardedReferences: a write that names a session of another replica
// group only as a reference (kg.References). Tree A is a root of group 0
// and tree B a root of group 1. An update writing into A's graph a triple
// whose object is a turn of B is refused with ErrCrossGroup without the
// option; with B as a reference it is stored in group 0 (read back
// through the Sharded, on both of group 0's replicas, on none of group
// 1's), and a new Sharded still finds B in group 1. A reference that no
// group holds is not taken for a session of group 0. A reference does
// not let a write read or change B: updates naming B's graph, to write it
// or to read it, are refused, group 1's log gets no record, and B's graph
// is what it was on group 1's replicas and on the audit replica. An
// update naming references only goes where it would without the option.
func TestShardedReferences(t *testing.T) {
	k := kafkatest.Start(t)
	srv, err := fusekitest.StartServer(fusekitest.Options{Datasets: 5})
	if err != nil {
		t.Fatalf("fuseki for the replicas: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	sh := sr.client(t)
	st := session.NewStore(sh, session.WithGroupCommit(false))

	var trees [2]*session.Session
	for g := range trees {
		var s *session.Session
		for s == nil || sh.HomeGroup(s.ID) != g {
			s = session.New("referrer")
		}
		s.Append("user", "what did the other tree say?")
		s.Append("assistant", "it said hello")
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		trees[g] = s
	}
	a, b := trees[0], trees[1]
	bIRI := kg.MustIRI(ontology.SessionIRI(b.ID))
	params := kg.Params{
		"a":     kg.MustIRI(ontology.SessionIRI(a.ID)),
		"aTurn": kg.MustIRI(a.Turns[1].ID),
		"b":     bIRI,
		"bTurn": kg.MustIRI(b.Turns[1].ID),
		"cites": kg.MustIRI("urn:trails-test:cites"),
		"saw":   kg.MustIRI("urn:trails-test:saw"),
	}
	bind := func(tmpl string) string { // with the params tmpl names
		t.Helper()
		used := kg.Params{}
		for name, v := range params {
			if regexp.MustCompile(`\$` + name + `\b`).MatchString(tmpl) {
				used[name] = v
			}
		}
		u, err := kg.Bind(tmpl, used)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	pos := sh.Positions()
	for g := range sr.groups {
		waitPosition(t, sr.auditA[g].srv.URL, pos[g])
	}
	bGraph := graphOf(t, sh, bIRI) // from group 1
	bAudit := graphOf(t, sr.audit, bIRI)

	cite := bind("INSERT DATA { GRAPH $a { $aTurn $cites $bTurn } }")
	err = sh.Update(ctx, cite, kg.Idempotent())
	if !errors.Is(err, cluster.ErrCrossGroup) || !errors.Is(err, kg.ErrBadRequest) {
		t.Fatalf("a triple of A citing B's turn, without the option: got %v, want ErrCrossGroup", err)
	}
	if err := sh.Update(ctx, cite, kg.References(b.ID), kg.Idempotent()); err != nil {
		t.Fatalf("the same with B as a reference: %v", err)
	}
	res, err := sh.Select(ctx, bind("SELECT ?o WHERE { GRAPH $a { $aTurn $cites ?o } }"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Solutions) != 1 || res.Solutions[0].String("o") != b.Turns[1].ID {
		t.Errorf("read back through the Sharded: got %v, want %s", res.Solutions, b.Turns[1].ID)
	}
	after := sh.Positions()
	if after[1] != pos[1] {
		t.Errorf("group 1's log: this Sharded wrote up to %d, want %d (nothing sent there)", after[1], pos[1])
	}
	ask := bind("ASK { GRAPH $a { $aTurn $cites $bTurn } }")
	for g, r := range sr.groups {
		for i, store := range r.stores {
			waitPosition(t, r.appliers[i].srv.URL, after[g])
			if ok, err := store.Ask(ctx, ask); err != nil || ok != (g == 0) {
				t.Errorf("group %d, replica %d holds the citation: got %v, %v, want %v", g, i, ok, err, g == 0)
			}
		}
	}
	fresh := sr.client(t)
	for g, s := range trees {
		if got, err := fresh.Group(ctx, s.ID); err != nil || got != g {
			t.Errorf("a new Sharded: session %s in group %d (%v), want %d", s.ID, got, err, g)
		}
	}

	// A reference stored nowhere is not recorded as a session of group 0.
	nowhere := uuid.NewString()
	params["elsewhere"] = kg.MustIRI(ontology.TurnIRI(ontology.SessionIRI(nowhere), 0))
	if err := sh.Update(ctx, bind("INSERT DATA { GRAPH $a { $aTurn $cites $elsewhere } }"), kg.References(nowhere), kg.Idempotent()); err != nil {
		t.Fatalf("citing a session stored nowhere: %v", err)
	}
	if got, err := sh.Group(ctx, nowhere); err != nil || got != -1 {
		t.Errorf("the group of a reference stored nowhere: got %d (%v), want -1", got, err)
	}

	// A reference named by its own IRI, as a graph written or read, routes
	// as any session: refused.
	for _, c := range []struct{ name, update string }{
		{"write B's graph", "INSERT DATA { GRAPH $a { $aTurn $cites $bTurn } GRAPH $b { $bTurn $saw \"a reference\" } }"},
		{"read B's graph", "INSERT { GRAPH $a { $aTurn $saw ?o } } WHERE { GRAPH $b { $bTurn ?p ?o } }"},
		{"delete from B's graph", "DELETE { GRAPH $b { $bTurn ?p ?o } } INSERT { GRAPH $a { $aTurn $cites $bTurn } } WHERE { GRAPH $b { $bTurn ?p ?o } }"},
	} {
		u := bind(c.update)
		t.Run(c.name, func(t *testing.T) {
			err := sh.Update(ctx, u, kg.References(b.ID))
			if !errors.Is(err, cluster.ErrCrossGroup) {
				t.Errorf("got %v, want ErrCrossGroup", err)
			}
		})
	}
	if ok, err := sh.Ask(ctx, bind("ASK { GRAPH $a { $aTurn $saw ?o } }")); err != nil || ok {
		t.Errorf("A saw B's turn: got %v, %v, want false", ok, err)
	}
	after = sh.Positions()
	if after[1] != pos[1] {
		t.Errorf("group 1's log: this Sharded wrote up to %d, want %d (nothing sent there)", after[1], pos[1])
	}
	for g := range sr.groups {
		waitPosition(t, sr.auditA[g].srv.URL, after[g])
	}
	if got := graphOf(t, sh, bIRI); got != bGraph {
		t.Errorf("B's graph in group 1 changed:\n%s", diffLines(bGraph, got))
	}
	if got := graphOf(t, sr.audit, bIRI); got != bAudit {
		t.Errorf("B's graph on the audit replica changed:\n%s", diffLines(bAudit, got))
	}
	if got, err := st.Load(ctx, b.ID); err != nil || len(got.Turns) != 2 || got.Turns[1].Content != "it said hello" {
		t.Errorf("B loaded: got %v, %v, want its two turns", got, err)
	}

	// Naming references only, an update routes as without the option: to
	// B's group.
	params["notes"] = kg.MustIRI("urn:trails-test:notes")
	if err := sh.Update(ctx, bind("INSERT DATA { GRAPH $notes { $notes $cites $bTurn } }"), kg.References(b.ID)); err != nil {
		t.Fatal(err)
	}
	if got := sh.Positions(); got[0] != after[0] || got[1] == after[1] {
		t.Errorf("an update of references only: positions %v after %v, want group 1's alone moved", got, after)
	}
}

// graphOf returns graph g as c gives it, its lines sorted.
func graphOf(t *testing.T, c interface {
	GetGraph(context.Context, rdf.IRI) ([]byte, error)
}, g rdf.IRI) string {
	t.Helper()
	b, err := c.GetGraph(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
