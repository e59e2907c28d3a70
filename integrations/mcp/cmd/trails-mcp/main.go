// Command trails-mcp serves Trails to MCP clients (desktop assistants, IDE
// agents): the tools of package mcp over stdio, the default, or over
// streamable HTTP with --http ADDR. It reaches the store as trails-admin
// does (--endpoint, --store, $TRAILS_ENDPOINT, $TRAILS_USER,
// $TRAILS_PASSWORD). Run "trails-mcp -h".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/trails-kg/trails/internal/exit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exit.Code(err))
}
