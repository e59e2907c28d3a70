package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// stateCmd is "state": show or change a session's lifecycle state (design
// note 002).
type stateCmd struct {
	reason  string
	by      string
	expires string
	json    bool
}

func (*stateCmd) name() string { return "state" }
func (*stateCmd) usage() string {
	return "ID [STATE] [--reason R] [--by PRINCIPAL] [--expires TIME|never] [--json]"
}
func (*stateCmd) synopsis() string {
	return "show a session's state, expiry and cancellation flag; with STATE (active, suspended, completed, failed, expired) change it"
}
func (*stateCmd) example() string {
	return "trails-admin state 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d completed --reason 'task done'\n" +
		"trails-admin state 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --expires 2026-03-02T10:00:00Z"
}
func (c *stateCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.reason, "reason", "", "why the state changes, recorded in PROV")
	fs.StringVar(&c.by, "by", "", "principal recorded in PROV as the one who changed it (default: the session's)")
	fs.StringVar(&c.expires, "expires", "", "set when the session expires (RFC 3339 `TIME`), or clear it with \"never\"")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// stateJSON is the JSON form of a session's lifecycle (stable names).
type stateJSON struct {
	Session         string          `json:"session"`
	State           string          `json:"state"`
	ExpiresAt       *time.Time      `json:"expires_at"` // null: never
	CancelRequested bool            `json:"cancel_requested"`
	Transition      *transitionJSON `json:"transition,omitempty"`
}

// transitionJSON is the JSON form of a state change (stable names).
type transitionJSON struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Changed  bool     `json:"changed"`
	Activity string   `json:"activity"`
	Flagged  []string `json:"flagged"`
}

func (c *stateCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return usageErrorf("state needs a session id and, to change it, a state; try: trails-admin state -h")
	}
	id := args[0]
	var to session.State
	if len(args) == 2 {
		var err error
		if to, err = session.ParseState(args[1]); err != nil {
			return usageErrorf("state: %s is not a state (want active, suspended, completed, failed or expired); try: trails-admin state -h", termsafe.Quote(args[1]))
		}
	} else if c.reason != "" || c.by != "" {
		return usageErrorf("state: --reason and --by go with a new STATE; try: trails-admin state -h")
	}
	var expires time.Time
	if c.expires != "" && c.expires != "never" {
		t, err := time.Parse(time.RFC3339Nano, c.expires)
		if err != nil {
			return usageErrorf("state: --expires %s is not an RFC 3339 time (e.g. 2026-03-02T10:00:00Z) or \"never\"; try: trails-admin state -h", termsafe.Quote(c.expires))
		}
		expires = t
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	if c.expires != "" {
		if err := st.SetExpiry(ctx, id, expires); err != nil {
			return err
		}
	}
	var tr *session.Transition
	if to != "" {
		t, err := st.SetState(ctx, id, to, session.StateOptions{Reason: c.reason, By: c.by})
		if err != nil {
			return err
		}
		tr = &t
	}
	in, err := st.Info(ctx, id)
	if err != nil {
		return err
	}
	if c.json {
		out := stateJSON{Session: id, State: string(in.State), CancelRequested: in.CancelRequested}
		if !in.ExpiresAt.IsZero() {
			out.ExpiresAt = &in.ExpiresAt
		}
		if tr != nil {
			out.Transition = &transitionJSON{From: string(tr.From), To: string(tr.To), Changed: tr.Changed,
				Activity: tr.Activity, Flagged: append([]string{}, tr.Flagged...)}
		}
		return a.json(out)
	}
	if tr != nil {
		if !tr.Changed {
			fmt.Fprintf(a.stdout, "%s is %s already: nothing changed\n", termsafe.String(id), termsafe.String(string(tr.To)))
		} else {
			fmt.Fprintf(a.stdout, "%s: %s -> %s\n", termsafe.String(id), termsafe.String(string(tr.From)), termsafe.String(string(tr.To)))
		}
		if len(tr.Flagged) > 0 {
			fmt.Fprintf(a.stdout, "flagged %s for cancellation: %s\n", render.Plural(len(tr.Flagged), "descendant"), termsafe.String(strings.Join(tr.Flagged, ", ")))
		}
	}
	tw := a.table()
	fmt.Fprintf(tw, "state\t%s\n", termsafe.String(string(in.State)))
	exp := "never"
	if !in.ExpiresAt.IsZero() {
		exp = in.ExpiresAt.Format(time.RFC3339Nano)
	}
	fmt.Fprintf(tw, "expires\t%s\n", exp)
	cancel := "no"
	if in.CancelRequested {
		cancel = "requested (an ancestor ended; see trails-admin audit cancel-requested)"
	}
	fmt.Fprintf(tw, "cancel\t%s\n", cancel)
	fmt.Fprintf(tw, "signed\tno: state, expiry and cancellation are the store's word (docs/verify.md)\n")
	return tw.Flush()
}
