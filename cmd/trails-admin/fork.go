package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

type forkCmd struct {
	sign                      signFlags // --sign-key, --witness
	at                        int       // -1: not given
	anchor, turn              string
	typ, createdBy, reason    string
	nextSteps, contextSummary string
	worker                    bool
	json                      bool
}

func (*forkCmd) name() string { return "fork" }
func (*forkCmd) usage() string {
	return "ID (--at N | --anchor NAME | --turn TURN-ID) [--type T] [--created-by user|system] [--reason R] [--next-steps S] [--summary S] [--worker] [--json] [--sign-key FILE --witness URL]"
}
func (*forkCmd) synopsis() string {
	return "fork a session at an index, an anchor or before a turn; print the new fork's id"
}
func (*forkCmd) example() string {
	return "trails-admin fork 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --anchor task_start --created-by system --next-steps 'Implement feature X'"
}
func (c *forkCmd) flags(fs *flag.FlagSet) {
	c.sign.register(fs)
	c.at = -1
	fs.Func("at", "fork at index `N`: the fork inherits turns 0..N-1", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("want a whole number >= 0")
		}
		c.at = n
		return nil
	})
	fs.StringVar(&c.anchor, "anchor", "", "fork at the anchor `NAME` of the session or of an ancestor inside its history")
	fs.StringVar(&c.turn, "turn", "", "fork before the turn `TURN-ID` (its IRI, as show --json prints it): the fork inherits the turns before it")
	fs.StringVar(&c.typ, "type", "explicit", "how the fork came about: explicit, auto-edit or auto-regenerate")
	fs.StringVar(&c.createdBy, "created-by", "user", "on whose initiative: user or system")
	fs.StringVar(&c.reason, "reason", "", "why the fork is made, recorded in PROV")
	fs.StringVar(&c.nextSteps, "next-steps", "", "the intention: what the fork is to do next, recorded in PROV")
	fs.StringVar(&c.contextSummary, "summary", "", "the intention: a summary of the context the fork starts from, recorded in PROV")
	fs.BoolVar(&c.worker, "worker", false, "make the fork a worker: a session for one task, which cannot itself be forked")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// forkJSON is the JSON form of a new fork (stable names).
type forkJSON struct {
	ID       string `json:"id"`
	Parent   string `json:"parent"`
	ForkedAt int    `json:"forked_at"`
	Branch   string `json:"branch"`
	Kind     string `json:"kind"` // branch or worker
}

func (c *forkCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("fork needs one session id; try: trails-admin fork -h")
	}
	given := 0
	for _, set := range []bool{c.at >= 0, c.anchor != "", c.turn != ""} {
		if set {
			given++
		}
	}
	if given != 1 {
		return usageErrorf("fork needs exactly one of --at, --anchor and --turn; try: trails-admin fork -h")
	}
	opts := []session.ForkOption{
		session.WithForkType(session.ForkType(c.typ)),
		session.WithCreatedBy(session.Creator(c.createdBy)),
	}
	switch {
	case c.anchor != "":
		opts = append(opts, session.ForkAtAnchor(c.anchor))
	case c.turn != "":
		opts = append(opts, session.ForkAtTurn(c.turn))
	}
	if c.reason != "" {
		opts = append(opts, session.WithReason(c.reason))
	}
	if c.worker {
		opts = append(opts, session.AsWorker())
	}
	if c.nextSteps != "" || c.contextSummary != "" {
		opts = append(opts, session.WithIntention(c.nextSteps, c.contextSummary))
	}
	if err := a.sign(ctx, c.name(), c.sign); err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	f, err := st.Fork(ctx, args[0], c.at, opts...)
	if err != nil {
		return err
	}
	if c.json {
		return a.json(forkJSON{ID: f.ID, Parent: f.ParentID, ForkedAt: f.ForkedAt, Branch: f.Branch, Kind: string(f.Kind)})
	}
	fmt.Fprintln(a.stdout, f.ID)
	label := f.Branch
	if f.Kind == session.KindWorker {
		label += ", a worker"
	}
	fmt.Fprintf(a.stderr, "forked %s at %d as %s (%s): it inherits %s\n", f.ParentID, f.ForkedAt, f.ID, label, render.Plural(f.ForkedAt, "turn"))
	return nil
}

// forkRecord returns the metadata PROV records of the fork that made
// session id, nil when no fork did (a root).
func (a *app) forkRecord(ctx context.Context, id string) (*render.ForkRecord, error) {
	r, err := a.reader(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := r.ForkRecord(ctx, id)
	if errors.Is(err, prov.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return render.NewForkRecord(rec), nil
}
