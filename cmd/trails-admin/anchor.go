package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
)

type anchorCmd struct {
	state map[string]string
	json  bool
}

func (*anchorCmd) name() string  { return "anchor" }
func (*anchorCmd) usage() string { return "ID NAME [--state KEY=VALUE …] [--json]" }
func (*anchorCmd) synopsis() string {
	return "name a session's current position, to fork at it later (fork --anchor NAME)"
}
func (*anchorCmd) example() string {
	return "trails-admin anchor 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d task_start --state context='Working on feature X'"
}
func (c *anchorCmd) flags(fs *flag.FlagSet) {
	c.state = map[string]string{}
	fs.Func("state", "record `KEY=VALUE` with the anchor (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, got %s", termsafe.Quote(v))
		}
		c.state[k] = val
		return nil
	})
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

func (c *anchorCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 2 {
		return usageErrorf("anchor needs a session id and a name; try: trails-admin anchor -h")
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	an, err := st.Anchor(ctx, args[0], args[1], c.state)
	if err != nil {
		return err
	}
	if c.json {
		return a.json(render.NewAnchor(an))
	}
	fmt.Fprintf(a.stdout, "anchored %s in %s at %d (a fork at it inherits %s)\n", termsafe.String(an.Name), termsafe.String(an.Session), an.Index, render.Plural(an.Index, "turn"))
	return nil
}
