// Command adk-agent runs an agent of Google's Agent Development Kit for Go
// (ADK v2) whose sessions are stored by Trails: an LLM agent with a
// function tool (the weather of a few cities) and a scripted model (no
// network), run by ADK's runner over the Trails session service of
// integrations/adk. It holds a conversation of two questions, forks it
// before the second one, asks the fork something else, and prints the
// fork tree, the fork's events as ADK loads them, and the rows of the
// audit query "tool-calls" for both branches.
//
// Usage:
//
//	adk-agent [--endpoint URL]
//
// The endpoint is a Fuseki dataset (default $TRAILS_ENDPOINT, then
// http://127.0.0.1:3030/trails, where scripts/fuseki start serves one).
// Exit codes: 0 ok, 1 failure, 2 usage, 3 store unreachable or refused,
// 130 interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/trails-kg/trails/kg"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "adk-agent: %v\n", err)
	}
	os.Exit(exitCode(err))
}

// defaultEndpoint is the dataset scripts/fuseki start serves.
const defaultEndpoint = "http://127.0.0.1:3030/trails"

// errUsage marks an error in the command line.
var errUsage = errors.New("usage")

// run parses args, connects to the store and runs the example, writing
// its report to stdout and diagnostics to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("adk-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("endpoint", envOr("TRAILS_ENDPOINT", defaultEndpoint), "the Trails dataset's URL (Fuseki)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: adk-agent [--endpoint URL]\n\n"+
			"Runs an ADK agent whose sessions Trails stores, forks its conversation and prints the tree and the tool calls.\n"+
			"Exit codes: 0 ok, 1 failure, 2 usage, 3 store unreachable or refused, 130 interrupted.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v (try: adk-agent -h)", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: no arguments expected, got %q (try: adk-agent -h)", errUsage, fs.Args())
	}
	c, err := kg.New(kg.Config{Endpoint: *endpoint})
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := c.Ping(ctx); err != nil {
		return &storeError{endpoint: c.Endpoint(), err: err}
	}
	return runExample(ctx, c, stdout)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// storeError is a store that does not answer the first request, or
// refuses it.
type storeError struct {
	endpoint string
	err      error
}

func (e *storeError) Error() string {
	return fmt.Sprintf("cannot use the store at %s (start one with scripts/fuseki start, or give --endpoint): %v", e.endpoint, e.err)
}

func (e *storeError) Unwrap() error { return e.err }

// exitCode maps an error of run to the exit codes of the usage text.
func exitCode(err error) int {
	var se *storeError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, context.Canceled):
		return 130
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &se), errors.Is(err, kg.ErrUnavailable), errors.Is(err, kg.ErrUnauthorized):
		return 3
	}
	return 1
}
