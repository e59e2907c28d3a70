package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trails-kg/trails/internal/termsafe"
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

// infoJSON is the JSON form of a session's description (stable names).
type infoJSON struct {
	ID        string    `json:"id"`
	Principal string    `json:"principal"`
	Parent    string    `json:"parent"`
	ForkedAt  int       `json:"forked_at"`
	Branch    string    `json:"branch"`
	Kind      string    `json:"kind"` // main, branch or worker
	OwnTurns  int       `json:"own_turns"`
	Turns     int       `json:"turns"`
	Created   time.Time `json:"created"`
	Tags      []string  `json:"tags"`
	Cycle     bool      `json:"cycle,omitempty"` // on a parent cycle: its own ancestor
}

func toInfoJSON(in session.Info) infoJSON {
	return infoJSON{ID: in.ID, Principal: in.Principal, Parent: in.ParentID, ForkedAt: in.ForkedAt,
		Branch: in.Branch, Kind: string(in.Kind), OwnTurns: in.OwnTurns, Turns: in.Turns, Created: in.Created, Tags: nonNil(in.Tags),
		Cycle: in.Cycle}
}

// nonNil returns tags, or an empty slice for nil, so JSON shows [].
func nonNil(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return tags
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
		out := make([]infoJSON, len(infos))
		for i, in := range infos {
			out[i] = toInfoJSON(in)
		}
		return a.json(out)
	}
	// A TAGS column only when a session listed has tags: the listing of an
	// untagged dataset reads as it always did.
	tagged := slices.ContainsFunc(infos, func(in session.Info) bool { return len(in.Tags) > 0 })
	tw := a.table()
	fmt.Fprint(tw, "ID\tPRINCIPAL\tPARENT\tFORK\tBRANCH\tKIND\tOWN\tTOTAL\tCREATED")
	if tagged {
		fmt.Fprint(tw, "\tTAGS")
	}
	fmt.Fprintln(tw)
	for _, in := range infos {
		parent, fork := "-", "-"
		if in.ParentID != "" {
			parent, fork = in.ParentID, fmt.Sprint(in.ForkedAt)
		}
		parent = termsafe.String(parent)
		if in.Cycle {
			parent += " (cycle)"
		}
		fmt.Fprintf(tw, "%s	%s	%s	%s	%s	%s	%d	%d	%s", termsafe.String(in.ID), termsafe.String(in.Principal), parent, fork,
			termsafe.String(in.Branch), termsafe.String(string(in.Kind)), in.OwnTurns, in.Turns, in.Created.Format(time.RFC3339))
		if tagged {
			tags := "-"
			if len(in.Tags) > 0 {
				tags = strings.Join(in.Tags, ",")
			}
			fmt.Fprintf(tw, "\t%s", termsafe.String(tags))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
