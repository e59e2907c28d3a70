package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

type deleteCmd struct {
	sign           signFlags // --sign-key, --witness
	cascade        bool
	detachChildren bool
	dryRun         bool
	json           bool
	by             string
}

func (*deleteCmd) name() string { return "delete" }
func (*deleteCmd) usage() string {
	return "ID [--cascade | --detach-children] [--dry-run] [--by PRINCIPAL] [--json] [--sign-key FILE --witness URL]"
}
func (*deleteCmd) synopsis() string {
	return "delete a session (refused while forks exist, unless --cascade or --detach-children)"
}
func (*deleteCmd) example() string {
	return "trails-admin delete 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --cascade --dry-run"
}
func (c *deleteCmd) flags(fs *flag.FlagSet) {
	c.sign.register(fs)
	fs.BoolVar(&c.cascade, "cascade", false, "delete the whole fork tree under ID (a parent cycle included), leaves first, in atomic batches of sessions")
	fs.BoolVar(&c.detachChildren, "detach-children", false, "detach each direct fork first, then delete ID")
	fs.BoolVar(&c.dryRun, "dry-run", false, "print the steps that would be taken; change nothing")
	fs.StringVar(&c.by, "by", "", "principal recorded in PROV as the one who deleted (default: each session's)")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// stepJSON is the JSON form of a delete step (stable names).
type stepJSON struct {
	Action  string `json:"action"`
	Session string `json:"session"`
	Turns   int    `json:"turns"`
}

func (c *deleteCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("delete needs one session id; try: trails-admin delete -h")
	}
	if c.cascade && c.detachChildren {
		return usageErrorf("delete: --cascade and --detach-children exclude each other; try: trails-admin delete -h")
	}
	id := args[0]
	if err := a.sign(ctx, c.name(), c.sign); err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	opts := session.DeleteOptions{By: c.by, Cascade: c.cascade, DetachChildren: c.detachChildren}
	steps, err := st.PlanDelete(ctx, id, opts)
	if errors.Is(err, session.ErrHasChildren) {
		kids, kerr := st.Branches(ctx, id)
		if kerr != nil {
			return kerr
		}
		fmt.Fprintf(a.stderr, "trails-admin: not deleting %s: it has %s:\n", termsafe.String(id), render.Plural(len(kids), "fork"))
		for _, k := range kids {
			fmt.Fprintf(a.stderr, "  %s  %s  @%d\n", termsafe.String(k.ID), termsafe.String(k.Branch), k.ForkedAt)
		}
		fmt.Fprintf(a.stderr, "to delete them too: trails-admin delete %s --cascade; to keep them as roots: --detach-children\n", termsafe.String(id))
		return errFindings
	}
	if err != nil {
		return err
	}
	if c.dryRun {
		return c.report(a, steps, len(steps), true)
	}
	p := a.progress("delete")
	done := 0
	opts.Progress = func(d, total int, s session.Step) {
		done = d
		p.update(d, total, s.Action+" "+s.Session)
	}
	err = st.Delete(ctx, id, opts)
	p.finish()
	var se *session.StepsError
	if errors.As(err, &se) {
		c.report(a, se.Steps, len(se.Done), false)
		return fmt.Errorf("%w; run the same command again to finish", err)
	}
	if err != nil {
		return err
	}
	return c.report(a, steps, done, false)
}

// report prints the steps, marking how many were done.
func (c *deleteCmd) report(a *app, steps []session.Step, done int, dryRun bool) error {
	if c.json {
		out := struct {
			Steps  []stepJSON `json:"steps"`
			Done   int        `json:"done"`
			DryRun bool       `json:"dry_run"`
		}{Steps: []stepJSON{}, Done: done, DryRun: dryRun}
		if dryRun {
			out.Done = 0
		}
		for _, s := range steps {
			out.Steps = append(out.Steps, stepJSON{Action: s.Action, Session: s.Session, Turns: s.Turns})
		}
		return a.json(out)
	}
	for i, s := range steps {
		mark := "done   "
		switch {
		case dryRun:
			mark = "would  "
		case i >= done:
			mark = "pending"
		}
		what := "delete " + termsafe.String(s.Session) + " (" + render.Plural(s.Turns, "turn") + ")"
		if s.Action == "detach" {
			what = "detach " + termsafe.String(s.Session) + " (copy " + render.Plural(s.Turns, "inherited turn") + ")"
		}
		fmt.Fprintf(a.stdout, "%s %s\n", mark, what)
	}
	return nil
}
