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
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	dir := t.TempDir()
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
