// Package exit holds the exit codes and the usage error of the commands
// that share one table, trails-bench, adk-bench and trails-mcp: 0 ok,
// 1 failure, 2 usage, 130 interrupted. Each command lists the table in its
// usage text and maps what its run returned with Code. trails-admin,
// whose table has more rows (3: the store unreachable or refused), keeps
// its own.
//
// It exits nothing (main calls os.Exit(exit.Code(err))) and writes only
// to the writer Report is given.
package exit

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// The exit codes.
const (
	OK          = 0
	Failure     = 1
	Usage       = 2
	Interrupted = 130
)

// UsageError is a mistake on the command line; Code maps it to Usage.
type UsageError struct{ Msg string }

// Error returns the message.
func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError whose message is formatted as fmt.Sprintf
// does.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Code returns the exit code of err, what a command's run returned: OK
// for nil, Usage for a UsageError, Interrupted for context.Canceled,
// Failure for any other error.
func Code(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return OK
	case errors.As(err, &ue):
		return Usage
	case errors.Is(err, context.Canceled):
		return Interrupted
	default:
		return Failure
	}
}

// Report writes err, if not nil, to stderr as command name says it:
// "name: err", and after a usage error a line saying how to get the
// usage ("Run "name -h" for the usage."). It returns err.
func Report(stderr io.Writer, name string, err error) error {
	var ue *UsageError
	switch {
	case err == nil:
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\nRun \"%s -h\" for the usage.\n", name, err, name)
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
	}
	return err
}
