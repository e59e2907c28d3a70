package session_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The providers the tests install, once for the process: the
// OpenTelemetry API's global providers take the first one installed.
var (
	telemetryOnce sync.Once
	spanExporter  *tracetest.InMemoryExporter
	metricReader  *sdkmetric.ManualReader
	tracingOn     bool // a provider is installed: BenchmarkTracedAppend's "none" would not be
)

// recordTelemetry installs, once, a tracer provider that keeps every span
// in memory and a meter provider read by hand, and returns them.
func recordTelemetry(tb testing.TB) (*tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	tb.Helper()
	telemetryOnce.Do(func() {
		spanExporter = tracetest.NewInMemoryExporter()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spanExporter)))
		metricReader = sdkmetric.NewManualReader()
		otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(metricReader)))
		tracingOn = true
	})
	return spanExporter, metricReader
}

// traced runs f under a span of the test's own and returns the spans of
// its trace that ended meanwhile, the test's span first.
func traced(tb testing.TB, exp *tracetest.InMemoryExporter, name string, f func(ctx context.Context) error) (tracetest.SpanStubs, error) {
	tb.Helper()
	ctx, root := otel.Tracer("trails-test").Start(context.Background(), "test "+name)
	err := f(ctx)
	root.End()
	var out tracetest.SpanStubs
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() == root.SpanContext().TraceID() {
			out = append(out, s)
		}
	}
	return out, err
}

// attr returns the value of attribute k of span s, "" when it has none.
func attr(s tracetest.SpanStub, k string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

// TestTraceCalls: each exported call of a Store that reaches the store is
// a span named after it, a child of the caller's, with the session's id
// (gen_ai.conversation.id) where it acts on one and its error recorded;
// each store request under it is a client span with the database
// semantic conventions.
func TestTraceCalls(t *testing.T) {
	fusekitest.RequireDirect(t, "it expects each call's store requests as kg spans, which a cluster sends as log records")
	exp, _ := recordTelemetry(t)
	st, _, c := newStore(t)
	bg := context.Background()
	s := session.New("tracer")
	if err := st.Create(bg, s); err != nil {
		t.Fatal(err)
	}
	s.Append("user", "hello")
	s.Append("assistant", "hi")
	mustPersist(t, st, s)
	f, err := st.Fork(bg, s.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	f.Append("assistant", "a result")
	mustPersist(t, st, f)
	g := mustFork(t, s, 2)
	g.Append("user", "a branch to detach and delete")
	mustPersist(t, st, g)
	lean, err := st.Load(bg, s.ID, session.RawOnly())
	if err != nil {
		t.Fatal(err)
	}
	exp.Reset()

	n := session.New("tracer")
	n.Append("user", "x")
	steps := []struct {
		call string
		id   string // the session it acts on, "" for none
		run  func(ctx context.Context) error
	}{
		{"Create", n.ID, func(ctx context.Context) error { return st.Create(ctx, n) }},
		{"Persist", s.ID, func(ctx context.Context) error { s.Append("user", "more"); return st.Persist(ctx, s) }},
		{"Load", s.ID, func(ctx context.Context) error { _, err := st.Load(ctx, s.ID); return err }},
		{"LoadTail", s.ID, func(ctx context.Context) error { _, err := st.LoadTail(ctx, s.ID, session.Tail{Last: 1}); return err }},
		{"LoadStructure", s.ID, func(ctx context.Context) error { return st.LoadStructure(ctx, lean) }},
		{"Info", s.ID, func(ctx context.Context) error { _, err := st.Info(ctx, s.ID); return err }},
		{"List", "", func(ctx context.Context) error { _, err := st.List(ctx, session.ByPrincipal("tracer")); return err }},
		{"Branches", s.ID, func(ctx context.Context) error { _, err := st.Branches(ctx, s.ID); return err }},
		{"Tree", s.ID, func(ctx context.Context) error { _, err := st.Tree(ctx, s.ID); return err }},
		{"Ancestry", f.ID, func(ctx context.Context) error { _, err := st.Ancestry(ctx, f.ID); return err }},
		{"Replay", s.ID, func(ctx context.Context) error { _, err := st.Replay(ctx, s.ID); return err }},
		{"Compare", s.ID, func(ctx context.Context) error { _, err := st.Compare(ctx, s.ID, f.ID); return err }},
		{"Fork", s.ID, func(ctx context.Context) error { _, err := st.Fork(ctx, s.ID, 1); return err }},
		{"Merge", f.ID, func(ctx context.Context) error {
			_, err := st.Merge(ctx, f.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "done"})
			return err
		}},
		{"Merges", s.ID, func(ctx context.Context) error { _, err := st.Merges(ctx, s.ID); return err }},
		{"Tag", s.ID, func(ctx context.Context) error { return st.Tag(ctx, s.ID, "traced") }},
		{"Untag", s.ID, func(ctx context.Context) error { return st.Untag(ctx, s.ID, "traced") }},
		{"Anchor", s.ID, func(ctx context.Context) error { _, err := st.Anchor(ctx, s.ID, "traced", nil); return err }},
		{"Rechain", s.ID, func(ctx context.Context) error { _, err := st.Rechain(ctx, s.ID); return err }},
		{"PlanDetach", g.ID, func(ctx context.Context) error { _, err := st.PlanDetach(ctx, g.ID); return err }},
		{"DetachReport", g.ID, func(ctx context.Context) error {
			_, err := st.DetachReport(ctx, g.ID, session.DetachOptions{})
			return err
		}},
		{"Detach", g.ID, func(ctx context.Context) error { return st.Detach(ctx, g.ID, session.DetachOptions{}) }},
		{"PlanDelete", g.ID, func(ctx context.Context) error {
			_, err := st.PlanDelete(ctx, g.ID, session.DeleteOptions{})
			return err
		}},
		{"Delete", g.ID, func(ctx context.Context) error { return st.Delete(ctx, g.ID, session.DeleteOptions{}) }},
		{"Rewind", f.ID, func(ctx context.Context) error {
			_, _, err := st.Rewind(ctx, f.ID, 1, session.RewindOptions{})
			return err
		}},
		{"Rewinds", f.ID, func(ctx context.Context) error { _, err := st.Rewinds(ctx, f.ID); return err }},
		{"SetExpiry", s.ID, func(ctx context.Context) error { return st.SetExpiry(ctx, s.ID, time.Now().Add(time.Hour)) }},
		{"SetState", s.ID, func(ctx context.Context) error {
			_, err := st.SetState(ctx, s.ID, session.StateSuspended, session.StateOptions{})
			return err
		}},
		{"CountTurns", "", func(ctx context.Context) error {
			_, err := session.CountTurns(ctx, c, []string{ontology.SessionIRI(s.ID)})
			return err
		}},
		{"StateChanges", "", func(ctx context.Context) error {
			_, err := session.StateChanges(ctx, c, []rdf.IRI{kg.MustIRI("urn:trails-test:none")})
			return err
		}},
		{"ReadStructures", "", func(ctx context.Context) error { return session.ReadStructures(ctx, c, lean.Turns) }},
	}
	system := string(c.Store())
	for _, step := range steps {
		t.Run(step.call, func(t *testing.T) {
			spans, err := traced(t, exp, step.call, step.run)
			if err != nil {
				t.Fatalf("%s: %v", step.call, err)
			}
			name := "session." + step.call
			var call *tracetest.SpanStub
			for i := range spans {
				if spans[i].Name == name && spans[i].Parent.SpanID() == spans[len(spans)-1].SpanContext.SpanID() {
					call = &spans[i]
				}
			}
			if call == nil {
				t.Fatalf("no span %s under the caller's among %d", name, len(spans))
			}
			if got := attr(*call, "gen_ai.conversation.id"); got != step.id {
				t.Errorf("gen_ai.conversation.id: got %q, want %q", got, step.id)
			}
			if call.Status.Code == codes.Error {
				t.Errorf("status: got %v, want unset", call.Status)
			}
			requests := 0
			for _, sp := range spans {
				if sp.SpanKind != trace.SpanKindClient {
					continue
				}
				requests++
				for _, k := range []string{"db.system.name", "db.operation.name", "server.address", "server.port"} {
					if attr(sp, k) == "" {
						t.Errorf("request %s: no %s", sp.Name, k)
					}
				}
				if got := attr(sp, "db.system.name"); got != system {
					t.Errorf("request %s: db.system.name %q, want %q", sp.Name, got, system)
				}
				if got := attr(sp, "db.operation.name"); got != sp.Name {
					t.Errorf("request span %q: db.operation.name %q, want the span's name", sp.Name, got)
				}
			}
			if requests == 0 {
				t.Errorf("no store request under %s", name)
			}
		})
	}

	t.Run("error", func(t *testing.T) {
		missing := session.New("tracer").ID // never stored
		spans, err := traced(t, exp, "Load", func(ctx context.Context) error { _, err := st.Load(ctx, missing); return err })
		if !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
		for _, sp := range spans {
			if sp.Name != "session.Load" {
				continue
			}
			if sp.Status.Code != codes.Error || attr(sp, "error.type") != session.ErrNotFound.Error() || len(sp.Events) == 0 {
				t.Errorf("got status %v, error.type %q, %d events; want an error %q with its event",
					sp.Status, attr(sp, "error.type"), len(sp.Events), session.ErrNotFound.Error())
			}
			return
		}
		t.Fatal("no span session.Load")
	})
}

// TestTraceBatch: a group-commit request carrying several writes is a
// span named after their query, with db.operation.batch.size and links to
// the spans of the writes other than the one it is a child of.
func TestTraceBatch(t *testing.T) {
	fusekitest.RequireDirect(t, "it needs group commit's batches of kg requests, which a cluster sends as log records")
	exp, _ := recordTelemetry(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	const writers = 8
	ss := make([]*session.Session, writers)
	for i := range ss {
		ss[i] = persisted(t, st, "tracer", 1)
	}
	for round := range 10 {
		exp.Reset()
		var wg sync.WaitGroup
		for i := range ss {
			wg.Go(func() {
				cctx, span := otel.Tracer("trails-test").Start(ctx, "writer")
				defer span.End()
				ss[i].Append("user", fmt.Sprintf("round %d", round))
				if err := st.Persist(cctx, ss[i]); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for _, sp := range exp.GetSpans() {
			if attr(sp, "db.operation.batch.size") == "" {
				continue
			}
			if sp.Name != "BATCH append" || len(sp.Links) == 0 {
				t.Errorf("batch span %q with %d links; want BATCH append with links", sp.Name, len(sp.Links))
			}
			return
		}
	}
	t.Fatal("10 rounds of 8 concurrent appends made no batch")
}

// TestTraceMetrics: the calls' durations, the store requests', group
// commit and a Cache's hits are recorded through the metrics API.
func TestTraceMetrics(t *testing.T) {
	_, reader := recordTelemetry(t)
	st, _, _ := newStore(t, session.WithCache(session.NewCache(1<<20)))
	ctx := context.Background()
	s := persisted(t, st, "tracer", 2)
	for range 2 {
		if _, err := st.Load(ctx, s.ID, session.RawOnly()); err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if v, ok := p.Attributes.Value(attribute.Key("trails.call")); ok && p.Count > 0 {
						found[m.Name+" "+v.AsString()] = true
					} else if p.Count > 0 {
						found[m.Name] = true
					}
				}
			case metricdata.Histogram[int64]:
				found[m.Name] = len(d.DataPoints) > 0
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					found[m.Name] = found[m.Name] || p.Value > 0
				}
			}
		}
	}
	for _, want := range []string{"trails.call.duration session.Persist", "trails.call.duration session.Load",
		"db.client.operation.duration", "trails.commit.requests", "trails.commit.batch.size", "trails.cache.hits", "trails.cache.misses"} {
		if !found[want] {
			t.Errorf("no %s recorded", want)
		}
	}
}

// BenchmarkTracedAppend measures a lone append of one turn (200–2,000
// characters, "append") and an agent loop's Persist of four structured
// turns (agentLoop, "loop") with no telemetry provider installed ("none":
// what a user who installs none pays) and with an in-memory tracer
// provider that keeps every span ("memory"). Run it alone (a provider,
// once installed, stays), as
//
//	go test ./session -run '^$' -bench TracedAppend -benchtime 400x
func BenchmarkTracedAppend(b *testing.B) {
	ctx := context.Background()
	c := fusekitest.Client(b, kg.Config{Endpoint: fusekitest.Endpoint(b), HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}})
	st := session.NewStore(c)
	rng := rand.New(rand.NewPCG(7, 8))
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = realistic(rng)
	}
	// One Persist of one turn (the lone append), or of an agent loop's
	// four structured turns (agentLoop).
	lone := func(s *session.Session, i int) { s.Append("user", texts[i%len(texts)]) }
	loop := func(s *session.Session, _ int) { agentLoop(s) }
	run := func(b *testing.B, add func(*session.Session, int)) {
		s := session.New("bench-trace")
		mustPersist(b, st, s)
		b.ResetTimer()
		for i := range b.N {
			add(s, i)
			if err := st.Persist(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("none", func(b *testing.B) {
		if tracingOn {
			b.Skip("a provider is installed (run the benchmark alone)")
		}
		b.Run("append", func(b *testing.B) { run(b, lone) })
		b.Run("loop", func(b *testing.B) { run(b, loop) })
	})
	b.Run("memory", func(b *testing.B) {
		exp, _ := recordTelemetry(b)
		b.Run("append", func(b *testing.B) { run(b, lone) })
		b.Run("loop", func(b *testing.B) { run(b, loop) })
		b.StopTimer()
		exp.Reset()
	})
}
