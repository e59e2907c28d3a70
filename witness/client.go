package witness

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Client is a Witness reached over HTTP: a Server, or any server that
// answers its routes. Writers give it to session.WithSigning (it needs
// only Add) and hold no witness key; auditors read the log through it and
// check its checkpoints with the witness's public key (OpenCheckpoint,
// Audit, Heads), and their cosignatures with VerifyCosignatures.
//
// Its Checkpoint returns the last checkpoint the server signed, which may
// cover fewer entries than the log holds: an entry is seen by an auditor
// once a checkpoint covers it.
//
// Every method returns a *RemoteError for an answer other than success
// (wrapping the sentinel the server named: ErrUnknownKey, ErrTooLarge,
// ErrOutOfRange, ErrNoCheckpoint, ...) or when the server cannot be
// reached (ErrUnavailable), and ctx's error when ctx ends. A Client is
// safe for concurrent use.
type Client struct {
	base string
	hc   *http.Client
}

var _ Witness = (*Client)(nil)

// NewClient returns a Client of the witness server at baseURL (http or
// https, e.g. "http://witness.internal:7380"), sending its requests with
// hc (one with a 30-second time limit when nil; give one for TLS client
// certificates or a proxy's credentials). It returns ErrMalformed for a
// URL that is not an absolute http or https URL.
func NewClient(baseURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("new client: %w: witness URL %q: want http://HOST[:PORT][/PATH] or https://...", ErrMalformed, clip(baseURL))
	}
	if hc == nil {
		hc = defaultHTTPClient
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), hc: hc}, nil
}

// URL returns the server's base URL.
func (c *Client) URL() string { return c.base }

// Add sends entry, a signed statement, to the server, and returns its
// index once the server has it on disk. The server refuses an entry that
// no writer key it trusts signed (ErrUnknownKey, ErrBadSignature), signed
// by a key outside its window (ErrOutsideWindow), that is no statement
// (ErrMalformed, ErrUnknownKind), or is over MaxEntrySize (ErrTooLarge).
// On ErrUnavailable the entry may or may not be in the log.
func (c *Client) Add(ctx context.Context, entry []byte) (uint64, error) {
	if len(entry) > MaxEntrySize {
		return 0, fmt.Errorf("add: %w: %d bytes, at most %d", ErrTooLarge, len(entry), MaxEntrySize)
	}
	b, err := c.get(ctx, "add", http.MethodPost, "/add", entry, 64)
	if err != nil {
		return 0, err
	}
	i, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, &RemoteError{Op: "add", URL: c.base + "/add", Status: http.StatusOK, Err: fmt.Errorf("%w: index %q", ErrMalformed, clip(string(b)))}
	}
	return i, nil
}

// Checkpoint returns the last checkpoint the server signed, with the
// cosignatures it collected; ErrNoCheckpoint when it has signed none. The
// caller verifies it (OpenCheckpoint, Audit, VerifyCosignatures).
func (c *Client) Checkpoint(ctx context.Context) ([]byte, error) {
	return c.get(ctx, "checkpoint", http.MethodGet, "/checkpoint", nil, MaxEntrySize)
}

// Entry returns the entry at index; ErrOutOfRange past the log's end. The
// caller checks it against a checkpoint (Heads, VerifyInclusion).
func (c *Client) Entry(ctx context.Context, index uint64) ([]byte, error) {
	return c.get(ctx, "entry "+strconv.FormatUint(index, 10), http.MethodGet, "/entry/"+strconv.FormatUint(index, 10), nil, MaxEntrySize)
}

// InclusionProof returns the proof that the entry at index is in the tree
// of the first size entries (VerifyInclusion checks it); ErrOutOfRange
// unless index < size <= the log's size.
func (c *Client) InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error) {
	return c.proof(ctx, "inclusion proof", fmt.Sprintf("/proof/inclusion?index=%d&size=%d", index, size))
}

// ConsistencyProof returns the proof that the tree of the first to entries
// extends the tree of the first from (VerifyConsistency checks it);
// ErrOutOfRange unless from <= to <= the log's size.
func (c *Client) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	return c.proof(ctx, "consistency proof", fmt.Sprintf("/proof/consistency?from=%d&to=%d", from, to))
}

// proof reads a proof at path.
func (c *Client) proof(ctx context.Context, op, path string) ([][]byte, error) {
	b, err := c.get(ctx, op, http.MethodGet, path, nil, 128*64)
	if err != nil {
		return nil, err
	}
	p, err := parseProof(b)
	if err != nil {
		return nil, &RemoteError{Op: op, URL: c.base + path, Status: http.StatusOK, Err: err}
	}
	return p, nil
}

// get sends a request and returns the answer's body, of at most limit
// bytes.
func (c *Client) get(ctx context.Context, op, method, path string, body []byte, limit int64) ([]byte, error) {
	req, err := requestCtx(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	resp, err := do(c.hc, op, req)
	if err != nil {
		return nil, err
	}
	return readBody(op, resp, limit)
}
