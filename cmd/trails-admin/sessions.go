package main

import (
	"context"
	"flag"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/session"
)

type sessionsCmd struct {
	principal string
	roots     bool
	tags      []string
	json      bool
}

func (*sessionsCmd) name() string  { return "sessions" }
func (*sessionsCmd) usage() string { return "[--principal P] [--roots] [--tag T …] [--json]" }
func (*sessionsCmd) synopsis() string {
	return "list sessions, newest first: id, principal, parent, fork point, branch, kind, turns"
}
func (*sessionsCmd) example() string { return "trails-admin sessions --principal agent-7 --roots" }
func (c *sessionsCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.principal, "principal", "", "only the sessions of this principal")
	fs.BoolVar(&c.roots, "roots", false, "only root sessions (no parent)")
	fs.Func("tag", "only the sessions tagged `T` (repeatable: every tag given)", func(v string) error {
		c.tags = append(c.tags, v)
		return nil
	})
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

func (c *sessionsCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return usageErrorf("sessions takes no arguments; try: trails-admin sessions -h")
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	var opts []session.ListOption
	if c.principal != "" {
		opts = append(opts, session.ByPrincipal(c.principal))
	}
	if c.roots {
		opts = append(opts, session.Roots())
	}
	for _, t := range c.tags {
		opts = append(opts, session.ByTag(t))
	}
	infos, err := st.List(ctx, opts...)
	if err != nil {
		return err
	}
	if c.json {
		out := make([]render.Info, len(infos))
		for i, in := range infos {
			out[i] = render.NewInfo(in)
		}
		return a.json(out)
	}
	return render.Sessions(a.stdout, infos)
}
