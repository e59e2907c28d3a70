package kg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trails-kg/trails/internal/telemetry"
)

// request is one logical request; do may send it several times.
type request struct {
	op          string
	method      string
	url         string
	contentType string
	accept      string
	body        []byte
	text        string // the SPARQL text, for its name (telemetry.QueryName)
	idempotent  bool
	once        bool        // one attempt, whatever the failure
	references  []string    // References: read by routers, not sent
	hints       [][2]string // Hint: key and value, read by a replicated Querier, not sent
	// handle reads a successful (2xx) answer. It must consume what it needs
	// of the body; do closes it, unless keep is set.
	handle func(*http.Response) error
	// keep leaves a successful answer open once handle has read the start
	// of it: send returns it for the caller to read on and release. A
	// failure of handle is retried like any other, so what handle reads is
	// what may still be retried.
	keep bool
}

// do sends req, retrying it while that is safe, and returns an *Error for
// any failure. A failure of handle is returned as an *Error with the status.
func (c *Client) do(ctx context.Context, req request) error {
	_, err := c.send(ctx, req)
	return err
}

// send is do returning, for a request with keep, the answer still open.
//
// Each call is a span (a child of ctx's, named after the query that ctx
// names, telemetry.WithQuery, or the name its SPARQL text begins with, or
// else req.op) and a duration; each
// retry is an event on it and counts in the retries metric. For a request
// with keep the span ends when the answer starts, before its rows are
// read.
func (c *Client) send(ctx context.Context, req request) (a *answer, err error) {
	ctx, tr := telemetry.StartRequest(ctx, string(c.store), req.op, req.text, req.url)
	defer func() { tr.End(ctx, err) }()
	var last *Error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, &Error{Op: req.op, Err: err}
		}
		a, e := c.attempt(ctx, req)
		if e == nil {
			return a, nil
		}
		last = e
		if req.once || attempt >= c.maxAttempts || !e.retryable(req.idempotent) {
			return nil, last
		}
		tr.Retry(ctx, attempt+1, e)
		wait := c.backoff << (attempt - 1)
		wait += time.Duration(rand.Int64N(int64(wait)/2 + 1))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &Error{Op: req.op, Err: fmt.Errorf("%w (after %d attempts; last: %v)", ctx.Err(), attempt, last)}
		case <-t.C:
		}
	}
}

// errAttemptTimeout is the cause of an attempt that ran out of its own time
// while the caller's context was still live.
var errAttemptTimeout = errors.New("attempt timed out")

// attempt sends req once. It returns the answer, still open, only when
// req.keep is set.
func (c *Client) attempt(ctx context.Context, req request) (*answer, *Error) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if c.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, c.timeout)
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(actx, req.method, req.url, body)
	if err != nil {
		cancel()
		return nil, &Error{Op: req.op, Err: err}
	}
	if req.contentType != "" {
		hr.Header.Set("Content-Type", req.contentType)
	}
	if req.accept != "" {
		hr.Header.Set("Accept", req.accept)
	}
	hr.Header.Set("User-Agent", c.userAgent)
	if req.idempotent {
		// Lets net/http send the request again on a new connection when a
		// kept-alive one turns out closed under it (a POST is not repeated
		// otherwise); the key itself is not sent.
		hr.Header["Idempotency-Key"] = nil
	}
	if c.username != "" {
		hr.SetBasicAuth(c.username, c.password)
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		e := &Error{Op: req.op, Err: c.cause(ctx, actx, err)} // before cancel, which would read as a timeout
		cancel()
		return nil, e
	}
	a := &answer{c: c, op: req.op, status: resp.StatusCode, body: resp.Body, ctx: ctx, actx: actx, cancel: cancel}
	kept := false
	defer func() {
		if !kept {
			a.release(true)
		}
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &Error{Op: req.op, Status: resp.StatusCode, Body: readErrorBody(resp.Body)}
	}
	if req.handle != nil {
		if err := req.handle(resp); err != nil {
			return nil, a.fail(err)
		}
	}
	if req.keep {
		kept = true
		return a, nil
	}
	return nil, nil
}

// answer is a successful answer whose body is still open, with the contexts
// of its attempt: the caller's, and the one Config.Timeout bounds, which
// lasts until release.
type answer struct {
	c         *Client
	op        string
	status    int
	body      io.ReadCloser
	ctx, actx context.Context
	cancel    context.CancelFunc
}

// ended reports whether the caller's context or the attempt's own time
// has run out.
func (a *answer) ended() bool { return a.ctx.Err() != nil || a.actx.Err() != nil }

// fail returns err, met while reading the answer, as an *Error: a context
// error or attempt timeout, ErrProtocol with the status, or (a body cut
// off mid-stream: the store went away) ErrUnavailable.
func (a *answer) fail(err error) *Error {
	switch {
	case a.ended():
		return &Error{Op: a.op, Err: a.c.cause(a.ctx, a.actx, err)}
	case errors.Is(err, ErrProtocol):
		return &Error{Op: a.op, Status: a.status, Err: err}
	default:
		return &Error{Op: a.op, Err: err}
	}
}

// release closes the body and ends the attempt's own time. drain first
// reads a little of what is left, so that the connection can be reused;
// an answer abandoned half-read is closed at once instead.
func (a *answer) release(drain bool) {
	if drain {
		io.CopyN(io.Discard, a.body, 64<<10)
	}
	a.body.Close()
	a.cancel()
}

// cause names why a request failed to complete: the caller's context, the
// attempt's own timeout, or the transport error itself.
func (c *Client) cause(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if actx.Err() != nil {
		return fmt.Errorf("%w after %v", errAttemptTimeout, c.timeout)
	}
	// *url.Error repeats the method and the whole URL, query included;
	// Error.Op already says what was asked.
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// readErrorBody returns the first part of an error answer as one line.
func readErrorBody(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, maxErrorBody))
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Join(strings.Fields(s), " ")
	if len(b) == maxErrorBody {
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += " …"
	}
	return s
}

// checkContentType returns an ErrProtocol error unless the answer's media
// type is want.
func checkContentType(resp *http.Response, want string) error {
	ct := resp.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	if strings.TrimSpace(ct) != want {
		return fmt.Errorf("%w: content type %q, want %q", ErrProtocol, ct, want)
	}
	return nil
}
