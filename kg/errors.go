package kg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/trails-kg/trails/internal/telemetry"
)

// Sentinel errors. Every error a Client method returns matches at most one of
// the first five with errors.Is; a cancelled or expired context matches
// context.Canceled or context.DeadlineExceeded instead.
var (
	// ErrUnauthorized: the store refused the credentials (HTTP 401 or 403).
	ErrUnauthorized = errors.New("kg: unauthorized")
	// ErrNotFound: the dataset, endpoint or graph does not exist (HTTP 404).
	ErrNotFound = errors.New("kg: not found")
	// ErrUnavailable: the store cannot be reached, timed out, or answered
	// with a server error (HTTP 5xx).
	ErrUnavailable = errors.New("kg: store unavailable")
	// ErrBadRequest: the store refused the request, e.g. a SPARQL syntax
	// error (HTTP 400 and other 4xx).
	ErrBadRequest = errors.New("kg: bad request")
	// ErrProtocol: the store answered with something that is not the
	// expected result format.
	ErrProtocol = errors.New("kg: unexpected response")

	// ErrInvalidTerm: a value cannot be written as an RDF term (invalid
	// UTF-8, an IRI with forbidden characters, ...). Nothing was sent.
	ErrInvalidTerm = errors.New("kg: invalid term")
	// ErrUnboundParam: Bind found a $parameter with no value, or a value
	// for no parameter. Nothing was sent.
	ErrUnboundParam = errors.New("kg: unbound parameter")
	// ErrConfig: a Config that New cannot use.
	ErrConfig = errors.New("kg: bad config")
)

// The sentinels name the failures they match in traces and metrics
// (error.type).
func init() {
	telemetry.RegisterErrors(ErrUnauthorized, ErrNotFound, ErrUnavailable, ErrBadRequest, ErrProtocol,
		ErrInvalidTerm, ErrUnboundParam, ErrConfig)
}

// maxErrorBody is how much of the server's answer an Error keeps.
const maxErrorBody = 512

// Error is a failed request to the store. It matches one of the sentinel
// errors (ErrUnauthorized, ErrNotFound, ErrUnavailable, ErrBadRequest,
// ErrProtocol) or a context error with errors.Is, and its cause, if any, with
// errors.As.
type Error struct {
	Op     string // "select", "template query", "ask", "update", "get graph", "put graph", "delete graph", "validate", "ping", "conditional patch", ...
	Status int    // HTTP status, 0 when no answer arrived
	Body   string // the first part of the server's message, if any
	Err    error  // the cause: a transport or context error, or nil
}

// Error returns a one-line description: operation, status and the server's
// message or the cause.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("kg: ")
	b.WriteString(e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Body != "" {
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the matching sentinel error and the cause.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if k := e.kind(); k != nil {
		errs = append(errs, k)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// kind maps the error to its sentinel; context errors map to none, so that
// errors.Is(err, context.Canceled) is the only match for a cancelled call.
func (e *Error) kind() error {
	switch {
	case e.Err != nil && (errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded)) && e.Status == 0:
		return nil
	case e.Err != nil && errors.Is(e.Err, ErrProtocol):
		return nil // the cause is the sentinel already
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		return ErrUnauthorized
	case e.Status == http.StatusNotFound:
		return ErrNotFound
	case e.Status >= 500 || e.Status == http.StatusRequestTimeout || e.Status == http.StatusTooManyRequests:
		return ErrUnavailable
	case e.Status >= 400:
		return ErrBadRequest
	case e.Status == 0:
		return ErrUnavailable // no answer: connection refused, reset, attempt timeout
	default:
		return ErrProtocol
	}
}

// retryable reports whether a failed attempt may be repeated: the store was
// unreachable or overloaded. idempotent says the request is safe to send
// twice; when it is not, only failures that prove the request never reached
// the store (a refused connection) are retried.
func (e *Error) retryable(idempotent bool) bool {
	if !errors.Is(e, ErrUnavailable) {
		return false
	}
	if idempotent {
		return true
	}
	var op *net.OpError
	return errors.As(e.Err, &op) && op.Op == "dial"
}
