package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
)

type orphansCmd struct{ json bool }

func (*orphansCmd) name() string  { return "orphans" }
func (*orphansCmd) usage() string { return "[--json]" }
func (*orphansCmd) synopsis() string {
	return "list forks whose parent (or an ancestor) is missing; exit 1 if any (for cron)"
}
func (*orphansCmd) example() string {
	return "trails-admin orphans || mail -s 'trails orphans' ops@example.org"
}
func (c *orphansCmd) flags(fs *flag.FlagSet) { fs.BoolVar(&c.json, "json", false, "print JSON") }

// orphanJSON is the JSON form of an orphan (stable names).
type orphanJSON struct {
	Session  string `json:"session"`
	Missing  string `json:"missing"`
	Deletion string `json:"deletion,omitempty"`
}

func (c *orphansCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return usageErrorf("orphans takes no arguments; try: trails-admin orphans -h")
	}
	r, err := a.reader(ctx)
	if err != nil {
		return err
	}
	orphans, err := r.Orphans(ctx)
	if err != nil {
		return err
	}
	if c.json {
		out := make([]orphanJSON, len(orphans))
		for i, o := range orphans {
			out[i] = orphanJSON{Session: o.Session, Missing: o.Missing, Deletion: o.Deletion}
		}
		if err := a.json(out); err != nil {
			return err
		}
	} else {
		tw := a.table()
		fmt.Fprintln(tw, "SESSION\tMISSING ANCESTOR\tDELETED BY")
		for _, o := range orphans {
			del := "-"
			if o.Deletion != "" {
				del = o.Deletion
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", termsafe.String(o.Session), termsafe.String(o.Missing), termsafe.String(del))
		}
		tw.Flush()
	}
	if len(orphans) > 0 {
		fmt.Fprintf(a.stderr, "%s orphaned: restore the missing ancestors from a backup (trails-admin import), or delete the orphans\n", render.Plural(len(orphans), "session"))
		return errFindings
	}
	return nil
}
