//go:build linux

package witness_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/witness"
)

// TestDirWaitsForLock holds the log file's lock as another process would
// and checks that Add waits for it, until its context ends.
func TestDirWaitsForLock(t *testing.T) {
	writer, _, _ := keytest.New(t, "writer.example")
	ws, _, _ := keytest.New(t, "witness.example")
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

// TestDirProcesses has two child processes (this test binary, run again)
// and this one append to one directory at once, and checks that every
// entry is there once and the tree is the same for all.
func TestDirProcesses(t *testing.T) {
	if os.Getenv("WITNESS_CHILD_DIR") != "" {
		t.Skip("in a child")
	}
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 7
	ws, err := witness.NewSigner("witness.example", ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	writer, _, _ := keytest.New(t, "writer.example")
	dir := t.TempDir()
	const each = 20
	var children []*exec.Cmd
	var outs []*bytes.Buffer
	for c := 1; c <= 2; c++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDirChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "WITNESS_CHILD_DIR="+dir, "WITNESS_CHILD_SEED="+hex.EncodeToString(seed),
			"WITNESS_CHILD_FROM="+strconv.Itoa(c*each), "WITNESS_CHILD_N="+strconv.Itoa(each))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children, outs = append(children, cmd), append(outs, &out)
	}
	d := openDir(t, dir, ws)
	for i := range each {
		if _, err := d.Add(context.Background(), sign(t, statement(i), writer)); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	for i, cmd := range children {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i+1, err, outs[i])
		}
	}
	signed := checkpoint(t, d)
	reopened := openDir(t, dir, ws)
	if got := checkpoint(t, reopened); !bytes.Equal(got, signed) {
		t.Errorf("reopened: got\n%s\nwant\n%s", got, signed)
	}
	seen := make(map[string]bool)
	for i := range uint64(3 * each) {
		e, err := d.Entry(context.Background(), i)
		if err != nil {
			t.Fatalf("Entry(%d): %v", i, err)
		}
		if seen[string(e)] {
			t.Errorf("entry %d twice", i)
		}
		seen[string(e)] = true
	}
	if _, err := d.Entry(context.Background(), 3*each); !errors.Is(err, witness.ErrOutOfRange) {
		t.Errorf("Entry(%d): got %v, want ErrOutOfRange", 3*each, err)
	}
}

// TestDirChild is TestDirProcesses's child: it appends statements to the
// directory its environment names, checkpointing now and then.
func TestDirChild(t *testing.T) {
	dir := os.Getenv("WITNESS_CHILD_DIR")
	if dir == "" {
		t.Skip("run by TestDirProcesses")
	}
	seed, _ := hex.DecodeString(os.Getenv("WITNESS_CHILD_SEED"))
	from, _ := strconv.Atoi(os.Getenv("WITNESS_CHILD_FROM"))
	n, _ := strconv.Atoi(os.Getenv("WITNESS_CHILD_N"))
	ws, err := witness.NewSigner("witness.example", ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	writer, _, _ := keytest.New(t, "writer.example")
	d := openDir(t, dir, ws)
	for i := from; i < from+n; i++ {
		if _, err := d.Add(context.Background(), sign(t, statement(i), writer)); err != nil {
			t.Fatalf("Add: %v", err)
		}
		if i%7 == 0 {
			checkpoint(t, d)
		}
	}
}
