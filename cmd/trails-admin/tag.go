package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/trails-kg/trails/internal/termsafe"
)

// tagCmd is "tag" and, with remove set, "untag".
type tagCmd struct {
	remove bool
	json   bool
}

func (c *tagCmd) name() string {
	if c.remove {
		return "untag"
	}
	return "tag"
}

func (*tagCmd) usage() string { return "ID TAG… [--json]" }

func (c *tagCmd) synopsis() string {
	if c.remove {
		return "remove tags from a session (idempotent); print its tags"
	}
	return "add tags to a session, to find it with sessions --tag (idempotent); print its tags"
}

func (c *tagCmd) example() string {
	return "trails-admin " + c.name() + " 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d experiment"
}

func (c *tagCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

func (c *tagCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) < 2 {
		return usageErrorf("%s needs a session id and at least one tag; try: trails-admin %s -h", c.name(), c.name())
	}
	id, tags := args[0], args[1:]
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	if c.remove {
		err = st.Untag(ctx, id, tags...)
	} else {
		err = st.Tag(ctx, id, tags...)
	}
	if err != nil {
		return err
	}
	info, err := st.Info(ctx, id)
	if err != nil {
		return err
	}
	if c.json {
		return a.json(struct {
			Session string   `json:"session"`
			Tags    []string `json:"tags"`
		}{id, info.Tags})
	}
	if len(info.Tags) == 0 {
		fmt.Fprintf(a.stdout, "%s has no tags\n", termsafe.String(id))
		return nil
	}
	fmt.Fprintf(a.stdout, "%s tags: %s\n", termsafe.String(id), termsafe.String(strings.Join(info.Tags, ", ")))
	return nil
}
