//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package witness

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// lockFile refuses: this system has no flock, and a Dir must not be
// appended to without one.
func lockFile(ctx context.Context, f *os.File, exclusive bool) error {
	return fmt.Errorf("lock %s: %w", f.Name(), errors.ErrUnsupported)
}

func unlockFile(f *os.File) {}
