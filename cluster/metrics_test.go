package cluster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
)

// testMetrics: each write through the log is a producer span "send
// TOPIC" with the record's offset (messaging.kafka.offset), and each
// applier counts the records it applied and refused, times its requests
// and reports its position and lag (in-process appliers, read with a
// manual reader); a trails-replica process serves them at /metrics, where
// its lag moves from the records it could not apply yet to 0 once it
// could.
func testMetrics(t *testing.T, k *kafkatest.Cluster, fx *faultEnv) {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))

	r := newRig(t, k, fx.srv, 1)
	c := r.client(t)
	const updates, refused = 5, 2 // and one Graph Store PUT: applied = updates+1
	const applied = updates + 1
	caller, root := otel.Tracer("trails-test").Start(ctx, "test writes")
	for i := range updates + refused {
		if i%3 == 2 { // refused: no object
			err := c.Update(caller, "INSERT DATA { <urn:trails-test:s> <urn:trails-test:p> }")
			if !errors.Is(err, kg.ErrBadRequest) {
				t.Fatalf("update %d: got %v, want kg.ErrBadRequest", i, err)
			}
			continue
		}
		if err := c.Update(caller, fmt.Sprintf("# metrics-test: one triple\nINSERT DATA { <urn:trails-test:s> <urn:trails-test:p> %d }", i)); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	if err := c.PutGraph(caller, kg.MustIRI("urn:trails-test:g"), kg.NTriples, []byte("<urn:trails-test:s> <urn:trails-test:p> \"x\" .\n")); err != nil {
		t.Fatalf("put graph: %v", err)
	}
	root.End()
	r.converged(t, c.Position())

	t.Run("spans", func(t *testing.T) {
		offsets := map[string]bool{}
		errs := 0
		for _, sp := range spans.GetSpans() {
			if sp.Name != "send "+r.topic {
				continue
			}
			if sp.Parent.SpanID() != root.SpanContext().SpanID() || sp.SpanKind != trace.SpanKindProducer {
				t.Errorf("span %s: parent %v, kind %v; want the caller's, producer", sp.Name, sp.Parent.SpanID(), sp.SpanKind)
			}
			for k, want := range map[string]string{"messaging.system": "kafka", "messaging.destination.name": r.topic, "messaging.operation.name": "send"} {
				if got := spanAttr(sp, k); got != want {
					t.Errorf("span %s: %s %q, want %q", sp.Name, k, got, want)
				}
			}
			offsets[spanAttr(sp, "messaging.kafka.offset")] = true
			if sp.Status.Code == codes.Error {
				errs++
			} else if got := spanAttr(sp, "db.operation.name"); got != "metrics-test" && got != "put graph" {
				t.Errorf("span %s: db.operation.name %q, want metrics-test or put graph", sp.Name, got)
			}
		}
		for off := range applied + refused {
			if !offsets[strconv.Itoa(off)] {
				t.Errorf("no span with messaging.kafka.offset %d among %v", off, offsets)
			}
		}
		if errs != refused {
			t.Errorf("%d spans with an error, want %d (the refused writes)", errs, refused)
		}
	})

	t.Run("applier", func(t *testing.T) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		for i, s := range r.stores {
			ds := filepath.Base(s.Endpoint())
			mine := func(set attribute.Set) bool {
				topic, _ := set.Value("messaging.destination.name")
				ns, _ := set.Value("db.namespace")
				return topic.AsString() == r.topic && ns.AsString() == ds
			}
			counts := map[string]int64{}
			gauges := map[string]int64{}
			var requests uint64
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					switch d := m.Data.(type) {
					case metricdata.Sum[int64]:
						for _, p := range d.DataPoints {
							if mine(p.Attributes) && m.Name == telemetry.MetricReplicaRecords {
								o, _ := p.Attributes.Value(telemetry.AttrOutcome)
								counts[o.AsString()] += p.Value
							}
						}
					case metricdata.Gauge[int64]:
						for _, p := range d.DataPoints {
							if mine(p.Attributes) {
								gauges[m.Name] = p.Value
							}
						}
					case metricdata.Histogram[float64]:
						for _, p := range d.DataPoints {
							if mine(p.Attributes) && m.Name == telemetry.MetricReplicaApplyDuration {
								requests += p.Count
							}
						}
					}
				}
			}
			if counts[telemetry.OutcomeApplied] != applied || counts[telemetry.OutcomeRefused] != refused {
				t.Errorf("replica %d: records applied %d, refused %d; want %d and %d", i, counts[telemetry.OutcomeApplied], counts[telemetry.OutcomeRefused], applied, refused)
			}
			if requests < applied+refused {
				t.Errorf("replica %d: %d apply requests timed, want at least %d", i, requests, applied+refused)
			}
			if got, ok := gauges[telemetry.MetricReplicaApplied]; !ok || got != c.Position() {
				t.Errorf("replica %d: %s %d (reported: %v), want %d", i, telemetry.MetricReplicaApplied, got, ok, c.Position())
			}
			if got, ok := gauges[telemetry.MetricReplicaLag]; !ok || got != 0 {
				t.Errorf("replica %d: %s %d (reported: %v), want 0", i, telemetry.MetricReplicaLag, got, ok)
			}
		}
	})

	t.Run("trails-replica", func(t *testing.T) { testReplicaMetrics(t, k, fx) })
}

// testReplicaMetrics: a trails-replica process whose Fuseki refuses its
// updates (503, as an overloaded one) serves a lag of the records in the
// log at /metrics; once they go through, a lag of 0, its position, and
// the records it applied.
func testReplicaMetrics(t *testing.T, k *kafkatest.Cluster, fx *faultEnv) {
	ctx := context.Background()
	topic := "t" + strings.ReplaceAll(t.Name(), "/", "-")
	k.CreateTopic(t, topic, 1)
	const records = 3
	pr, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range records {
		rec := &kgo.Record{Value: fmt.Appendf(nil, "INSERT DATA { <urn:trails-test:s> <urn:trails-test:p> %d }", i)}
		if err := pr.ProduceSync(ctx, rec).FirstErr(); err != nil {
			pr.Close()
			t.Fatal(err)
		}
	}
	pr.Close()

	store := fusekitest.Client(t, kg.Config{Endpoint: fx.srv.Datasets[3], Store: kg.Fuseki})
	if err := store.Update(ctx, "DROP ALL", kg.Idempotent()); err != nil {
		t.Fatal(err)
	}
	base, path, _ := strings.Cut(strings.TrimPrefix(store.Endpoint(), "http://"), "/")
	gate := &updateGate{target: "http://" + base}
	hs := httptest.NewServer(gate)
	t.Cleanup(hs.Close)

	p := &replicaProc{bin: fx.replicaBin(t), log: filepath.Join(t.TempDir(), "replica.log")}
	for try := 1; ; try++ {
		p.addr = "127.0.0.1:" + strconv.Itoa(freePort(t))
		p.args = []string{"-brokers", strings.Join(k.Brokers(), ","), "-topic", topic, "-dataset", hs.URL + "/" + path, "-listen", p.addr}
		err := p.launch()
		if err == nil {
			break
		}
		if try == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- trails-replica's log (tail) ---\n%s", proc.Tail(p.log, 30))
		}
	})

	metrics := p.url() + "/metrics"
	waitMetric(t, metrics, "trails_replica_lag", topic, "", records)
	if got, ok := metricValue(t, metrics, "trails_replica_applied", topic, ""); !ok || got != -1 {
		t.Errorf("trails_replica_applied while Fuseki refuses: %v (reported: %v), want -1", got, ok)
	}
	gate.open.Store(true)
	if pos, err := position(ctx, p, records-1, 30*time.Second); err != nil || pos != records-1 {
		t.Fatalf("position: %d (%v), want %d", pos, err, records-1)
	}
	waitMetric(t, metrics, "trails_replica_lag", topic, "", 0)
	for _, m := range []struct {
		name, outcome string
		want          float64
	}{
		{"trails_replica_applied", "", records - 1},
		{"trails_replica_records_total", telemetry.OutcomeApplied, records},
	} {
		if got, ok := metricValue(t, metrics, m.name, topic, m.outcome); !ok || got != m.want {
			t.Errorf("%s: %v (reported: %v), want %v", m.name, got, ok, m.want)
		}
	}
}

// updateGate stands between a trails-replica process and its Fuseki: it
// answers 503 to every update until open, and passes on every other
// request.
type updateGate struct {
	target string // Fuseki's base URL, http://host:port
	open   atomic.Bool
}

func (g *updateGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/update") && !g.open.Load() {
		http.Error(w, "closed by the test", http.StatusServiceUnavailable)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, g.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	bufio.NewReader(resp.Body).WriteTo(w)
}

// metricValue returns the value of metric name for topic (and, when not
// "", outcome) in the Prometheus text served at url.
func metricValue(t *testing.T, url, name, topic, outcome string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		l := lines.Text()
		if !strings.HasPrefix(l, name+"{") || !strings.Contains(l, `messaging_destination_name="`+topic+`"`) ||
			outcome != "" && !strings.Contains(l, `trails_replica_outcome="`+outcome+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		return v, err == nil
	}
	return 0, false
}

// waitMetric waits up to 30 s for metric name of topic to be want.
func waitMetric(t *testing.T, url, name, topic, outcome string, want float64) {
	t.Helper()
	var got float64
	var ok bool
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got, ok = metricValue(t, url, name, topic, outcome); ok && got == want {
			return
		}
	}
	t.Fatalf("%s: %v (reported: %v), want %v", name, got, ok, want)
}

// spanAttr returns the value of attribute k of span s, "" when it has none.
func spanAttr(s tracetest.SpanStub, k string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == k {
			return kv.Value.Emit()
		}
	}
	return ""
}
