// Package pytools finds the Python tools the tests run (pySHACL and prov
// on exports, the Oxigraph server) in the virtual environment that
// scripts/pytools makes on first use and caches under ~/.cache/trails, with
// the versions pinned in scripts/python-requirements.txt. Tests need no
// Python package installed by hand: only python3 with its venv module.
package pytools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Command returns the path of the command name (such as "python" or
// "oxigraph") in the tests' Python environment of the checkout at root,
// making the environment first when it is missing (scripts/pytools says so
// on stderr). Its error carries scripts/pytools' message, which says what
// to install when python3 or its venv module is missing.
func Command(root, name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "pytools"), "bin", name)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	// The line that says the environment is being made reaches the user
	// (go test shows it with -v, or beside a failure).
	os.Stderr.Write(errb.Bytes())
	if err != nil {
		return "", fmt.Errorf("scripts/pytools bin %s: %v: %s", name, err, strings.TrimSpace(errb.String()))
	}
	path := strings.TrimSpace(out.String())
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("scripts/pytools bin %s printed %q: %v", name, path, err)
	}
	return path, nil
}
