package fusekitest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockEndpoint takes an exclusive file lock named after the endpoint, so
// that test binaries sharing one TRAILS_TEST_ENDPOINT run one after another
// (go test runs packages in parallel). It returns the unlock function.
func lockEndpoint(ep string) (func(), error) {
	sum := sha256.Sum256([]byte(ep))
	path := filepath.Join(os.TempDir(), "trails-test-"+hex.EncodeToString(sum[:8])+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
