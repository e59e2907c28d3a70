// Package telemetry is where Trails reports to OpenTelemetry: the span of
// each exported call that reaches the store, the span of each store
// request, and the metrics, all through the OpenTelemetry API, which does
// nothing until the program installs a provider (otel.SetTracerProvider,
// otel.SetMeterProvider). Every span, metric and attribute name Trails
// emits is spelled here once; attributes use the OpenTelemetry semantic
// conventions' names wherever they have one (db.*, server.*, error.type,
// gen_ai.conversation.id).
//
// It imports no package of this module, so that package kg, the
// transport, may use it. Its functions are safe for concurrent use.
package telemetry

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/dbconv"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span and metric Trails
// emits: the module's path.
const ScopeName = "github.com/trails-kg/trails"

// The metrics' names, as the OpenTelemetry API takes them (a Prometheus
// exporter writes dots as underscores and adds the unit and _total:
// trails.call.duration is trails_call_duration_seconds).
const (
	// MetricCallDuration is the histogram of the exported calls' durations
	// in seconds (Persist is the append latency, Load and Fork theirs),
	// by AttrCall and, for a failed call, error.type.
	MetricCallDuration = "trails.call.duration"
	// MetricRequestDuration is the histogram of the store requests'
	// durations in seconds, retries included: the semantic conventions'
	// db.client.operation.duration, by db.system.name, db.operation.name,
	// server.address, server.port and, for a failure, error.type.
	MetricRequestDuration = "db.client.operation.duration"
	// MetricRetries counts the attempts of store requests beyond the first,
	// by db.system.name and db.operation.name.
	MetricRetries = "trails.kg.retries"
	// MetricCommits counts the update requests group commit sent, each one
	// store transaction carrying one write or a batch of them.
	MetricCommits = "trails.commit.requests"
	// MetricBatchSize is the histogram of the writes each of those
	// requests carried (1 for a write sent alone).
	MetricBatchSize = "trails.commit.batch.size"
	// MetricCacheHits counts the sessions whose turns a load with a
	// session.Cache found cached (all of them, or those before the turns
	// appended since, which it then reads).
	MetricCacheHits = "trails.cache.hits"
	// MetricCacheMisses counts the sessions whose turns such a load read
	// from the store, having nothing cached that it could use.
	MetricCacheMisses = "trails.cache.misses"
	// MetricFences counts the fences sent after a write's answer was lost
	// (error.type set when the fence itself failed).
	MetricFences = "trails.fences"
	// MetricReplicaApplied is the gauge of the offset of the last log
	// record a replica applied (-1 for none); trails-replica reports it.
	MetricReplicaApplied = "trails.replica.applied"
	// MetricReplicaLag is the gauge of the records of the log a replica
	// has yet to apply: the log's last offset less the applied one.
	MetricReplicaLag = "trails.replica.lag"
)

// AttrCall is the attribute naming the exported call a duration is of: the
// call's span name, such as "session.Persist".
const AttrCall = attribute.Key("trails.call")

// attrAttempt is the attempt number of a retry event on a request's span.
const attrAttempt = attribute.Key("trails.kg.attempt")

var (
	tracer = otel.Tracer(ScopeName)
	meter  = otel.Meter(ScopeName)

	callDuration    metric.Float64Histogram
	requestDuration metric.Float64Histogram
	retries         metric.Int64Counter
	commits         metric.Int64Counter
	batchSize       metric.Int64Histogram
	cacheHits       metric.Int64Counter
	cacheMisses     metric.Int64Counter
	fences          metric.Int64Counter
)

// latencyBuckets are the histogram boundaries of durations, in seconds:
// from a cached read (a millisecond) to a request retried for seconds.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

func init() {
	// The global meter hands out instruments that do nothing until a
	// provider is installed, then forward to it: no error to expect.
	callDuration, _ = meter.Float64Histogram(MetricCallDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of Trails' exported calls that reach the store."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	d, _ := dbconv.NewClientOperationDuration(meter, metric.WithExplicitBucketBoundaries(latencyBuckets...))
	requestDuration = d.Inst()
	retries, _ = meter.Int64Counter(MetricRetries, metric.WithUnit("{retry}"),
		metric.WithDescription("Attempts of store requests beyond the first."))
	commits, _ = meter.Int64Counter(MetricCommits, metric.WithUnit("{request}"),
		metric.WithDescription("Update requests sent by group commit, one store transaction each."))
	batchSize, _ = meter.Int64Histogram(MetricBatchSize, metric.WithUnit("{write}"),
		metric.WithDescription("Conditional writes carried by each group-commit request."),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64))
	cacheHits, _ = meter.Int64Counter(MetricCacheHits, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions whose turns a cached load found in its cache."))
	cacheMisses, _ = meter.Int64Counter(MetricCacheMisses, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions whose turns a cached load read from the store."))
	fences, _ = meter.Int64Counter(MetricFences, metric.WithUnit("{fence}"),
		metric.WithDescription("Fences sent after a write's answer was lost."))
}

// Call is an exported call in progress: its span and, when durations are
// recorded, its start. The zero Call is not valid; Start returns one.
type Call struct {
	span  trace.Span
	name  string
	start time.Time
}

// Start starts the span of the exported call name (such as
// "session.Persist"), a child of ctx's span, and returns the context to
// pass on to what the call does. id, when not "", is the session the call
// acts on (gen_ai.conversation.id). End the Call when the call returns.
func Start(ctx context.Context, name, id string) (context.Context, Call) {
	ctx, span := tracer.Start(ctx, name)
	if id != "" && span.IsRecording() {
		span.SetAttributes(semconv.GenAIConversationID(id))
	}
	c := Call{span: span, name: name}
	if callDuration.Enabled(ctx) {
		c.start = time.Now()
	}
	return ctx, c
}

// SetSession names the session the call acts on, once it is known.
func (c Call) SetSession(id string) {
	if id != "" && c.span.IsRecording() {
		c.span.SetAttributes(semconv.GenAIConversationID(id))
	}
}

// End ends the call with its outcome err: a failure is recorded on the
// span (as an event, the status and error.type) and in the duration.
func (c Call) End(err error) {
	if err != nil && c.span.IsRecording() {
		c.span.RecordError(err)
		c.span.SetStatus(codes.Error, err.Error())
		c.span.SetAttributes(semconv.ErrorTypeKey.String(ErrorType(err)))
	}
	c.span.End()
	if !c.start.IsZero() {
		attrs := []attribute.KeyValue{AttrCall.String(c.name)}
		if err != nil {
			attrs = append(attrs, semconv.ErrorTypeKey.String(ErrorType(err)))
		}
		callDuration.Record(trace.ContextWithSpan(context.Background(), c.span), time.Since(c.start).Seconds(),
			metric.WithAttributes(attrs...))
	}
}

// query is what a context says of the store requests sent with it.
type query struct {
	name  string       // db.operation.name
	batch int          // db.operation.batch.size, when > 1
	links []trace.Link // the spans of the batch's other writes
}

type queryKey struct{}

// WithQuery returns ctx naming the store requests sent with it: name,
// such as "fence", is their db.operation.name, for a request whose text
// is built in code and so has no name of its own (QueryName).
func WithQuery(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, queryKey{}, &query{name: name})
}

// QueryName returns the name of SPARQL text q: the NAME of a first line
// "# NAME: ...", the convention of Trails' embedded queries (append.ru
// begins "# append: add turns ..."), where NAME is lower-case letters,
// digits and '-'; "" when q does not begin so.
func QueryName(q string) string {
	if len(q) < 4 || q[0] != '#' || q[1] != ' ' {
		return ""
	}
	for i := 2; i < len(q) && i < 66; i++ {
		switch c := q[i]; {
		case c == ':' && i > 2:
			return q[2:i]
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		default:
			return ""
		}
	}
	return ""
}

// WithBatch returns ctx for a group-commit request carrying the writes
// whose contexts are members (ctx among them): the request's span is
// named "BATCH", followed by name (the members' common query name) when
// not "", has db.operation.batch.size, and links to the spans of the
// members other than ctx's. It records the request in the group-commit
// metrics.
func WithBatch(ctx context.Context, name string, members []context.Context) context.Context {
	commits.Add(ctx, 1)
	batchSize.Record(ctx, int64(len(members)))
	if len(members) < 2 {
		return ctx
	}
	q := &query{name: "BATCH", batch: len(members)}
	if name != "" {
		q.name += " " + name
	}
	if own := trace.SpanContextFromContext(ctx); own.IsValid() {
		for _, m := range members {
			if sc := trace.SpanContextFromContext(m); sc.IsValid() && !sc.Equal(own) {
				q.links = append(q.links, trace.Link{SpanContext: sc})
			}
		}
	}
	return context.WithValue(ctx, queryKey{}, q)
}

// Committed records a write sent alone by group commit: one request of
// one write.
func Committed(ctx context.Context) {
	commits.Add(ctx, 1)
	batchSize.Record(ctx, 1)
}

// Request is a store request in progress: its span and, when durations
// are recorded, its start and attributes.
type Request struct {
	span  trace.Span
	start time.Time
	attrs []attribute.KeyValue // db.system.name, db.operation.name, server.*
}

// StartRequest starts the span of one store request (a child of ctx's
// span, of kind client) to rawURL on a store of profile system ("fuseki",
// "oxigraph", "generic": db.system.name). Its db.operation.name, and the
// span's name, is the name ctx gives (WithQuery, WithBatch), else that of
// its SPARQL text (QueryName), else op, the transport's name of the
// request ("update", "select", "get graph"). End the Request when it has
// been answered or has failed.
func StartRequest(ctx context.Context, system, op, text, rawURL string) (context.Context, Request) {
	q, _ := ctx.Value(queryKey{}).(*query)
	var links []trace.Link
	if q != nil {
		links = q.links
	}
	opts := clientSpan
	if len(links) > 0 {
		opts = []trace.SpanStartOption{clientSpan[0], trace.WithLinks(links...)}
	}
	ctx, span := tracer.Start(ctx, op, opts...)
	r := Request{span: span}
	recording, timed := span.IsRecording(), requestDuration.Enabled(ctx) || retries.Enabled(ctx)
	if !recording && !timed {
		return ctx, r
	}
	name := ""
	if q != nil {
		name = q.name
	}
	if name == "" {
		name = QueryName(text)
	}
	if name == "" {
		name = op
	}
	r.attrs = []attribute.KeyValue{semconv.DBSystemNameKey.String(system), semconv.DBOperationName(name)}
	if u, err := url.Parse(rawURL); err == nil && u.Hostname() != "" {
		r.attrs = append(r.attrs, semconv.ServerAddress(u.Hostname()))
		if p := port(u); p > 0 {
			r.attrs = append(r.attrs, semconv.ServerPort(p))
		}
	}
	if recording {
		span.SetName(name)
		span.SetAttributes(r.attrs...)
		if q != nil && q.batch > 1 {
			span.SetAttributes(semconv.DBOperationBatchSize(q.batch))
		}
	}
	if timed {
		r.start = time.Now()
	}
	return ctx, r
}

// clientSpan are the options of a request's span without links: made
// once, so that a request with no provider installed allocates none.
var clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// port returns the port of u, written or implied by its scheme.
func port(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	switch u.Scheme {
	case "http":
		return 80
	case "https":
		return 443
	}
	return 0
}

// Retry records that the request failed with err and is about to be sent
// again, as attempt number attempt.
func (r Request) Retry(ctx context.Context, attempt int, err error) {
	if r.span.IsRecording() {
		r.span.AddEvent("retry", trace.WithAttributes(attrAttempt.Int(attempt), semconv.ErrorTypeKey.String(ErrorType(err))))
	}
	if retries.Enabled(ctx) {
		retries.Add(ctx, 1, metric.WithAttributes(r.attrs[:2]...))
	}
}

// End ends the request with its outcome err.
func (r Request) End(ctx context.Context, err error) {
	if err != nil && r.span.IsRecording() {
		r.span.RecordError(err)
		r.span.SetStatus(codes.Error, err.Error())
		r.span.SetAttributes(semconv.ErrorTypeKey.String(ErrorType(err)))
	}
	r.span.End()
	if !r.start.IsZero() {
		attrs := r.attrs
		if err != nil {
			attrs = append(attrs[:len(attrs):len(attrs)], semconv.ErrorTypeKey.String(ErrorType(err)))
		}
		requestDuration.Record(ctx, time.Since(r.start).Seconds(), metric.WithAttributes(attrs...))
	}
}

// CacheLookup records whether a load found a session's turns cached.
func CacheLookup(ctx context.Context, hit bool) {
	if hit {
		cacheHits.Add(ctx, 1)
	} else {
		cacheMisses.Add(ctx, 1)
	}
}

// Fenced records a fence sent after a lost answer, and its failure err.
func Fenced(ctx context.Context, err error) {
	if !fences.Enabled(ctx) {
		return
	}
	if err != nil {
		fences.Add(ctx, 1, metric.WithAttributes(semconv.ErrorTypeKey.String(ErrorType(err))))
		return
	}
	fences.Add(ctx, 1)
}

var (
	sentinelsMu sync.RWMutex
	sentinels   []error
)

// RegisterErrors makes errs, a package's sentinel errors, the error.type
// of the failures that match them (errors.Is): their text, such as
// "session: not found". The errors registered last are tried first, so
// that a package above its transport names its own errors before the
// transport's it wraps.
func RegisterErrors(errs ...error) {
	sentinelsMu.Lock()
	defer sentinelsMu.Unlock()
	sentinels = append(sentinels, errs...)
}

// ErrorType returns the error.type of err: the text of the last
// registered sentinel it matches, "context canceled" or "context deadline
// exceeded", or "_OTHER".
func ErrorType(err error) string {
	sentinelsMu.RLock()
	defer sentinelsMu.RUnlock()
	for i := len(sentinels) - 1; i >= 0; i-- {
		if errors.Is(err, sentinels[i]) {
			return sentinels[i].Error()
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded.Error()
	}
	return "_OTHER"
}
