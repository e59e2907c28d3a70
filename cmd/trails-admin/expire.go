package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// expireCmd is "expire": mark the sessions past their expiry as expired
// (design note 002).
type expireCmd struct {
	now    string
	dryRun bool
	by     string
	json   bool
}

func (*expireCmd) name() string  { return "expire" }
func (*expireCmd) usage() string { return "[--now TIME] [--dry-run] [--by PRINCIPAL] [--json]" }
func (*expireCmd) synopsis() string {
	return "mark every active or suspended session past its expiry as expired, flagging its descendants for cancellation (idempotent, for cron)"
}
func (*expireCmd) example() string { return "trails-admin expire --dry-run" }
func (c *expireCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.now, "now", "", "expire what is due at this RFC 3339 `TIME` (default: now)")
	fs.BoolVar(&c.dryRun, "dry-run", false, "list the sessions that would expire; change nothing")
	fs.StringVar(&c.by, "by", "", "principal recorded in PROV as the one who expired them (default: each session's)")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

func (c *expireCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return usageErrorf("expire takes no arguments; try: trails-admin expire -h")
	}
	now := time.Now()
	if c.now != "" {
		t, err := time.Parse(time.RFC3339Nano, c.now)
		if err != nil {
			return usageErrorf("expire: --now %s is not an RFC 3339 time (e.g. 2026-03-02T10:00:00Z); try: trails-admin expire -h", termsafe.Quote(c.now))
		}
		now = t
	}
	a.longRequests()
	ds, err := a.dataset(ctx)
	if err != nil {
		return err
	}
	if c.dryRun {
		steps, err := ds.PlanExpire(ctx, now)
		if err != nil {
			return err
		}
		ids := make([]string, len(steps))
		for i, s := range steps {
			ids[i] = s.Session
		}
		return c.report(a, now, ids, len(ids), true)
	}
	p := a.progress("expire")
	n, err := ds.Expire(ctx, now, admin.ExpireOptions{By: c.by, Progress: func(done, total int, s session.Step) {
		p.update(done, total, s.Session)
	}})
	p.finish()
	if err != nil {
		fmt.Fprintf(a.stderr, "expired %s before the error; run the same command again to finish\n", render.Plural(n, "session"))
		return err
	}
	return c.report(a, now, nil, n, false)
}

// report prints what expire did, or would do.
func (c *expireCmd) report(a *app, now time.Time, due []string, n int, dryRun bool) error {
	if c.json {
		out := struct {
			Now     time.Time `json:"now"`
			Expired int       `json:"expired"`
			Due     []string  `json:"due,omitempty"`
			DryRun  bool      `json:"dry_run"`
		}{Now: now.UTC(), Expired: n, Due: due, DryRun: dryRun}
		if dryRun {
			out.Expired = 0
			if out.Due == nil {
				out.Due = []string{}
			}
		}
		return a.json(out)
	}
	if dryRun {
		for _, id := range due {
			fmt.Fprintf(a.stdout, "would expire %s\n", termsafe.String(id))
		}
		fmt.Fprintf(a.stdout, "would expire %s at %s\n", render.Plural(n, "session"), now.UTC().Format(time.RFC3339Nano))
		return nil
	}
	fmt.Fprintf(a.stdout, "expired %s at %s\n", render.Plural(n, "session"), now.UTC().Format(time.RFC3339Nano))
	return nil
}
