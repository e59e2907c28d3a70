// Command trails-replica applies Trails' replicated log (a Kafka topic) to
// one replica's Fuseki dataset and serves its applied position and the
// outcomes of the records it applied to the writers (package cluster).
// Run "trails-replica -h".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/service"
	"github.com/trails-kg/trails/kg"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, context.Canceled):
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, kg.ErrConfig):
		fmt.Fprintln(os.Stderr, "trails-replica:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "trails-replica:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("trails-replica", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", os.Getenv("TRAILS_KAFKA_BROKERS"), "Kafka bootstrap servers, comma-separated ($TRAILS_KAFKA_BROKERS)")
	topic := fs.String("topic", cluster.DefaultTopic, "the log topic (its partition 0 is applied)")
	dataset := fs.String("dataset", os.Getenv("TRAILS_REPLICA_DATASET"), "the replica's Fuseki dataset URL ($TRAILS_REPLICA_DATASET)")
	listen := fs.String("listen", "127.0.0.1:3141", "address of the HTTP service of positions and outcomes")
	logFormat := fs.String("log-format", envOr("TRAILS_LOG_FORMAT", "text"), "the format of the log on stderr: text or json ($TRAILS_LOG_FORMAT)")
	updatesOnly := fs.Bool("updates-only", false, "apply every record as its SPARQL Update (the update path), never an append's data after deciding its condition by reading (the decided path, the default)")
	from := fs.String("from", "", "a running replica's dataset URL to copy first when -dataset is empty (cluster.Seed): the new replica then applies the log from the copy's offset")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: trails-replica -brokers HOST:PORT,... -dataset URL [-from URL] [-listen ADDR] [-topic NAME] [-log-format text|json] [-updates-only]

Applies the log topic's records, in order, to the replica's Fuseki dataset,
in batches of one transaction each, with the offset applied written into the
dataset in the same transaction: restarted, it resumes where it stopped.
Writers (cluster.Client) learn their records' outcomes from its HTTP service:
  GET /position?atLeast=N&wait=5s   {"position": P}
  GET /outcome?offset=N&wait=5s     {"offset": N, "position": P, "outcome": "applied"|"refused"|"unknown"|"pending"}
  GET /metrics                      its metrics, in the Prometheus text format
                                    (trails_replica_lag: records not yet applied;
                                    trails_replica_records_total: records applied
                                    and refused; trails_replica_decided_total: of
                                    those applied, the appends applied as data;
                                    trails_replica_apply_duration_seconds)
It logs to stderr with log/slog (-log-format text or json).
It stops on SIGINT or SIGTERM. A new replica starts on an empty dataset: from
the log's first record, or with -from from a copy of a running replica's
dataset and the offset it holds (what the log's retention requires once it
no longer holds every record). -from does nothing when -dataset holds data:
a replica restarted with it resumes from its own offset.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *brokers == "" || *dataset == "" {
		fs.Usage()
		return fmt.Errorf("%w: -brokers and -dataset are required", kg.ErrConfig)
	}
	logger, err := service.NewLogger(stderr, *logFormat)
	if err != nil {
		return fmt.Errorf("%w: %v", kg.ErrConfig, err)
	}
	metrics, err := service.Metrics()
	if err != nil {
		return err
	}
	store, err := kg.New(kg.Config{Endpoint: *dataset, Timeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	if *from != "" {
		src, err := kg.New(kg.Config{Endpoint: *from, Timeout: 30 * time.Minute})
		if err != nil {
			return err
		}
		switch off, err := cluster.Seed(ctx, src, store, *topic); {
		case errors.Is(err, cluster.ErrNotEmpty):
			logger.Info("the dataset holds data: resuming from its own offset, not copying", "dataset", *dataset, "from", *from)
		case err != nil:
			return err
		default:
			logger.Info("copied", "from", *from, "dataset", *dataset, "offset", off)
		}
	}
	a, err := cluster.NewApplier(cluster.ApplierConfig{
		Brokers: strings.Split(*brokers, ","), Topic: *topic, Store: store, UpdatesOnly: *updatesOnly,
		Logf: func(format string, args ...any) { logger.Info(fmt.Sprintf(format, args...)) },
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("%w: listen: %v", kg.ErrConfig, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	mux.Handle("/", a)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	// The message keeps the words cluster's fault tests wait for.
	logger.Info("serving positions on http://"+ln.Addr().String(), "metrics", "http://"+ln.Addr().String()+"/metrics")
	err = a.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return err
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
