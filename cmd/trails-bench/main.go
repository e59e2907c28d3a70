// Command trails-bench measures Trails against the alternatives a user
// would consider, side by side, on a Fuseki it starts itself (TDB2 on
// disk, the project's configuration), or with -store oxigraph on an
// Oxigraph it starts itself (RocksDB on disk), every baseline on the same
// store: fork cost against copy-on-fork, Load against a naive chain
// walker, a flat session and a hand-written floor query, Persist against
// raw INSERT DATA, load cost as the store grows, the client's allocations
// and peak memory, loads per second under concurrent readers and a
// writer, what signing each write and adding it to a witness add to an
// append, and (-only shards, on Fuseki) the write capacity of replica
// groups sharded by session tree. It prints a markdown report with one
// column per target saying "meets" or "misses". Run "trails-bench -h".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/trails-kg/trails/internal/exit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exit.Code(err))
}
