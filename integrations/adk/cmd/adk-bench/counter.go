package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// counter is an http.RoundTripper that counts the requests (round trips)
// the Trails client sends, those of them that write (each a commit of the
// store: a SPARQL update, a Graph Store write), the bytes it sends and
// receives, and, while
// recording, keeps the bodies of its SPARQL updates and conditional
// patches (for the floor). It is
// safe for concurrent use.
type counter struct {
	requests atomic.Int64
	writes   atomic.Int64
	sent     atomic.Int64
	received atomic.Int64
	next     http.RoundTripper

	mu        sync.Mutex
	recording bool
	updates   []string
	kinds     map[string][]time.Duration // while recording: each request's time by kind, until its body is closed
}

// newCounter returns a counter over a transport tuned as the kg client's
// own (many small requests to one host, 32 idle connections kept).
func newCounter() *counter {
	return &counter{next: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
	}}
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	if isWrite(r) {
		c.writes.Add(1)
	}
	if r.ContentLength > 0 {
		c.sent.Add(r.ContentLength)
	}
	c.mu.Lock()
	rec := c.recording
	c.mu.Unlock()
	kind := r.Method + " " + r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	if rec {
		text := r.URL.Query().Get("query")
		if text == "" && r.GetBody != nil {
			if rc, err := r.GetBody(); err == nil {
				b, _ := io.ReadAll(rc)
				rc.Close()
				text = string(b)
			}
		}
		if name := requestName(text); name != "" {
			kind += " (" + name + ")"
		}
		if isWrite(r) && !strings.HasSuffix(r.URL.Path, "/data") && !strings.HasSuffix(r.URL.Path, "/store") {
			c.mu.Lock()
			c.updates = append(c.updates, text)
			c.mu.Unlock()
		}
	}
	t0 := time.Now()
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		cb := &countingBody{ReadCloser: resp.Body, n: &c.received}
		if rec {
			cb.done = func() { c.took(kind, time.Since(t0)) }
		}
		resp.Body = cb
	}
	return resp, err
}

// isWrite reports whether r writes to the store, in one transaction and
// one commit: a SPARQL update (Fuseki's /update, Oxigraph's /update) or a
// Graph Store write (/data, /store) other than a GET or HEAD.
func isWrite(r *http.Request) bool {
	end := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	switch end {
	case "update", "conditional-patch":
		return true
	case "data", "store":
		return r.Method != http.MethodGet && r.Method != http.MethodHead
	}
	return false
}

// took records that a request of kind took d, while recording.
func (c *counter) took(kind string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recording {
		c.kinds[kind] = append(c.kinds[kind], d)
	}
}

// record starts keeping update bodies and request kinds, dropping those
// kept before.
func (c *counter) record() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recording, c.updates, c.kinds = true, nil, map[string][]time.Duration{}
}

// stop stops recording and returns the update bodies and the times of
// the requests by kind ("POST update (append)", "GET query (chain)",
// ...: method, endpoint and the query's name) since record.
func (c *counter) stop() ([]string, map[string][]time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recording = false
	return c.updates, c.kinds
}

// snapshot returns the counts so far.
func (c *counter) snapshot() traffic {
	return traffic{trips: c.requests.Load(), writes: c.writes.Load(), sent: c.sent.Load(), received: c.received.Load()}
}

// traffic is what a client sent and received: requests, the writes among
// them, bytes.
type traffic struct {
	trips, writes, sent, received int64
}

func (t traffic) minus(u traffic) traffic {
	return traffic{trips: t.trips - u.trips, writes: t.writes - u.writes, sent: t.sent - u.sent, received: t.received - u.received}
}

// countingBody counts the bytes read from a response body and calls done
// (if set) once when it is closed.
type countingBody struct {
	io.ReadCloser
	n    *atomic.Int64
	done func()
}

func (b *countingBody) Close() error {
	err := b.ReadCloser.Close()
	if b.done != nil {
		b.done()
		b.done = nil
	}
	return err
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// requestName names a request by its SPARQL text: the name the text
// gives itself (queryName), else "group commit" for an update carrying
// more than one write (members) and "checks" for the query that asks a
// batch's outcomes (session's checks: ?trailsMember); a conditional
// patch is a "group commit" of several records or an "append"; "" for
// others.
func requestName(text string) string {
	if strings.HasPrefix(text, patchMagic) {
		if recs, err := patchRecords(text); err == nil && len(recs) > 1 {
			return "group commit"
		}
		return "append"
	}
	switch name := queryName(text); {
	case name != "":
		return name
	case strings.Contains(text, "?trailsMember"):
		return "checks"
	case len(members(text)) > 1:
		return "group commit"
	}
	return ""
}

// queryName returns the name a request's SPARQL text gives itself in its
// first comment ("# structure: ..." names it structure), "" if none.
func queryName(text string) string {
	first, _, _ := strings.Cut(text, "\n")
	name, _, ok := strings.Cut(strings.TrimPrefix(first, "# "), ":")
	if !ok || !strings.HasPrefix(first, "# ") || strings.ContainsAny(name, " \t") {
		return ""
	}
	return name
}
