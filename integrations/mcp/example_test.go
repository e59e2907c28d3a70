package mcp_test

import (
	"context"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	trailsmcp "github.com/trails-kg/trails/integrations/mcp"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// A program of its own serves Trails on stdio, as a desktop MCP client
// starts it (cmd/trails-mcp does this and more).
func ExampleNewServer() {
	c, err := kg.New(kg.Config{Endpoint: "http://127.0.0.1:3030/trails", Username: "auditor", Password: "…"})
	if err != nil {
		log.Fatal(err)
	}
	srv := trailsmcp.NewServer(c, trailsmcp.WithStoreOptions(session.WithMaxChildren(4)))
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// The same server over streamable HTTP: one server for every client
// session (it is safe for concurrent use).
func ExampleNewServer_http() {
	c, err := kg.New(kg.Config{Endpoint: "http://127.0.0.1:3030/trails"})
	if err != nil {
		log.Fatal(err)
	}
	srv := trailsmcp.NewServer(c)
	http.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	log.Fatal(http.ListenAndServe("127.0.0.1:8765", nil))
}
