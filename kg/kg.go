// Package kg is the SPARQL transport of Trails: query, update, Graph Store
// and SHACL requests to one dataset of a SPARQL 1.1 store over net/http;
// the store's profile (Store: Fuseki, the default, Oxigraph or Generic)
// says where each request goes and what the store offers. It knows nothing of
// sessions; like database/sql/driver it imports no package of this module
// but internal/telemetry, a leaf that spells the names it reports under.
//
// Each request is an OpenTelemetry span (a no-op until the program
// installs a provider) with the database semantic conventions:
// db.system.name is the store's profile, db.operation.name the query's
// name when the context carries one (the session package names its
// queries), else the kind of request ("update", "select"), server.address
// and server.port; retries are events on it.
//
// A SELECT query runs one way: Client.Rows sends it and returns a Rows that
// hands the solutions over as they arrive (Next, Solution, Err, Close, as
// database/sql's Rows), and Client.Select reads them all into Results.
// Both read tab-separated results; retries never repeat a row the caller
// has seen.
//
// Values enter SPARQL text only as RDF terms serialized by this package (see
// Bind, Term and Data), so no caller formats a value into a query by hand.
package kg

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Default values of Config fields left zero.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMaxAttempts = 4
	DefaultBackoff     = 100 * time.Millisecond
)

// Config configures a Client. Only Endpoint is required, except for the
// Generic store, which needs QueryURL, UpdateURL and GraphStoreURL instead.
type Config struct {
	// Endpoint is the dataset URL, e.g. http://127.0.0.1:3030/trails.
	// Credentials in it (http://user:pw@host/...) are used as Username and
	// Password unless those are set, and are never shown. Where requests go
	// is set by Store: on Fuseki queries go to Endpoint+"/query", updates to
	// "/update", Graph Store requests to "/data" and SHACL validation to
	// "/shacl".
	Endpoint string

	// Store is the store's profile (see Store); "" means Fuseki.
	Store Store

	// QueryURL, UpdateURL and GraphStoreURL, when set, replace the
	// profile's endpoints for SPARQL queries, SPARQL updates and the Graph
	// Store Protocol. The Generic store needs all three.
	QueryURL, UpdateURL, GraphStoreURL string

	// NoUpdateLock sends this client's updates without waiting for the
	// other updates of the process, even to a store whose updates are not
	// serializable (see Store.SerialUpdates). Only for a client whose
	// updates cannot race the others, such as a test that interleaves
	// writes by hand from inside a request.
	NoUpdateLock bool

	// Username and Password, when Username is set, are sent as HTTP basic
	// authentication with every request.
	Username string
	Password string

	// HTTPClient sends the requests. Nil means a client of the package's own
	// (never http.DefaultClient, which other libraries mutate). The client's
	// own Timeout, if any, applies on top of Timeout.
	HTTPClient *http.Client

	// Timeout bounds each attempt of a request; 0 means DefaultTimeout and a
	// negative value means no bound beyond the caller's context. An attempt
	// that runs out of time fails with ErrUnavailable.
	Timeout time.Duration

	// MaxAttempts bounds the attempts of a request that is safe to repeat
	// (queries, Graph Store reads, puts and deletes, and updates marked
	// Idempotent); 0 means DefaultMaxAttempts and 1 disables retries.
	MaxAttempts int

	// Backoff is the wait before the second attempt; it doubles after each
	// further attempt, with jitter. 0 means DefaultBackoff.
	Backoff time.Duration

	// UserAgent is sent as the User-Agent header; empty means "trails-kg".
	UserAgent string
}

// Client sends SPARQL requests to one dataset of a SPARQL 1.1 store. It is safe for
// concurrent use by multiple goroutines.
type Client struct {
	endpoint    string
	queryURL    string
	updateURL   string
	dataURL     string
	shaclURL    string // "" when the store has no SHACL endpoint
	store       Store
	serial      bool // updates wait for the process's others (lockUpdates)
	username    string
	password    string
	hc          *http.Client
	timeout     time.Duration
	maxAttempts int
	backoff     time.Duration
	userAgent   string
	// noTemplates says the dataset has no template-query endpoint (it
	// answered 404 or 405): SelectTemplate then sends bound text.
	noTemplates atomic.Bool
}

// New returns a Client for the dataset at cfg.Endpoint. It sends nothing;
// call Ping to check that the store answers. It returns an error wrapping
// ErrConfig when the endpoint is not an absolute http(s) URL.
func New(cfg Config) (*Client, error) {
	if cfg.Endpoint == "" && cfg.Store == Generic {
		return newClient(cfg, "")
	}
	if !strings.Contains(cfg.Endpoint, "://") && cfg.Endpoint != "" {
		// "127.0.0.1:3030/trails" or "localhost:3030/trails": url.Parse
		// either refuses it with a message about path segments or reads the
		// host as a scheme.
		ep := withoutUserinfo(cfg.Endpoint)
		return nil, fmt.Errorf("%w: endpoint %q has no scheme: want an http(s) dataset URL such as http://%s",
			ErrConfig, ep, strings.TrimPrefix(ep, "//"))
	}
	u, err := url.Parse(strings.TrimRight(cfg.Endpoint, "/"))
	if err != nil {
		return nil, fmt.Errorf("%w: endpoint: %v", ErrConfig, redact(err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: endpoint %q: want an http(s) dataset URL such as http://127.0.0.1:3030/trails", ErrConfig, u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: endpoint %q: a dataset URL has no query or fragment", ErrConfig, u.Redacted())
	}
	if u.User != nil { // credentials in the URL: move them out of it
		if cfg.Username == "" {
			cfg.Username = u.User.Username()
			cfg.Password, _ = u.User.Password()
		}
		u.User = nil
	}
	return newClient(cfg, u.String())
}

// newClient returns the client of cfg, whose endpoint (credentials moved
// out of it) is endpoint.
func newClient(cfg Config, endpoint string) (*Client, error) {
	if cfg.Password != "" && cfg.Username == "" {
		return nil, fmt.Errorf("%w: a password without a username", ErrConfig)
	}
	c := &Client{
		endpoint:    endpoint,
		username:    cfg.Username,
		password:    cfg.Password,
		hc:          cfg.HTTPClient,
		timeout:     cfg.Timeout,
		maxAttempts: cfg.MaxAttempts,
		backoff:     cfg.Backoff,
		userAgent:   cfg.UserAgent,
	}
	if err := c.layout(cfg); err != nil {
		return nil, err
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: newTransport()}
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxAttempts <= 0 {
		c.maxAttempts = DefaultMaxAttempts
	}
	if c.backoff <= 0 {
		c.backoff = DefaultBackoff
	}
	if c.userAgent == "" {
		c.userAgent = "trails-kg"
	}
	return c, nil
}

// redact returns a URL parse error without the URL, which may hold a
// password.
// withoutUserinfo drops the user:password@ of an endpoint written without
// a scheme, which url.Parse cannot take apart, so that no error shows it.
func withoutUserinfo(ep string) string {
	authority, path, slash := strings.Cut(ep, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	if !slash {
		return authority
	}
	return authority + "/" + path
}

func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Endpoint returns the dataset URL the client talks to, without any
// credentials (for a Generic store given no Endpoint, its query URL).
func (c *Client) Endpoint() string { return c.endpoint }

// newTransport returns a transport of the client's own, tuned for many small
// requests to one host.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     false,
	}
}
