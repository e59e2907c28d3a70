package telemetry

import (
	"context"
	"net/url"
	"path"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// The metrics of a replica's applier (package cluster), each by
// messaging.system ("kafka"), messaging.destination.name (the log topic),
// db.namespace (the replica's dataset), server.address and server.port
// (its Fuseki).
const (
	// MetricReplicaRecords counts the log records the applier passed, by
	// AttrOutcome: "applied", or "refused" (the store refused the record,
	// and the applier wrote its refusal marker).
	MetricReplicaRecords = "trails.replica.records"
	// MetricReplicaApplyDuration is the histogram of the durations in
	// seconds of the applier's requests, each one transaction carrying a
	// batch of records (or one record, or one refusal) and the move of
	// the applied offset, retries included; error.type for a request that
	// failed (a batch the store refused is then sent again record by
	// record).
	MetricReplicaApplyDuration = "trails.replica.apply.duration"
	// MetricReplicaDecided counts the records of MetricReplicaRecords'
	// applied ones that the applier applied as data, having decided
	// their conditions by reading (cluster's decided path).
	MetricReplicaDecided = "trails.replica.decided"
)

// AttrOutcome is the attribute of MetricReplicaRecords saying what became
// of the records: OutcomeApplied or OutcomeRefused.
const AttrOutcome = attribute.Key("trails.replica.outcome")

// The values of AttrOutcome.
const (
	OutcomeApplied = "applied"
	OutcomeRefused = "refused"
)

var (
	replicaRecords       metric.Int64Counter
	replicaApplyDuration metric.Float64Histogram
	replicaDecided       metric.Int64Counter
	replicaApplied       metric.Int64ObservableGauge
	replicaLag           metric.Int64ObservableGauge
)

func init() {
	replicaRecords, _ = meter.Int64Counter(MetricReplicaRecords, metric.WithUnit("{record}"),
		metric.WithDescription("Log records the replica's applier passed, by outcome (applied or refused)."))
	replicaDecided, _ = meter.Int64Counter(MetricReplicaDecided, metric.WithUnit("{record}"),
		metric.WithDescription("Records the replica's applier applied as data, their conditions decided by reading (a part of the applied ones)."))
	replicaApplyDuration, _ = meter.Float64Histogram(MetricReplicaApplyDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of the applier's requests, one transaction each, retries included."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	replicaApplied, _ = meter.Int64ObservableGauge(MetricReplicaApplied, metric.WithUnit("{offset}"),
		metric.WithDescription("Offset of the last log record the replica applied (-1 for none)."))
	replicaLag, _ = meter.Int64ObservableGauge(MetricReplicaLag, metric.WithUnit("{record}"),
		metric.WithDescription("Log records the replica has yet to apply: the log's last offset less the applied one."))
}

// Replica reports the work of one applier: the log topic it applies to
// the dataset at a URL. The zero Replica reports nothing; NewReplica
// returns one. It is safe for concurrent use.
type Replica struct {
	set     attribute.Set
	applied metric.MeasurementOption // the set and AttrOutcome applied
	refused metric.MeasurementOption // the set and AttrOutcome refused
	all     metric.MeasurementOption // the set
}

// NewReplica returns the Replica of an applier of topic to the dataset
// at URL dataset.
func NewReplica(topic, dataset string) Replica {
	attrs := []attribute.KeyValue{semconv.MessagingSystemKafka, semconv.MessagingDestinationName(topic)}
	if u, err := url.Parse(dataset); err == nil {
		if name := path.Base(u.Path); name != "/" && name != "." {
			attrs = append(attrs, semconv.DBNamespace(name))
		}
		if u.Hostname() != "" {
			attrs = append(attrs, semconv.ServerAddress(u.Hostname()))
			if p := port(u); p > 0 {
				attrs = append(attrs, semconv.ServerPort(p))
			}
		}
	}
	set := attribute.NewSet(attrs...)
	with := func(outcome string) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(attrs[:len(attrs):len(attrs)], AttrOutcome.String(outcome))...))
	}
	return Replica{set: set, applied: with(OutcomeApplied), refused: with(OutcomeRefused), all: metric.WithAttributeSet(set)}
}

// Records records that the applier passed applied records that applied
// and refused records that the store refused.
func (r Replica) Records(ctx context.Context, applied, refused int) {
	if r.all == nil || !replicaRecords.Enabled(ctx) {
		return
	}
	if applied > 0 {
		replicaRecords.Add(ctx, int64(applied), r.applied)
	}
	if refused > 0 {
		replicaRecords.Add(ctx, int64(refused), r.refused)
	}
}

// Decided records that n of the records applied were applied as data.
func (r Replica) Decided(ctx context.Context, n int) {
	if r.all == nil || n <= 0 || !replicaDecided.Enabled(ctx) {
		return
	}
	replicaDecided.Add(ctx, int64(n), r.all)
}

// StartApply returns the start of an apply request, to give to
// ApplyDone: the zero time when durations are not recorded.
func (r Replica) StartApply(ctx context.Context) time.Time {
	if r.all == nil || !replicaApplyDuration.Enabled(ctx) {
		return time.Time{}
	}
	return time.Now()
}

// ApplyDone records the duration of the apply request started at start
// (StartApply), and its failure err.
func (r Replica) ApplyDone(ctx context.Context, start time.Time, err error) {
	if start.IsZero() {
		return
	}
	if err != nil {
		replicaApplyDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributeSet(
			attribute.NewSet(append(r.set.ToSlice(), semconv.ErrorTypeKey.String(ErrorType(err)))...)))
		return
	}
	replicaApplyDuration.Record(ctx, time.Since(start).Seconds(), r.all)
}

// Observe reports, at each reading of the metrics, the applier's
// position (the offset it applied, -1 for none) and its lag, the log's
// last offset as end returns it less the position (left out when end
// fails). unregister stops the readings.
func (r Replica) Observe(position func() int64, end func(context.Context) (int64, error)) (unregister func(), err error) {
	if r.all == nil {
		return func() {}, nil
	}
	reg, err := meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		pos := position()
		o.ObserveInt64(replicaApplied, pos, r.all)
		if last, err := end(ctx); err == nil {
			o.ObserveInt64(replicaLag, max(last-pos, 0), r.all)
		}
		return nil
	}, replicaApplied, replicaLag)
	if err != nil {
		return nil, err
	}
	return func() { _ = reg.Unregister() }, nil
}
