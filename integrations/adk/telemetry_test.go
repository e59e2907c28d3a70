package adk_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/trails-kg/trails/integrations/adk"
)

// TestTraceService: each exported call of a SessionService is a span
// adk.SessionService.X, a child of the caller's span, with the ADK
// session's id as gen_ai.conversation.id where the call names one, and
// the spans of the Store calls it makes (session.*) under it; a call
// that fails has its error recorded.
func TestTraceService(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	t.Cleanup(func() { otel.SetTracerProvider(trace.NewNoopTracerProvider()) })
	svc, _ := newService(t)
	const app, user, id = "app", "u1", "traced"
	var cur session.Session
	steps := []struct {
		call, id string
		run      func(ctx context.Context) error
	}{
		{"Create", id, func(ctx context.Context) error {
			r, err := svc.Create(ctx, &session.CreateRequest{AppName: app, UserID: user, SessionID: id})
			if err == nil {
				cur = r.Session
			}
			return err
		}},
		{"AppendEvent", id, func(ctx context.Context) error {
			ev := &session.Event{ID: "e1", InvocationID: "inv1", Author: "user"}
			ev.Content = genai.NewContentFromText("hello", "user")
			return svc.AppendEvent(ctx, cur, ev)
		}},
		{"Get", id, func(ctx context.Context) error {
			_, err := svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: id})
			return err
		}},
		{"List", "", func(ctx context.Context) error {
			_, err := svc.List(ctx, &session.ListRequest{AppName: app, UserID: user})
			return err
		}},
		{"Fork", id, func(ctx context.Context) error {
			_, err := svc.Fork(ctx, adk.Key{AppName: app, UserID: user, SessionID: id}, adk.AtEvent("e1"), "traced")
			return err
		}},
		{"Delete", id, func(ctx context.Context) error {
			return svc.Delete(ctx, &session.DeleteRequest{AppName: app, UserID: user, SessionID: id})
		}},
	}
	for _, step := range steps {
		t.Run(step.call, func(t *testing.T) {
			exp.Reset()
			ctx, root := otel.Tracer("trails-test").Start(t.Context(), "test "+step.call)
			err := step.run(ctx)
			root.End()
			if err != nil {
				t.Fatalf("%s: %v", step.call, err)
			}
			checkSpans(t, exp, root.SpanContext().SpanID(), "adk.SessionService."+step.call, step.id, false)
		})
	}
	t.Run("error", func(t *testing.T) {
		exp.Reset()
		ctx, root := otel.Tracer("trails-test").Start(t.Context(), "test Get")
		_, err := svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: "never stored"})
		root.End()
		if err == nil {
			t.Fatal("get of a session never stored: got nil, want an error")
		}
		checkSpans(t, exp, root.SpanContext().SpanID(), "adk.SessionService.Get", "never stored", true)
	})
}

// checkSpans fails t unless exp holds a span name under parent with
// gen_ai.conversation.id id, an error status when failed, and a span
// session.* under it.
func checkSpans(t *testing.T, exp *tracetest.InMemoryExporter, parent trace.SpanID, name, id string, failed bool) {
	t.Helper()
	spans := exp.GetSpans()
	var call *tracetest.SpanStub
	for i := range spans {
		if spans[i].Name == name && spans[i].Parent.SpanID() == parent {
			call = &spans[i]
		}
	}
	if call == nil {
		t.Fatalf("no span %s under the caller's among %d", name, len(spans))
	}
	got := ""
	for _, kv := range call.Attributes {
		if kv.Key == "gen_ai.conversation.id" {
			got = kv.Value.Emit()
		}
	}
	if got != id {
		t.Errorf("gen_ai.conversation.id: got %q, want %q", got, id)
	}
	if (call.Status.Code == codes.Error) != failed {
		t.Errorf("status: got %v, want an error: %v", call.Status, failed)
	}
	for _, sp := range spans {
		if sp.Parent.SpanID() == call.SpanContext.SpanID() && len(sp.Name) > 8 && sp.Name[:8] == "session." {
			return
		}
	}
	t.Errorf("no span session.* under %s", name)
}
