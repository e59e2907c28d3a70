package kg_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

func TestMain(m *testing.M) { fusekitest.Main(m) }

// countingTransport counts the requests that reach the network.
type countingTransport struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(r)
}

// newCounting returns a client of the test dataset whose requests are counted.
func newCounting(tb testing.TB) (*kg.Client, *countingTransport) {
	tb.Helper()
	ct := &countingTransport{next: &http.Transport{}}
	c := fusekitest.Client(tb, kg.Config{
		Endpoint:   fusekitest.Endpoint(tb),
		HTTPClient: &http.Client{Transport: ct},
	})
	return c, ct
}

func TestNewRejectsBadEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  kg.Config
	}{
		{"empty", kg.Config{}},
		{"relative", kg.Config{Endpoint: "localhost:3030/trails"}},
		{"ftp", kg.Config{Endpoint: "ftp://127.0.0.1/trails"}},
		{"query", kg.Config{Endpoint: "http://127.0.0.1:3030/trails?x=1"}},
		{"password without user", kg.Config{Endpoint: "http://127.0.0.1:3030/trails", Password: "p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kg.New(tc.cfg)
			if !errors.Is(err, kg.ErrConfig) {
				t.Fatalf("got %v, want ErrConfig", err)
			}
		})
	}
}

// TestNewEndpointWithoutScheme: an endpoint written without http:// is
// ErrConfig with the URL to write instead (it was url.Parse's "first path
// segment in URL cannot contain colon"), and credentials in it are not
// echoed.
func TestNewEndpointWithoutScheme(t *testing.T) {
	for _, tc := range []struct{ name, endpoint, want string }{
		{"address", "127.0.0.1:3030/trails", "http://127.0.0.1:3030/trails"},
		{"host name", "localhost:3030/trails", "http://localhost:3030/trails"},
		{"credentials", "writer:s3cret@localhost:3030/trails", "http://localhost:3030/trails"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kg.New(kg.Config{Endpoint: tc.endpoint})
			if !errors.Is(err, kg.ErrConfig) {
				t.Fatalf("got %v, want ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want it to suggest %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "segment") {
				t.Errorf("got %q: a password or url.Parse's own words", err)
			}
		})
	}
}

func TestPing(t *testing.T) {
	c := fusekitest.New(t)
	if err := c.Ping(context.Background()); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if got, want := c.Endpoint(), fusekitest.Endpoint(t); got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestUnknownDatasetIsNotFound(t *testing.T) {
	ds, err := url.Parse(fusekitest.Endpoint(t)) // http://HOST:PORT/NAME, or the server's root on Oxigraph
	if err != nil {
		t.Fatal(err)
	}
	ds.Path = "/no-such-dataset"
	ep := ds.String()
	c := fusekitest.Client(t, kg.Config{Endpoint: ep})
	err = c.Ping(context.Background())
	if !errors.Is(err, kg.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
	var kerr *kg.Error
	if !errors.As(err, &kerr) || kerr.Status != http.StatusNotFound || kerr.Op != "ping" {
		t.Fatalf("got %#v, want a *kg.Error with op ping and status 404", err)
	}
}

func TestBadQueryIsBadRequest(t *testing.T) {
	c, ct := newCounting(t)
	_, err := c.Select(context.Background(), "SELECT ?x WHERE { ?x ?y }")
	if !errors.Is(err, kg.ErrBadRequest) {
		t.Fatalf("got %v, want ErrBadRequest", err)
	}
	var kerr *kg.Error
	if !errors.As(err, &kerr) || kerr.Status != http.StatusBadRequest || kerr.Body == "" {
		t.Fatalf("got %#v, want status 400 with the store's parse error in Body", err)
	}
	if got := ct.n.Load(); got != 1 {
		t.Fatalf("got %d requests, want 1: a refused query is not retried", got)
	}
	if errors.Is(err, kg.ErrUnavailable) || errors.Is(err, kg.ErrNotFound) {
		t.Fatalf("%v matches more than one sentinel", err)
	}
}

func TestBadUpdateIsBadRequest(t *testing.T) {
	c := fusekitest.New(t)
	err := c.Update(context.Background(), "INSERT DATA { <urn:a> <urn:b> }")
	if !errors.Is(err, kg.ErrBadRequest) {
		t.Fatalf("got %v, want ErrBadRequest", err)
	}
}

func TestNeverUsesDefaultClient(t *testing.T) {
	saved := http.DefaultClient.Transport
	t.Cleanup(func() { http.DefaultClient.Transport = saved })
	var used atomic.Bool
	http.DefaultClient.Transport = roundTripFunc(func(*http.Request) (*http.Response, error) {
		used.Store(true)
		return nil, errors.New("http.DefaultClient must not be used")
	})
	c := fusekitest.New(t) // nil HTTPClient: the package's own
	if _, err := c.Ask(context.Background(), "ASK {}"); err != nil {
		t.Fatalf("ask: %v", err)
	}
	if used.Load() {
		t.Fatal("the request went through http.DefaultClient")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
