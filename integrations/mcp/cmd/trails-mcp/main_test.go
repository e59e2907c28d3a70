package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// End-to-end tests of the built command: the SDK's client over stdio
// (mcp.CommandTransport) and over streamable HTTP, against Fuseki.

func TestMain(m *testing.M) { fusekitest.Main(m) }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary returns the path of trails-mcp built from this package, once per
// test binary.
func binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trails-mcp-test")
		if err != nil {
			buildErr = err
			return
		}
		fusekitest.OnStop(func() { os.RemoveAll(dir) })
		binPath = filepath.Join(dir, "trails-mcp")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		tb.Fatalf("build trails-mcp: %v", buildErr)
	}
	return binPath
}

// command returns the command line of trails-mcp with args, its
// environment the test's without Trails' variables, plus the store
// profile the tests run on (fusekitest.TestStore) and env.
func command(tb testing.TB, env []string, args ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(binary(tb), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TRAILS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TRAILS_STORE="+string(fusekitest.TestStore()))
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
}

// syncBuffer collects a process's stderr while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stdio starts trails-mcp with args and env on stdio and returns a client
// session of it and a function that closes it (which ends the process,
// whose exit code must be 0), called again with tb's cleanup; stderr
// collects what the command wrote there, all of it once closed.
func stdio(tb testing.TB, env []string, stderr *syncBuffer, args ...string) (*mcp.ClientSession, func()) {
	tb.Helper()
	cmd := command(tb, env, args...)
	cmd.Stderr = stderr
	cs, err := newClient().Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		tb.Fatalf("connect to trails-mcp on stdio: %v (stderr: %s)", err, stderr)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := cs.Close(); err != nil {
				tb.Errorf("close: %v", err)
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				tb.Errorf("trails-mcp exited with %d when its stdin closed, want 0 (stderr: %s)", code, stderr)
			}
		})
	}
	tb.Cleanup(stop)
	return cs, stop
}

// httpServer starts trails-mcp --http on a free port with args and env,
// and returns a client session of it, the process, which ends with tb,
// and what it writes on stderr.
func httpServer(tb testing.TB, env []string, args ...string) (*mcp.ClientSession, *exec.Cmd, *syncBuffer) {
	tb.Helper()
	cmd := command(tb, env, append([]string{"--http", "127.0.0.1:0"}, args...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := bufio.NewScanner(pipe)
	var url string
	for url == "" && lines.Scan() {
		if strings.Contains(lines.Text(), "streamable HTTP") {
			url = logURL(lines.Text())
		}
	}
	if url == "" {
		tb.Fatalf("trails-mcp --http printed no address: %v", lines.Err())
	}
	stderr := &syncBuffer{}
	go func() { // keep reading, so that the process never blocks on stderr
		for lines.Scan() {
			stderr.Write([]byte(lines.Text() + "\n"))
		}
	}()
	cs, err := newClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		tb.Fatalf("connect to %s: %v", url, err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs, cmd, stderr
}

// logURL returns the url attribute of a log line in slog's text format
// ("... url=http://127.0.0.1:8765/mcp ..."), "" if it has none.
func logURL(line string) string {
	_, u, ok := strings.Cut(line, " url=")
	if !ok {
		return ""
	}
	u, _, _ = strings.Cut(u, " ")
	return u
}

// call calls tool name with args; a protocol error fails tb.
func call(tb testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	tb.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.Fatalf("%s: got protocol error %v", name, err)
	}
	return res
}

// object calls tool name and returns its structured content, failing tb
// on a tool error.
func object(tb testing.TB, cs *mcp.ClientSession, name string, args any) map[string]any {
	tb.Helper()
	res := call(tb, cs, name, args)
	if res.IsError {
		tb.Fatalf("%s: got tool error %s", name, text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return out
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// exercise runs the reads and a fork through cs on the dataset that
// holds root (3 turns), as a writer.
func exercise(t *testing.T, cs *mcp.ClientSession, st *session.Store, root string) {
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("list tools: got %v, %v, want 7 tools", tools, err)
	}
	list := object(t, cs, "list_sessions", map[string]any{})
	if got := list["sessions"].([]any)[0].(map[string]any)["id"]; got != root {
		t.Errorf("list_sessions: got %v, want %s first", list, root)
	}
	show := object(t, cs, "show_session", map[string]any{"id": root})
	if n := len(show["turns"].([]any)); n != 3 {
		t.Errorf("show_session: got %d turns, want 3", n)
	}
	fork := object(t, cs, "fork_session", map[string]any{"id": root, "at": 1})
	info, err := st.Info(ctx, fork["id"].(string))
	if err != nil || info.ParentID != root || info.ForkedAt != 1 {
		t.Errorf("the fork in the store: got %+v, %v, want a fork of %s at 1", info, err, root)
	}
	audit := object(t, cs, "run_audit_query", map[string]any{"name": "forks-of", "params": map[string]string{"session": root}})
	if audit["query"] != "forks-of" || len(audit["rows"].([]any)) != 1 {
		t.Errorf("forks-of: got %v, want the one fork", audit)
	}
}

// TestStdio: the built command on stdio, as a desktop client starts it,
// with the endpoint from $TRAILS_ENDPOINT.
func TestStdio(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	st := session.NewStore(c)
	root := storetest.Persisted(t, st, "agent-7", 3)
	var stderr syncBuffer
	cs, _ := stdio(t, []string{"TRAILS_ENDPOINT=" + fusekitest.Endpoint(t)}, &stderr)
	exercise(t, cs, st, root.ID)
}

// TestHTTP: the built command with --http, reached by the SDK's
// streamable HTTP client; SIGINT stops it with exit code 130.
func TestHTTP(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	st := session.NewStore(c)
	root := storetest.Persisted(t, st, "agent-7", 3)
	cs, cmd, stderr := httpServer(t, nil, "--endpoint", fusekitest.Endpoint(t))
	exercise(t, cs, st, root.ID)
	cs.Close()
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Errorf("after SIGINT: got exit code %d, want 130 (stderr: %s)", code, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("trails-mcp --http did not stop within 20s of SIGINT")
	}
}

// TestAuditor: with the read-only auditor of fuseki/trails-auth.ttl, over
// stdio and over HTTP, the reads and audit queries work and a fork or a
// rewind is a tool error that says the credentials are read-only;
// nothing is written. The writer's credentials fork.
func TestAuditor(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireFuseki(t, "HTTP basic authentication")
	writerPW, auditorPW := "Wr1ter pass:"+storetest.NewID(), "Aud1tor pass:"+storetest.NewID()
	srv, err := fusekitest.StartServer(fusekitest.Options{
		Config: filepath.Join("fuseki", "trails-auth.ttl"),
		Users:  map[string]string{"trails": writerPW, "auditor": auditorPW},
	})
	if err != nil {
		t.Fatalf("start Fuseki with fuseki/trails-auth.ttl: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	writer := fusekitest.Client(t, kg.Config{Endpoint: srv.Endpoint, Username: "trails", Password: writerPW})
	st := session.NewStore(writer)
	root := storetest.Persisted(t, st, "agent-7", 3)
	before := storetest.CountQuads(t, writer, "")

	auditor := []string{"TRAILS_ENDPOINT=" + srv.Endpoint, "TRAILS_USER=auditor", "TRAILS_PASSWORD=" + auditorPW}
	var stderr syncBuffer
	for _, tc := range []struct {
		name    string
		connect func(t *testing.T) *mcp.ClientSession
	}{
		{"stdio", func(t *testing.T) *mcp.ClientSession { cs, _ := stdio(t, auditor, &stderr); return cs }},
		{"http", func(t *testing.T) *mcp.ClientSession { cs, _, _ := httpServer(t, auditor); return cs }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := tc.connect(t)
			object(t, cs, "list_sessions", map[string]any{})
			object(t, cs, "show_session", map[string]any{"id": root.ID})
			lineage := object(t, cs, "run_audit_query", map[string]any{"name": "lineage", "params": map[string]string{"session": root.ID}})
			if len(lineage["rows"].([]any)) != 1 {
				t.Errorf("lineage of a root: got %v, want one row", lineage)
			}
			for _, w := range []struct {
				tool string
				args map[string]any
			}{
				{"fork_session", map[string]any{"id": root.ID, "at": 1}},
				{"rewind_session", map[string]any{"id": root.ID, "to": 1}},
			} {
				res := call(t, cs, w.tool, w.args)
				msg := text(res)
				if !res.IsError || !strings.Contains(msg, "refused the write (HTTP 403)") || !strings.Contains(msg, "read-only") || !strings.Contains(msg, w.tool) {
					t.Errorf("%s as the auditor: got %v %q, want a tool error saying the credentials are read-only", w.tool, res.IsError, msg)
				}
				if strings.Contains(msg, auditorPW) {
					t.Errorf("%s: the error shows the password: %s", w.tool, msg)
				}
			}
		})
	}
	if after := storetest.CountQuads(t, writer, ""); after != before {
		t.Errorf("got %d quads after the auditor's calls, want %d as before", after, before)
	}
	if strings.Contains(stderr.String(), auditorPW) {
		t.Errorf("stderr shows the password: %s", stderr.String())
	}

	t.Run("writer", func(t *testing.T) {
		cs, _ := stdio(t, []string{"TRAILS_USER=trails", "TRAILS_PASSWORD=" + writerPW}, &stderr, "--endpoint", srv.Endpoint)
		fork := object(t, cs, "fork_session", map[string]any{"id": root.ID, "at": 2})
		if fork["parent"] != root.ID || fork["forked_at"] != float64(2) {
			t.Errorf("fork as the writer: got %v", fork)
		}
	})
}

// TestUsage: flag mistakes exit 2 with a hint, -h prints the usage and
// exits 0, and a store that does not answer leaves the server up, its
// tools saying what is wrong.
func TestUsage(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"-h"}, 0, "usage: trails-mcp"},
		{"unknown flag", []string{"--bogus"}, 2, "try: trails-mcp -h"},
		{"argument", []string{"serve"}, 2, `unexpected argument "serve"`},
		{"timeout", []string{"--timeout", "0s"}, 2, "--timeout 0s"},
		{"max children", []string{"--max-children", "-1"}, 2, "--max-children -1"},
		{"store", []string{"--store", "mysql"}, 2, "mysql"},
		{"http address", []string{"--http", "nowhere:-5"}, 2, `--http "nowhere:-5": want HOST:PORT`},
		{"http port taken", []string{"--http", taken.Addr().String(), "--endpoint", "http://127.0.0.1:1/trails", "--timeout", "1s"}, 1, "address already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := command(t, nil, tc.args...).CombinedOutput()
			var ee *exec.ExitError
			code := 0
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			if code != tc.code || !strings.Contains(string(out), tc.want) {
				t.Errorf("trails-mcp %v: got exit %d and %q, want %d and %q", tc.args, code, out, tc.code, tc.want)
			}
		})
	}
	t.Run("store down", func(t *testing.T) {
		var stderr syncBuffer
		cs, stop := stdio(t, nil, &stderr, "--endpoint", "http://127.0.0.1:1/trails", "--timeout", "2s")
		res := call(t, cs, "list_sessions", map[string]any{})
		stop() // stderr is whole once the process ended
		if !res.IsError || !strings.Contains(text(res), "cannot reach the store") {
			t.Errorf("list_sessions with the store down: got %q, want a tool error saying it cannot reach the store", text(res))
		}
		if !strings.Contains(stderr.String(), "does not answer") {
			t.Errorf("stderr: got %q, want a warning that the store does not answer", stderr.String())
		}
	})
}
