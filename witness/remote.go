package witness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// RemoteError is a witness server's or a cosigner's answer other than
// success, or a failure to reach it, as a Client or a CosignerClient
// returns it. Err is the package's sentinel the answer stands for
// (ErrUnknownKey, ErrTooLarge, ErrConflict, ErrUnavailable, ...), so that
// errors.Is(err, witness.ErrUnknownKey) works across the network.
type RemoteError struct {
	Op      string // what was asked: "add", "checkpoint", "entry 3", ...
	URL     string // the request's URL
	Status  int    // the HTTP status; 0 when no answer came
	Message string // the server's message, control characters removed
	Err     error
}

// Error says what was asked, of whom, and the answer.
func (e *RemoteError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s %s: %v", e.Op, e.URL, e.Err)
	}
	if e.Message == "" {
		return fmt.Sprintf("%s %s: HTTP %d: %v", e.Op, e.URL, e.Status, e.Err)
	}
	return fmt.Sprintf("%s %s: HTTP %d: %v (%s)", e.Op, e.URL, e.Status, e.Err, e.Message)
}

// Unwrap returns e.Err.
func (e *RemoteError) Unwrap() error { return e.Err }

// errorHeader names, in an answer of a witness server or a cosigner, the
// sentinel an error status stands for (one of errorCodes' codes).
const errorHeader = "Trails-Witness-Error"

// errorCodes maps the sentinels a server answers with to their codes and
// HTTP statuses, most specific first.
var errorCodes = []struct {
	code   string
	err    error
	status int
}{
	{"unknown-kind", ErrUnknownKind, http.StatusBadRequest},
	{"malformed", ErrMalformed, http.StatusBadRequest},
	{"unknown-key", ErrUnknownKey, http.StatusForbidden},
	{"bad-signature", ErrBadSignature, http.StatusForbidden},
	{"outside-window", ErrOutsideWindow, http.StatusForbidden},
	{"too-large", ErrTooLarge, http.StatusRequestEntityTooLarge},
	{"no-checkpoint", ErrNoCheckpoint, http.StatusNotFound},
	{"out-of-range", ErrOutOfRange, http.StatusNotFound},
	{"unknown-origin", ErrUnknownOrigin, http.StatusNotFound},
	{"conflict", ErrConflict, http.StatusConflict},
	{"rollback", ErrRollback, http.StatusInternalServerError},
	{"inconsistent", ErrInconsistent, http.StatusUnprocessableEntity},
	{"closed", ErrClosed, http.StatusServiceUnavailable},
}

// writeError answers err: its sentinel's status and code, and its
// message; an error that is none of them is a 500 whose message stays in
// the server's log.
func writeError(w http.ResponseWriter, err error) (code string) {
	status, code, msg := http.StatusInternalServerError, "internal", "internal error (see the server's log)"
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			status, code, msg = c.status, c.code, err.Error()
			break
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(errorHeader, code)
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n")
	return code
}

// remoteError reads an answer's error: the sentinel its code names, or
// its status's (ErrUnavailable for 5xx).
func remoteError(op string, resp *http.Response) *RemoteError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	e := &RemoteError{Op: op, URL: resp.Request.URL.Redacted(), Status: resp.StatusCode, Message: printable(string(body))}
	code := resp.Header.Get(errorHeader)
	for _, c := range errorCodes {
		if code == c.code {
			e.Err = c.err
			return e
		}
	}
	switch {
	case resp.StatusCode >= 500:
		e.Err = ErrUnavailable
	case resp.StatusCode == http.StatusNotFound && code == "":
		e.Err = fmt.Errorf("%w: no witness server at this URL", ErrUnavailable)
	case resp.StatusCode == http.StatusRequestEntityTooLarge:
		e.Err = ErrTooLarge
	case resp.StatusCode == http.StatusForbidden:
		e.Err = ErrUnknownKey
	case resp.StatusCode == http.StatusConflict:
		e.Err = ErrConflict
	case resp.StatusCode == http.StatusUnprocessableEntity:
		e.Err = ErrInconsistent
	default:
		e.Err = ErrMalformed
	}
	return e
}

// do sends req and returns the answer when its status is 200, a
// *RemoteError otherwise (ErrUnavailable when none came; ctx's error when
// ctx ended).
func do(hc *http.Client, op string, req *http.Request) (*http.Response, error) {
	resp, err := hc.Do(req)
	if err != nil {
		if cerr := req.Context().Err(); cerr != nil {
			return nil, fmt.Errorf("%s %s: %w", op, req.URL.Redacted(), cerr)
		}
		return nil, &RemoteError{Op: op, URL: req.URL.Redacted(), Err: fmt.Errorf("%w: %w", ErrUnavailable, err)}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, remoteError(op, resp)
	}
	return resp, nil
}

// readBody reads resp's body, at most limit bytes (ErrTooLarge beyond),
// and closes it.
func readBody(op string, resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, &RemoteError{Op: op, URL: resp.Request.URL.Redacted(), Status: resp.StatusCode, Err: fmt.Errorf("%w: %w", ErrUnavailable, err)}
	}
	if int64(len(b)) > limit {
		return nil, &RemoteError{Op: op, URL: resp.Request.URL.Redacted(), Status: resp.StatusCode, Err: fmt.Errorf("%w: answer over %d bytes", ErrTooLarge, limit)}
	}
	return b, nil
}

// printable returns s without control characters, trimmed and cut to 300
// bytes: a server's message may end up on a terminal.
func printable(s string) string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, s))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// defaultHTTPClient is the HTTP client of a Client or a CosignerClient
// given none.
var defaultHTTPClient = &http.Client{Timeout: 30 * time.Second}

// requestCtx is http.NewRequestWithContext with a body of b (none when
// nil) and text/plain.
func requestCtx(ctx context.Context, method, url string, b []byte) (*http.Request, error) {
	var body io.Reader
	if b != nil {
		body = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if b != nil {
		req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	}
	return req, nil
}
