package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// showCmd is "show" (the session and its effective history) and, with
// replay set, "replay" (the history alone, optionally cut).
type showCmd struct {
	replay bool
	upTo   int
	last   int // > 0: only the last turns (Store.LoadTail)
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
		return "ID [--up-to N] [--last N] [--json]"
	}
	return "ID [--last N] [--json]"
}

func (c *showCmd) synopsis() string {
	if c.replay {
		return "print the effective history read-only, cut at --up-to or to the --last turns, each turn with its branch and parts"
	}
	return "print a session, its state and its effective history, each turn with its branch and parts (tool calls, results, model, usage, state changes)"
}

func (c *showCmd) example() string {
	if c.replay {
		return "trails-admin replay 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --up-to 4\ntrails-admin replay 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --last 20"
	}
	return "trails-admin show 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --last 10\ntrails-admin show 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --json"
}

func (c *showCmd) flags(fs *flag.FlagSet) {
	c.upTo, c.last = -1, 0
	fs.Func("last", "only the last `N` turns of the history (N >= 1), read without the turns before them", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("want a whole number >= 1")
		}
		c.last = n
		return nil
	})
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
		if c.last > 0 {
			opts = append(opts, session.WithTail(session.Tail{Last: c.last}))
		}
		turns, err := st.Replay(ctx, id, opts...)
		if err != nil {
			return err
		}
		if c.json {
			return a.json(render.NewTurns(turns))
		}
		return render.Turns(a.stdout, turns)
	}
	info, err := st.Info(ctx, id)
	if err != nil {
		return c.failed(id, err)
	}
	var s *session.Session
	if c.last > 0 {
		s, err = st.LoadTail(ctx, id, session.Tail{Last: c.last})
	} else {
		s, err = st.Load(ctx, id)
	}
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
			Session render.Info                `json:"session"`
			App     string                     `json:"app,omitempty"`
			Values  map[string]json.RawMessage `json:"values,omitempty"` // the state as of the last turn
			Fork    *render.ForkRecord         `json:"fork"`
			Anchors []render.Anchor            `json:"anchors"`
			Merges  []render.Merge             `json:"merges"`
			From    int                        `json:"from,omitempty"` // with --last: the index of the first turn
			Turns   []render.Turn              `json:"turns"`
		}{render.NewInfo(info), s.App, s.Values, rec, render.NewAnchors(s.Anchors), render.NewMerges(merges), s.From, render.NewTurns(s.Turns)})
	}
	return render.Form{}.Show(a.stdout, render.Shown{Info: info, Session: s, Fork: rec, Merges: merges, Tail: c.last > 0})
}
