package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

type detachCmd struct {
	sign   signFlags // --sign-key, --witness
	dryRun bool
	json   bool
	by     string
}

func (*detachCmd) name() string { return "detach" }
func (*detachCmd) usage() string {
	return "ID [--dry-run] [--by PRINCIPAL] [--json] [--sign-key FILE --witness URL]"
}
func (*detachCmd) synopsis() string {
	return "copy a fork's inherited prefix into it and cut its parent link (one atomic step)"
}
func (*detachCmd) example() string {
	return "trails-admin detach 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --dry-run"
}
func (c *detachCmd) flags(fs *flag.FlagSet) {
	c.sign.register(fs)
	fs.BoolVar(&c.dryRun, "dry-run", false, "print what would be materialized; change nothing")
	fs.StringVar(&c.by, "by", "", "principal recorded in PROV as the one who detached (default: the session's)")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// detachJSON is the JSON form of a detach (stable names).
type detachJSON struct {
	Session string         `json:"session"`
	Parent  string         `json:"parent"`
	Copied  int            `json:"copied"`
	From    map[string]int `json:"from"`
	DryRun  bool           `json:"dry_run"`
}

func (c *detachCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("detach needs one session id; try: trails-admin detach -h")
	}
	id := args[0]
	if err := a.sign(ctx, c.name(), c.sign); err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	var r session.DetachResult
	if c.dryRun {
		r, err = st.PlanDetach(ctx, id)
	} else {
		p := a.progress("detach")
		p.update(0, 1, id)
		r, err = st.DetachReport(ctx, id, session.DetachOptions{By: c.by})
		p.finish()
	}
	if err != nil {
		return err
	}
	if c.json {
		from := r.From
		if from == nil {
			from = map[string]int{}
		}
		return a.json(detachJSON{Session: id, Parent: r.Parent, Copied: r.Copied, From: from, DryRun: c.dryRun})
	}
	if r.Parent == "" {
		fmt.Fprintf(a.stdout, "%s is a root already: nothing to detach\n", termsafe.String(id))
		return nil
	}
	verb := "copied"
	if c.dryRun {
		verb = "would copy"
	}
	fmt.Fprintf(a.stdout, "%s %s %s into %s and cut its link to %s:\n", prefix(c.dryRun), verb, render.Plural(r.Copied, "inherited turn"), termsafe.String(id), termsafe.String(r.Parent))
	for _, anc := range sortedKeys(r.From) {
		fmt.Fprintf(a.stdout, "  %s from %s\n", render.Plural(r.From[anc], "turn"), termsafe.String(anc))
	}
	return nil
}

// prefix marks the output of a dry run.
func prefix(dryRun bool) string {
	if dryRun {
		return "dry run:"
	}
	return "detached:"
}
