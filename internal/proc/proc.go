// Package proc holds the small helpers that the programs and test
// harnesses which start and watch child processes (Fuseki, Kafka, the
// appliers, PostgreSQL) share: a wait that a context can cut short, a
// stop that signals and then kills, and the last lines of a log, for an
// error message.
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

// Stop asks process p to stop with sig and waits until exited is closed
// (the caller closes it when its Wait returns); after grace it kills p and
// waits again. It reports whether p had to be killed. A nil p, or one
// that has exited already, is left alone.
func Stop(p *os.Process, exited <-chan struct{}, sig os.Signal, grace time.Duration) (killed bool) {
	if p == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
	}
	p.Signal(sig)
	select {
	case <-exited:
		return false
	case <-time.After(grace):
		p.Kill()
		<-exited
		return true
	}
}

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
