package proc_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/proc"
)

// TestLastLines: the last n lines, the final line breaks left out.
func TestLastLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		n        int
		want     string
	}{
		{"fewer", "a\nb\n", 5, "a\nb"},
		{"cut", "a\nb\nc\n\n", 2, "b\nc"},
		{"no break", "a", 1, "a"},
		{"empty", "", 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := proc.LastLines([]byte(tt.in), tt.n); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTail: a file's last lines; a missing file says why.
func TestTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := proc.Tail(path, 2), "2\n3"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := proc.Tail(filepath.Join(t.TempDir(), "none"), 2); got == "" || got[0] != '(' {
		t.Errorf("missing file: got %q, want the error in parentheses", got)
	}
}

// TestSleep: a context that ends cuts the wait short with its error.
func TestSleep(t *testing.T) {
	t.Parallel()
	if err := proc.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("got %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := proc.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("ended context: got %v, want context.Canceled", err)
	}
}

// TestStop: a process that stops on the signal is not killed; one that
// ignores it is killed after the grace period; one already gone is left
// alone.
func TestStop(t *testing.T) {
	start := func(script string) (*exec.Cmd, chan struct{}) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		return cmd, done
	}
	cmd, done := start("sleep 30")
	if proc.Stop(cmd.Process, done, syscall.SIGTERM, 10*time.Second) {
		t.Error("a process that stops on SIGTERM: killed")
	}
	cmd, done = start(`trap "" TERM; while :; do sleep 0.05; done`)
	time.Sleep(100 * time.Millisecond) // the trap set
	if !proc.Stop(cmd.Process, done, syscall.SIGTERM, 200*time.Millisecond) {
		t.Error("a process that ignores SIGTERM: not killed")
	}
	if proc.Stop(cmd.Process, done, syscall.SIGTERM, time.Second) {
		t.Error("a process already gone: killed again")
	}
	if proc.Stop(nil, nil, syscall.SIGTERM, time.Second) {
		t.Error("no process: killed")
	}
}
