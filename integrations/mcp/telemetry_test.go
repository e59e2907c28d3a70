package mcp_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	trailsmcp "github.com/trails-kg/trails/integrations/mcp"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

// TestTraceTools: each tool call is a span mcp.TOOL, the parent of the
// spans of the Store calls it makes (session.*), themselves the parents
// of the store requests; a call that fails has its error recorded.
func TestTraceTools(t *testing.T) {
	fusekitest.RequireDirect(t, "it expects the store requests as kg spans, which a cluster sends as log records")
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(trace.NewNoopTracerProvider()) })
	c := fusekitest.Empty(t)
	st := session.NewStore(c)
	root, _ := agentLoop(t, st)
	cs := connect(t, c)

	for _, tc := range []struct {
		name, id string
		failed   bool
	}{
		{"found", root.ID, false},
		{"missing", session.New("agent-7").ID, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp.Reset()
			res := call(t, cs, trailsmcp.ToolShowSession, map[string]any{"id": tc.id})
			if res.IsError != tc.failed {
				t.Fatalf("tool error: got %v, want %v", res.IsError, tc.failed)
			}
			byID := map[trace.SpanID]tracetest.SpanStub{}
			for _, sp := range exp.GetSpans() {
				byID[sp.SpanContext.SpanID()] = sp
			}
			var tool *tracetest.SpanStub
			for _, sp := range byID {
				if sp.Name == "mcp."+trailsmcp.ToolShowSession {
					tool = &sp
				}
			}
			if tool == nil {
				t.Fatalf("no span mcp.%s among %d", trailsmcp.ToolShowSession, len(byID))
			}
			if failed := tool.Status.Code == codes.Error; failed != tc.failed {
				t.Errorf("span status: got %v, want an error: %v", tool.Status, tc.failed)
			}
			calls, requests := 0, 0
			for _, sp := range byID {
				switch {
				case sp.Parent.SpanID() == tool.SpanContext.SpanID() && strings.HasPrefix(sp.Name, "session."):
					calls++
				case sp.SpanKind == trace.SpanKindClient && byID[sp.Parent.SpanID()].Parent.SpanID() == tool.SpanContext.SpanID():
					requests++
				}
			}
			if calls == 0 || requests == 0 {
				t.Errorf("under mcp.%s: %d session.* spans, %d store requests under them; want some of each", trailsmcp.ToolShowSession, calls, requests)
			}
		})
	}
}
