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
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/trails-kg/trails/cluster"
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
	from := fs.String("from", "", "a running replica's dataset URL to copy first when -dataset is empty (cluster.Seed): the new replica then applies the log from the copy's offset")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: trails-replica -brokers HOST:PORT,... -dataset URL [-from URL] [-listen ADDR] [-topic NAME]

Applies the log topic's records, in order, to the replica's Fuseki dataset,
in batches of one transaction each, with the offset applied written into the
dataset in the same transaction: restarted, it resumes where it stopped.
Writers (cluster.Client) learn their records' outcomes from its HTTP service:
  GET /position?atLeast=N&wait=5s   {"position": P}
  GET /outcome?offset=N&wait=5s     {"offset": N, "position": P, "outcome": "applied"|"refused"|"unknown"|"pending"}
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
	store, err := kg.New(kg.Config{Endpoint: *dataset, Timeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	logger := log.New(stderr, "", log.LstdFlags|log.LUTC)
	if *from != "" {
		src, err := kg.New(kg.Config{Endpoint: *from, Timeout: 30 * time.Minute})
		if err != nil {
			return err
		}
		switch off, err := cluster.Seed(ctx, src, store, *topic); {
		case errors.Is(err, cluster.ErrNotEmpty):
			logger.Printf("trails-replica: %s holds data: resuming from its own offset, not copying %s", *dataset, *from)
		case err != nil:
			return err
		default:
			logger.Printf("trails-replica: copied %s into %s, at offset %d", *from, *dataset, off)
		}
	}
	a, err := cluster.NewApplier(cluster.ApplierConfig{
		Brokers: strings.Split(*brokers, ","), Topic: *topic, Store: store, Logf: logger.Printf,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("%w: listen: %v", kg.ErrConfig, err)
	}
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	logger.Printf("trails-replica: serving positions on http://%s", ln.Addr())
	err = a.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return err
}
