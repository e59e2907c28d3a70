// Package proc holds the two small helpers that the programs and test
// harnesses which start and watch child processes (Fuseki, Kafka, the
// appliers, PostgreSQL) share: a wait that a context can cut short, and
// the last lines of a log, for an error message.
//
// It owns no process and starts none: it imports only the standard
// library, so that commands, benchmarks and test-support packages alike
// can import it.
package proc

import (
	"bytes"
	"context"
	"os"
	"time"
)

// Sleep waits d, or until ctx ends; it returns ctx's error if ctx ended
// first, nil otherwise.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Tail returns the last n lines of the file at path, without its final
// line break; the error in parentheses if it cannot be read.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return LastLines(b, n)
}

// LastLines returns the last n lines of b, without its final line
// breaks.
func LastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-n):], []byte("\n")))
}
