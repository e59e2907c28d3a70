package main_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// Credentials and access: a Fuseki with HTTP basic auth and the read-only
// auditor of fuseki/trails-auth.ttl, and that no password ever shows in an
// error, an output or the server's log.

// secrets are the passwords of one test, distinctive enough that finding
// one in a text cannot be chance. They hold a space and a colon, which the
// password file and basic auth must carry.
type secrets struct {
	writer, auditor, nobody, wrong string
}

func newSecrets() secrets {
	r := func(tag string) string {
		b := make([]byte, 6)
		rand.Read(b)
		return tag + " pass:" + hex.EncodeToString(b)
	}
	return secrets{writer: r("Wr1ter"), auditor: r("Aud1tor"), nobody: r("N0body"), wrong: r("Wr0ng")}
}

// forms returns the ways a password could show: as is, URL-encoded, and
// inside a basic auth header (base64 of "user:password").
func (s secrets) forms() map[string]string {
	out := map[string]string{}
	for user, pw := range map[string]string{"trails": s.writer, "auditor": s.auditor, "nobody": s.nobody, "wrong": s.wrong} {
		out[pw] = "the password of " + user
		out[url.QueryEscape(pw)] = "the URL-encoded password of " + user
		out[url.PathEscape(pw)] = "the path-encoded password of " + user
		for _, u := range []string{"trails", "auditor", "nobody"} {
			out[base64.StdEncoding.EncodeToString([]byte(u+":"+pw))] = "a basic auth header with the password of " + user
		}
		out[pw[strings.Index(pw, ":")+1:]] = "the random part of the password of " + user
	}
	return out
}

// noSecret fails tb if text holds a password in any form.
func noSecret(tb testing.TB, where, text string, s secrets) {
	tb.Helper()
	for form, what := range s.forms() {
		if strings.Contains(text, form) {
			tb.Errorf("%s shows %s:\n%s", where, what, text)
		}
	}
}

// authServer starts a Fuseki with fuseki/trails-auth.ttl and the users
// trails (writer), auditor (read only) and nobody (in the password file,
// in no access list).
func authServer(tb testing.TB, s secrets) *fusekitest.Server {
	tb.Helper()
	srv, err := fusekitest.StartServer(fusekitest.Options{
		Config: filepath.Join("fuseki", "trails-auth.ttl"),
		Users:  map[string]string{"trails": s.writer, "auditor": s.auditor, "nobody": s.nobody},
	})
	if err != nil {
		tb.Fatalf("start Fuseki with fuseki/trails-auth.ttl: %v", err)
	}
	tb.Cleanup(func() { srv.Close() })
	return srv
}

// wantUnauthorized fails tb unless err matches kg.ErrUnauthorized with the
// HTTP status given, and shows no password.
func wantUnauthorized(tb testing.TB, what string, err error, status int, s secrets) {
	tb.Helper()
	var ke *kg.Error
	if !errors.Is(err, kg.ErrUnauthorized) || !errors.As(err, &ke) || ke.Status != status {
		tb.Errorf("%s: got %v, want kg.ErrUnauthorized with HTTP %d", what, err, status)
		return
	}
	noSecret(tb, what+": the error", err.Error(), s)
	noSecret(tb, what+": the error's body", ke.Body, s)
}

// TestAuditorLibrary: through the library, the auditor of trails-auth.ttl
// reads everything and writes nothing (HTTP 403, kg.ErrUnauthorized); the
// writer does both; a user in no access list, a wrong password and no
// credentials get nothing.
func TestAuditorLibrary(t *testing.T) {
	fusekitest.Parallel(t)
	s := newSecrets()
	srv := authServer(t, s)
	ctx := context.Background()
	client := func(user, pw string) *kg.Client {
		return fusekitest.Client(t, kg.Config{Endpoint: srv.Endpoint, Username: user, Password: pw, MaxAttempts: 1})
	}
	writer, auditor := client("trails", s.writer), client("auditor", s.auditor)

	// The writer stores a session.
	ws := session.NewStore(writer)
	if _, err := admin.New(writer).Init(ctx); err != nil {
		t.Fatalf("init as the writer: %v", err)
	}
	root := session.New("agent-7")
	root.Append("user", "Name a prime number.")
	root.Append("assistant", "7")
	if err := ws.Persist(ctx, root); err != nil {
		t.Fatalf("persist as the writer: %v", err)
	}
	count := func() int { return tripleCount(t, writer) }
	before := count()

	t.Run("auditor reads", func(t *testing.T) {
		if err := auditor.Ping(ctx); err != nil {
			t.Errorf("ping: %v", err)
		}
		if rows, err := auditor.Rows(ctx, "SELECT * WHERE { ?s ?p ?o } LIMIT 1"); err != nil {
			t.Errorf("rows: %v", err)
		} else {
			for rows.Next() {
			}
			if err := rows.Err(); err != nil {
				t.Errorf("rows: %v", err)
			}
		}
		if _, err := auditor.Select(ctx, "SELECT * WHERE { ?s ?p ?o } LIMIT 1"); err != nil {
			t.Errorf("select: %v", err)
		}
		if _, err := auditor.Ask(ctx, "ASK { ?s ?p ?o }"); err != nil {
			t.Errorf("ask: %v", err)
		}
		// Trails' module's template-query endpoint reads as the query
		// endpoint does: the auditor may.
		if res, err := auditor.SelectTemplate(ctx, "SELECT ?p WHERE { $s ?p ?o } LIMIT 1", kg.Params{"s": kg.MustIRI(ontology.SessionIRI(root.ID))}); err != nil || len(res.Solutions) != 1 {
			t.Errorf("template query: %v, %v", res, err)
		}
		if _, err := auditor.GetGraph(ctx, kg.MustIRI("https://w3id.org/trails/graph/ontology")); err != nil {
			t.Errorf("get graph: %v", err)
		}
		var b strings.Builder
		if err := auditor.Dump(ctx, &b); err != nil || b.Len() == 0 {
			t.Errorf("dump: %d bytes, %v", b.Len(), err)
		}
		as := session.NewStore(auditor)
		got, err := as.Load(ctx, root.ID)
		if err != nil || len(got.Turns) != 2 {
			t.Fatalf("load: %v, %v", got, err)
		}
		if _, err := as.List(ctx); err != nil {
			t.Errorf("list: %v", err)
		}
		if findings, err := admin.New(auditor).Check(ctx); err != nil || len(findings) != 0 {
			t.Errorf("check: %v, %v", findings, err)
		}
	})

	t.Run("auditor writes nothing", func(t *testing.T) {
		for name, call := range map[string]func() error{
			"update":      func() error { return auditor.Update(ctx, `INSERT DATA { GRAPH <urn:a> { <urn:a> <urn:b> "c" } }`) },
			"update DROP": func() error { return auditor.Update(ctx, "DROP ALL") },
			"put graph": func() error {
				return auditor.PutGraph(ctx, kg.MustIRI("urn:g"), kg.NTriples, []byte(`<urn:a> <urn:b> "c" .`))
			},
			"delete graph": func() error { return auditor.DeleteGraph(ctx, kg.MustIRI("urn:g")) },
			"load quads":   func() error { return auditor.LoadQuads(ctx, []byte(`<urn:a> <urn:b> "c" <urn:g> .`)) },
			// Trails' module's endpoints write too: an auditor who sends
			// to them directly is refused as at the update endpoint.
			"fenced patch": func() error {
				return auditor.FencedPatch(ctx, kg.MustIRI("urn:log"), -1, []byte("A <urn:a> <urn:b> \"c\" <urn:g> .\n"))
			},
			"conditional patch": func() error {
				_, err := auditor.ConditionalPatch(ctx, kg.MustIRI("urn:log"), -1, []kg.Conditional{{Offset: 0, Ask: "ASK {}", Patch: []byte("A <urn:a> <urn:b> \"c\" <urn:g> .\n")}})
				return err
			},
			"conditional batch": func() error {
				_, err := auditor.ConditionalBatch(ctx, kg.Gated{Gate: kg.MustIRI("urn:gate")}, []kg.Conditional{
					{Ask: "ASK {}", Patch: []byte("A <urn:a> <urn:b> \"c\" <urn:g> .\n")},
					{Update: "DROP ALL"},
				})
				return err
			},
		} {
			wantUnauthorized(t, name, call(), http.StatusForbidden, s)
		}
		as := session.NewStore(auditor)
		more := *root
		more.Turns = append([]session.Turn(nil), root.Turns...)
		more.Append("user", "Another?")
		for name, call := range map[string]func() error{
			"persist a new session": func() error {
				n := session.New("auditor")
				n.Append("user", "x")
				return as.Persist(ctx, n)
			},
			"persist a turn": func() error { return as.Persist(ctx, &more) },
			"init":           func() error { _, err := admin.New(auditor).Init(ctx); return err },
			"delete":         func() error { return as.Delete(ctx, root.ID, session.DeleteOptions{}) },
			"persist a fork": func() error {
				f, err := root.Fork(1)
				if err != nil {
					return err
				}
				return as.Persist(ctx, f)
			},
		} {
			err := call()
			if !errors.Is(err, kg.ErrUnauthorized) {
				t.Errorf("%s as the auditor: got %v, want kg.ErrUnauthorized", name, err)
			}
			if err != nil {
				noSecret(t, name, err.Error(), s)
			}
		}
		if after := count(); after != before {
			t.Errorf("the auditor changed the store: %d triples, want %d", after, before)
		}
	})

	t.Run("no access", func(t *testing.T) {
		for _, tc := range []struct {
			name, user, pw string
			status         int
		}{
			{"a user in no access list", "nobody", s.nobody, http.StatusForbidden},
			{"the auditor's wrong password", "auditor", s.wrong, http.StatusUnauthorized},
			{"the writer's wrong password", "trails", s.wrong, http.StatusUnauthorized},
			{"the auditor with the writer's password", "auditor", s.writer, http.StatusUnauthorized},
			{"an unknown user", "mallory", s.writer, http.StatusUnauthorized},
			{"no credentials", "", "", http.StatusUnauthorized},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := client(tc.user, tc.pw)
				wantUnauthorized(t, "ping", c.Ping(ctx), tc.status, s)
				_, err := c.Select(ctx, "SELECT * WHERE { ?s ?p ?o } LIMIT 1")
				wantUnauthorized(t, "select", err, tc.status, s)
				_, err = c.Rows(ctx, "SELECT * WHERE { ?s ?p ?o } LIMIT 1")
				wantUnauthorized(t, "rows", err, tc.status, s)
				_, err = c.SelectTemplate(ctx, "SELECT * WHERE { $s ?p ?o } LIMIT 1", kg.Params{"s": kg.MustIRI(ontology.SessionIRI(root.ID))})
				wantUnauthorized(t, "template query", err, tc.status, s)
				wantUnauthorized(t, "update", c.Update(ctx, "DROP ALL"), tc.status, s)
				_, err = session.NewStore(c).Load(ctx, root.ID)
				if !errors.Is(err, kg.ErrUnauthorized) {
					t.Errorf("load: got %v, want kg.ErrUnauthorized", err)
				} else {
					noSecret(t, "load", err.Error(), s)
				}
			})
		}
		if after := count(); after != before {
			t.Errorf("the store changed: %d triples, want %d", after, before)
		}
	})

	log, err := os.ReadFile(srv.Log)
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, "the Fuseki log "+srv.Log, string(log), s)
}

// TestAuditorCLI runs trails-admin against trails-auth.ttl: the auditor's
// reads exit 0 and its writes exit 3 with the store unchanged; wrong or
// missing credentials exit 3; no password shows in any output, in help or
// usage errors, or in the server's log, however it was given (flag,
// environment, or inside the endpoint URL).
func TestAuditorCLI(t *testing.T) {
	fusekitest.Parallel(t)
	s := newSecrets()
	srv := authServer(t, s)
	writerC := fusekitest.Client(t, kg.Config{Endpoint: srv.Endpoint, Username: "trails", Password: s.writer})
	as := func(user, pw string) runner {
		return runner{endpoint: srv.Endpoint, env: []string{"TRAILS_USER=" + user, "TRAILS_PASSWORD=" + pw}}
	}
	writer, auditor := as("trails", s.writer), as("auditor", s.auditor)
	var runs []result
	check := func(tb testing.TB, res result) result {
		tb.Helper()
		runs = append(runs, res)
		noSecret(tb, "trails-admin "+strings.Join(res.args, " ")+" stdout", res.stdout, s)
		noSecret(tb, "trails-admin "+strings.Join(res.args, " ")+" stderr", res.stderr, s)
		return res
	}

	check(t, writer.mustRun(t, 0, "init"))
	check(t, writer.mustRun(t, 0, "demo"))
	infos := decode[[]map[string]any](t, check(t, auditor.mustRun(t, 0, "sessions", "--json")))
	if len(infos) != 3 {
		t.Fatalf("the auditor lists %d sessions after the demo, want 3", len(infos))
	}
	var root, leaf string
	for _, in := range infos {
		if in["parent"] == nil || in["parent"] == "" {
			root = in["id"].(string)
		} else {
			leaf = in["id"].(string)
		}
	}
	// An export of the root's tree, deleted by the writer, for the
	// auditor to try to import.
	export := check(t, writer.mustRun(t, 0, "export", root))
	backup := filepath.Join(t.TempDir(), "tree.nq")
	if err := os.WriteFile(backup, []byte(export.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	extra := session.New("to-delete")
	extra.Append("user", "x")
	if err := session.NewStore(writerC).Persist(context.Background(), extra); err != nil {
		t.Fatal(err)
	}
	before := tripleCount(t, writerC)

	t.Run("auditor reads", func(t *testing.T) {
		for _, args := range [][]string{
			{"sessions"}, {"show", leaf}, {"replay", leaf, "--json"}, {"tree"}, {"tree", root, "--format", "dot"},
			{"orphans"}, {"check"}, {"export"}, {"audit", "lineage", "--param", "session=" + leaf},
			{"audit", "forks-by-principal", "--param", "principal=demo-agent", "--param", "from=2000-01-01", "--param", "to=2100-01-01"},
			{"delete", root, "--cascade", "--dry-run"}, {"detach", leaf, "--dry-run"},
		} {
			check(t, auditor.mustRun(t, 0, args...))
		}
	})

	t.Run("auditor writes nothing", func(t *testing.T) {
		for _, args := range [][]string{
			{"init"}, {"demo"}, {"delete", extra.ID}, {"delete", root, "--cascade"}, {"detach", leaf},
		} {
			res := check(t, auditor.mustRun(t, 3, args...))
			if !strings.Contains(res.stderr, "403") {
				t.Errorf("trails-admin %s as the auditor: stderr does not say 403:\n%s", strings.Join(args, " "), res.stderr)
			}
		}
		// Import needs something missing from the store: the writer deletes
		// the tree it exported.
		check(t, writer.mustRun(t, 0, "delete", root, "--cascade"))
		mid := tripleCount(t, writerC)
		check(t, auditor.mustRun(t, 3, "import", backup))
		if after := tripleCount(t, writerC); after != mid {
			t.Errorf("the auditor's import changed the store: %d triples, want %d", after, mid)
		}
		check(t, writer.mustRun(t, 0, "import", backup))
		if after := tripleCount(t, writerC); after <= mid {
			t.Errorf("the writer's import wrote nothing: %d triples", after)
		}
		if n := tripleCount(t, writerC); n < before {
			t.Errorf("after the writer's re-import: %d triples, want at least %d", n, before)
		}
	})

	t.Run("wrong or missing credentials", func(t *testing.T) {
		none := runner{endpoint: srv.Endpoint}
		nobody := as("nobody", s.nobody)
		for _, tc := range []struct {
			name string
			r    runner
			args []string
		}{
			{"none", none, []string{"sessions"}},
			{"a user without a password", runner{endpoint: srv.Endpoint, env: []string{"TRAILS_USER=auditor"}}, []string{"sessions"}},
			{"wrong password in the environment", as("auditor", s.wrong), []string{"sessions"}},
			{"wrong password as a flag", none, []string{"sessions", "--user", "auditor", "--password", s.wrong}},
			{"wrong password, flag before the command", none, []string{"--user", "trails", "--password=" + s.wrong, "init"}},
			{"the writer's password for the auditor", as("auditor", s.writer), []string{"show", leaf}},
			{"a user in no access list", nobody, []string{"sessions"}},
			{"a user in no access list, audit", nobody, []string{"audit", "orphans", "--json"}},
			{"wrong password, export", as("trails", s.wrong), []string{"export"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := check(t, tc.r.mustRun(t, 3, tc.args...))
				if !strings.Contains(res.stderr, "refused the credentials") {
					t.Errorf("stderr does not say the credentials were refused:\n%s", res.stderr)
				}
			})
		}
	})

	t.Run("help and usage errors", func(t *testing.T) {
		for _, args := range [][]string{{"help"}, {"sessions", "-h"}, {"help", "audit"}, {"sessions", "--bogus"}, {"frobnicate"}, {"show"}} {
			res := check(t, auditor.run(t, args...))
			if res.code != 0 && res.code != 2 {
				t.Errorf("trails-admin %s: exit %d, want 0 or 2", strings.Join(args, " "), res.code)
			}
		}
		check(t, runner{endpoint: srv.Endpoint, env: []string{"TRAILS_PASSWORD=" + s.auditor}}.mustRun(t, 2, "sessions"))
	})

	t.Run("password inside the endpoint URL", func(t *testing.T) {
		// A URL with user info is a way people give credentials; whatever
		// trails-admin makes of it, it must not print the password back.
		u, err := url.Parse(srv.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		dead := *u
		dead.Host = "127.0.0.1:1"
		bad := *u
		bad.Scheme = "ftp"
		for _, tc := range []struct {
			name string
			ep   *url.URL
			pw   string
		}{
			{"wrong password", u, s.wrong},
			{"right password", u, s.auditor},
			{"unreachable store", &dead, s.auditor},
			{"not an http URL", &bad, s.auditor},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ep := *tc.ep
				ep.User = url.UserPassword("auditor", tc.pw)
				res := check(t, runner{endpoint: noStore}.run(t, "init", "--endpoint", ep.String()))
				if res.code == 0 {
					t.Errorf("init as the auditor exited 0")
				}
			})
		}
	})

	if after := tripleCount(t, writerC); after < before {
		t.Errorf("the store lost triples: %d, want at least %d", after, before)
	}
	log, err := os.ReadFile(srv.Log)
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, "the Fuseki log "+srv.Log, string(log), s)
	t.Logf("%d runs of trails-admin, no password in any output or in the server's log", len(runs))
}

// TestAuditParamInjection runs trails-admin audit with SPARQL injection
// payloads as parameter values and names: each is bound as an RDF term of
// its parameter's kind and matches only itself, or it is a usage error
// (exit 2); the store is unchanged.
func TestAuditParamInjection(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	ctx := context.Background()
	st := session.NewStore(c)
	payloads := []string{
		`"} ; DROP ALL ; INSERT DATA {"`,
		`'} ; DROP ALL ; INSERT DATA {'`,
		`"""} ; DROP ALL ; INSERT DATA {"""`,
		`\u0022} ; DROP ALL ; INSERT DATA {\u0022`,
		"x\" .\n# a comment\n} ; DROP ALL ; #",
		`> } ; DROP ALL ; INSERT DATA { <urn:a> <urn:b> <urn:c`,
		`<`, `>`, `'`, `"`, `\`, `$principal`, `?x`, `#`, `=`, `a=b`,
		`") } UNION { ?s ?p ?o } #`,
	}
	// A fork by each payload as principal.
	for _, p := range payloads {
		root := session.New(p)
		root.Append("user", p)
		if err := st.Persist(ctx, root); err != nil {
			t.Fatalf("persist a root of %q: %v", p, err)
		}
		f, err := root.Fork(1)
		if err != nil {
			t.Fatal(err)
		}
		f.Append(p, p)
		if err := st.Persist(ctx, f); err != nil {
			t.Fatalf("persist a fork by %q: %v", p, err)
		}
	}
	before := tripleCount(t, c)
	r := storeRunner(t)
	window := []string{"--param", "from=2000-01-01", "--param", "to=2100-01-01"}
	runs := 0
	for _, p := range payloads {
		res := r.mustRun(t, 0, append([]string{"audit", "forks-by-principal", "--json", "--param", "principal=" + p}, window...)...)
		runs++
		out := decode[map[string]any](t, res)
		rows := array(t, "rows", out["rows"])
		if len(rows) != 1 || object(t, "row", rows[0])["principal"] != p {
			t.Errorf("forks-by-principal principal=%q: got %v, want its one fork", p, rows)
		}
		for _, args := range [][]string{
			{"audit", "lineage", "--param", "session=" + p},
			{"audit", "forks-of", "--param", "$session=" + p, "--json"},
		} {
			r.mustRun(t, 1, args...) // bound as a term: a session the store does not know
			runs++
		}
		for _, args := range [][]string{
			{"audit", "deletions", "--param", "from=" + p, "--param", "to=2100-01-01"},
			{"audit", "orphans", "--param", p + "=x"},
			{"audit", p},
			{"show", p},
		} {
			r.mustRun(t, 2, args...)
			runs++
		}
	}
	if after := tripleCount(t, c); after != before {
		t.Errorf("the store holds %d triples after the audits, want %d", after, before)
	}
	t.Logf("%d payloads, %d runs of trails-admin, store unchanged", len(payloads), runs)
}
