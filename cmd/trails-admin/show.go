package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// showCmd is "show" (the session and its effective history) and, with
// replay set, "replay" (the history alone, optionally cut).
type showCmd struct {
	replay bool
	upTo   int
	json   bool
}

func (c *showCmd) name() string {
	if c.replay {
		return "replay"
	}
	return "show"
}

func (c *showCmd) usage() string {
	if c.replay {
		return "ID [--up-to N] [--json]"
	}
	return "ID [--json]"
}

func (c *showCmd) synopsis() string {
	if c.replay {
		return "print the effective history read-only, cut at --up-to, each turn with its branch"
	}
	return "print a session and its effective history, each turn marked with the branch it came from"
}

func (c *showCmd) example() string {
	if c.replay {
		return "trails-admin replay 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --up-to 4"
	}
	return "trails-admin show 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --json"
}

func (c *showCmd) flags(fs *flag.FlagSet) {
	c.upTo = -1
	if c.replay {
		fs.Func("up-to", "only turns with index < `N` (N >= 0)", func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("want a whole number >= 0")
			}
			c.upTo = n
			return nil
		})
	}
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// failed names show, the command the user ran, in the error of a library
// call that names itself ("info ID: session: not found"): it drops that one
// layer of wrapping, the call's operation, and keeps the cause (errors.Is
// still finds the sentinels and kg errors under it).
func (c *showCmd) failed(id string, err error) error {
	if cause := errors.Unwrap(err); cause != nil {
		err = cause
	}
	return fmt.Errorf("%s %s: %w", c.name(), termsafe.Cut(id, termsafe.MaxQuoted), err)
}

// turnJSON is the JSON form of a turn (stable names).
type turnJSON struct {
	ID      string    `json:"id,omitempty"` // the turn's IRI (Turn.ID), for fork --turn
	Index   int       `json:"index"`
	Role    string    `json:"role"`
	Content string    `json:"content"`
	Branch  string    `json:"branch"`
	Created time.Time `json:"created"`
}

func toTurnsJSON(turns []session.Turn) []turnJSON {
	out := make([]turnJSON, len(turns))
	for i, t := range turns {
		out[i] = turnJSON{ID: t.ID, Index: t.Index, Role: t.Role, Content: t.Content, Branch: t.Branch, Created: t.Created}
	}
	return out
}

func (c *showCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("%s needs one session id; try: trails-admin %s -h", c.name(), c.name())
	}
	id := args[0]
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	if c.replay {
		var opts []session.ReplayOption
		if c.upTo >= 0 {
			opts = append(opts, session.UpTo(c.upTo))
		}
		turns, err := st.Replay(ctx, id, opts...)
		if err != nil {
			return err
		}
		if c.json {
			return a.json(toTurnsJSON(turns))
		}
		return a.writeTurns(turns)
	}
	info, err := st.Info(ctx, id)
	if err != nil {
		return c.failed(id, err)
	}
	s, err := st.Load(ctx, id)
	if err != nil {
		return c.failed(id, err)
	}
	rec, err := a.forkRecord(ctx, info.ID)
	if err != nil {
		return err
	}
	merges, err := st.Merges(ctx, info.ID)
	if err != nil {
		return err
	}
	if c.json {
		return a.json(struct {
			Session infoJSON       `json:"session"`
			Fork    *forkRecJSON   `json:"fork"`
			Anchors []anchorJSON   `json:"anchors"`
			Merges  []mergeRecJSON `json:"merges"`
			Turns   []turnJSON     `json:"turns"`
		}{toInfoJSON(info), rec, toAnchorsJSON(s.Anchors), toMergesJSON(merges), toTurnsJSON(s.Turns)})
	}
	fmt.Fprintf(a.stdout, "session   %s\nprincipal %s\nbranch    %s\nkind      %s\n",
		termsafe.String(info.ID), termsafe.String(info.Principal), termsafe.String(info.Branch), termsafe.String(string(info.Kind)))
	if info.ParentID != "" {
		fmt.Fprintf(a.stdout, "parent    %s (forked at %d, %s)\n", termsafe.String(info.ParentID), info.ForkedAt, plural(s.Depth(), "ancestor"))
	}
	a.writeForkRecord(rec)
	fmt.Fprintf(a.stdout, "turns     %d (%d own)\ncreated   %s\n", info.Turns, info.OwnTurns, info.Created.Format(time.RFC3339))
	a.writeTagsAndAnchors(info, s)
	a.writeMerges(merges)
	fmt.Fprintln(a.stdout)
	return a.writeTurns(s.Turns)
}

// writeTurns prints turns one per line, with index, branch and role, the
// content's further lines indented under its first. Branch and role are
// printed on one line, and every field escaped (termsafe), so that only a
// turn starts a line with an index: stored text cannot forge a turn or
// act on the terminal.
func (a *app) writeTurns(turns []session.Turn) error {
	for _, t := range turns {
		lines := termsafe.Lines(t.Content)
		fmt.Fprintf(a.stdout, "%4d  %-13s  %-9s  %s\n", t.Index, termsafe.String(t.Branch), termsafe.String(t.Role), lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(a.stdout, "%4s  %-13s  %-9s  %s\n", "", "", "", l)
		}
	}
	return nil
}
