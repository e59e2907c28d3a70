package fusekitest_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
)

// startScript runs scripts/fuseki start on a free port with a data and run
// directory of the test's own and the given extra arguments, and stops the
// server when the test ends. It returns the server's base URL and the run
// directory.
func startScript(t *testing.T, args ...string) (string, string) {
	t.Helper()
	root, port, dir := scriptPlace(t)
	run := filepath.Join(dir, "run")
	script := filepath.Join(root, "scripts", "fuseki")
	env := append(os.Environ(), "TRAILS_RUN_DIR="+run)
	start := exec.Command(script, append([]string{"start", "--port", port, "--data", filepath.Join(dir, "data")}, args...)...)
	start.Dir, start.Env = root, env
	out, err := start.CombinedOutput()
	t.Cleanup(func() {
		stop := exec.Command(script, "stop", "--port", port)
		stop.Dir, stop.Env = root, env
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("scripts/fuseki stop: %v\n%s", err, out)
		}
	})
	if err != nil {
		t.Fatalf("scripts/fuseki start: %v\n%s", err, out)
	}
	return "http://127.0.0.1:" + port, run
}

// get sends method to url as user (none when ""), returning the status and
// body.
func get(t *testing.T, method, url, user, password string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// datasetNames reads the dataset names of a /$/server or /$/datasets answer.
func datasetNames(t *testing.T, body string) []string {
	t.Helper()
	var v struct {
		Datasets []struct {
			Name string `json:"ds.name"`
		} `json:"datasets"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not a dataset list: %v\n%.300s", err, body)
	}
	var names []string
	for _, d := range v.Datasets {
		names = append(names, d.Name)
	}
	return names
}

// TestScriptServesUI checks that scripts/fuseki start serves Fuseki's UI
// and its dataset list with the Trails dataset, and that with
// fuseki/trails-auth.ttl the admin API (/$/datasets, which can delete
// datasets) is the writer's alone: the read-only auditor gets 401.
func TestScriptServesUI(t *testing.T) {
	const writerPW, auditorPW = "writer pass:1", "auditor-pass"
	passwd := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(passwd, []byte("trails: "+writerPW+"\nauditor: "+auditorPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, run := startScript(t, "--config", "fuseki/trails-auth.ttl", "--passwd", passwd)

	for _, tc := range []struct {
		name, method, path, user, password string
		want                               int
		body                               string // a part of the body, when 200
	}{
		{"UI, anonymous", "GET", "/", "", "", 401, ""},
		{"UI, auditor", "GET", "/", "auditor", auditorPW, 200, "<html"},
		{"dataset list, auditor", "GET", "/$/server", "auditor", auditorPW, 200, `"/trails"`},
		{"query, auditor", "GET", "/trails/query?query=ASK%7B%7D", "auditor", auditorPW, 200, "boolean"},
		{"admin list, auditor", "GET", "/$/datasets", "auditor", auditorPW, 401, ""},
		{"admin delete, auditor", "DELETE", "/$/datasets/trails", "auditor", auditorPW, 401, ""},
		{"admin stats, auditor", "GET", "/$/stats", "auditor", auditorPW, 401, ""},
		{"admin list, wrong password", "GET", "/$/datasets", "trails", "nope", 401, ""},
		{"admin list, writer", "GET", "/$/datasets", "trails", writerPW, 200, `"/trails"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, body := get(t, tc.method, base+tc.path, tc.user, tc.password)
			if tc.want == 401 && (got == 401 || got == 403) {
				return
			}
			if got != tc.want {
				t.Fatalf("%s %s as %q: got HTTP %d, want %d\n%.300s", tc.method, tc.path, tc.user, got, tc.want, body)
			}
			if !strings.Contains(body, tc.body) {
				t.Fatalf("%s %s: body lacks %q:\n%.300s", tc.method, tc.path, tc.body, body)
			}
		})
	}
	// The auditor's DELETE above changed nothing.
	if _, body := get(t, "GET", base+"/$/server", "auditor", auditorPW); !strings.Contains(strings.Join(datasetNames(t, body), " "), "/trails") {
		t.Fatalf("the dataset /trails is gone: %s", body)
	}
	// The UI server's own area (shiro.ini, backups) is in the run
	// directory, not in the data directory or the checkout.
	if _, err := os.Stat(filepath.Join(filepath.Dir(run), "data", "run")); !os.IsNotExist(err) {
		t.Errorf("the server wrote run/ into the data directory (%v)", err)
	}
	root, _ := fusekitest.RepoRoot()
	if _, err := os.Stat(filepath.Join(root, "run")); !os.IsNotExist(err) {
		t.Errorf("there is a run/ in the checkout (%v)", err)
	}
}

// TestScriptAdminLocal checks the same without passwords (fuseki/trails.ttl):
// the UI, the dataset list and the admin API answer from this machine, the
// only place the server listens.
func TestScriptAdminLocal(t *testing.T) {
	base, _ := startScript(t)
	for _, path := range []string{"/", "/$/server", "/$/datasets"} {
		got, body := get(t, "GET", base+path, "", "")
		if got != 200 {
			t.Fatalf("GET %s: got HTTP %d, want 200\n%.300s", path, got, body)
		}
		if path != "/" {
			if names := datasetNames(t, body); len(names) != 1 || names[0] != "/trails" {
				t.Fatalf("GET %s: got datasets %v, want [/trails]", path, names)
			}
		}
	}
}

// scriptPlace returns what a test of the scripts needs: the repository
// root, a free port and a scratch directory of the test's own. It fails t
// when java is missing.
func scriptPlace(t *testing.T) (root, port, dir string) {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatal("java is not installed: install Java 17+ and Maven and run scripts/fuseki fetch")
	}
	root, err := fusekitest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	return root, port, t.TempDir()
}

// TestScriptDemo runs scripts/demo as a new user would, on a port other
// than the default: it says that it builds before the long first build,
// and the commands its last line prints work as printed, against the
// Fuseki it started.
func TestScriptDemo(t *testing.T) {
	root, port, dir := scriptPlace(t)
	env := append(slicesWithout(os.Environ(), "TRAILS_"), "TRAILS_FUSEKI_PORT="+port, "TRAILS_DATA="+filepath.Join(dir, "data"),
		"TRAILS_RUN_DIR="+filepath.Join(dir, "run"), "TRAILS_BIN_DIR="+filepath.Join(dir, "bin"))
	t.Cleanup(func() {
		stop := exec.Command(filepath.Join(root, "scripts", "fuseki"), "stop", "--port", port)
		stop.Dir, stop.Env = root, env
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("scripts/fuseki stop: %v\n%s", err, out)
		}
	})
	demo := exec.Command(filepath.Join(root, "scripts", "demo"))
	demo.Dir, demo.Env = root, env
	var stdout, stderr strings.Builder
	demo.Stdout, demo.Stderr = &stdout, &stderr
	if err := demo.Run(); err != nil {
		t.Fatalf("scripts/demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "demo: building trails-admin into "+filepath.Join(dir, "bin")) {
		t.Errorf("got stderr\n%s\nwant a line saying it builds trails-admin", stderr.String())
	}
	_, next, ok := strings.Cut(stdout.String(), "\nNext: ")
	if !ok {
		t.Fatalf("got stdout\n%s\nwant a Next: line", stdout.String())
	}
	next, _, _ = strings.Cut(next, "\n")
	want := "TRAILS_ENDPOINT=http://127.0.0.1:" + port + "/trails " + filepath.Join(dir, "bin", "trails-admin") + " "
	cmds := strings.Split(next, " · ")
	if len(cmds) != 3 {
		t.Fatalf("got Next: %s\nwant three commands", next)
	}
	for _, c := range cmds {
		if !strings.HasPrefix(c, want) {
			t.Errorf("got %q, want it to start %q", c, want)
		}
		if strings.Contains(c, "| dot") { // Graphviz may be missing: run the part before the pipe
			c, _, _ = strings.Cut(c, " |")
		}
		sh := exec.Command("sh", "-c", c)
		sh.Dir = t.TempDir() // works as printed from anywhere, not only the checkout
		sh.Env = slicesWithout(env, "TRAILS_")
		if out, err := sh.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
	}
}

// slicesWithout returns env without the variables whose names start with
// prefix.
func slicesWithout(env []string, prefix string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}
