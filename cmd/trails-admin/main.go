// Command trails-admin is the operators' and auditors' tool for a Trails
// store: it lists, shows, replays and draws sessions and their forks, checks
// the dataset's integrity, finds orphans, detaches and deletes forks, backs
// up and restores, runs the audit queries and gives a demo. It holds no
// logic of its own that a library user would lack: every command is a thin
// layer over packages session and prov. Run "trails-admin help".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err))
}
