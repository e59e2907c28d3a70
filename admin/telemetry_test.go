package admin_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

var (
	spansOnce sync.Once
	spanExp   *tracetest.InMemoryExporter
)

// recordSpans installs, once for the binary, a tracer provider that keeps
// every span in memory, and returns its exporter.
func recordSpans(tb testing.TB) *tracetest.InMemoryExporter {
	tb.Helper()
	spansOnce.Do(func() {
		spanExp = tracetest.NewInMemoryExporter()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spanExp)))
	})
	return spanExp
}

// traced runs f under a span of the test's own and returns the spans of
// its trace, and the test span's id.
func traced(exp *tracetest.InMemoryExporter, name string, f func(ctx context.Context) error) (tracetest.SpanStubs, trace.SpanID, error) {
	ctx, root := otel.Tracer("trails-test").Start(context.Background(), "test "+name)
	err := f(ctx)
	root.End()
	var out tracetest.SpanStubs
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() == root.SpanContext().TraceID() {
			out = append(out, s)
		}
	}
	return out, root.SpanContext().SpanID(), err
}

// attrOf returns the value of attribute k of span s, "" when it has none.
func attrOf(s tracetest.SpanStub, k string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

// callSpan returns the span name among spans whose parent is parent, and
// checks that the store requests under it are client spans with the
// database semantic conventions (at least one when requests is set).
func callSpan(t *testing.T, spans tracetest.SpanStubs, parent trace.SpanID, name string, requests bool) tracetest.SpanStub {
	t.Helper()
	var call *tracetest.SpanStub
	for i := range spans {
		if spans[i].Name == name && spans[i].Parent.SpanID() == parent {
			call = &spans[i]
		}
	}
	if call == nil {
		t.Fatalf("no span %s under the caller's among %d", name, len(spans))
	}
	n := 0
	for _, sp := range spans {
		if sp.SpanKind != trace.SpanKindClient {
			continue
		}
		n++
		for _, k := range []string{"db.system.name", "db.operation.name", "server.address", "server.port"} {
			if attrOf(sp, k) == "" {
				t.Errorf("request %s: no %s", sp.Name, k)
			}
		}
	}
	if requests && n == 0 {
		t.Errorf("no store request under %s", name)
	}
	return *call
}

// TestTraceDataset: each exported call of a Dataset that reaches the
// store is a span admin.X, a child of the caller's, with the session's id
// (gen_ai.conversation.id) where it names one and its error recorded; the
// store requests under it are kg's client spans.
func TestTraceDataset(t *testing.T) {
	fusekitest.RequireDirect(t, "it expects each call's store requests as kg spans, which a cluster sends as log records")
	exp := recordSpans(t)
	st, c := newStore(t)
	ctx := context.Background()
	s := session.New("tracer")
	s.Append("user", "hello")
	s.Append("assistant", "hi")
	storetest.MustPersist(t, st.Store, s)
	var dump bytes.Buffer
	if _, err := st.Dataset.Export(ctx, &dump, admin.NQuads); err != nil {
		t.Fatal(err)
	}
	ds := st.Dataset
	shaclNotRun := false // Check on a store with no SHACL endpoint: its span records the error
	steps := []struct {
		call string
		id   string // the session it names, "" for none
		run  func(ctx context.Context) error
	}{
		{"Init", "", func(ctx context.Context) error { _, err := ds.Init(ctx); return err }},
		{"Check", "", func(ctx context.Context) error {
			_, err := ds.Check(ctx)
			if errors.Is(err, admin.ErrSHACLNotRun) {
				shaclNotRun = true
				return nil
			}
			return err
		}},
		{"Export", s.ID, func(ctx context.Context) error { _, err := ds.Export(ctx, io.Discard, admin.JSONL, s.ID); return err }},
		{"Forest", "", func(ctx context.Context) error { _, err := ds.Forest(ctx); return err }},
		{"PlanExpire", "", func(ctx context.Context) error { _, err := ds.PlanExpire(ctx, time.Now()); return err }},
		{"Expire", "", func(ctx context.Context) error {
			_, err := ds.Expire(ctx, time.Now(), admin.ExpireOptions{})
			return err
		}},
		{"Rechain", "", func(ctx context.Context) error { _, err := ds.Rechain(ctx, nil); return err }},
		{"SweepStaging", "", func(ctx context.Context) error { _, err := ds.SweepStaging(ctx, time.Hour); return err }},
		{"Restore", "", func(ctx context.Context) error {
			_, err := ds.Restore(ctx, bytes.NewReader(dump.Bytes()), true, nil)
			return err
		}},
		{"Import", "", func(ctx context.Context) error {
			if err := c.Update(context.Background(), "DROP ALL", kg.Idempotent()); err != nil {
				return err
			}
			_, err := ds.Import(ctx, bytes.NewReader(dump.Bytes()), admin.NQuads, nil)
			return err
		}},
	}
	for _, step := range steps {
		t.Run(step.call, func(t *testing.T) {
			exp.Reset()
			spans, root, err := traced(exp, step.call, step.run)
			if err != nil {
				t.Fatalf("%s: %v", step.call, err)
			}
			call := callSpan(t, spans, root, "admin."+step.call, true)
			if got := attrOf(call, "gen_ai.conversation.id"); got != step.id {
				t.Errorf("gen_ai.conversation.id: got %q, want %q", got, step.id)
			}
			if call.Status.Code == codes.Error && !(step.call == "Check" && shaclNotRun) {
				t.Errorf("status: got %v, want unset", call.Status)
			}
		})
	}

	t.Run("error", func(t *testing.T) {
		exp.Reset()
		spans, root, err := traced(exp, "Verify", func(ctx context.Context) error {
			_, err := ds.Verify(ctx, admin.VerifyOptions{})
			return err
		})
		if !errors.Is(err, session.ErrInvalid) {
			t.Fatalf("got %v, want ErrInvalid", err)
		}
		call := callSpan(t, spans, root, "admin.Verify", false)
		if call.Status.Code != codes.Error || attrOf(call, "error.type") != session.ErrInvalid.Error() {
			t.Errorf("got status %v, error.type %q; want an error %q", call.Status, attrOf(call, "error.type"), session.ErrInvalid.Error())
		}
	})
}

// TestTraceServer: a Server's Backup and Compact are spans admin.Backup
// and admin.Compact, each request to Fuseki's admin API a client span
// under it; a task that fails is recorded with its error.type.
func TestTraceServer(t *testing.T) {
	s := adminFuseki(t)
	exp := recordSpans(t)
	spans, root, err := traced(exp, "Backup", func(ctx context.Context) error {
		_, err := serverOf(t, s, compactDS).Backup(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	call := callSpan(t, spans, root, "admin.Backup", true)
	if call.Status.Code == codes.Error {
		t.Errorf("backup status: got %v, want unset", call.Status)
	}
	exp.Reset()
	spans, root, err = traced(exp, "Compact", func(ctx context.Context) error {
		_, err := serverOf(t, s, memDS).Compact(ctx, "")
		return err
	})
	if !errors.Is(err, admin.ErrTaskFailed) {
		t.Fatalf("compact of a dataset in memory: got %v, want ErrTaskFailed", err)
	}
	call = callSpan(t, spans, root, "admin.Compact", true)
	if call.Status.Code != codes.Error || attrOf(call, "error.type") != admin.ErrTaskFailed.Error() {
		t.Errorf("got status %v, error.type %q; want an error %q", call.Status, attrOf(call, "error.type"), admin.ErrTaskFailed.Error())
	}
}
