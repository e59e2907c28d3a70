package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// witnessCmd is "witness serve" and "witness cosign": the witness as a
// process of its own, which alone holds its key (witness.Server), and an
// independent cosigner of its checkpoints (witness.Cosigner).
type witnessCmd struct {
	dir, key, keys, listen, state string
	every                         time.Duration
	cosigners, logs               listFlag
}

func (*witnessCmd) name() string { return "witness" }
func (*witnessCmd) usage() string {
	return "serve --dir DIR --key FILE --keys FILE [--listen ADDR] [--checkpoint-every D] [--cosigner URL]...\n" +
		"       trails-admin witness cosign --state DIR --key FILE --log FILE... [--listen ADDR]"
}
func (*witnessCmd) synopsis() string {
	return "serve a witness log over HTTP, holding the witness key: writers append with their own keys only (serve); or cosign another witness's checkpoints after checking they extend the last ones cosigned (cosign)"
}
func (*witnessCmd) example() string {
	return "trails-admin witness serve --dir /srv/trails-witness --key witness.key --keys keys.txt --listen :7380 --cosigner http://cosigner.internal:7381\n" +
		"trails-admin witness cosign --state /srv/trails-cosigner --key cosigner.key --log witness.pub --listen :7381"
}
func (c *witnessCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.dir, "dir", "", "serve: the witness directory `DIR`, created with an empty log if new")
	fs.StringVar(&c.key, "key", "", "the `FILE` holding the secret key: the witness's (serve) or the cosigner's (cosign)")
	fs.StringVar(&c.keys, "keys", "", "serve: the key list `FILE`: its writer lines are the keys whose statements the witness takes, its cosigner lines the keys whose cosignatures it keeps")
	fs.StringVar(&c.listen, "listen", "", "the `ADDR` to listen on (default 127.0.0.1:7380 for serve, 127.0.0.1:7381 for cosign)")
	fs.DurationVar(&c.every, "checkpoint-every", time.Second, "serve: sign a checkpoint every `D` when the log grew (and ask the cosigners to cosign it); 0: only at start, and when the operator runs trails-admin checkpoint")
	fs.Var(&c.cosigners, "cosigner", "serve: a cosigner's `URL` (tlog-witness add-checkpoint under it) to ask for each new checkpoint; repeat for several")
	fs.StringVar(&c.state, "state", "", "cosign: the `DIR` keeping the last checkpoint cosigned per log")
	fs.Var(&c.logs, "log", "cosign: a `FILE` holding a witnessed log's public key (keygen's PREFIX.pub; the log's origin is its name); repeat for several")
}

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func (c *witnessCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 || (args[0] != "serve" && args[0] != "cosign") {
		return usageErrorf("witness takes serve or cosign; try: trails-admin witness -h")
	}
	logger := slog.New(slog.NewTextHandler(a.stderr, nil))
	if args[0] == "cosign" {
		return c.cosign(ctx, a, logger)
	}
	return c.serve(ctx, a, logger)
}

// serve runs a witness.Server until ctx ends.
func (c *witnessCmd) serve(ctx context.Context, a *app, logger *slog.Logger) error {
	if c.dir == "" || c.key == "" || c.keys == "" || c.state != "" || len(c.logs) > 0 {
		return usageErrorf("witness serve needs --dir, --key and --keys (not --state or --log); try: trails-admin witness -h")
	}
	if c.every < 0 {
		return usageErrorf("witness serve: --checkpoint-every %v: want a duration >= 0; try: trails-admin witness -h", c.every)
	}
	signer, err := readSigner("witness serve", c.key)
	if err != nil {
		return err
	}
	text, err := os.ReadFile(c.keys)
	if err != nil {
		return usageErrorf("witness serve: --keys: %v", err)
	}
	keys, err := witness.ParseKeyList(text)
	if err != nil {
		return usageErrorf("witness serve: --keys %s: %v", c.keys, err)
	}
	if keys.Witness != nil && (keys.Witness.Name() != signer.Name() || keys.Witness.KeyHash() != signer.KeyHash()) {
		return usageErrorf("witness serve: --keys %s names the witness key %s+%08x, not --key's %s+%08x", c.keys, keys.Witness.Name(), keys.Witness.KeyHash(), signer.Name(), signer.KeyHash())
	}
	if len(keys.Writers) == 0 {
		return usageErrorf("witness serve: --keys %s lists no writer key (a line \"writer KEY\"): the witness would take no entry", c.keys)
	}
	if len(c.cosigners) > 0 && len(keys.Cosigners) == 0 {
		return usageErrorf("witness serve: --cosigner given, but --keys %s lists no cosigner key (a line \"cosigner KEY\") to check their cosignatures with", c.keys)
	}
	var cosigners []*witness.CosignerClient
	for _, u := range c.cosigners {
		if _, err := witness.NewClient(u, nil); err != nil {
			return usageErrorf("witness serve: --cosigner: %v", err)
		}
		cosigners = append(cosigners, &witness.CosignerClient{URL: u})
	}
	d, err := witness.OpenDir(ctx, c.dir, signer)
	if err != nil {
		return fmt.Errorf("witness serve: %w", err)
	}
	defer d.Close()
	s, err := witness.NewServer(d, witness.ServerConfig{Keys: keys, Cosigners: cosigners, Logger: logger})
	if err != nil {
		return fmt.Errorf("witness serve: %w", err)
	}
	return listenAndServe(ctx, "witness serve", orDefault(c.listen, "127.0.0.1:7380"), s, logger,
		func(ctx context.Context) { s.Run(ctx, c.every) },
		"witness: serving", "dir", c.dir, "origin", signer.Name(), "writers", len(keys.Writers), "cosigners", len(cosigners))
}

// cosign runs a witness.Cosigner until ctx ends.
func (c *witnessCmd) cosign(ctx context.Context, a *app, logger *slog.Logger) error {
	if c.state == "" || c.key == "" || len(c.logs) == 0 || c.dir != "" || c.keys != "" || len(c.cosigners) > 0 {
		return usageErrorf("witness cosign needs --state, --key and --log (not --dir, --keys or --cosigner); try: trails-admin witness -h")
	}
	text, err := os.ReadFile(c.key)
	if err != nil {
		return usageErrorf("witness cosign: --key: %v", err)
	}
	signer, err := witness.NewCosignatureSigner(string(text))
	if err != nil {
		return usageErrorf("witness cosign: --key %s: %v", c.key, err)
	}
	var logs []note.Verifier
	for _, f := range c.logs {
		text, err := os.ReadFile(f)
		if err != nil {
			return usageErrorf("witness cosign: --log: %v", err)
		}
		v, err := note.NewVerifier(strings.TrimSpace(string(text)))
		if err != nil {
			return usageErrorf("witness cosign: --log %s: not a public note key: %v", f, err)
		}
		logs = append(logs, v)
	}
	cs, err := witness.NewCosigner(witness.CosignerConfig{Signer: signer, Logs: logs, State: c.state, Logger: logger})
	if err != nil {
		return fmt.Errorf("witness cosign: %w", err)
	}
	defer cs.Close()
	return listenAndServe(ctx, "witness cosign", orDefault(c.listen, "127.0.0.1:7381"), cs, logger, nil,
		"cosigner: serving", "state", c.state, "name", signer.Name(), "logs", len(logs))
}

// listenAndServe serves h on addr until ctx ends, with bg (if not nil)
// running beside it, then shuts down, giving requests 5 seconds to end.
// It logs msg and args with the address it listens on.
func listenAndServe(ctx context.Context, op, addr string, h http.Handler, logger *slog.Logger, bg func(context.Context), msg string, args ...any) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErrorf("%s: --listen %s: %v", op, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}
	logger.Info(msg, append([]any{"url", "http://" + ln.Addr().String()}, args...)...)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	done := make(chan struct{})
	if bg != nil {
		go func() { bg(ctx); close(done) }()
	} else {
		close(done)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("%s: %w", op, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: shut down: %w", op, err)
	}
	logger.Info("stopped")
	return nil
}

// readSigner reads a secret note key from file name.
func readSigner(op, name string) (note.Signer, error) {
	text, err := os.ReadFile(name)
	if err != nil {
		return nil, usageErrorf("%s: --key: %v", op, err)
	}
	signer, err := note.NewSigner(strings.TrimSpace(string(text)))
	if err != nil {
		return nil, usageErrorf("%s: --key %s: not a secret note key: %v", op, name, err)
	}
	return signer, nil
}

// orDefault returns v, or def when v is empty.
func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
