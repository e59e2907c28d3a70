package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// rechainCmd is "rechain": add the hash chain to turns stored before
// Trails kept it.
type rechainCmd struct {
	sign signFlags // --sign-key, --witness
	json bool
}

func (*rechainCmd) name() string  { return "rechain" }
func (*rechainCmd) usage() string { return "[--json] [--sign-key FILE --witness URL]" }
func (*rechainCmd) synopsis() string {
	return "give every turn stored before the hash chain its trails:digest, so that check can verify it (once, after an upgrade; re-runnable)"
}
func (*rechainCmd) example() string { return "trails-admin rechain" }
func (c *rechainCmd) flags(fs *flag.FlagSet) {
	c.sign.register(fs)
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

func (c *rechainCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return usageErrorf("rechain takes no arguments; try: trails-admin rechain -h")
	}
	a.longRequests()
	if err := a.sign(ctx, c.name(), c.sign); err != nil {
		return err
	}
	ds, err := a.dataset(ctx)
	if err != nil {
		return err
	}
	p := a.progress("rechain")
	stats, err := ds.Rechain(ctx, func(done, total int) { p.update(done, total, "") })
	p.finish()
	if a.signer != nil {
		fmt.Fprintf(a.stderr, "signed %s\n", render.Plural(stats.Signed, "session head"))
	}
	if err != nil && !errors.Is(err, session.ErrNotWitnessed) {
		fmt.Fprintf(a.stderr, "stopped after %d of %s; run the same command again to finish\n", stats.Sessions+len(stats.Skipped), render.Plural(stats.Total, "session"))
		return err
	}
	skipped := slices.Sorted(maps.Keys(stats.Skipped))
	if c.json {
		type skip struct {
			Session string `json:"session"`
			Error   string `json:"error"`
		}
		out := struct {
			Sessions int    `json:"sessions"`
			Turns    int    `json:"turns"`
			Skipped  []skip `json:"skipped"`
		}{Sessions: stats.Sessions, Turns: stats.Turns, Skipped: []skip{}}
		for _, id := range skipped {
			out.Skipped = append(out.Skipped, skip{id, stats.Skipped[id].Error()})
		}
		if jerr := a.json(out); jerr != nil {
			return jerr
		}
		return err // nil, or statements not witnessed (the chains are stored)
	}
	if stats.Total == 0 {
		fmt.Fprintln(a.stdout, "nothing to do: every stored turn has its digest")
		return nil
	}
	fmt.Fprintf(a.stdout, "chained %s of %s\n", render.Plural(stats.Turns, "turn"), render.Plural(stats.Sessions, "session"))
	for _, id := range skipped {
		fmt.Fprintf(a.stdout, "skipped %s: %s\n", termsafe.String(id), termsafe.String(stats.Skipped[id].Error()))
	}
	if len(skipped) > 0 {
		return errors.Join(err, fmt.Errorf("%d sessions could not be chained: their history does not load (see trails-admin check)", len(skipped)))
	}
	return err // nil, or statements not witnessed (the chains are stored)
}
