package main_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
)

// walkthrough returns the shell commands between the walkthrough markers
// of the doc page at path, without the code fence.
func walkthrough(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- walkthrough:begin -->")
	block, _, ok2 := strings.Cut(rest, "<!-- walkthrough:end -->")
	if !ok || !ok2 {
		tb.Fatalf("%s: no walkthrough:begin and walkthrough:end markers", path)
	}
	block = strings.TrimSpace(block)
	block = strings.TrimPrefix(block, "```sh")
	block = strings.TrimSuffix(block, "```")
	return strings.TrimSpace(block) + "\n"
}

// TestVerifyPageWalkthrough runs docs/verify.md's path from nothing to a
// verified session as the page writes it, in a directory of its own, with
// trails-admin on the PATH and an empty dataset as TRAILS_ENDPOINT (the
// witness on a free port instead of the page's): the demo's signed
// sessions verify with no finding.
func TestVerifyPageWalkthrough(t *testing.T) {
	script := walkthrough(t, filepath.Join("..", "..", "docs", "verify.md"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	script = strings.ReplaceAll(script, "127.0.0.1:7380", "127.0.0.1:"+port)

	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(binDir, "trails-admin")); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	endpoint := fusekitest.Empty(t).Endpoint()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The page's background witness is stopped when the script ends.
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"+script)
	cmd.Dir = work
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TRAILS_") })
	cmd.Env = append(env, "TRAILS_ENDPOINT="+endpoint, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything the trap missed
	}
	if err != nil {
		t.Fatalf("the page's commands: %v\n--- script ---\n%s--- stdout ---\n%s--- stderr ---\n%s", err, script, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "no findings") { // verify says so on stderr, with exit 0
		t.Fatalf("verify did not say \"no findings\":\n--- stdout ---\n%s--- stderr ---\n%s", stdout.String(), stderr.String())
	}
}
