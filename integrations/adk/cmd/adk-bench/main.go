// Command adk-bench runs the same agent events against four ADK Go v2
// session services in one run and prints a markdown report judging the
// targets of issues 14 (item 6) and 21: ADK's own database service on SQLite
// (google.golang.org/adk/v2/session/database with the
// github.com/glebarez/sqlite driver, default settings, a file in a
// temporary directory) and on PostgreSQL (gorm.io/driver/postgres, a
// server the command starts itself from the machine's binaries, the
// Debian package postgresql, with default settings in a temporary
// directory, and stops on every exit), beside the Trails service of
// package adk on a Fuseki the command starts itself (TDB2 on disk); and,
// figures beside those judged (issue 39), the same Trails service on an
// Oxigraph it starts itself (RocksDB on disk). It measures appends, Gets
// of long sessions and of a tail, forks of long sessions (copying them in
// ADK), 8 and 64 concurrent writers, two writers on one session, and each
// store's own floor for an append and for the writers (raw INSERT DATA).
// Run "adk-bench -h".
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
