// Package service holds what Trails' long-running commands (trails-mcp,
// trails-replica) share to be run in production: a log/slog logger in
// the format --log-format names, and the /metrics handler that serves
// what the OpenTelemetry metrics API records, in the Prometheus text
// format. The library packages report through the API alone
// (internal/telemetry); only a command installs a provider, here.
package service

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// LogFormats are the values of a command's --log-format, the default
// first.
var LogFormats = []string{"text", "json"}

// NewLogger returns a logger writing to w in format, "text" (slog's
// key=value lines) or "json" (one object a line), at level Info. It
// returns an error naming the formats for any other.
func NewLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

var (
	metricsOnce    sync.Once
	metricsHandler http.Handler
	metricsErr     error
)

// Metrics installs, the first time it is called in the process, a meter
// provider read by the OpenTelemetry Prometheus exporter as the global
// one (otel.SetMeterProvider), and returns the handler that serves its
// metrics in the Prometheus text format, with the Go runtime's and the
// process's: what a command mounts at /metrics. Metric names are
// translated as the exporter does: trails.call.duration (seconds) is
// trails_call_duration_seconds, a counter gains _total.
func Metrics() (http.Handler, error) {
	metricsOnce.Do(func() {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			metricsErr = fmt.Errorf("metrics: %w", err)
			return
		}
		otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)))
		metricsHandler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	})
	return metricsHandler, metricsErr
}
