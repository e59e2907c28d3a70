package witness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// maxProofLines is the most consistency proof lines a cosign request
// carries (c2sp.org/tlog-witness).
const maxProofLines = 63

// ConflictError is a cosigner's answer that the old size of a cosign
// request is not the size it last cosigned for the log (HTTP 409): the
// log asks again from Size. Fork is set when the cosigner cosigned a
// checkpoint of the request's size with another root hash: the log was
// forked, and no later request can be cosigned.
type ConflictError struct {
	Origin string
	Size   uint64 // the size the cosigner last cosigned
	Fork   bool
}

// Error says what the cosigner holds.
func (e *ConflictError) Error() string {
	if e.Fork {
		return fmt.Sprintf("cosigner: %q: another checkpoint of size %d was cosigned (a forked log)", clip(e.Origin), e.Size)
	}
	return fmt.Sprintf("cosigner: %q: last cosigned at size %d", clip(e.Origin), e.Size)
}

// Unwrap returns ErrConflict, and ErrInconsistent for a fork.
func (e *ConflictError) Unwrap() []error {
	if e.Fork {
		return []error{ErrConflict, ErrInconsistent}
	}
	return []error{ErrConflict}
}

// Cosigner is an independent witness of other witnesses' logs: it cosigns
// a log's checkpoint only after verifying a consistency proof from the
// last checkpoint it cosigned for that log, which it keeps on disk. So a
// log operator who shows two parties two different logs of one origin
// gets at most one of them cosigned by each Cosigner: an auditor that
// requires its cosignature (VerifyCosignatures) sees the fork.
//
// It answers the add-checkpoint call of c2sp.org/tlog-witness, and its
// cosignatures are cosignature/v1 (c2sp.org/tlog-cosignature), as the
// transparency-dev witnesses': a Server can ask a transparency-dev
// witness, and a Cosigner can serve another tlog-witness client.
//
//	POST /add-checkpoint   "old N", the proof lines, an empty line, a checkpoint
//	GET  /metrics          Prometheus text format
//
// It answers 404 for an origin it does not know (ErrUnknownOrigin), 403
// for a checkpoint that no key it has for the origin signed, 400 for a
// malformed request or an old size past the checkpoint's, 409 with the
// size it holds (Content-Type text/x.tlog.size) when the old size is not
// it or when it cosigned another root of that size (a *ConflictError),
// 422 when the consistency proof fails (ErrInconsistent), and 200 with
// its cosignature line otherwise.
//
// Its state is a directory with one file per origin, the last checkpoint
// it cosigned, replaced by rename under a lock on the directory's "lock"
// file, so that several processes may share it. A Cosigner is safe for
// concurrent use.
type Cosigner struct {
	signer note.Signer
	logs   map[string][]note.Verifier
	state  string
	log    *slog.Logger
	mu     sync.Mutex
	lock   *os.File
	m      metrics
	mux    *http.ServeMux
}

// CosignerConfig is what a Cosigner takes.
type CosignerConfig struct {
	// Signer makes the cosignatures: NewCosignatureSigner of the
	// cosigner's own key, which no log operator holds.
	Signer note.Signer
	// Logs are the keys of the logs it witnesses; a log's origin is its
	// key's name (a Dir's checkpoints are of origin its key's name).
	Logs []note.Verifier
	// State is the directory that keeps, per log, the last checkpoint
	// cosigned; created if needed.
	State string
	// Logger logs each cosignature and refusal; slog.Default() when nil.
	Logger *slog.Logger
}

// NewCosigner returns a Cosigner. It returns ErrMalformed for a config
// without a signer, logs or state directory, and the error of creating
// the state directory.
func NewCosigner(cfg CosignerConfig) (*Cosigner, error) {
	if cfg.Signer == nil || len(cfg.Logs) == 0 || cfg.State == "" {
		return nil, fmt.Errorf("new cosigner: %w: want a signer, at least one log key and a state directory", ErrMalformed)
	}
	if err := os.MkdirAll(cfg.State, 0o755); err != nil {
		return nil, fmt.Errorf("new cosigner: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.State, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("new cosigner: %w", err)
	}
	c := &Cosigner{signer: cfg.Signer, logs: map[string][]note.Verifier{}, state: cfg.State, log: cfg.Logger, lock: lock, mux: http.NewServeMux()}
	if c.log == nil {
		c.log = slog.Default()
	}
	for _, v := range cfg.Logs {
		c.logs[v.Name()] = append(c.logs[v.Name()], v)
	}
	c.m.define("trails_cosigner_cosigned_total", "counter", "Checkpoints cosigned.")
	c.m.define("trails_cosigner_refused_total", "counter", "Cosign requests refused, by reason.")
	c.mux.HandleFunc("POST /add-checkpoint", c.serveAdd)
	c.mux.Handle("GET /metrics", &c.m)
	return c, nil
}

// Close releases the state directory's lock file.
func (c *Cosigner) Close() error { return c.lock.Close() }

// ServeHTTP answers the routes listed on Cosigner.
func (c *Cosigner) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.mux.ServeHTTP(w, r) }

// AddCheckpoint cosigns signed, a log's checkpoint, given p, the
// consistency proof from old, the size the caller believes the Cosigner
// last cosigned for the log. It returns the cosignature line(s), each
// ending in a newline, after storing the checkpoint as the log's latest.
//
// It returns ErrUnknownOrigin for a log it does not witness,
// ErrUnknownKey or ErrBadSignature when no key of the log signed it,
// ErrMalformed for a checkpoint that does not parse, an old size past it
// or a proof over 63 hashes, a *ConflictError (ErrConflict) when old is
// not the size it last cosigned or it cosigned another root of this size,
// and ErrInconsistent when p does not prove that the checkpoint extends
// the last one it cosigned.
func (c *Cosigner) AddCheckpoint(ctx context.Context, old uint64, p [][]byte, signed []byte) ([]byte, error) {
	sigs, err := c.addCheckpoint(ctx, old, p, signed)
	if err != nil {
		return nil, fmt.Errorf("add checkpoint: %w", err)
	}
	return sigs, nil
}

func (c *Cosigner) addCheckpoint(ctx context.Context, old uint64, p [][]byte, signed []byte) ([]byte, error) {
	text, _, err := splitNote(signed)
	if err != nil {
		return nil, err
	}
	var cp log.Checkpoint
	if _, err := cp.Unmarshal([]byte(text)); err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %w", ErrMalformed, err)
	}
	keys, ok := c.logs[cp.Origin]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownOrigin, clip(cp.Origin))
	}
	if _, err := openNote(signed, note.VerifierList(keys...)); err != nil {
		return nil, err
	}
	switch {
	case old > cp.Size:
		return nil, fmt.Errorf("%w: old size %d past the checkpoint's %d", ErrMalformed, old, cp.Size)
	case len(p) > maxProofLines:
		return nil, fmt.Errorf("%w: %d proof lines, at most %d", ErrMalformed, len(p), maxProofLines)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := lockFile(ctx, c.lock, true); err != nil {
		return nil, err
	}
	defer unlockFile(c.lock)
	file := filepath.Join(c.state, stateFile(cp.Origin))
	latest := log.Checkpoint{Origin: cp.Origin, Hash: hasher.EmptyRoot()}
	if b, err := os.ReadFile(file); err == nil {
		t, _, err := splitNote(b)
		if err == nil {
			_, err = latest.Unmarshal([]byte(t))
		}
		if err != nil {
			return nil, fmt.Errorf("state of %q: %w", clip(cp.Origin), ErrCorrupt)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if old != latest.Size {
		return nil, &ConflictError{Origin: cp.Origin, Size: latest.Size}
	}
	if old == cp.Size && old > 0 {
		if len(p) > 0 {
			return nil, fmt.Errorf("%w: a proof between checkpoints of one size", ErrInconsistent)
		}
		if !bytes.Equal(latest.Hash, cp.Hash) {
			return nil, &ConflictError{Origin: cp.Origin, Size: latest.Size, Fork: true}
		}
	} else if old > 0 || len(p) > 0 {
		if err := VerifyConsistency(latest, cp, p); err != nil {
			return nil, err
		}
	}
	if err := writeFile(c.state, stateFile(cp.Origin), signed); err != nil {
		return nil, err
	}
	n, err := note.Sign(&note.Note{Text: text}, c.signer)
	if err != nil {
		return nil, err
	}
	_, sigs, err := splitNote(n)
	if err != nil {
		return nil, err
	}
	c.m.add("trails_cosigner_cosigned_total", 1)
	c.log.Info("cosigner: cosigned", "origin", cp.Origin, "size", cp.Size, "from", old)
	return []byte(strings.Join(sigs, "\n") + "\n"), nil
}

// stateFile names the file that keeps origin's last cosigned checkpoint.
func stateFile(origin string) string {
	h := sha256.Sum256([]byte(origin))
	return "log-" + hex.EncodeToString(h[:16])
}

// serveAdd answers add-checkpoint.
func (c *Cosigner) serveAdd(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxEntrySize))
	if err != nil {
		c.refuse(w, r, fmt.Errorf("%w: %w", ErrTooLarge, err))
		return
	}
	old, p, signed, err := parseAddCheckpoint(body)
	if err != nil {
		c.refuse(w, r, err)
		return
	}
	sigs, err := c.AddCheckpoint(r.Context(), old, p, signed)
	var conflict *ConflictError
	if errors.As(err, &conflict) {
		c.m.add("trails_cosigner_refused_total", 1, "reason", "conflict")
		c.log.Warn("cosigner: refused", "remote", r.RemoteAddr, "err", err)
		w.Header().Set("Content-Type", "text/x.tlog.size")
		w.Header().Set(errorHeader, "conflict")
		if conflict.Fork {
			w.Header().Set(errorHeader, "fork")
		}
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, strconv.FormatUint(conflict.Size, 10)+"\n")
		return
	}
	if err != nil {
		c.refuse(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(sigs)
}

// refuse answers err and counts and logs it.
func (c *Cosigner) refuse(w http.ResponseWriter, r *http.Request, err error) {
	code := writeError(w, err)
	c.m.add("trails_cosigner_refused_total", 1, "reason", code)
	level := slog.LevelWarn
	if code == "internal" {
		level = slog.LevelError
	}
	c.log.Log(r.Context(), level, "cosigner: refused", "remote", r.RemoteAddr, "reason", code, "err", err)
}

// parseAddCheckpoint reads an add-checkpoint request body.
func parseAddCheckpoint(body []byte) (old uint64, p [][]byte, signed []byte, err error) {
	line, rest, ok := bytes.Cut(body, []byte("\n"))
	s, found := strings.CutPrefix(string(line), "old ")
	if !ok || !found || (len(s) > 1 && s[0] == '0') {
		return 0, nil, nil, fmt.Errorf("%w: want the line \"old N\" first", ErrMalformed)
	}
	if old, err = strconv.ParseUint(s, 10, 64); err != nil {
		return 0, nil, nil, fmt.Errorf("%w: old size %q", ErrMalformed, clip(s))
	}
	for {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return 0, nil, nil, fmt.Errorf("%w: no empty line before the checkpoint", ErrMalformed)
		}
		if len(line) == 0 {
			break
		}
		h, err := base64.StdEncoding.DecodeString(string(line))
		if err != nil || len(h) != hasher.Size() {
			return 0, nil, nil, fmt.Errorf("%w: proof line %q", ErrMalformed, clip(string(line)))
		}
		if len(p) == maxProofLines {
			return 0, nil, nil, fmt.Errorf("%w: over %d proof lines", ErrMalformed, maxProofLines)
		}
		p = append(p, h)
	}
	return old, p, rest, nil
}

// CosignerClient asks a cosigner (a Cosigner, or any c2sp.org/tlog-witness
// witness) to cosign checkpoints. It is safe for concurrent use.
type CosignerClient struct {
	// URL is the cosigner's submission prefix, e.g.
	// "http://cosigner.internal:7381"; add-checkpoint is under it.
	URL string
	// HTTP sends the requests; one with a 30-second time limit when nil.
	HTTP *http.Client
}

// AddCheckpoint asks the cosigner to cosign signed, with p the consistency
// proof from old, the size it last cosigned for the log (0 the first
// time), and returns the signature lines it answered, unverified (the
// caller keeps those a cosigner key it trusts verifies). It returns a
// *RemoteError wrapping a *ConflictError (ErrConflict; ErrInconsistent
// too for a fork) when the cosigner holds another size, or wrapping
// ErrUnknownOrigin, ErrUnknownKey, ErrInconsistent, ErrMalformed or
// ErrUnavailable.
func (c *CosignerClient) AddCheckpoint(ctx context.Context, old uint64, p [][]byte, signed []byte) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("old " + strconv.FormatUint(old, 10) + "\n")
	for _, h := range p {
		b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
	}
	b.WriteString("\n")
	b.Write(signed)
	req, err := requestCtx(ctx, http.MethodPost, strings.TrimSuffix(c.URL, "/")+"/add-checkpoint", b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("cosign: %w", err)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTPClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("cosign %s: %w", req.URL.Redacted(), cerr)
		}
		return nil, &RemoteError{Op: "cosign", URL: req.URL.Redacted(), Err: fmt.Errorf("%w: %w", ErrUnavailable, err)}
	}
	if resp.StatusCode == http.StatusConflict {
		body, _ := readBody("cosign", resp, 64)
		size, err := strconv.ParseUint(strings.TrimSpace(string(body)), 10, 64)
		if err != nil {
			return nil, &RemoteError{Op: "cosign", URL: req.URL.Redacted(), Status: resp.StatusCode, Err: fmt.Errorf("%w: 409 with size %q", ErrMalformed, clip(string(body)))}
		}
		var cp log.Checkpoint
		t, _, _ := splitNote(signed)
		cp.Unmarshal([]byte(t))
		fork := resp.Header.Get(errorHeader) == "fork" || (size == old && old == cp.Size)
		return nil, &RemoteError{Op: "cosign", URL: req.URL.Redacted(), Status: resp.StatusCode, Err: &ConflictError{Origin: cp.Origin, Size: size, Fork: fork}}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, remoteError("cosign", resp)
	}
	return readBody("cosign", resp, MaxEntrySize)
}
