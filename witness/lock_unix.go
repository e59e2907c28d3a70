//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package witness

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile takes f's flock, exclusive or shared, waiting until it is free
// or ctx ends.
func lockFile(ctx context.Context, f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// unlockFile releases f's flock.
func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
