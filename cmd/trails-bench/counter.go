package main

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/trails-kg/trails/internal/proc"
)

// counter is an http.RoundTripper that counts the requests (SPARQL round
// trips) a client sends and the response body bytes it receives. It is
// safe for concurrent use.
type counter struct {
	requests atomic.Int64
	bytes    atomic.Int64
	next     http.RoundTripper
}

func newCounter() *counter {
	return &counter{next: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64, // 16 concurrent readers keep their connections
		IdleConnTimeout:     90 * time.Second,
	}}
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.bytes}
	}
	return resp, err
}

// snapshot returns the counts so far.
func (c *counter) snapshot() (requests, bytes int64) {
	return c.requests.Load(), c.bytes.Load()
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// delayed is an http.RoundTripper that waits d before each request, as a
// network between client and store would (a round trip's latency).
type delayed struct {
	d    time.Duration
	next http.RoundTripper
}

func (t *delayed) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := proc.Sleep(r.Context(), t.d); err != nil {
		return nil, err
	}
	return t.next.RoundTrip(r)
}
