package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/integrations/mcp"
	"github.com/trails-kg/trails/internal/exit"
	"github.com/trails-kg/trails/internal/service"
	"github.com/trails-kg/trails/internal/storeflags"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// options are the command line's settings.
type options struct {
	storeflags.Flags        // the connection flags, trails-admin's
	http             string // "": stdio
	metrics          string // --metrics ADDR: serve /metrics there
	logFormat        string // --log-format: text or json
	signKey, witness string // --sign-key, --witness: sign the writes
}

const usageText = `trails-mcp serves a Trails store to MCP clients: list_sessions, show_session,
fork_tree, fork_session, rewind_session, list_audit_queries, run_audit_query.

usage: trails-mcp [--http ADDR] [--endpoint URL] [--store fuseki|oxigraph|generic] [flags]

On stdio by default (what a desktop MCP client starts); with --http ADDR,
streamable HTTP at http://ADDR/mcp (keep ADDR on 127.0.0.1: the server
acts with its own credentials for whoever reaches it).

It logs to stderr with log/slog (--log-format text or json). It serves its
metrics (docs/operations.md) in the Prometheus text format at
http://ADDR/metrics with --metrics ADDR, and with --http at /metrics beside
/mcp.

Read-only credentials (the auditor of fuseki/trails-auth.ttl) are enough
for everything but fork_session and rewind_session, which then answer
with a tool error saying so. With --sign-key FILE --witness URL they sign
what they write (docs/verify.md).

Flags:
`

const exitText = `
Exit codes: 0 ok (stdin closed); 1 failure; 2 usage; 130 interrupted
(SIGINT or SIGTERM: with --http, after the requests in flight ended).

Example (Claude Desktop and other clients start it with these settings):
  TRAILS_USER=auditor TRAILS_PASSWORD=... trails-mcp --endpoint http://127.0.0.1:3030/trails
`

// run runs the command line: it serves until stdin closes (stdio) or ctx
// ends (--http). Diagnostics go to stderr; on stdio, stdout carries the
// protocol alone.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := serve(ctx, args, stdin, stdout, stderr)
	var ue *exit.UsageError
	switch {
	case err == nil:
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "trails-mcp: %s\n", termsafe.Cut(err.Error(), 2000))
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "trails-mcp: interrupted\n")
	default:
		fmt.Fprintf(stderr, "trails-mcp: %s\n", termsafe.Cut(err.Error(), 2000))
	}
	return err
}

func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o := options{
		Flags:   storeflags.FromEnv(),
		signKey: os.Getenv("TRAILS_SIGN_KEY"), witness: os.Getenv("TRAILS_WITNESS"),
		logFormat: storeflags.EnvOr("TRAILS_LOG_FORMAT", "text"),
	}
	fs := flag.NewFlagSet("trails-mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Register(fs, "the store's profile: fuseki, oxigraph or generic ($TRAILS_STORE)",
		"password for HTTP basic auth ($TRAILS_PASSWORD; prefer it: the process list shows flags)")
	fs.StringVar(&o.http, "http", "", "serve streamable HTTP on `ADDR` (such as 127.0.0.1:8765) instead of stdio")
	fs.StringVar(&o.metrics, "metrics", "", "serve the metrics in the Prometheus text format at http://`ADDR`/metrics (such as 127.0.0.1:9464)")
	fs.StringVar(&o.logFormat, "log-format", o.logFormat, "the format of the log on stderr: text or json ($TRAILS_LOG_FORMAT)")
	fs.StringVar(&o.signKey, "sign-key", o.signKey, "sign what fork_session and rewind_session write with the writer key in `FILE` (trails-admin keygen's PREFIX.key); with --witness ($TRAILS_SIGN_KEY)")
	fs.StringVar(&o.witness, "witness", o.witness, "add the signed statements to the witness served at `URL` (trails-admin witness serve); with --sign-key ($TRAILS_WITNESS)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(stdout, fs)
			return nil
		}
		return exit.Usagef("%v; try: trails-mcp -h", err)
	}
	switch {
	case fs.NArg() > 0:
		return exit.Usagef("unexpected argument %s; try: trails-mcp -h", termsafe.Quote(fs.Arg(0)))
	case o.MaxChildren < 0:
		return exit.Usagef("--max-children %d: want a whole number >= 0 (0: no limit); try: trails-mcp -h", o.MaxChildren)
	case o.Timeout <= 0:
		return exit.Usagef("--timeout %v: want a duration > 0, such as 30s; try: trails-mcp -h", o.Timeout)
	}
	for _, a := range []struct{ flag, addr string }{{"--http", o.http}, {"--metrics", o.metrics}} {
		if a.addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(a.addr); err != nil || !validPort(port) {
			return exit.Usagef("%s %s: want HOST:PORT, such as 127.0.0.1:8765; try: trails-mcp -h", a.flag, termsafe.Quote(a.addr))
		}
	}
	logger, err := service.NewLogger(stderr, o.logFormat)
	if err != nil {
		return exit.Usagef("%v; try: trails-mcp -h", err)
	}
	metrics, err := service.Metrics()
	if err != nil {
		return err
	}
	if o.metrics != "" {
		stop, err := serveMetrics(o.metrics, metrics, logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	opts := []mcp.Option{mcp.WithStoreOptions(session.WithMaxChildren(o.MaxChildren))}
	if o.signKey != "" || o.witness != "" {
		sign, err := signing(o.signKey, o.witness)
		if err != nil {
			return err
		}
		opts = append(opts, sign)
	}
	c, err := kg.New(o.Config())
	if err != nil {
		return exit.Usagef("%v; try: trails-mcp -h", err)
	}
	// A client may start the server before the store: say what is wrong,
	// and serve anyway (each tool reports the store's errors itself).
	if err := c.Ping(ctx); err != nil {
		logger.Warn("the store does not answer yet", "endpoint", c.Endpoint(), "err", termsafe.Cut(err.Error(), 500))
	}
	srv := mcp.NewServer(c, opts...)
	if o.http == "" {
		err := srv.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopCloser{stdout}})
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	return serveHTTP(ctx, srv, o.http, metrics, logger)
}

// serveMetrics serves handler at /metrics on addr until stop is called.
func serveMetrics(addr string, handler http.Handler, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", termsafe.Quote(addr), err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	logger.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() { hs.Close() }, nil
}

// serveHTTP serves srv over streamable HTTP at /mcp on addr until ctx
// ends, then stops: it closes the MCP sessions (whose event streams
// would otherwise stay open), gives requests in flight a few seconds and
// closes what is left.
func serveHTTP(ctx context.Context, srv *sdk.Server, addr string, metrics http.Handler, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", termsafe.Quote(addr), err) // in use, say: a failure, not usage
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	mux.Handle("/metrics", metrics)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "metrics", "http://"+ln.Addr().String()+"/metrics")
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	for ss := range srv.Sessions() {
		ss.Close()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		logger.Warn("requests still open after 5s, closed", "err", err)
		hs.Close()
	}
	return ctx.Err()
}

// validPort reports whether port is a TCP port number (0: any free one).
func validPort(port string) bool {
	n, err := strconv.Atoi(port)
	return err == nil && n >= 0 && n <= 65535
}

// nopCloser is stdout for the transport, which must not close it.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func writeUsage(w io.Writer, fs *flag.FlagSet) {
	io.WriteString(w, usageText)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	io.WriteString(w, exitText)
}

// signing returns the option that makes the server sign its writes with
// the writer key in file keyFile into the witness served at witnessURL,
// or a usage error for one without the other, a file that is not a
// secret note key, or a witness that is not an http(s) URL (a witness
// directory cannot be appended to without the witness's own key).
func signing(keyFile, witnessURL string) (mcp.Option, error) {
	if keyFile == "" || witnessURL == "" {
		return nil, exit.Usagef("--sign-key and --witness go together ($TRAILS_SIGN_KEY, $TRAILS_WITNESS): give both to sign what the server writes, or neither; try: trails-mcp -h")
	}
	text, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, exit.Usagef("--sign-key: %v", err)
	}
	signer, err := note.NewSigner(strings.TrimSpace(string(text)))
	if err != nil {
		return nil, exit.Usagef("--sign-key %s: not a secret note key (PRIVATE+KEY+..., as trails-admin keygen writes to PREFIX.key): %v", termsafe.Quote(keyFile), err)
	}
	w, err := witness.NewClient(witnessURL, nil)
	if err != nil {
		return nil, exit.Usagef("--witness: %v (the URL of trails-admin witness serve; a witness directory cannot be appended to without the witness's key)", err)
	}
	return mcp.WithSigning(signer, w), nil
}
