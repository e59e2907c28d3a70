package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/termsafe"
)

// The harness of the end-to-end tests: the binary, a runner for it, golden
// transcripts.

// runner runs the binary against one dataset.
type runner struct {
	endpoint string   // TRAILS_ENDPOINT
	env      []string // more KEY=VALUE, shown in transcripts
}

// storeRunner returns a runner against the test binary's dataset.
func storeRunner(tb testing.TB) runner {
	tb.Helper()
	return runner{endpoint: fusekitest.Endpoint(tb)}
}

// noStore is the TRAILS_ENDPOINT of runs that must not reach a store
// (usage errors, help): nothing listens on port 9 of localhost.
const noStore = "http://127.0.0.1:9/trails"

// result is what one run of the binary did.
type result struct {
	args   []string
	env    []string
	code   int
	stdout string
	stderr string
}

// command returns the command that runs the binary with args: TRAILS_*
// variables of the caller's environment are dropped, TRAILS_ENDPOINT is
// r's, TRAILS_DATA and TRAILS_RUN_DIR name no directory, stdin is empty.
func (r runner) command(ctx context.Context, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, bin, args...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TRAILS_") })
	// Where a local Fuseki keeps its databases and run files (local.go):
	// nowhere, so that a developer's own (scripts/demo's) is never found.
	none := filepath.Join(os.TempDir(), "trails-admin-e2e-no-local-fuseki")
	cmd.Env = append(append(env, "TRAILS_ENDPOINT="+r.endpoint, "TRAILS_DATA="+none, "TRAILS_RUN_DIR="+none), r.env...)
	cmd.Stdin = nil // /dev/null
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	return cmd, &stdout, &stderr
}

// run runs the binary with args and returns what it did. It fails tb if
// the binary cannot be run, is killed, or outlasts runTimeout.
func (r runner) run(tb testing.TB, args ...string) result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd, stdout, stderr := r.command(ctx, args...)
	err := cmd.Run()
	return r.result(tb, cmd, err, ctx.Err(), stdout, stderr, args)
}

// result turns the end of cmd, which ran args, into a result: err is what
// Run or Wait returned and ctxErr that of the context cmd ran in.
func (r runner) result(tb testing.TB, cmd *exec.Cmd, err, ctxErr error, stdout, stderr *bytes.Buffer, args []string) result {
	tb.Helper()
	if ctxErr != nil {
		tb.Fatalf("trails-admin %s: no exit within %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), runTimeout, stdout, stderr)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		tb.Fatalf("trails-admin %s: %v", strings.Join(args, " "), err)
	}
	code := cmd.ProcessState.ExitCode()
	if code < 0 {
		tb.Fatalf("trails-admin %s: %v\nstderr:\n%s", strings.Join(args, " "), cmd.ProcessState, stderr)
	}
	return result{args: args, env: r.env, code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// mustRun is run, failing tb unless the binary exits with code.
func (r runner) mustRun(tb testing.TB, code int, args ...string) result {
	tb.Helper()
	res := r.run(tb, args...)
	if res.code != code {
		tb.Fatalf("trails-admin %s: got exit %d, want %d\nstdout:\n%s\nstderr:\n%s",
			strings.Join(args, " "), res.code, code, res.stdout, res.stderr)
	}
	return res
}

// transcript renders runs as the golden files hold them: for each run the
// command line, the exit code, stdout and stderr.
func transcript(note string, runs ...result) string {
	var b strings.Builder
	if note != "" {
		for _, l := range strings.Split(note, "\n") {
			fmt.Fprintf(&b, "# %s\n", l)
		}
		b.WriteString("\n")
	}
	for i, r := range runs {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("$ ")
		for _, kv := range r.env {
			b.WriteString(kv + " ")
		}
		b.WriteString("trails-admin")
		for _, a := range r.args {
			b.WriteString(" " + quoteArg(a))
		}
		fmt.Fprintf(&b, "\nexit %d\n", r.code)
		section(&b, "stdout", r.stdout)
		section(&b, "stderr", r.stderr)
	}
	return b.String()
}

func section(b *strings.Builder, name, text string) {
	switch {
	case text == "":
		fmt.Fprintf(b, "--- %s: empty ---\n", name)
	case !strings.HasSuffix(text, "\n"):
		fmt.Fprintf(b, "--- %s (no newline at end) ---\n%s\n", name, text)
	default:
		fmt.Fprintf(b, "--- %s ---\n%s", name, text)
	}
}

// quoteArg quotes a command-line argument as a shell would need it; one
// holding characters a terminal acts on (other than line breaks and tabs)
// is written in bash's $'…' quotes, escaped, so that the golden file holds
// none.
func quoteArg(a string) string {
	if strings.Join(termsafe.Lines(a), "\n") != a {
		return "$'" + termsafe.String(strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(a)) + "'"
	}
	if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$|&;<>()*?[]#~`") {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// golden compares the normalized transcript of runs with
// testdata/admin/NAME.golden, or rewrites it under -update.
func golden(tb testing.TB, name string, endpoints []string, note string, runs ...result) {
	tb.Helper()
	got := normalize(transcript(note, runs...), endpoints...)
	root, err := fusekitest.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(root, "testdata", "admin", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		tb.Fatalf("%s is missing; create it with: go test ./cmd/trails-admin -run '%s' -update", path, tb.Name())
	}
	if err != nil {
		tb.Fatal(err)
	}
	if got != string(want) {
		tb.Errorf("%s: output differs from the golden file (- want, + got); if the change is intended, run: go test ./cmd/trails-admin -run '%s' -update\n%s",
			path, tb.Name(), lineDiff(string(want), got))
	}
}

// lineDiff returns a line diff of a and b: lines only in a start with "-",
// only in b with "+", common ones with " ".
func lineDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	// lcs[i][j]: length of the longest common subsequence of x[i:], y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("+ " + y[j] + "\n")
			j++
		default:
			out.WriteString("- " + x[i] + "\n")
			i++
		}
	}
	return out.String()
}

// decode decodes the JSON a command printed, failing tb if it is not JSON.
func decode[T any](tb testing.TB, res result) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil {
		tb.Fatalf("trails-admin %s: stdout is not the JSON expected: %v\n%s", strings.Join(res.args, " "), err, res.stdout)
	}
	return v
}

// hasFields fails tb unless the JSON object obj has every field named.
func hasFields(tb testing.TB, what string, obj map[string]any, fields ...string) {
	tb.Helper()
	for _, f := range fields {
		if _, ok := obj[f]; !ok {
			tb.Errorf("%s: no field %q in %v", what, f, obj)
		}
	}
}

// object returns v as a JSON object, failing tb if it is not one.
func object(tb testing.TB, what string, v any) map[string]any {
	tb.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		tb.Fatalf("%s: got %T, want a JSON object", what, v)
	}
	return m
}

// array returns v as a JSON array, failing tb if it is not one.
func array(tb testing.TB, what string, v any) []any {
	tb.Helper()
	a, ok := v.([]any)
	if !ok {
		tb.Fatalf("%s: got %T, want a JSON array", what, v)
	}
	return a
}

// The documented field names of the JSON outputs.
var (
	infoFields   = []string{"id", "principal", "parent", "forked_at", "branch", "kind", "own_turns", "turns", "created"}
	turnFields   = []string{"index", "role", "content", "branch", "created"}
	nodeFields   = append(slices.Clone(infoFields), "children")
	queryFields  = []string{"name", "description", "params"}
	paramFields  = []string{"name", "kind", "description"}
	resultFields = []string{"query", "vars", "rows"}
	orphanFields = []string{"session", "missing"}
	deleteFields = []string{"steps", "done", "dry_run"}
	stepFields   = []string{"action", "session", "turns"}
	detachFields = []string{"session", "parent", "copied", "from", "dry_run"}
	showFields   = []string{"session", "turns"}
)

func TestTranscript(t *testing.T) {
	fusekitest.Parallel(t)
	got := transcript("a note",
		result{args: []string{"sessions", "--principal", "agent 7"}, env: []string{"TRAILS_USER=u"}, code: 0, stdout: "a\n"},
		result{args: []string{"x"}, code: 2, stderr: "no newline"},
	)
	want := "# a note\n\n" +
		"$ TRAILS_USER=u trails-admin sessions --principal 'agent 7'\nexit 0\n--- stdout ---\na\n--- stderr: empty ---\n" +
		"\n$ trails-admin x\nexit 2\n--- stdout: empty ---\n--- stderr (no newline at end) ---\nno newline\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s\ndiff:\n%s", got, want, lineDiff(want, got))
	}
}
