// Package mcp is a Model Context Protocol server for Trails, built with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk): any MCP client (a
// desktop assistant, an IDE agent) can list sessions, show one with its
// effective history, draw its fork tree, fork and rewind sessions and run
// the auditors' named queries. Each tool answers with structured JSON,
// field names as trails-admin's --json writes them, and a text rendering
// of the same data, stored text escaped as trails-admin prints it.
//
// NewServer builds the server over a store client; cmd/trails-mcp serves it
// on stdio or over streamable HTTP. The reads and audit queries need only
// read-only credentials; fork and rewind are refused with a tool error that
// says so when the store answers that the credentials may not write.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"runtime/debug"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
	"golang.org/x/mod/sumdb/note"
)

// Querier is what the server needs of a store client: session.Querier's
// requests (prov's reads are a subset of them). *kg.Client has them.
type Querier interface {
	session.Querier
}

var _ Querier = (*kg.Client)(nil)

// Option configures NewServer.
type Option func(*config)

type config struct {
	storeOpts []session.StoreOption
}

// WithStoreOptions passes opts to session.NewStore, the store the tools
// use: session.WithMaxChildren, for one, bounds the forks the fork tool
// makes as trails-admin's --max-children does.
func WithStoreOptions(opts ...session.StoreOption) Option {
	return func(c *config) { c.storeOpts = append(c.storeOpts, opts...) }
}

// WithSigning makes the tools that write (fork_session, rewind_session)
// sign what they write, as session.WithSigning makes a Store sign: with
// signer (the server's writer key, which the witness's key list trusts) a
// statement of each session head the write left, added to w (a
// *witness.Client of "trails-admin witness serve": the server holds no
// witness key) once the store acknowledged the write. A write whose
// statement does not reach the witness stays stored, and its tool answers
// with an error saying so. Nil signer or witness: no signing.
func WithSigning(signer note.Signer, w session.Witness) Option {
	return WithStoreOptions(session.WithSigning(signer, w))
}

// Tool names, as clients call them.
const (
	ToolListSessions     = "list_sessions"
	ToolShowSession      = "show_session"
	ToolForkTree         = "fork_tree"
	ToolFork             = "fork_session"
	ToolRewind           = "rewind_session"
	ToolListAuditQueries = "list_audit_queries"
	ToolRunAuditQuery    = "run_audit_query"
)

// instructions tell a client's model what the server is for.
const instructions = `Trails keeps AI-agent conversations (sessions of turns) in an RDF knowledge graph. ` +
	`A fork shares its parent's turns up to its fork point and records in PROV-O who forked and why; ` +
	`a rewind moves a session's later turns, untouched, into an archive fork. ` +
	`Use list_sessions to find sessions, show_session for one session's effective history, fork_tree for its forks, ` +
	`list_audit_queries and run_audit_query for the auditors' questions. fork_session and rewind_session write and need a writer's credentials.`

// tools holds what the tool handlers run on. It is safe for concurrent
// use: its store and reader are.
type tools struct {
	st *session.Store
	pr *prov.Reader
}

// NewServer returns an MCP server whose tools read and change the Trails
// store that c reaches; opts configure it. Serve it with the SDK's
// transports: srv.Run(ctx, &sdk.StdioTransport{}) or
// sdk.NewStreamableHTTPHandler. The server is safe for concurrent use: it
// keeps no state besides the SDK's sessions.
func NewServer(c Querier, opts ...Option) *sdk.Server {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	t := &tools{st: session.NewStore(c, cfg.storeOpts...), pr: prov.NewReader(c)}
	srv := sdk.NewServer(&sdk.Implementation{Name: "trails", Title: "Trails", Version: version()},
		&sdk.ServerOptions{Instructions: instructions})
	t.addSessionTools(srv)
	t.addTreeTool(srv)
	t.addForkTool(srv)
	t.addRewindTool(srv)
	t.addAuditTools(srv)
	return srv
}

// version is the module's version as the build recorded it, "(devel)"
// in a checkout.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	for _, m := range bi.Deps {
		if m.Path == "github.com/trails-kg/trails/integrations/mcp" && m.Version != "" {
			return m.Version
		}
	}
	if bi.Main.Path == "github.com/trails-kg/trails/integrations/mcp" && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// handler is a tool's work: from its input, the structured result, the
// text rendering of it, or an error.
type handler[In, Out any] func(ctx context.Context, in In) (Out, string, error)

// readOnly and writes are the annotations of the tools that only read
// and of those that add to the store (nothing is ever deleted).
var (
	readOnly = &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	additive = &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)}
)

// addTool adds tool t to srv: its input schema inferred from In, its
// output schema from Out (JSON values, json.RawMessage, as any JSON),
// unless t has one. A result carries Out as structured content and the
// text as text content; an error, a panic included, is a tool error whose
// message is escaped and cut (toolError). Each call is a span named "mcp."
// and the tool's name (mcp.append_turn), its error recorded.
func addTool[In, Out any](srv *sdk.Server, t *sdk.Tool, h handler[In, Out]) {
	if t.OutputSchema == nil {
		s, err := jsonschema.For[Out](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
			reflect.TypeFor[json.RawMessage](): {},
		}})
		if err != nil {
			panic(fmt.Sprintf("mcp: output schema of %s: %v", t.Name, err)) // a bug in this package, found by any test
		}
		t.OutputSchema = s
	}
	span := "mcp." + t.Name // the call's span, a child of the caller's context
	sdk.AddTool(srv, t, func(ctx context.Context, _ *sdk.CallToolRequest, in In) (res *sdk.CallToolResult, out Out, err error) {
		ctx, call := telemetry.Start(ctx, span, "")
		defer func() { call.End(err) }()
		defer func() {
			if p := recover(); p != nil {
				var zero Out
				res, out, err = nil, zero, fmt.Errorf("%s: internal error: %v", t.Name, p)
			}
		}()
		out, text, err := h(ctx, in)
		if err != nil {
			var zero Out
			return nil, zero, toolError(t.Name, err)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, out, nil
	})
}

// maxMessage is the most characters of a tool error's message: a message
// echoing a long value stays readable.
const maxMessage = 2000

// messageError is a tool error's message, escaped and cut, over the error
// it describes (errors.Is still finds the sentinels under it).
type messageError struct {
	msg string
	err error
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.err }

// toolError returns err as the tool's error: what the store's refusals
// and failures mean for the caller said in words, the message escaped and
// cut (termsafe.Cut), since it may quote stored or given values.
func toolError(tool string, err error) error {
	msg := err.Error()
	var ke *kg.Error
	switch {
	case errors.Is(err, kg.ErrUnauthorized) && errors.As(err, &ke) && ke.Status == http.StatusForbidden && writes(ke.Op):
		msg = fmt.Sprintf("the store refused the write (HTTP 403): the credentials this server runs with are read-only "+
			"(such as the auditor's), which suffice for reading sessions and running audit queries but not for %s; "+
			"run the server with a writer's $TRAILS_USER and $TRAILS_PASSWORD: %s", tool, msg)
	case errors.Is(err, kg.ErrUnauthorized):
		msg = fmt.Sprintf("the store refused the credentials this server runs with (check $TRAILS_USER and $TRAILS_PASSWORD): %s", msg)
	case errors.Is(err, kg.ErrUnavailable):
		msg = fmt.Sprintf("cannot reach the store (is it running? check --endpoint): %s", msg)
	}
	return &messageError{msg: tool + ": " + termsafe.Cut(msg, maxMessage), err: err}
}

// writes reports whether a store request op (kg.Error.Op) changes data.
func writes(op string) bool {
	switch op {
	case "update", "put graph", "delete graph", "load quads":
		return true
	}
	return false
}
