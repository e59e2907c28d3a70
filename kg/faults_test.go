package kg_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/kg"
)

// These tests put a stand-in HTTP server where the store's faults are
// easier to provoke than with Fuseki: they test the transport's retry,
// timeout and error mapping, not persistence.

func TestUnreachableStoreIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	ct := &countingTransport{next: &http.Transport{}}
	c, err := kg.New(kg.Config{Endpoint: "http://" + addr + "/trails", HTTPClient: &http.Client{Transport: ct},
		MaxAttempts: 3, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		call     func() error
		attempts int64
	}{
		{"ping", func() error { return c.Ping(ctx) }, 1},
		{"select", func() error { _, err := c.Select(ctx, "SELECT * {}"); return err }, 3},
		{"rows", func() error { _, err := c.Rows(ctx, "SELECT * {}"); return err }, 3},
		// A refused connection proves the update never arrived: safe to retry.
		{"update", func() error { return c.Update(ctx, "CLEAR ALL") }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ct.n.Load()
			err := tc.call()
			if !errors.Is(err, kg.ErrUnavailable) {
				t.Fatalf("got %v, want ErrUnavailable", err)
			}
			var kerr *kg.Error
			if !errors.As(err, &kerr) || kerr.Status != 0 || kerr.Err == nil {
				t.Fatalf("got %#v, want a *kg.Error with no status and a cause", err)
			}
			if got := ct.n.Load() - before; got != tc.attempts {
				t.Fatalf("got %d attempts, want %d", got, tc.attempts)
			}
		})
	}
}

// flaky answers 503 to the first fail requests, then 204 / an empty ASK.
func flaky(fail int64) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= fail {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path == "/trails/query" {
			w.Header().Set("Content-Type", "application/sparql-results+json")
			w.Write([]byte(`{"head":{},"boolean":true}`))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return srv, &n
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		fail     int64
		call     func(*kg.Client) error
		wantErr  error
		attempts int64
	}{
		{"ask recovers", 2, func(c *kg.Client) error { _, err := c.Ask(ctx, "ASK {}"); return err }, nil, 3},
		{"ask gives up", 9, func(c *kg.Client) error { _, err := c.Ask(ctx, "ASK {}"); return err }, kg.ErrUnavailable, 4},
		{"idempotent update recovers", 1, func(c *kg.Client) error { return c.Update(ctx, "CLEAR ALL", kg.Idempotent()) }, nil, 2},
		{"plain update is not repeated", 1, func(c *kg.Client) error { return c.Update(ctx, "INSERT DATA {}") }, kg.ErrUnavailable, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, n := flaky(tc.fail)
			defer srv.Close()
			c, err := kg.New(kg.Config{Endpoint: srv.URL + "/trails", Backoff: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			err = tc.call(c)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}
			if got := n.Load(); got != tc.attempts {
				t.Fatalf("got %d attempts, want %d", got, tc.attempts)
			}
		})
	}
}

// stall accepts requests and never answers until the test ends.
func stall(t *testing.T) *httptest.Server {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv
}

func TestContextCancelReturnsPromptly(t *testing.T) {
	srv := stall(t)
	c, err := kg.New(kg.Config{Endpoint: srv.URL + "/trails", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = c.Select(ctx, "SELECT * {}")
	elapsed := time.Since(t0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	if errors.Is(err, kg.ErrUnavailable) {
		t.Fatalf("%v: a caller's deadline is not the store's fault", err)
	}
	t.Logf("returned %v after the deadline", elapsed-100*time.Millisecond)

	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := c.Update(ctx2, "CLEAR ALL"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestAttemptTimeoutIsUnavailable(t *testing.T) {
	srv := stall(t)
	c, err := kg.New(kg.Config{Endpoint: srv.URL + "/trails", Timeout: 50 * time.Millisecond,
		MaxAttempts: 2, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	_, err = c.Ask(context.Background(), "ASK {}")
	if !errors.Is(err, kg.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	t.Logf("2 attempts of 50ms gave up after %v", time.Since(t0))
}

func TestWrongContentTypeIsProtocolError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html>a proxy's login page</html>"))
	}))
	defer srv.Close()
	c, _ := kg.New(kg.Config{Endpoint: srv.URL + "/trails"})
	_, err := c.Select(context.Background(), "SELECT * {}")
	if !errors.Is(err, kg.ErrProtocol) {
		t.Fatalf("got %v, want ErrProtocol", err)
	}
}
