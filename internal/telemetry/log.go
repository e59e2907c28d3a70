package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/messagingconv"
	"go.opentelemetry.io/otel/trace"
)

// MetricSendDuration is the histogram of the durations in seconds of the
// sends of records to the log (the cluster profile), until Kafka
// acknowledged them: the semantic conventions'
// messaging.client.operation.duration, by messaging.system,
// messaging.operation.name, messaging.destination.name and, for a
// failure, error.type.
const MetricSendDuration = "messaging.client.operation.duration"

var sendDuration metric.Float64Histogram

func init() {
	d, _ := messagingconv.NewClientOperationDuration(meter, metric.WithExplicitBucketBoundaries(latencyBuckets...))
	sendDuration = d.Inst()
}

// Send is a write through the log in progress: its span and, when
// durations are recorded, its start.
type Send struct {
	span  trace.Span
	start time.Time
	attrs []attribute.KeyValue
}

// producerSpan are the options of a send's span: made once.
var producerSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}

// StartSend starts the span of a write sent as one record of size bytes
// to partition 0 of Kafka topic (a child of ctx's span, of kind
// producer), named "send TOPIC" as the messaging semantic conventions
// name it, with messaging.system "kafka", messaging.destination.name,
// messaging.destination.partition.id, messaging.message.body.size and the
// db.operation.name the write would have on one store (WithQuery, the
// name its text begins with, else op). Call Sent once Kafka answered the
// send, and End when the write's outcome is known.
func StartSend(ctx context.Context, topic, op, text string, size int) (context.Context, Send) {
	ctx, span := tracer.Start(ctx, "send "+topic, producerSpan...)
	s := Send{span: span}
	recording, timed := span.IsRecording(), sendDuration.Enabled(ctx)
	if !recording && !timed {
		return ctx, s
	}
	s.attrs = []attribute.KeyValue{semconv.MessagingSystemKafka, semconv.MessagingOperationName("send"), semconv.MessagingDestinationName(topic)}
	if recording {
		name := ""
		if q, _ := ctx.Value(queryKey{}).(*query); q != nil {
			name = q.name
		}
		if name == "" {
			name = QueryName(text)
		}
		if name == "" {
			name = op
		}
		span.SetAttributes(s.attrs...)
		span.SetAttributes(semconv.MessagingOperationTypeSend, semconv.MessagingDestinationPartitionID("0"),
			semconv.MessagingMessageBodySize(size), semconv.DBOperationName(name))
	}
	if timed {
		s.start = time.Now()
	}
	return ctx, s
}

// Sent records Kafka's answer to the send: the record's offset
// (messaging.kafka.offset) or the send's failure err.
func (s Send) Sent(ctx context.Context, offset int64, err error) {
	if err == nil && s.span.IsRecording() {
		s.span.SetAttributes(semconv.MessagingKafkaOffset(int(offset)))
	}
	if !s.start.IsZero() {
		attrs := s.attrs
		if err != nil {
			attrs = append(attrs[:len(attrs):len(attrs)], semconv.ErrorTypeKey.String(ErrorType(err)))
		}
		sendDuration.Record(ctx, time.Since(s.start).Seconds(), metric.WithAttributes(attrs...))
	}
}

// End ends the write with its outcome err: the replicas' answer (a
// refusal), or a failure to learn it.
func (s Send) End(err error) {
	if err != nil && s.span.IsRecording() {
		s.span.RecordError(err)
		s.span.SetStatus(codes.Error, err.Error())
		s.span.SetAttributes(semconv.ErrorTypeKey.String(ErrorType(err)))
	}
	s.span.End()
}
