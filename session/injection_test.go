package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// injectionPayloads are strings that would change a query's meaning if a
// value were pasted into SPARQL text: closing a string (each quote form,
// or "\u0022", which SPARQL decodes before parsing) or an IRI, a line break
// that ends a string or starts a comment, variables and parameters.
var injectionPayloads = []string{
	`"} ; DROP ALL ; INSERT DATA {"`,
	`'} ; DROP ALL ; INSERT DATA {'`,
	`"""} ; DROP ALL ; INSERT DATA {"""`,
	`'''} ; DROP ALL ; INSERT DATA {'''`,
	`\u0022} ; DROP ALL ; INSERT DATA {\u0022`,
	`\U00000022 } ; DROP ALL ; #`,
	`\\u0022 \\\u0022`,
	"x\" .\n# a comment\n} ; DROP ALL ; INSERT DATA { <urn:a> <urn:b> \"",
	"x\n} ; DROP ALL ; #",
	"x\r\n} ; DROP ALL ; #",
	"\n#",
	"# } ; DROP ALL",
	`>`,
	`<`,
	`<urn:evil>`,
	`> } ; DROP ALL ; INSERT DATA { <urn:a> <urn:b> <urn:c`,
	`"`, `'`, `\`, `\"`, `""`, `"""`,
	`$`, `$principal`, `$s`, `$self`, `?x`, `?s`, `{`, `}`, `;`,
	`") } UNION { ?s ?p ?o } #`,
	`"^^<http://www.w3.org/2001/XMLSchema#integer>`,
	`"@en`,
	"nul \x00 inside",
	"\u2028\u2029\u0085 line separators",
}

// TestInjection stores every payload as principal, role and content of
// roots and forks, and uses it as a list and scope filter, as an id and as a
// branch label. Each is stored as data and read back byte for byte, or
// refused with ErrInvalid before any request; the triples outside the
// test's own sessions are the same before and after.
func TestInjection(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()

	// Everything the test writes, made in memory first, so that the triples
	// outside it can be counted before anything is stored.
	type stored struct {
		s       *session.Session
		payload string
	}
	var all []stored
	for _, p := range injectionPayloads {
		s := session.New(p)
		s.Append(p, p)
		s.Append("user", "the payload as content: "+p)
		all = append(all, stored{s, p})
		f := mustFork(t, s, 1)
		f.Principal = "forker " + p
		f.Append(p, p)
		all = append(all, stored{f, p})
	}
	var mine []*session.Session
	for _, x := range all {
		mine = append(mine, x.s)
	}
	// Bystanders: a session and a fork (with its PROV record) that are not
	// the test's, and a graph that is no session's.
	bystander := persisted(t, st, "bystander", 3)
	by := mustFork(t, bystander, 2)
	appendN(by, 1, "bystander fork")
	mustPersist(t, st, by)
	canary := canaryGraph(t, c)
	outside := outsideCounter(t, c, mine)
	before := outside()

	refused, kept := 0, 0
	for _, x := range all {
		err := st.Persist(ctx, x.s)
		if strings.ContainsRune(x.s.Principal, 0) {
			// A principal with NUL is refused (Session.validate).
			if !errors.Is(err, session.ErrInvalid) {
				t.Errorf("principal %q: got %v, want ErrInvalid", x.s.Principal, err)
			}
			refused++
			continue
		}
		if x.s.ParentID != "" && strings.ContainsRune(x.payload, 0) {
			// Its parent was refused.
			if !errors.Is(err, session.ErrParentMissing) {
				t.Errorf("fork of a refused parent: got %v, want ErrParentMissing", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("payload %q: persist: %v", x.payload, err)
			continue
		}
		kept++
		got, err := st.Load(ctx, x.s.ID)
		if err != nil {
			t.Errorf("payload %q: load: %v", x.payload, err)
			continue
		}
		if got.Principal != x.s.Principal {
			t.Errorf("principal: got %q, want %q", got.Principal, x.s.Principal)
		}
		sameHistory(t, got.Turns, x.s.Turns)

		list, err := st.List(ctx, session.ByPrincipal(x.s.Principal))
		if err != nil {
			t.Errorf("payload %q: list by principal: %v", x.payload, err)
			continue
		}
		found := 0
		for _, in := range list {
			if in.Principal != x.s.Principal {
				t.Errorf("list by principal %q: listed %s of %q", x.s.Principal, in.ID, in.Principal)
			}
			if in.ID == x.s.ID {
				found++
			}
		}
		if found != 1 {
			t.Errorf("list by principal %q: %s listed %d times, want once", x.s.Principal, x.s.ID, found)
		}
		scoped := session.NewStore(querier(t, c), session.ForPrincipal(x.s.Principal))
		if _, err := scoped.Load(ctx, x.s.ID); err != nil {
			t.Errorf("load in a store scoped to %q: %v", x.s.Principal, err)
		}
		if list, err := scoped.List(ctx); err != nil || len(list) == 0 {
			t.Errorf("list in a store scoped to %q: got %d sessions, %v", x.s.Principal, len(list), err)
		}
	}

	// As ids and branch labels the payloads are refused before any request.
	for _, p := range injectionPayloads {
		n := ct.requests.Load()
		if _, err := st.Load(ctx, p); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("load %q: got %v, want ErrInvalid", p, err)
		}
		if _, err := st.Branches(ctx, p); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("branches %q: got %v, want ErrInvalid", p, err)
		}
		if err := st.Delete(ctx, p, session.DeleteOptions{}); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("delete %q: got %v, want ErrInvalid", p, err)
		}
		s := session.New("p")
		s.Branch = p
		s.Append("user", "x")
		if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("branch %q: got %v, want ErrInvalid", p, err)
		}
		s = session.New("p")
		s.Append("user", "x")
		s.Turns[0].Branch = p
		if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("turn branch %q: got %v, want ErrInvalid", p, err)
		}
		if got := ct.requests.Load() - n; got != 0 {
			t.Errorf("payload %q as an id or branch: %d requests sent, want none", p, got)
		}
	}

	after := outside()
	if after != before {
		t.Errorf("triples outside the test's sessions: got %d after, want %d as before", after, before)
	}
	if ok, err := c.Ask(ctx, "ASK { GRAPH "+storetest.TermText(t, canary)+" { ?s ?p ?o } }"); err != nil || !ok {
		t.Errorf("the canary graph is gone (%v, %v)", ok, err)
	}
	sameSession(t, mustLoad(t, st, by.ID), by)
	t.Logf("%d payloads as principal, role and content of %d sessions: %d stored and read back, %d refused (NUL in a principal); "+
		"as id and branch: all refused; %d triples outside the test's sessions before and after",
		len(injectionPayloads), len(all), kept, refused, after)
}

// outsideCounter returns a function that counts the triples of the dataset
// that do not belong to the sessions given: not in their graphs, and not
// their PROV records (subjects the session, its fork activity or the agent
// of its principal, in the PROV graph). It counts by graph and by PROV
// subject, so that it stays cheap on a large dataset.
func outsideCounter(tb testing.TB, c *kg.Client, mine []*session.Session) func() int {
	tb.Helper()
	// The replica graph is a replicated store's own (offsets, and on
	// replica groups each session's trails:group), not data a write of
	// the test could reach.
	graphs, subjects := map[string]bool{ontology.ReplicaGraph: true}, map[string]bool{}
	for _, s := range mine {
		graphs[ontology.SessionIRI(s.ID)] = true
		subjects[ontology.SessionIRI(s.ID)] = true
		subjects[ontology.ActivityIRI("fork", s.ID)] = true
		subjects[ontology.AgentIRI(s.Principal)] = true
	}
	count := func(q, key string, skip map[string]bool) int {
		tb.Helper()
		res, err := c.Select(context.Background(), q)
		if err != nil {
			tb.Fatalf("count: %v", err)
		}
		total := 0
		for _, row := range res.Solutions {
			if skip[row.String(key)] {
				continue
			}
			n, err := row.Int("n")
			if err != nil {
				tb.Fatal(err)
			}
			total += n
		}
		return total
	}
	prov := storetest.TermText(tb, kg.MustIRI(ontology.ProvGraph))
	return func() int {
		tb.Helper()
		all := count("SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g", "g", graphs)
		provAll := count("SELECT (COUNT(*) AS ?n) WHERE { GRAPH "+prov+" { ?s ?p ?o } }", "", nil)
		provOthers := count("SELECT ?s (COUNT(*) AS ?n) WHERE { GRAPH "+prov+" { ?s ?p ?o } } GROUP BY ?s", "s", subjects)
		return all - provAll + provOthers
	}
}

// canaryGraph stores a graph of one triple that no test touches; a DROP ALL
// or CLEAR ALL that got through would remove it.
func canaryGraph(tb testing.TB, c *kg.Client) rdf.IRI {
	tb.Helper()
	g := kg.MustIRI("urn:trails-test:canary:" + newID())
	var d kg.Data
	d.Add(g, g, kg.MustIRI("urn:trails-test:says"), kg.String("still here"))
	u, err := d.InsertData()
	if err != nil {
		tb.Fatal(err)
	}
	if err := clustertest.Update(context.Background(), tb, c, u); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		clustertest.Update(context.Background(), tb, c, "DROP SILENT GRAPH "+storetest.TermText(tb, g))
	})
	return g
}
