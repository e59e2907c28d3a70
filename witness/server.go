package witness

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// Server is a witness as a process of its own: an http.Handler over a Dir
// opened with the witness's key, which writers reach with a Client. The
// witness key stays with it: writers append statements over HTTP with
// their own keys only, and everyone reads checkpoints the Server signed.
//
// It takes an entry only when it is a statement that a writer key of its
// key list signed, dated in that key's window (ErrUnknownKey,
// ErrBadSignature, ErrOutsideWindow: HTTP 403), of at most MaxEntrySize
// bytes (ErrTooLarge: 413). No request makes it sign: it signs a
// checkpoint when its operator calls Sign (trails-admin witness serve
// does, every --checkpoint-every), and then asks its cosigners
// (c2sp.org/tlog-witness, see Cosigner) to cosign it, keeping their
// cosignatures with the checkpoint. Its routes:
//
//	POST /add                                 an entry; answers its index, in decimal
//	GET  /checkpoint                          the last checkpoint signed, with its cosignatures
//	GET  /entry/{index}                       an entry's bytes
//	GET  /proof/inclusion?index=I&size=N      RFC 6962 proof hashes, base64, one a line
//	GET  /proof/consistency?from=M&to=N       likewise
//	GET  /metrics                             Prometheus text format
//
// An error answers a status and the header Trails-Witness-Error naming the
// error (Client maps it back to this package's sentinel). Whoever reaches
// the Server reads the whole log: put it where auditors, not the public,
// reach it, or behind a proxy that authenticates them.
//
// A Server is safe for concurrent use.
type Server struct {
	d         *Dir
	keys      *KeyList
	verifiers note.Verifiers // keys.Verifiers(), made once
	log       *slog.Logger
	mux       *http.ServeMux
	m         metrics
	cosigners []*cosignee
	signMu    sync.Mutex // one Sign at a time
}

// cosignee is a cosigner a Server asks, and what it knows of it.
type cosignee struct {
	c    *CosignerClient
	size uint64 // the size it last cosigned for this log, as far as known
	done string // the text of the checkpoint it last cosigned
}

// ServerConfig is what a Server takes besides its Dir.
type ServerConfig struct {
	// Keys lists the writer keys whose statements the Server takes, and
	// the cosigner keys whose cosignatures it keeps. Required.
	Keys *KeyList
	// Cosigners are the cosigners (tlog-witness servers) Sign asks to
	// cosign each new checkpoint.
	Cosigners []*CosignerClient
	// Logger logs each refusal, checkpoint and cosigner failure;
	// slog.Default() when nil.
	Logger *slog.Logger
}

// NewServer returns a Server over d, which must have been opened with
// OpenDir (with the witness's key). It returns ErrReadOnly for a Dir
// opened by OpenDirReadOnly and ErrMalformed when cfg has no Keys.
func NewServer(d *Dir, cfg ServerConfig) (*Server, error) {
	if d.signer == nil {
		return nil, fmt.Errorf("new server: %w: the Dir has no witness key", ErrReadOnly)
	}
	if cfg.Keys == nil {
		return nil, fmt.Errorf("new server: %w: no key list", ErrMalformed)
	}
	s := &Server{d: d, keys: cfg.Keys, verifiers: cfg.Keys.Verifiers(), log: cfg.Logger, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.Default()
	}
	for _, c := range cfg.Cosigners {
		s.cosigners = append(s.cosigners, &cosignee{c: c})
	}
	s.m.define("trails_witness_entries_added_total", "counter", "Entries appended to the log.")
	s.m.define("trails_witness_entries_refused_total", "counter", "Entries refused, by reason.")
	s.m.define("trails_witness_checkpoints_signed_total", "counter", "Checkpoints signed (Sign calls that found the log grown).")
	s.m.define("trails_witness_checkpoint_size", "gauge", "Entries the last checkpoint covers.")
	s.m.define("trails_witness_cosign_failures_total", "counter", "Cosign requests that failed, by cosigner.")
	s.mux.HandleFunc("POST /add", s.add)
	s.mux.HandleFunc("GET /checkpoint", s.checkpoint)
	s.mux.HandleFunc("GET /entry/{index}", s.entry)
	s.mux.HandleFunc("GET /proof/inclusion", s.inclusion)
	s.mux.HandleFunc("GET /proof/consistency", s.consistency)
	s.mux.Handle("GET /metrics", &s.m)
	return s, nil
}

// ServeHTTP answers the routes listed on Server.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Sign signs a checkpoint of the whole log if it grew since the last one
// (Dir.Checkpoint), asks each cosigner that has not cosigned it to do so,
// keeps the cosignatures that a cosigner key of the key list verifies
// (Dir.AddCosignatures), and returns the checkpoint with them. A cosigner
// that fails is logged and asked again at the next Sign; Sign fails only
// when the Dir does (the errors of Dir.Checkpoint).
func (s *Server) Sign(ctx context.Context) ([]byte, error) {
	s.signMu.Lock()
	defer s.signMu.Unlock()
	before, _ := s.d.LastCheckpoint(ctx)
	signed, err := s.d.Checkpoint(ctx)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	text, _, err := splitNote(signed)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	var cp log.Checkpoint
	if _, err := cp.Unmarshal([]byte(text)); err != nil {
		return nil, fmt.Errorf("sign: %w: %w", ErrMalformed, err)
	}
	if before == nil || !strings.HasPrefix(string(before), text+"\n") {
		s.m.add("trails_witness_checkpoints_signed_total", 1)
		s.log.Info("witness: signed a checkpoint", "size", cp.Size)
	}
	s.m.set("trails_witness_checkpoint_size", float64(cp.Size))
	for _, c := range s.cosigners {
		if c.done == text {
			continue
		}
		sigs, err := s.cosign(ctx, c, signed, cp)
		if err != nil {
			s.m.add("trails_witness_cosign_failures_total", 1, "cosigner", c.c.URL)
			s.log.Warn("witness: cosigner refused or failed", "cosigner", c.c.URL, "size", cp.Size, "err", err)
			continue
		}
		if err := s.d.AddCosignatures(ctx, []byte(text+"\n"+string(sigs))); err != nil {
			if errors.Is(err, ErrStale) {
				continue // a newer checkpoint was signed; the next Sign asks for it
			}
			return nil, fmt.Errorf("sign: %w", err)
		}
		c.done = text
	}
	signed, err = s.d.LastCheckpoint(ctx)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return signed, nil
}

// cosign asks c to cosign signed (of cp), from the size c last cosigned;
// when c answers that it is at another size, once more from that one. It
// returns the signature lines that a cosigner key of s.keys verifies.
func (s *Server) cosign(ctx context.Context, c *cosignee, signed []byte, cp log.Checkpoint) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		if c.size > cp.Size {
			return nil, fmt.Errorf("cosign: %w: the cosigner cosigned size %d of this log, which has %d entries", ErrRollback, c.size, cp.Size)
		}
		p, err := s.d.ConsistencyProof(ctx, c.size, cp.Size)
		if err != nil {
			return nil, fmt.Errorf("cosign: %w", err)
		}
		sigs, err := c.c.AddCheckpoint(ctx, c.size, p, signed)
		var conflict *ConflictError
		if errors.As(err, &conflict) && attempt == 0 {
			c.size = conflict.Size
			continue
		}
		if err != nil {
			return nil, err
		}
		text, _, _ := splitNote(signed)
		var kept []byte
		for _, line := range strings.SplitAfter(string(sigs), "\n") {
			if line == "" {
				continue
			}
			if VerifyCosignatures([]byte(text+"\n"+line), s.keys.CosignerVerifiers(), 1) == nil {
				kept = append(kept, line...)
			}
		}
		if kept == nil {
			return nil, fmt.Errorf("cosign: %w: no cosignature by a cosigner key of the key list", ErrCosignatures)
		}
		c.size = cp.Size
		return kept, nil
	}
}

// Run calls Sign now and then every interval until ctx ends, logging its
// errors; it returns nil when ctx ends. An interval <= 0 signs once.
func (s *Server) Run(ctx context.Context, every time.Duration) error {
	if _, err := s.Sign(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("witness: checkpoint", "err", err)
	}
	if every <= 0 {
		return nil
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := s.Sign(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("witness: checkpoint", "err", err)
			}
		}
	}
}

// add takes an entry: a statement signed by a trusted writer key.
func (s *Server) add(w http.ResponseWriter, r *http.Request) {
	entry, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxEntrySize))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		s.refuse(w, r, fmt.Errorf("add: %w: over %d bytes", ErrTooLarge, MaxEntrySize))
		return
	}
	if err != nil {
		s.refuse(w, r, fmt.Errorf("add: %w: reading the entry: %w", ErrMalformed, err))
		return
	}
	st, sig, err := Open(entry, s.verifiers)
	if err != nil {
		s.refuse(w, r, fmt.Errorf("add: %w", err))
		return
	}
	if !s.keys.Trusts(sig, st.Time) {
		s.refuse(w, r, fmt.Errorf("add: %w: key %s+%08x, statement dated %s", ErrOutsideWindow, sig.Name, sig.Hash, st.Time.UTC().Format(time.RFC3339)))
		return
	}
	index, err := s.d.Add(r.Context(), entry)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	s.m.add("trails_witness_entries_added_total", 1)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, strconv.FormatUint(index, 10)+"\n")
}

// refuse answers err and counts and logs the refusal.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	code := writeError(w, err)
	s.m.add("trails_witness_entries_refused_total", 1, "reason", code)
	level := slog.LevelInfo
	if code == "internal" {
		level = slog.LevelError
	}
	s.log.Log(r.Context(), level, "witness: entry refused", "remote", r.RemoteAddr, "reason", code, "err", err)
}

// checkpoint answers the last checkpoint signed.
func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request) {
	signed, err := s.d.LastCheckpoint(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(signed)
}

// entry answers an entry's bytes.
func (s *Server) entry(w http.ResponseWriter, r *http.Request) {
	i, err := strconv.ParseUint(r.PathValue("index"), 10, 64)
	if err != nil {
		s.fail(w, r, fmt.Errorf("entry: %w: index %q", ErrMalformed, clip(r.PathValue("index"))))
		return
	}
	e, err := s.d.Entry(r.Context(), i)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(e)
}

// inclusion answers an inclusion proof.
func (s *Server) inclusion(w http.ResponseWriter, r *http.Request) {
	v, err := uints(r, "index", "size")
	if err == nil {
		var p [][]byte
		if p, err = s.d.InclusionProof(r.Context(), v[0], v[1]); err == nil {
			writeProof(w, p)
			return
		}
	}
	s.fail(w, r, err)
}

// consistency answers a consistency proof.
func (s *Server) consistency(w http.ResponseWriter, r *http.Request) {
	v, err := uints(r, "from", "to")
	if err == nil {
		var p [][]byte
		if p, err = s.d.ConsistencyProof(r.Context(), v[0], v[1]); err == nil {
			writeProof(w, p)
			return
		}
	}
	s.fail(w, r, err)
}

// fail answers err to a read, logging it when it is the server's fault.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if writeError(w, err) == "internal" {
		s.log.Error("witness: read failed", "path", r.URL.Path, "err", err)
	}
}

// uints reads the query parameters names as decimal numbers.
func uints(r *http.Request, names ...string) ([]uint64, error) {
	v := make([]uint64, len(names))
	for i, n := range names {
		x, err := strconv.ParseUint(r.URL.Query().Get(n), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: query parameter %s: want a whole number", ErrMalformed, n)
		}
		v[i] = x
	}
	return v, nil
}

// writeProof writes proof hashes, base64, one a line.
func writeProof(w http.ResponseWriter, p [][]byte) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	var b strings.Builder
	for _, h := range p {
		b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
	}
	io.WriteString(w, b.String())
}

// parseProof reads proof hashes written by writeProof.
func parseProof(b []byte) ([][]byte, error) {
	var p [][]byte
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		h, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(h) != hasher.Size() {
			return nil, fmt.Errorf("%w: proof line %q", ErrMalformed, clip(line))
		}
		p = append(p, h)
	}
	return p, nil
}
