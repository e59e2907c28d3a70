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
)

// request is one logical request; do may send it several times.
type request struct {
	op          string
	method      string
	url         string
	contentType string
	accept      string
	body        []byte
	idempotent  bool
	once        bool // one attempt, whatever the failure
	// handle reads a successful (2xx) answer. It must consume what it needs
	// of the body; do closes it.
	handle func(*http.Response) error
}

// do sends req, retrying it while that is safe, and returns an *Error for
// any failure. A failure of handle is returned as an *Error with the status.
func (c *Client) do(ctx context.Context, req request) error {
	var last *Error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return &Error{Op: req.op, Err: err}
		}
		e := c.attempt(ctx, req)
		if e == nil {
			return nil
		}
		last = e
		if req.once || attempt >= c.maxAttempts || !e.retryable(req.idempotent) {
			return last
		}
		wait := c.backoff << (attempt - 1)
		wait += time.Duration(rand.Int64N(int64(wait)/2 + 1))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return &Error{Op: req.op, Err: fmt.Errorf("%w (after %d attempts; last: %v)", ctx.Err(), attempt, last)}
		case <-t.C:
		}
	}
}

// errAttemptTimeout is the cause of an attempt that ran out of its own time
// while the caller's context was still live.
var errAttemptTimeout = errors.New("attempt timed out")

// attempt sends req once.
func (c *Client) attempt(ctx context.Context, req request) *Error {
	actx := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(actx, req.method, req.url, body)
	if err != nil {
		return &Error{Op: req.op, Err: err}
	}
	if req.contentType != "" {
		hr.Header.Set("Content-Type", req.contentType)
	}
	if req.accept != "" {
		hr.Header.Set("Accept", req.accept)
	}
	hr.Header.Set("User-Agent", c.userAgent)
	if c.username != "" {
		hr.SetBasicAuth(c.username, c.password)
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return &Error{Op: req.op, Err: c.cause(ctx, actx, err)}
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		io.CopyN(io.Discard, resp.Body, 64<<10)
		resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &Error{Op: req.op, Status: resp.StatusCode, Body: readErrorBody(resp.Body)}
	}
	if req.handle != nil {
		if err := req.handle(resp); err != nil {
			if ctx.Err() != nil || actx.Err() != nil {
				return &Error{Op: req.op, Err: c.cause(ctx, actx, err)}
			}
			if errors.Is(err, ErrProtocol) {
				return &Error{Op: req.op, Status: resp.StatusCode, Err: err}
			}
			// A body cut off mid-stream: the store went away.
			return &Error{Op: req.op, Err: err}
		}
	}
	return nil
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
