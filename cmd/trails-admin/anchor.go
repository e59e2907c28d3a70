package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
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

// anchorJSON is the JSON form of an anchor (stable names).
type anchorJSON struct {
	Name    string            `json:"name"`
	Index   int               `json:"index"`
	Session string            `json:"session"` // the session that named it
	State   map[string]string `json:"state"`
	Created time.Time         `json:"created"`
}

func toAnchorJSON(an session.Anchor) anchorJSON {
	state := an.State
	if state == nil {
		state = map[string]string{}
	}
	return anchorJSON{Name: an.Name, Index: an.Index, Session: an.Session, State: state, Created: an.Created}
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
		return a.json(toAnchorJSON(an))
	}
	fmt.Fprintf(a.stdout, "anchored %s in %s at %d (a fork at it inherits %s)\n", termsafe.String(an.Name), termsafe.String(an.Session), an.Index, plural(an.Index, "turn"))
	return nil
}

// toAnchorsJSON returns the anchors of m ordered by index, then name.
func toAnchorsJSON(m map[string]session.Anchor) []anchorJSON {
	out := make([]anchorJSON, 0, len(m))
	for _, name := range sortedKeys(m) {
		out = append(out, toAnchorJSON(m[name]))
	}
	slices.SortStableFunc(out, func(x, y anchorJSON) int { return x.Index - y.Index })
	return out
}

// writeTagsAndAnchors prints the tags of a session and the anchors of its
// history, one line each, escaped, for show; nothing when it has none.
//
// Each line says "(not signed)": a writer's signed statements cover no tag
// or anchor, so they are the store's word (docs/verify.md, "Who can change
// what unseen").
func (a *app) writeTagsAndAnchors(info session.Info, s *session.Session) {
	if len(info.Tags) > 0 {
		fmt.Fprintf(a.stdout, "tags      %s (not signed)\n", termsafe.String(strings.Join(info.Tags, ", ")))
	}
	for _, an := range toAnchorsJSON(s.Anchors) {
		fmt.Fprintf(a.stdout, "anchor    %s at %d", termsafe.String(an.Name), an.Index)
		if an.Session != s.ID {
			fmt.Fprintf(a.stdout, ", named by %s", termsafe.String(an.Session))
		}
		if len(an.State) > 0 {
			b, _ := json.Marshal(an.State) // keys sorted
			fmt.Fprintf(a.stdout, " %s", termsafe.String(string(b)))
		}
		fmt.Fprintln(a.stdout, " (not signed)")
	}
}
