package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/trails-kg/trails/internal/render"
	"time"

	"github.com/trails-kg/trails/admin"
)

// sweepCmd is "sweep": remove the staging graphs that writers
// left (check's rule staging) and the receipt graphs of their group
// commits.
type sweepCmd struct {
	olderThan time.Duration
	json      bool
}

func (*sweepCmd) name() string  { return "sweep" }
func (*sweepCmd) usage() string { return "[--older-than DURATION] [--json]" }
func (*sweepCmd) synopsis() string {
	return "remove the staging graphs of long turns that writers left when they died between sending a turn and its update (check's rule staging), and the receipt graphs of group commits that writers left when they stopped (idempotent, for cron)"
}
func (*sweepCmd) example() string { return "trails-admin sweep" }
func (c *sweepCmd) flags(fs *flag.FlagSet) {
	fs.DurationVar(&c.olderThan, "older-than", admin.StagingGrace, "remove only staging graphs made more than `DURATION` ago (less may fail a write in flight)")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

func (c *sweepCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return usageErrorf("sweep takes no arguments; try: trails-admin sweep -h")
	}
	if c.olderThan < 0 {
		return usageErrorf("sweep: --older-than %v is negative; try: trails-admin sweep -h", c.olderThan)
	}
	ds, err := a.dataset(ctx)
	if err != nil {
		return err
	}
	n, err := ds.SweepStaging(ctx, c.olderThan)
	if err != nil {
		return err
	}
	if c.json {
		return a.json(struct {
			Removed int `json:"removed"`
		}{n})
	}
	fmt.Fprintf(a.stdout, "removed %s\n", render.Plural(n, "staging graph"))
	return nil
}
