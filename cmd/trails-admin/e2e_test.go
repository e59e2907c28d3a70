// End-to-end tests: they build trails-admin, run the binary against a real
// Fuseki (internal/fusekitest) and compare what it prints and its exit code
// with golden transcripts in testdata/admin (refreshed with -update). Each
// case starts from a wiped dataset, so none runs in parallel.
package main_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/admin")

// bin is the trails-admin binary TestMain builds.
var bin string

// runTimeout bounds one run of the binary.
const runTimeout = 90 * time.Second

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "trails-admin-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "trails-admin")
	build := exec.Command(goTool(), "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build trails-admin: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	fusekitest.OnStop(func() { os.RemoveAll(dir) })
	fusekitest.Main(m)
}

// goTool returns the go command of the toolchain running the test.
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// anID is a well-formed session id that no case stores.
const anID = "019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d"

// TestUsage covers help and usage errors: no store is reached.
func TestUsage(t *testing.T) {
	fusekitest.Parallel(t)
	r := runner{endpoint: noStore}
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"help", []string{"help"}, 0},
		{"help-delete", []string{"help", "delete"}, 0},
		{"sessions-h", []string{"sessions", "-h"}, 0},
		{"no-command", nil, 2},
		{"unknown-command", []string{"frobnicate"}, 2},
		{"typo", []string{"sesions"}, 2},
		{"help-typo", []string{"help", "sesions"}, 2},
		{"unknown-flag", []string{"sessions", "--bogus"}, 2},
		{"tree-bad-format", []string{"tree", "--format", "svg"}, 2},
		{"tree-json-and-dot", []string{"tree", "--json", "--format", "dot"}, 2},
		{"export-h", []string{"export", "-h"}, 0},
		{"export-o-no-file", []string{"export", "-o"}, 2},
		{"show-no-id", []string{"show"}, 2},
		{"delete-two-modes", []string{"delete", anID, "--cascade", "--detach-children"}, 2},
		{"audit-unknown-query", []string{"audit", "nope"}, 2},
		{"audit-missing-param", []string{"audit", "forks-by-principal", "--param", "principal=agent-7"}, 2},
		{"audit-bad-param", []string{"audit", "forks-by-principal", "--param", "principal=agent-7",
			"--param", "from=yesterday", "--param", "to=2026-03-02"}, 2},
		{"audit-param-syntax", []string{"audit", "lineage", "--param", "session"}, 2},
		{"endpoint-no-scheme", []string{"sessions", "--endpoint", "127.0.0.1:3030/trails"}, 2},
		{"max-children-negative", []string{"--max-children", "-1", "fork", anID, "--at", "1"}, 2},
		{"max-children-negative-after", []string{"sessions", "--max-children", "-1"}, 2},
		{"timeout-zero", []string{"sessions", "--timeout", "0s"}, 2},
		{"timeout-negative", []string{"--timeout", "-1s", "sessions"}, 2},
		{"rewind-to-negative", []string{"rewind", anID, "--to", "-1"}, 2},
		{"replay-up-to-negative", []string{"replay", anID, "--up-to", "-1"}, 2},
		{"fork-at-negative", []string{"fork", anID, "--at", "-1"}, 2},
		{"kafka-no-brokers", []string{"--store", "kafka", "sessions"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := r.mustRun(t, tt.code, tt.args...)
			golden(t, tt.name, nil, "", res)
		})
	}
}

// TestUnreachable: nothing listens at the endpoint: exit 3.
func TestUnreachable(t *testing.T) {
	fusekitest.Parallel(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/trails"
	l.Close()
	r := runner{endpoint: noStore}
	res := r.mustRun(t, 3, "sessions", "--endpoint", dead)
	golden(t, "unreachable", nil, "nothing listens at the endpoint", res)
}

// TestCredentials runs against a Fuseki that requires HTTP basic auth:
// no or wrong credentials exit 3, the right ones 0.
func TestCredentials(t *testing.T) {
	fusekitest.Parallel(t)
	s, err := fusekitest.StartServer(fusekitest.Options{Users: map[string]string{"admin": "s3cret"}})
	if err != nil {
		t.Fatalf("start a Fuseki with basic auth: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	r := runner{endpoint: s.Endpoint}
	none := r.mustRun(t, 3, "sessions")
	wrong := r.mustRun(t, 3, "sessions", "--user", "admin", "--password", "wrong")
	wrongEnv := runner{endpoint: s.Endpoint, env: []string{"TRAILS_USER=admin", "TRAILS_PASSWORD=wrong"}}.mustRun(t, 3, "sessions")
	right := runner{endpoint: s.Endpoint, env: []string{"TRAILS_USER=admin", "TRAILS_PASSWORD=s3cret"}}.mustRun(t, 0, "init")
	rightFlags := r.mustRun(t, 0, "sessions", "--user", "admin", "--password", "s3cret")
	golden(t, "credentials", []string{s.Endpoint}, "a Fuseki that requires HTTP basic auth as admin:s3cret",
		none, wrong, wrongEnv, right, rightFlags)
}

// TestInterrupt sends SIGINT to a run waiting for a store that accepts
// connections and never answers: exit 130, "interrupted" on stderr.
func TestInterrupt(t *testing.T) {
	fusekitest.Parallel(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 1)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})

	mute := "http://" + l.Addr().String() + "/trails"
	r := runner{endpoint: noStore}
	args := []string{"sessions", "--endpoint", mute}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd, stdout, stderr := r.command(ctx, args...)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-accepted: // the binary is waiting for an answer, its signal handler set
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("trails-admin never connected to the mute store")
	}
	time.Sleep(300*time.Millisecond - time.Since(t0))
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	res := r.result(t, cmd, err, ctx.Err(), stdout, stderr, args)
	if res.code != 130 {
		t.Fatalf("got exit %d, want 130\nstderr:\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "interrupted") {
		t.Errorf("stderr does not say interrupted:\n%s", res.stderr)
	}
	golden(t, "interrupt", nil, "SIGINT after 300 ms, the store accepting the connection and never answering", res)
}

// TestDemo runs demo twice (each run writes a tree of its own), then lists
// the trees.
func TestDemo(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	r := storeRunner(t)
	first := r.mustRun(t, 0, "demo")
	second := r.mustRun(t, 0, "demo")
	tree := r.mustRun(t, 0, "tree")
	golden(t, "demo", []string{c.Endpoint()}, "", first, second, tree)
	infos := decode[[]map[string]any](t, r.mustRun(t, 0, "sessions", "--json"))
	if len(infos) != 6 {
		t.Errorf("got %d sessions after two demos, want 6", len(infos))
	}
	r.mustRun(t, 0, "orphans")
}

// TestInit loads the ontology twice: the second run changes nothing.
func TestInit(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	r := storeRunner(t)
	first := r.mustRun(t, 0, "init")
	n := tripleCount(t, c)
	if n == 0 {
		t.Fatal("init stored no triples")
	}
	second := r.mustRun(t, 0, "init")
	if got := tripleCount(t, c); got != n {
		t.Errorf("got %d triples after the second init, want %d", got, n)
	}
	golden(t, "init", []string{c.Endpoint()}, "", first, second)
}

// family is the fixture of most cases, stored through the library:
//
//	root   agent-7, 4 turns
//	├── a  fork of root at 2, 2 turns of its own
//	│   └── b  fork of a at 4, 1 turn of its own
//	└── c  fork of root at 1, principal agent-9, 1 turn of its own
//	other  agent-9, 2 turns: a second root
//
// Sessions are created one second apart from 2026-03-01T10:00:00Z, in the
// order root, other, a, b, c.
type family struct {
	c                     *kg.Client
	root, other, a, b, fc string
}

var familyStart = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// seedFamily wipes the dataset and stores the family.
func seedFamily(tb testing.TB) family {
	tb.Helper()
	c := fusekitest.Empty(tb)
	var mu sync.Mutex
	now := familyStart
	st := session.NewStore(c, session.WithClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}))
	ctx := context.Background()
	persist := func(s *session.Session) {
		tb.Helper()
		if err := st.Persist(ctx, s); err != nil {
			tb.Fatalf("persist %s: %v", s.ID, err)
		}
	}
	fork := func(s *session.Session, at int) *session.Session {
		tb.Helper()
		f, err := s.Fork(at)
		if err != nil {
			tb.Fatalf("fork %s at %d: %v", s.ID, at, err)
		}
		return f
	}

	root := session.New("agent-7")
	root.Append("system", "Answer in one line.")
	root.Append("user", "Name a prime number.")
	root.Append("assistant", "7")
	root.Append("user", "Another one, with a \"twist\":\nmake it two digits.")
	persist(root)

	other := session.New("agent-9")
	other.Append("user", "Résumé of the meeting, please.")
	other.Append("assistant", "Three decisions, two actions — details follow.")
	persist(other)

	a := fork(root, 2)
	a.Append("assistant", "13")
	a.Append("user", "Why 13?")
	persist(a)

	b := fork(a, 4)
	b.Append("assistant", "It is the sixth prime.")
	persist(b)

	fc := fork(root, 1)
	fc.Principal = "agent-9"
	fc.Append("assistant", "2, the only even prime.")
	persist(fc)

	return family{c: c, root: root.ID, other: other.ID, a: a.ID, b: b.ID, fc: fc.ID}
}

// TestReadOnly runs the commands that only read, each on a fresh family.
func TestReadOnly(t *testing.T) {
	fusekitest.Parallel(t)
	tests := []struct {
		name  string
		args  func(f family) []string
		code  int
		check func(t *testing.T, f family, res result)
	}{
		{name: "sessions", args: func(family) []string { return []string{"sessions"} }},
		{name: "sessions-json", args: func(family) []string { return []string{"sessions", "--json"} },
			check: func(t *testing.T, f family, res result) {
				infos := decode[[]map[string]any](t, res)
				var ids []string
				for i, in := range infos {
					hasFields(t, fmt.Sprintf("session %d", i), in, infoFields...)
					ids = append(ids, fmt.Sprint(in["id"]))
				}
				if want := []string{f.fc, f.b, f.a, f.other, f.root}; !slices.Equal(ids, want) {
					t.Errorf("got sessions %v, want %v (newest first)", ids, want)
				}
			}},
		{name: "sessions-principal", args: func(family) []string { return []string{"sessions", "--principal", "agent-9"} }},
		{name: "sessions-roots", args: func(family) []string { return []string{"sessions", "--roots"} }},
		{name: "show", args: func(f family) []string { return []string{"show", f.b} }},
		{name: "show-root", args: func(f family) []string { return []string{"show", f.root} }},
		{name: "show-json", args: func(f family) []string { return []string{"show", f.b, "--json"} },
			check: func(t *testing.T, f family, res result) {
				v := decode[map[string]any](t, res)
				hasFields(t, "show", v, showFields...)
				s := object(t, "session", v["session"])
				hasFields(t, "session", s, infoFields...)
				if s["id"] != f.b || s["parent"] != f.a {
					t.Errorf("got session %v with parent %v, want %s with parent %s", s["id"], s["parent"], f.b, f.a)
				}
				turns := array(t, "turns", v["turns"])
				if len(turns) != 5 {
					t.Errorf("got %d turns, want 5", len(turns))
				}
				for i, tn := range turns {
					hasFields(t, fmt.Sprintf("turn %d", i), object(t, "turn", tn), turnFields...)
				}
			}},
		{name: "show-not-found", args: func(family) []string { return []string{"show", anID} }, code: 1},
		{name: "show-bad-id", args: func(family) []string { return []string{"show", "not-an-id"} }, code: 2},
		// An id the store never saw is refused as show refuses it (a
		// phantom row, exit 0, before).
		{name: "audit-lineage-not-found", args: func(family) []string {
			return []string{"audit", "lineage", "--param", "session=" + anID}
		}, code: 1},
		{name: "replay-negative-up-to", args: func(f family) []string { return []string{"replay", f.b, "--up-to", "-5"} }, code: 2},
		{name: "replay-up-to", args: func(f family) []string { return []string{"replay", f.b, "--up-to", "3"} }},
		{name: "replay-json", args: func(f family) []string { return []string{"replay", f.b, "--json"} },
			check: func(t *testing.T, f family, res result) {
				turns := decode[[]map[string]any](t, res)
				if len(turns) != 5 {
					t.Errorf("got %d turns, want 5", len(turns))
				}
				for i, tn := range turns {
					hasFields(t, fmt.Sprintf("turn %d", i), tn, turnFields...)
				}
			}},
		{name: "tree", args: func(family) []string { return []string{"tree"} }},
		{name: "tree-id", args: func(f family) []string { return []string{"tree", f.root} }},
		{name: "tree-dot", args: func(f family) []string { return []string{"tree", f.root, "--format", "dot"} }},
		{name: "tree-mermaid", args: func(f family) []string { return []string{"tree", f.root, "--format", "mermaid"} }},
		{name: "tree-json", args: func(f family) []string { return []string{"tree", f.root, "--format", "json"} },
			check: func(t *testing.T, f family, res result) {
				trees := decode[[]any](t, res)
				if len(trees) != 1 {
					t.Fatalf("got %d trees, want 1", len(trees))
				}
				var ids []string
				var walk func(v any)
				walk = func(v any) {
					n := object(t, "node", v)
					hasFields(t, "node", n, nodeFields...)
					ids = append(ids, fmt.Sprint(n["id"]))
					for _, c := range array(t, "children", n["children"]) {
						walk(c)
					}
				}
				walk(trees[0])
				if want := []string{f.root, f.a, f.b, f.fc}; !slices.Equal(ids, want) {
					t.Errorf("got nodes %v, want %v", ids, want)
				}
			}},
		{name: "tree-json-flag", args: func(f family) []string { return []string{"tree", f.root, "--json"} },
			check: func(t *testing.T, f family, res result) {
				want := storeRunner(t).mustRun(t, 0, "tree", f.root, "--format", "json")
				if res.stdout != want.stdout {
					t.Errorf("tree --json printed\n%s\nwant what --format json prints:\n%s", res.stdout, want.stdout)
				}
			}},
		{name: "audit-list", args: func(family) []string { return []string{"audit"} }},
		{name: "audit-list-json", args: func(family) []string { return []string{"audit", "--json"} },
			check: func(t *testing.T, f family, res result) {
				qs := decode[[]map[string]any](t, res)
				if len(qs) == 0 {
					t.Fatal("no audit queries listed")
				}
				for _, q := range qs {
					hasFields(t, fmt.Sprint("query ", q["name"]), q, queryFields...)
					for _, p := range array(t, "params", q["params"]) {
						hasFields(t, fmt.Sprint("param of ", q["name"]), object(t, "param", p), paramFields...)
					}
				}
			}},
		{name: "audit-lineage", args: func(f family) []string { return []string{"audit", "lineage", "--param", "session=" + f.b} }},
		{name: "audit-lineage-json", args: func(f family) []string {
			return []string{"audit", "lineage", "--param", "session=" + f.b, "--json"}
		},
			check: func(t *testing.T, f family, res result) {
				v := decode[map[string]any](t, res)
				hasFields(t, "audit", v, resultFields...)
				rows := array(t, "rows", v["rows"])
				var ids []string
				for _, row := range rows {
					ids = append(ids, fmt.Sprint(object(t, "row", row)["id"]))
				}
				if want := []string{f.b, f.a, f.root}; !slices.Equal(ids, want) {
					t.Errorf("got lineage %v, want %v", ids, want)
				}
			}},
		{name: "audit-forks-by-principal", args: func(family) []string {
			return []string{"audit", "forks-by-principal", "--param", "principal=agent-7",
				"--param", "from=2026-03-01", "--param", "to=2026-03-02"}
		}},
		{name: "audit-forks-by-principal-empty", args: func(family) []string {
			return []string{"audit", "forks-by-principal", "--param", "principal=agent-7",
				"--param", "from=2026-03-02", "--param", "to=2026-03-03"}
		}},
		{name: "audit-forks-of", args: func(f family) []string { return []string{"audit", "forks-of", "--param", "session=" + f.root} }},
		{name: "orphans-clean", args: func(family) []string { return []string{"orphans"} }},
		{name: "orphans-clean-json", args: func(family) []string { return []string{"orphans", "--json"} },
			check: func(t *testing.T, f family, res result) {
				if got := decode[[]any](t, res); len(got) != 0 {
					t.Errorf("got %d orphans, want none", len(got))
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := seedFamily(t)
			r := storeRunner(t)
			res := r.mustRun(t, tt.code, tt.args(f)...)
			golden(t, tt.name, []string{f.c.Endpoint()}, "", res)
			if tt.check != nil {
				tt.check(t, f, res)
			}
		})
	}
}

// TestOrphans drops a parent's graph behind the library's back: orphans
// names the missing session and exits 1; the orphan cannot be detached
// (its prefix is gone) but can be deleted, which leaves no orphan.
func TestOrphans(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	if err := f.c.DeleteGraph(context.Background(), kg.MustIRI(ontology.SessionIRI(f.a))); err != nil {
		t.Fatal(err)
	}
	r := storeRunner(t)
	text := r.mustRun(t, 1, "orphans")
	js := r.mustRun(t, 1, "orphans", "--json")
	tree := r.mustRun(t, 0, "tree")
	treeB := r.mustRun(t, 0, "tree", f.b)
	show := r.mustRun(t, 1, "show", f.b)
	detach := r.mustRun(t, 1, "detach", f.b)
	del := r.mustRun(t, 0, "delete", f.b)
	clean := r.mustRun(t, 0, "orphans")
	golden(t, "orphans-corrupt", []string{f.c.Endpoint()},
		"the family with the graph of a (the parent of b) dropped with a Graph Store DELETE",
		text, js, tree, treeB, show, detach, del, clean)

	if !strings.Contains(text.stdout, f.a) || !strings.Contains(text.stdout, f.b) {
		t.Errorf("orphans does not name the orphan %s and its missing parent %s:\n%s", f.b, f.a, text.stdout)
	}
	orphans := decode[[]map[string]any](t, js)
	if len(orphans) != 1 {
		t.Fatalf("got %d orphans, want 1", len(orphans))
	}
	hasFields(t, "orphan", orphans[0], orphanFields...)
	if orphans[0]["session"] != f.b || orphans[0]["missing"] != f.a {
		t.Errorf("got orphan %v missing %v, want %s missing %s", orphans[0]["session"], orphans[0]["missing"], f.b, f.a)
	}
}

// TestDetach: a dry run changes nothing, the detach keeps the history and
// frees the parent, which can then be deleted.
func TestDetach(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	before := r.mustRun(t, 0, "replay", f.b)
	dump0 := dump(t, f.c)
	dry := r.mustRun(t, 0, "detach", f.b, "--dry-run")
	if got := dump(t, f.c); !slices.Equal(got, dump0) {
		t.Errorf("detach --dry-run changed the store: %d quads before, %d after", len(dump0), len(got))
	}
	afterDry := r.mustRun(t, 0, "replay", f.b)
	detach := r.mustRun(t, 0, "detach", f.b)
	after := r.mustRun(t, 0, "replay", f.b)
	show := r.mustRun(t, 0, "show", f.b)
	again := r.mustRun(t, 0, "detach", f.b)
	del := r.mustRun(t, 0, "delete", f.a)
	afterDel := r.mustRun(t, 0, "replay", f.b)
	sessions := r.mustRun(t, 0, "sessions")
	golden(t, "detach", []string{f.c.Endpoint()}, "", before, dry, afterDry, detach, after, show, again, del, afterDel, sessions)

	for _, res := range []result{afterDry, after, afterDel} {
		if res.stdout != before.stdout {
			t.Errorf("trails-admin %s: got\n%s\nwant the history as before the detach:\n%s", strings.Join(res.args, " "), res.stdout, before.stdout)
		}
	}
	if !strings.Contains(detach.stdout, f.a) || !strings.Contains(detach.stdout, f.root) {
		t.Errorf("detach does not say where the copied turns came from (%s and %s):\n%s", f.root, f.a, detach.stdout)
	}
}

// TestDetachJSON checks the JSON of detach, dry or not, and of a root.
func TestDetachJSON(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	dry := r.mustRun(t, 0, "detach", f.b, "--dry-run", "--json")
	done := r.mustRun(t, 0, "detach", f.b, "--json")
	root := r.mustRun(t, 0, "detach", f.root, "--json")
	golden(t, "detach-json", []string{f.c.Endpoint()}, "", dry, done, root)

	for _, tt := range []struct {
		res    result
		parent string
		copied float64
		dryRun bool
	}{
		{dry, f.a, 4, true},
		{done, f.a, 4, false},
		{root, "", 0, false},
	} {
		v := decode[map[string]any](t, tt.res)
		what := strings.Join(tt.res.args, " ")
		hasFields(t, what, v, detachFields...)
		if v["parent"] != tt.parent || v["copied"] != tt.copied || v["dry_run"] != tt.dryRun {
			t.Errorf("%s: got parent %v, copied %v, dry_run %v; want %q, %v, %v", what, v["parent"], v["copied"], v["dry_run"], tt.parent, tt.copied, tt.dryRun)
		}
		object(t, what+": from", v["from"])
	}
	from := decode[map[string]any](t, done)["from"].(map[string]any)
	if from[f.root] != float64(2) || from[f.a] != float64(2) {
		t.Errorf("got from %v, want 2 turns from %s and 2 from %s", from, f.root, f.a)
	}
}

// TestDeleteWithChildren: a session with forks is not deleted; the forks
// are named.
func TestDeleteWithChildren(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	n := tripleCount(t, f.c)
	res := r.mustRun(t, 1, "delete", f.root)
	golden(t, "delete-children", []string{f.c.Endpoint()}, "", res)
	for _, id := range []string{f.a, f.fc} {
		if !strings.Contains(res.stderr, id) {
			t.Errorf("stderr does not name the fork %s:\n%s", id, res.stderr)
		}
	}
	if got := tripleCount(t, f.c); got != n {
		t.Errorf("the refused delete changed the store: %d triples, then %d", n, got)
	}
}

// TestDeleteCascade: a dry run changes nothing, then the tree goes.
func TestDeleteCascade(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	before := r.mustRun(t, 0, "sessions")
	n, dump0 := tripleCount(t, f.c), dump(t, f.c)
	dry := r.mustRun(t, 0, "delete", f.root, "--cascade", "--dry-run")
	if got := tripleCount(t, f.c); got != n {
		t.Errorf("delete --cascade --dry-run changed the triple count: %d, then %d", n, got)
	}
	if got := dump(t, f.c); !slices.Equal(got, dump0) {
		t.Error("delete --cascade --dry-run changed the store")
	}
	afterDry := r.mustRun(t, 0, "sessions")
	if afterDry.stdout != before.stdout {
		t.Errorf("sessions after the dry run:\n%s\nwant as before:\n%s", afterDry.stdout, before.stdout)
	}
	del := r.mustRun(t, 0, "delete", f.root, "--cascade")
	after := r.mustRun(t, 0, "sessions")
	tree := r.mustRun(t, 0, "tree")
	orphans := r.mustRun(t, 0, "orphans")
	gone := r.mustRun(t, 1, "show", f.b)
	deletions := r.mustRun(t, 0, "audit", "deletions", "--param", "from=2000-01-01", "--param", "to=2100-01-01", "--json")
	golden(t, "delete-cascade", []string{f.c.Endpoint()}, "", before, dry, afterDry, del, after, tree, orphans, gone, deletions)

	infos := decode[[]map[string]any](t, r.mustRun(t, 0, "sessions", "--json"))
	if len(infos) != 1 || infos[0]["id"] != f.other {
		t.Errorf("got sessions %v after the cascade, want only %s", infos, f.other)
	}
	rows := array(t, "rows", decode[map[string]any](t, deletions)["rows"])
	if len(rows) != 4 {
		t.Errorf("got %d deletions recorded, want 4", len(rows))
	}
}

// TestDeleteDetachChildren: the direct forks are detached, keep their
// history, and the session goes.
func TestDeleteDetachChildren(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	replayB := r.mustRun(t, 0, "replay", f.b)
	replayC := r.mustRun(t, 0, "replay", f.fc)
	dump0 := dump(t, f.c)
	dry := r.mustRun(t, 0, "delete", f.root, "--detach-children", "--dry-run")
	if got := dump(t, f.c); !slices.Equal(got, dump0) {
		t.Error("delete --detach-children --dry-run changed the store")
	}
	del := r.mustRun(t, 0, "delete", f.root, "--detach-children")
	tree := r.mustRun(t, 0, "tree")
	orphans := r.mustRun(t, 0, "orphans")
	afterB := r.mustRun(t, 0, "replay", f.b)
	afterC := r.mustRun(t, 0, "replay", f.fc)
	golden(t, "delete-detach-children", []string{f.c.Endpoint()}, "", dry, del, tree, orphans, afterB, afterC)
	if afterB.stdout != replayB.stdout || afterC.stdout != replayC.stdout {
		t.Errorf("the forks' histories changed:\n%s%s\nwant\n%s%s", afterB.stdout, afterC.stdout, replayB.stdout, replayC.stdout)
	}
}

// TestDeleteJSON checks the JSON of delete: a dry run, a single delete and
// a delete with detached children.
func TestDeleteJSON(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	dry := r.mustRun(t, 0, "delete", f.root, "--cascade", "--dry-run", "--json")
	leaf := r.mustRun(t, 0, "delete", f.b, "--json")
	detach := r.mustRun(t, 0, "delete", f.root, "--detach-children", "--by", "ops", "--json")
	golden(t, "delete-json", []string{f.c.Endpoint()}, "", dry, leaf, detach)

	for _, tt := range []struct {
		res     result
		actions []string
		done    float64
		dryRun  bool
	}{
		{dry, []string{"delete " + f.b, "delete " + f.a, "delete " + f.fc, "delete " + f.root}, 0, true},
		{leaf, []string{"delete " + f.b}, 1, false},
		{detach, []string{"detach " + f.a, "detach " + f.fc, "delete " + f.root}, 3, false},
	} {
		v := decode[map[string]any](t, tt.res)
		what := strings.Join(tt.res.args, " ")
		hasFields(t, what, v, deleteFields...)
		var actions []string
		for _, s := range array(t, what+": steps", v["steps"]) {
			step := object(t, what+": step", s)
			hasFields(t, what+": step", step, stepFields...)
			actions = append(actions, fmt.Sprint(step["action"], " ", step["session"]))
		}
		if !slices.Equal(actions, tt.actions) {
			t.Errorf("%s: got steps %v, want %v", what, actions, tt.actions)
		}
		if v["done"] != tt.done || v["dry_run"] != tt.dryRun {
			t.Errorf("%s: got done %v, dry_run %v; want %v, %v", what, v["done"], v["dry_run"], tt.done, tt.dryRun)
		}
	}

	// --by names who deleted and detached in PROV; without it, the
	// session's principal.
	audit := r.mustRun(t, 0, "audit", "deletions", "--param", "from=2000-01-01", "--param", "to=2100-01-01", "--json")
	by := map[string]string{}
	for _, row := range array(t, "rows", decode[map[string]any](t, audit)["rows"]) {
		row := object(t, "row", row)
		by[fmt.Sprint(row["kind"], " ", row["session"])] = fmt.Sprint(row["principal"])
	}
	want := map[string]string{
		"Deletion " + ontology.SessionIRI(f.b):    "agent-7",
		"Detach " + ontology.SessionIRI(f.a):      "ops",
		"Detach " + ontology.SessionIRI(f.fc):     "ops",
		"Deletion " + ontology.SessionIRI(f.root): "ops",
	}
	if !maps.Equal(by, want) {
		t.Errorf("got PROV records %v, want %v", by, want)
	}
}

// tripleCount counts the triples of every named graph.
func tripleCount(tb testing.TB, c *kg.Client) int {
	tb.Helper()
	res, err := c.Select(context.Background(), "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
	if err != nil {
		tb.Fatalf("count triples: %v", err)
	}
	n, err := res.Solutions[0].Int("n")
	if err != nil {
		tb.Fatalf("count triples: %v", err)
	}
	return n
}

// dump returns the dataset's quads, sorted.
func dump(tb testing.TB, c *kg.Client) []string {
	tb.Helper()
	var b strings.Builder
	if err := c.Dump(context.Background(), &b); err != nil {
		tb.Fatalf("dump: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	sort.Strings(lines)
	return lines
}

// TestCheck: a clean family has no findings; a dataset made corrupt on
// purpose (a cycle, a missing parent, a SHACL violation) has each reported.
func TestCheck(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	ctx := context.Background()
	clean := r.mustRun(t, 0, "check")
	cleanJSON := r.mustRun(t, 0, "check", "--json")

	// A cycle of two sessions, written behind the library's back.
	x, y := "0190c5d2-0000-7000-8000-0000000000aa", "0190c5d2-0000-7000-8000-0000000000bb"
	var d kg.Data
	for _, pair := range [][2]string{{x, y}, {y, x}} {
		g := kg.MustIRI(ontology.SessionIRI(pair[0]))
		d.Add(g, g, kg.MustIRI(ontology.RDFType), kg.MustIRI(ontology.Session))
		d.Add(g, g, kg.MustIRI(ontology.DCTIdentifier), kg.String(pair[0]))
		d.Add(g, g, kg.MustIRI(ontology.ParentSession), kg.MustIRI(ontology.SessionIRI(pair[1])))
		d.Add(g, g, kg.MustIRI(ontology.ForkedAtIndex), kg.Int(0))
	}
	// A SHACL violation: a turn of the other root with an empty role.
	g := kg.MustIRI(ontology.SessionIRI(f.other))
	d.Add(g, kg.MustIRI(ontology.TurnIRI(g.String(), 1)), kg.MustIRI(ontology.Role), kg.String(""))
	u, err := d.InsertData()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	// A missing parent: drop a's graph.
	if err := f.c.DeleteGraph(ctx, kg.MustIRI(ontology.SessionIRI(f.a))); err != nil {
		t.Fatal(err)
	}
	corrupt := r.mustRun(t, 1, "check")
	corruptJSON := r.mustRun(t, 1, "check", "--json")
	golden(t, "check", []string{f.c.Endpoint()},
		"the family, clean; then with a two-session cycle, a's graph dropped and an empty role on a turn of other",
		clean, cleanJSON, corrupt, corruptJSON)

	out := decode[map[string]any](t, corruptJSON)
	hasFields(t, "check", out, "findings", "count")
	rules := map[string]bool{}
	for _, raw := range out["findings"].([]any) {
		fnd := raw.(map[string]any)
		hasFields(t, "finding", fnd, "rule", "resource", "message")
		rules[fnd["rule"].(string)] = true
	}
	for _, want := range []string{"cycle", "orphan", "shacl"} {
		if !rules[want] {
			t.Errorf("check does not report a %q finding: %v", want, rules)
		}
	}
}

// TestCycleRepair: two sessions stored as each other's parent, x ← y ← x,
// with a fork z below x, written with INSERT DATA in the shape of session
// graphs (as an older version, a hand edit or an import could leave them).
// check reports the cycle and names the command that removes it; sessions
// and tree show x and y marked as a cycle (text and JSON); that command,
// delete x --cascade, removes x, y and z and leaves check clean.
func TestCycleRepair(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	ctx := context.Background()
	x, y, z := "0190c5d2-0000-7000-8000-0000000000aa", "0190c5d2-0000-7000-8000-0000000000bb", "0190c5d2-0000-7000-8000-0000000000cc"
	var d kg.Data
	for k, pair := range [][2]string{{x, y}, {y, x}, {z, x}} {
		g, parent := kg.MustIRI(ontology.SessionIRI(pair[0])), kg.MustIRI(ontology.SessionIRI(pair[1]))
		created := familyStart.Add(time.Hour + time.Duration(k)*time.Second)
		d.Add(g, g, kg.MustIRI(ontology.RDFType), kg.MustIRI(ontology.Session))
		d.Add(g, g, kg.MustIRI(ontology.DCTIdentifier), kg.String(pair[0]))
		d.Add(g, g, kg.MustIRI(ontology.Branch), kg.String("fork-"+pair[0][len(pair[0])-8:]))
		d.Add(g, g, kg.MustIRI(ontology.Kind), kg.String("branch"))
		d.Add(g, g, kg.MustIRI(ontology.Created), kg.DateTime(created))
		d.Add(g, g, kg.MustIRI(ontology.Principal), prov.AddAgent(&d, g, "agent-7"))
		d.Add(g, g, kg.MustIRI(ontology.ParentSession), parent)
		d.Add(g, g, kg.MustIRI(ontology.ProvWasDerivedFrom), parent)
		d.Add(g, g, kg.MustIRI(ontology.ForkedAtIndex), kg.Int(0))
		d.Add(g, g, kg.MustIRI(ontology.OwnTurns), kg.Int(0))
		prov.AddFork(&d, prov.Fork{Child: pair[0], Parent: pair[1], At: 0, Principal: "agent-7", Time: created})
	}
	u, err := d.InsertData()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	found := r.mustRun(t, 1, "check")
	for _, id := range []string{x, y} {
		if want := "trails-admin delete " + id + " --cascade"; !strings.Contains(found.stdout, want) {
			t.Errorf("check does not name %q:\n%s", want, found.stdout)
		}
	}
	sessions := r.mustRun(t, 0, "sessions")
	sessionsJSON := r.mustRun(t, 0, "sessions", "--json")
	forest := r.mustRun(t, 0, "tree")
	tree := r.mustRun(t, 0, "tree", y)
	treeJSON := r.mustRun(t, 0, "tree", x, "--format", "json")
	refused := r.mustRun(t, 1, "delete", x)
	deleted := r.mustRun(t, 0, "delete", x, "--cascade")
	clean := r.mustRun(t, 0, "check")
	after := r.mustRun(t, 0, "tree")
	golden(t, "cycle", []string{f.c.Endpoint()},
		"the family and a cycle x <- y <- x with a fork z of x: check, sessions, tree (all, of y, of x as JSON), delete x, delete x --cascade, check, tree",
		found, sessions, sessionsJSON, forest, tree, treeJSON, refused, deleted, clean, after)

	cycle := map[string]bool{}
	for _, in := range decode[[]map[string]any](t, sessionsJSON) {
		if in["cycle"] == true {
			cycle[fmt.Sprint(in["id"])] = true
		}
	}
	if want := map[string]bool{x: true, y: true}; !maps.Equal(cycle, want) {
		t.Errorf("sessions --json: got cycle on %v, want on %v", cycle, want)
	}
	for _, id := range []string{x, y} {
		if !strings.Contains(forest.stdout, id) {
			t.Errorf("tree does not show %s:\n%s", id, forest.stdout)
		}
	}
	for _, id := range []string{x, y, z} {
		if strings.Contains(after.stdout, id) {
			t.Errorf("tree after delete --cascade still shows %s:\n%s", id, after.stdout)
		}
	}
}

// TestExportImport: an export imported into an empty dataset gives back
// the same sessions; a second import changes nothing; a bad file is
// refused with nothing written.
func TestExportImport(t *testing.T) {
	fusekitest.Parallel(t)
	f := seedFamily(t)
	r := storeRunner(t)
	dir := t.TempDir()
	backup := dir + "/backup.nq"
	before := map[string]string{}
	ids := []string{f.root, f.other, f.a, f.b, f.fc}
	for _, id := range ids {
		before[id] = r.mustRun(t, 0, "show", id, "--json").stdout
	}
	sessions := r.mustRun(t, 0, "sessions").stdout
	exp := r.mustRun(t, 0, "export", "-o", backup)
	trig := r.mustRun(t, 0, "export", f.a, "--format", "turtle")
	jsonl := r.mustRun(t, 0, "export", f.b, "--format", "jsonl")

	fusekitest.Empty(t)
	imp := r.mustRun(t, 0, "import", backup)
	again := r.mustRun(t, 0, "import", backup)
	for _, id := range ids {
		if got := r.mustRun(t, 0, "show", id, "--json").stdout; got != before[id] {
			t.Errorf("show %s after export and import:\n%s\nwant:\n%s", id, got, before[id])
		}
	}
	if got := r.mustRun(t, 0, "sessions").stdout; got != sessions {
		t.Errorf("sessions after import:\n%s\nwant:\n%s", got, sessions)
	}
	bad := dir + "/bad.nq"
	if err := os.WriteFile(bad, []byte("<urn:s> <urn:p> \"x\" <urn:not-a-trails-graph> .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	count := tripleCount(t, f.c)
	refused := r.mustRun(t, 1, "import", bad)
	if got := tripleCount(t, f.c); got != count {
		t.Errorf("a refused import changed the store: %d triples before, %d after", count, got)
	}
	// JSONL is refused by its name and by its content, saying so.
	jsonlFile, disguised := dir+"/turns.jsonl", dir+"/turns.nq"
	for _, name := range []string{jsonlFile, disguised} {
		if err := os.WriteFile(name, []byte(jsonl.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	jsonlByName := r.mustRun(t, 2, "import", jsonlFile)
	jsonlByContent := r.mustRun(t, 1, "import", disguised)
	if got := tripleCount(t, f.c); got != count {
		t.Errorf("a refused JSONL import changed the store: %d triples before, %d after", count, got)
	}
	badFormat := r.mustRun(t, 2, "export", "--format", "xml")
	runs := []result{exp, jsonl, imp, again, refused, jsonlByName, jsonlByContent, badFormat}
	for i := range runs { // the temporary directory differs from run to run
		for j, a := range runs[i].args {
			runs[i].args[j] = strings.ReplaceAll(a, dir, "$DIR")
		}
		runs[i].stderr = strings.ReplaceAll(runs[i].stderr, dir, "$DIR")
	}
	golden(t, "export-import", []string{f.c.Endpoint()}, "the family exported, the dataset wiped, the export imported", runs...)
	// The TriG holds digests of turns stamped with the clock: checked, not golden.
	for _, want := range []string{"PREFIX trails: <https://w3id.org/trails/ns#>", "GRAPH session:" + f.a + " {", "GRAPH session:" + f.root + " {", "GRAPH session:" + f.b + " {", "GRAPH <https://w3id.org/trails/graph/prov> {"} {
		if !strings.Contains(trig.stdout, want) {
			t.Errorf("export %s --format turtle lacks %q", f.a, want)
		}
	}
	if strings.Contains(trig.stdout, "GRAPH session:"+f.other) {
		t.Errorf("export %s --format turtle holds the unrelated session %s", f.a, f.other)
	}
	for _, line := range strings.Split(strings.TrimSpace(jsonl.stdout), "\n") {
		turn := map[string]any{}
		if err := json.Unmarshal([]byte(line), &turn); err != nil {
			t.Fatalf("jsonl line %q: %v", line, err)
		}
		hasFields(t, "jsonl turn", turn, "session", "parent", "branch", "principal", "index", "role", "content", "turn_branch", "created")
	}
}
