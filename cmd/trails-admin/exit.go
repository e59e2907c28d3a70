package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// Exit codes, listed in the help text.
const (
	exitOK          = 0
	exitFailure     = 1 // a failure, or findings (orphans, integrity violations)
	exitUsage       = 2
	exitStore       = 3 // cannot reach the store, no dataset at the endpoint, or refused credentials
	exitInterrupted = 130
)

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errFindings reports that a command found problems it has already
// printed (orphans, integrity violations): exit 1, with no further message.
var errFindings = errors.New("findings reported")

// exitCode maps the error run returned to the process's exit code.
func exitCode(err error) int {
	var ue *usageError
	var ie *admin.ImportError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ie):
		return exitFailure // bad data in a file is a failure, not usage
	case errors.As(err, &ue), errors.Is(err, session.ErrInvalid), errors.Is(err, prov.ErrInvalid):
		return exitUsage // what the command line gave cannot be used
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, kg.ErrUnavailable), errors.Is(err, kg.ErrUnauthorized), errors.Is(err, kg.ErrNotFound):
		// kg.ErrNotFound: the server answered 404, no dataset (or no
		// endpoint) at the URL given; the store cannot be used as given,
		// as when it cannot be reached.
		return exitStore
	default:
		return exitFailure
	}
}
