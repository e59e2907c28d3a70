//go:build linux

package witness_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/trails-kg/trails/witness"
)

// TestDirWaitsForLock holds the log file's lock as another process would
// and checks that Add waits for it, until its context ends.
func TestDirWaitsForLock(t *testing.T) {
	writer, _ := newKey(t, "writer.example")
	ws, _ := newKey(t, "witness.example")
	dir := t.TempDir()
	d := openDir(t, dir, ws)
	f, err := os.Open(filepath.Join(dir, witness.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.Add(ctx, sign(t, statement(0), writer)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Add while locked: got %v, want context.DeadlineExceeded", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Add(context.Background(), sign(t, statement(0), writer))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if err := <-done; err != nil {
		t.Errorf("Add after unlock: %v", err)
	}
}
