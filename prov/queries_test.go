package prov_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

var (
	commentLine = regexp.MustCompile(`(?m)^\s*#.*$`)
	iriRef      = regexp.MustCompile(`<[^<>"{}|^\x60\\\s]*>`)
	stringLit   = regexp.MustCompile(`"[^"\n]*"`)
	dollarVar   = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	graphWord   = regexp.MustCompile(`(?i)\bGRAPH\b`)
)

// TestQueryFiles checks every queries/*.rq: its name is its file name, it
// has a description, its declared parameters are exactly the $vars of its
// text outside comments, strings and IRIs, and it has no GRAPH clause.
func TestQueryFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("queries", "*.rq"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".rq")
		names = append(names, name)
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			q, ok := prov.Lookup(name)
			if !ok {
				t.Fatalf("Lookup(%q): got none, want the query of %s (is its '# name:' line %q?)", name, f, name)
			}
			if q.Name != name || q.Text != string(text) {
				t.Fatalf("got name %q and %d bytes of text, want %q and the %d bytes of %s", q.Name, len(q.Text), name, len(text), f)
			}
			if !strings.HasSuffix(q.Description, ".") || len(q.Description) < 20 {
				t.Fatalf("description: got %q, want a sentence", q.Description)
			}
			body := commentLine.ReplaceAllString(string(text), "")
			body = iriRef.ReplaceAllString(body, "<>")
			body = stringLit.ReplaceAllString(body, `""`)
			var inText []string
			for _, m := range dollarVar.FindAllStringSubmatch(body, -1) {
				if !slices.Contains(inText, m[1]) {
					inText = append(inText, m[1])
				}
			}
			var declared []string
			params := kg.Params{}
			for _, p := range q.Params {
				declared = append(declared, p.Name)
				if p.Description == "" {
					t.Errorf("$%s: no description", p.Name)
				}
				params[p.Name] = sample(t, p.Kind)
			}
			sort.Strings(inText)
			sort.Strings(declared)
			if !reflect.DeepEqual(inText, declared) {
				t.Fatalf("params: got %v declared, want the $vars of the text %v", declared, inText)
			}
			// kg.Bind, which Run uses, must agree.
			if _, err := kg.Bind(q.Text, params); err != nil {
				t.Fatalf("bind the declared params: got %v, want nil", err)
			}
			if loc := graphWord.FindStringIndex(body); loc != nil {
				t.Fatalf("got a GRAPH clause at %q, want none: the default graph is the union of all graphs", body[loc[0]:])
			}
		})
	}
	want := []string{"deletions", "forks-by-principal", "forks-of", "lineage", "most-forked", "orphans"}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("got queries %v, want one named %s", names, w)
		}
	}
	var got []string
	for _, q := range prov.Queries() {
		got = append(got, q.Name)
	}
	if !reflect.DeepEqual(got, names) { // Glob sorts by file name
		t.Fatalf("Queries: got %v, want %v", got, names)
	}
	if _, ok := prov.Lookup("no-such-query"); ok {
		t.Fatalf("Lookup(no-such-query): got a query, want none")
	}
}

// sample returns a term of the given kind.
func sample(tb testing.TB, k prov.Kind) rdf.Term {
	tb.Helper()
	v := map[prov.Kind]string{
		prov.KindIRI: "urn:x", prov.KindSessionID: "s", prov.KindString: "x",
		prov.KindDateTime: "2026-01-01", prov.KindInteger: "1",
	}[k]
	term, err := k.Term(v)
	if err != nil {
		tb.Fatalf("kind %q: %v", k, err)
	}
	return term
}

func TestKindTerm(t *testing.T) {
	for _, tc := range []struct {
		kind    prov.Kind
		in      string
		want    string // the term as kg writes it into a query
		wantErr error
	}{
		{prov.KindSessionID, "0190c5d2-aaaa", "<" + ontology.SessionBase + "0190c5d2-aaaa>", nil},
		{prov.KindSessionID, "a b/c", "<" + ontology.SessionBase + "a%20b%2Fc>", nil},
		{prov.KindSessionID, "", "", prov.ErrInvalid},
		{prov.KindIRI, "urn:x:y", "<urn:x:y>", nil},
		{prov.KindIRI, "not an iri", "", prov.ErrInvalid},
		{prov.KindString, `say "hi"`, `"say \"hi\""`, nil},
		{prov.KindString, "\xff", "", prov.ErrInvalid},
		{prov.KindDateTime, "2026-03-01T11:00:00.5+01:00", `"2026-03-01T10:00:00.5Z"^^<` + ontology.XSDDateTime + ">", nil},
		{prov.KindDateTime, "2026-03-01", `"2026-03-01T00:00:00Z"^^<` + ontology.XSDDateTime + ">", nil},
		{prov.KindDateTime, "yesterday", "", prov.ErrInvalid},
		{prov.KindInteger, "-3", `"-3"^^<` + ontology.XSDInteger + ">", nil},
		{prov.KindInteger, "3.5", "", prov.ErrInvalid},
		{prov.Kind("uuid"), "x", "", prov.ErrInvalid},
	} {
		t.Run(string(tc.kind)+" "+tc.in, func(t *testing.T) {
			term, err := tc.kind.Term(tc.in)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			got, err := kg.Term(term)
			if err != nil || got != tc.want {
				t.Fatalf("got %s (%v), want %s", got, err, tc.want)
			}
		})
	}
}

// TestReader checks each Reader method against the fixture world.
func TestReader(t *testing.T) {
	c, w := newWorld(t)
	r := prov.NewReader(c)
	ctx := context.Background()
	rec := func(s session, branch string) prov.ForkRecord { return prov.ForkRecord{Fork: s.fork(), Branch: branch} }
	unknown := newID(t)

	t.Run("ForksOf", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			id      string
			want    []prov.ForkRecord
			wantErr error
		}{
			{"root: deleted, dropped and detached children too", w.R.ID,
				[]prov.ForkRecord{rec(w.A, w.A.Branch), rec(w.C, ""), rec(w.P, ""), rec(w.X, w.X.Branch)}, nil},
			{"fork", w.A.ID, []prov.ForkRecord{rec(w.B, w.B.Branch)}, nil},
			{"deleted session", w.C.ID, []prov.ForkRecord{rec(w.D, w.D.Branch)}, nil},
			{"leaf", w.B.ID, []prov.ForkRecord{}, nil},
			{"unknown", unknown, []prov.ForkRecord{}, nil},
			{"empty id", "", nil, prov.ErrInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := r.ForksOf(ctx, tc.id)
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
					t.Fatalf("got error %v, want %v", err, tc.wantErr)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			})
		}
	})

	t.Run("Lineage", func(t *testing.T) {
		entry := func(s session) prov.LineageEntry {
			return prov.LineageEntry{Session: s.ID, Parent: s.Parent, ForkedAt: s.At}
		}
		missing := func(s session) prov.LineageEntry { return prov.LineageEntry{Session: s.ID, Missing: true} }
		for _, tc := range []struct {
			name    string
			id      string
			want    []prov.LineageEntry
			wantErr error
		}{
			{"root", w.R.ID, []prov.LineageEntry{entry(w.R)}, nil},
			{"fork", w.A.ID, []prov.LineageEntry{entry(w.A), entry(w.R)}, nil},
			{"fork of fork", w.B.ID, []prov.LineageEntry{entry(w.B), entry(w.A), entry(w.R)}, nil},
			{"deleted grandparent", w.E.ID, []prov.LineageEntry{entry(w.E), entry(w.D), missing(w.C)}, nil},
			{"dropped parent", w.Q.ID, []prov.LineageEntry{entry(w.Q), missing(w.P)}, nil},
			{"detached", w.X.ID, []prov.LineageEntry{{Session: w.X.ID}}, nil},
			{"deleted", w.C.ID, nil, prov.ErrNotFound},
			{"unknown", unknown, nil, prov.ErrNotFound},
			{"empty id", "", nil, prov.ErrInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := r.Lineage(ctx, tc.id)
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
					t.Fatalf("got error %v, want %v", err, tc.wantErr)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			})
		}
	})

	t.Run("ForksBy", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			principal string
			from, to  time.Time
			want      []prov.ForkRecord
			wantErr   error
		}{
			{"alice", "alice", minute(0), minute(60),
				[]prov.ForkRecord{rec(w.A, w.A.Branch), rec(w.P, ""), rec(w.Q, w.Q.Branch), rec(w.X, w.X.Branch)}, nil},
			{"bob, deleted child included", "bob", minute(0), minute(60),
				[]prov.ForkRecord{rec(w.B, w.B.Branch), rec(w.C, ""), rec(w.D, w.D.Branch)}, nil},
			{"carol", "carol", minute(0), minute(60), []prov.ForkRecord{rec(w.E, w.E.Branch)}, nil},
			{"end is exclusive", "alice", minute(1), minute(6), []prov.ForkRecord{rec(w.A, w.A.Branch)}, nil},
			{"start is inclusive", "alice", minute(6), minute(6).Add(time.Millisecond), []prov.ForkRecord{rec(w.P, "")}, nil},
			{"just after", "alice", minute(1).Add(time.Millisecond), minute(6), []prov.ForkRecord{}, nil},
			{"empty window", "alice", minute(1), minute(1), []prov.ForkRecord{}, nil},
			{"unknown principal", "mallory", minute(0), minute(60), []prov.ForkRecord{}, nil},
			{"session id is no principal", w.R.ID, minute(0), minute(60), []prov.ForkRecord{}, nil},
			{"empty principal", "", minute(0), minute(60), nil, prov.ErrInvalid},
			{"window backwards", "alice", minute(60), minute(0), nil, prov.ErrInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := r.ForksBy(ctx, tc.principal, tc.from, tc.to)
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
					t.Fatalf("got error %v, want %v", err, tc.wantErr)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			})
		}
	})

	t.Run("Orphans", func(t *testing.T) {
		want := []prov.Orphan{
			{Session: w.D.ID, Missing: w.C.ID, Deletion: w.DelC.String()},
			{Session: w.E.ID, Missing: w.C.ID, Deletion: w.DelC.String()},
			{Session: w.Q.ID, Missing: w.P.ID},
		}
		sort.Slice(want, func(i, j int) bool {
			a, b := want[i], want[j]
			if a.Missing != b.Missing {
				return ontology.SessionIRI(a.Missing) < ontology.SessionIRI(b.Missing)
			}
			return ontology.SessionIRI(a.Session) < ontology.SessionIRI(b.Session)
		})
		got, err := r.Orphans(ctx)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, %v; want %v", got, err, want)
		}
	})

	t.Run("Run", func(t *testing.T) { testRun(t, r, w) })

	t.Run("unbound", func(t *testing.T) {
		// Each file runs as is in a SPARQL tool, parameters unbound.
		for _, q := range prov.Queries() {
			if _, err := c.Select(ctx, q.Text); err != nil {
				t.Errorf("%s: got %v, want nil", q.Name, err)
			}
		}
	})
}

// row is a solution as lexical forms, date-times normalized to UTC
// RFC 3339 so that the store's choice of lexical form does not matter.
type row map[string]string

func rows(tb testing.TB, res *kg.Results) []row {
	tb.Helper()
	out := make([]row, 0, len(res.Solutions))
	for _, s := range res.Solutions {
		r := row{}
		for v, term := range s {
			r[v] = term.String()
			if l, ok := term.(rdf.Literal); ok && l.DataType.String() == ontology.XSDDateTime {
				tm, err := s.Time(v)
				if err != nil {
					tb.Fatal(err)
				}
				r[v] = tm.UTC().Format(time.RFC3339Nano)
			}
		}
		out = append(out, r)
	}
	return out
}

// testRun runs each query by name with string parameters, as trails-admin
// audit does, and checks the exact rows.
func testRun(t *testing.T, r *prov.Reader, w world) {
	ctx := context.Background()
	unknown := newID(t)
	s := func(x session) string { return ontology.SessionIRI(x.ID) }
	ts := func(n int) string { return minute(n).Format(time.RFC3339Nano) }
	forkRow := func(x session, branch string) row {
		r := row{"child": s(x), "parent": ontology.SessionIRI(x.Parent), "forkPoint": strconv.Itoa(x.At),
			"principal": x.Principal, "time": ts(x.Created.Minute())}
		if branch != "" {
			r["branch"] = branch
		}
		return r
	}
	forkVars := []string{"child", "parent", "forkPoint", "branch", "principal", "time"}
	mostForked := []row{{"session": s(w.R), "forks": "4", "exists": "true"}}
	var ones []row
	for _, x := range []session{w.A, w.C, w.D, w.P} {
		ones = append(ones, row{"session": s(x), "forks": "1", "exists": strconv.FormatBool(x.ID != w.C.ID && x.ID != w.P.ID)})
	}
	sort.Slice(ones, func(i, j int) bool { return ones[i]["session"] < ones[j]["session"] })
	mostForked = append(mostForked, ones...)
	orphans := []row{
		{"session": s(w.D), "missing": s(w.C), "deletion": w.DelC.String()},
		{"session": s(w.E), "missing": s(w.C), "deletion": w.DelC.String()},
		{"session": s(w.Q), "missing": s(w.P)},
	}
	sort.Slice(orphans, func(i, j int) bool {
		if orphans[i]["missing"] != orphans[j]["missing"] {
			return orphans[i]["missing"] < orphans[j]["missing"]
		}
		return orphans[i]["session"] < orphans[j]["session"]
	})
	detX := row{"activity": w.DetX.String(), "kind": "Detach", "session": s(w.X), "principal": "alice", "time": ts(9)}
	delC := row{"activity": w.DelC.String(), "kind": "Deletion", "session": s(w.C), "principal": "carol", "time": ts(10)}
	lineage := func(x session, depth string, exists bool) row {
		r := row{"ancestor": s(x), "exists": strconv.FormatBool(exists), "depth": depth}
		if exists {
			r["id"] = x.ID
			if x.Parent != "" {
				r["parent"] = ontology.SessionIRI(x.Parent)
				r["forkedAtIndex"] = strconv.Itoa(x.At)
			}
		}
		return r
	}

	for _, tc := range []struct {
		name     string
		query    string
		params   map[string]string
		wantVars []string
		want     []row
		wantErr  error
	}{
		{"forks-of", "forks-of", map[string]string{"session": w.R.ID}, forkVars,
			[]row{forkRow(w.A, w.A.Branch), forkRow(w.C, ""), forkRow(w.P, ""), forkRow(w.X, w.X.Branch)}, nil},
		{"forks-of with $", "forks-of", map[string]string{"$session": w.A.ID}, forkVars,
			[]row{forkRow(w.B, w.B.Branch)}, nil},
		{"lineage", "lineage", map[string]string{"session": w.B.ID},
			[]string{"ancestor", "id", "parent", "forkedAtIndex", "exists", "depth"},
			[]row{lineage(w.B, "0", true), lineage(w.A, "1", true), lineage(w.R, "2", true)}, nil},
		{"lineage through a deleted session", "lineage", map[string]string{"session": w.E.ID},
			[]string{"ancestor", "id", "parent", "forkedAtIndex", "exists", "depth"},
			[]row{lineage(w.E, "0", true), lineage(w.D, "1", true), lineage(w.C, "2", false)}, nil},
		{"forks-by-principal", "forks-by-principal",
			map[string]string{"principal": "bob", "from": "2026-03-01", "to": ts(4)}, forkVars,
			[]row{forkRow(w.B, w.B.Branch), forkRow(w.C, "")}, nil},
		{"orphans", "orphans", nil, []string{"session", "missing", "deletion"}, orphans, nil},
		{"most-forked", "most-forked", map[string]string{}, []string{"session", "forks", "exists"}, mostForked, nil},
		{"deletions", "deletions", map[string]string{"from": ts(0), "to": ts(60)},
			[]string{"activity", "kind", "session", "principal", "time"}, []row{detX, delC}, nil},
		{"deletions, end exclusive", "deletions", map[string]string{"from": ts(0), "to": ts(10)},
			[]string{"activity", "kind", "session", "principal", "time"}, []row{detX}, nil},
		{"unknown query", "forks", nil, nil, nil, prov.ErrInvalid},
		{"missing param", "deletions", map[string]string{"from": ts(0)}, nil, nil, prov.ErrInvalid},
		{"unknown param", "orphans", map[string]string{"session": w.R.ID}, nil, nil, prov.ErrInvalid},
		{"bad date-time", "deletions", map[string]string{"from": ts(0), "to": "soon"}, nil, nil, prov.ErrInvalid},
		{"empty session id", "forks-of", map[string]string{"session": ""}, nil, nil, prov.ErrInvalid},
		// A session the store never saw is an error, not a phantom row of
		// lineage (exists false, depth 0); a deleted one still has its PROV
		// records, and its lineage is that row.
		{"unknown session", "lineage", map[string]string{"session": unknown}, nil, nil, prov.ErrNotFound},
		{"unknown session, no rows", "forks-of", map[string]string{"session": unknown}, nil, nil, prov.ErrNotFound},
		{"deleted session", "lineage", map[string]string{"session": w.C.ID},
			[]string{"ancestor", "id", "parent", "forkedAtIndex", "exists", "depth"},
			[]row{lineage(w.C, "0", false)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Run(ctx, tc.query, tc.params)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(res.Vars, tc.wantVars) {
				t.Fatalf("vars: got %v, want %v", res.Vars, tc.wantVars)
			}
			if got := rows(t, res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLineageInconsistent writes parent links Trails never writes (a cycle,
// a parent that is not a session IRI) and checks that Lineage refuses them
// rather than returning a wrong chain.
func TestLineageInconsistent(t *testing.T) {
	c := fusekitest.New(t)
	ctx := context.Background()
	s1, s2, s3 := newID(t), newID(t), newID(t)
	var d kg.Data
	for _, s := range []session{
		{ID: s1, Parent: s2, At: 1, Branch: branch(s1), Principal: "alice", Created: minute(0)},
		{ID: s2, Parent: s1, At: 1, Branch: branch(s2), Principal: "alice", Created: minute(0)},
		{ID: s3, Branch: "main", Principal: "alice", Created: minute(0)},
	} {
		s.add(&d)
	}
	d.Add(sessionIRI(s3), sessionIRI(s3), iri(ontology.ParentSession), iri("urn:example:elsewhere"))
	update(t, c, &d)
	r := prov.NewReader(c)
	for _, tc := range []struct {
		name string
		id   string
	}{
		{"cycle", s1},
		{"foreign parent", s3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Lineage(ctx, tc.id)
			if !errors.Is(err, prov.ErrInconsistent) {
				t.Fatalf("got %v, %v; want ErrInconsistent", got, err)
			}
		})
	}
}
