package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// rewindCmd is "rewind": make a session continue from an earlier point,
// its abandoned turns kept in an archive (design note 004).
type rewindCmd struct {
	sign   signFlags // --sign-key, --witness
	to     int
	toSet  bool
	reason string
	by     string
	json   bool
}

func (*rewindCmd) name() string { return "rewind" }
func (*rewindCmd) usage() string {
	return "ID --to N [--reason R] [--by PRINCIPAL] [--json] [--sign-key FILE --witness URL]"
}
func (*rewindCmd) synopsis() string {
	return "make a session continue from turn N; its later turns move, untouched, into an archive fork (one atomic step)"
}
func (*rewindCmd) example() string {
	return "trails-admin rewind 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --to 3 --reason 'wrong tool call'"
}
func (c *rewindCmd) flags(fs *flag.FlagSet) {
	c.sign.register(fs)
	fs.Func("to", "keep the turns with index < `N`: the session's new length", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("want a whole number >= 0")
		}
		c.to, c.toSet = n, true
		return nil
	})
	fs.StringVar(&c.reason, "reason", "", "why, recorded in PROV")
	fs.StringVar(&c.by, "by", "", "principal recorded in PROV as the one who rewound (default: the session's)")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// rewindJSON is the JSON form of a rewind (stable names).
type rewindJSON struct {
	Session    string   `json:"session"`
	Archive    string   `json:"archive"`
	To         int      `json:"to"`
	Moved      int      `json:"moved"`
	Anchors    []string `json:"anchors"`
	Reparented []string `json:"reparented"`
}

func (c *rewindCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("rewind needs one session id; try: trails-admin rewind -h")
	}
	if !c.toSet {
		return usageErrorf("rewind needs --to N, the number of turns to keep; try: trails-admin rewind -h")
	}
	id := args[0]
	if err := a.sign(ctx, c.name(), c.sign); err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	_, r, err := st.Rewind(ctx, id, c.to, session.RewindOptions{Reason: c.reason, By: c.by})
	if err != nil {
		return err
	}
	if c.json {
		return a.json(rewindJSON{Session: id, Archive: r.Archive, To: r.To, Moved: r.Moved,
			Anchors: render.Tags(r.Anchors), Reparented: render.Tags(r.Reparented)})
	}
	archive := termsafe.String(r.Archive)
	fmt.Fprintf(a.stdout, "rewound %s to %s; archive %s holds the %s after them (trails-admin replay %s)\n",
		termsafe.String(id), render.Plural(r.To, "turn"), archive, render.Plural(r.Moved, "abandoned turn"), archive)
	for _, name := range r.Anchors {
		fmt.Fprintf(a.stdout, "  moved anchor %s to the archive\n", termsafe.String(name))
	}
	for _, f := range r.Reparented {
		fmt.Fprintf(a.stdout, "  re-parented fork %s to the archive\n", termsafe.String(f))
	}
	return nil
}

// rewindsCmd is "rewinds": the rewinds of a session, from PROV.
type rewindsCmd struct {
	json bool
}

func (*rewindsCmd) name() string  { return "rewinds" }
func (*rewindsCmd) usage() string { return "ID [--json]" }
func (*rewindsCmd) synopsis() string {
	return "list a session's rewinds, oldest first: archive, index, forks re-parented, who, when, why"
}
func (*rewindsCmd) example() string {
	return "trails-admin rewinds 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d"
}
func (c *rewindsCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// rewindRecJSON is the JSON form of a rewind record (stable names).
type rewindRecJSON struct {
	Archive    string    `json:"archive"`
	To         int       `json:"to"`
	Reparented []string  `json:"reparented"`
	Principal  string    `json:"principal"`
	Reason     string    `json:"reason"`
	Time       time.Time `json:"time"`
}

func (c *rewindsCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("rewinds needs one session id; try: trails-admin rewinds -h")
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	recs, err := st.Rewinds(ctx, args[0])
	if err != nil {
		return err
	}
	if c.json {
		out := make([]rewindRecJSON, len(recs))
		for i, r := range recs {
			out[i] = rewindRecJSON{Archive: r.Archive, To: r.To, Reparented: render.Tags(r.Reparented), Principal: r.Principal, Reason: r.Reason, Time: r.Time}
		}
		return a.json(out)
	}
	if len(recs) == 0 {
		fmt.Fprintf(a.stdout, "%s was never rewound\n", termsafe.String(args[0]))
		return nil
	}
	tw := a.table()
	fmt.Fprintln(tw, "ARCHIVE\tTO\tPRINCIPAL\tTIME\tREPARENTED\tREASON")
	for _, r := range recs {
		kids := strings.Join(r.Reparented, ",")
		if kids == "" {
			kids = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", termsafe.String(r.Archive), r.To, termsafe.String(r.Principal), r.Time.Format(time.RFC3339),
			termsafe.String(kids), termsafe.String(r.Reason))
	}
	return tw.Flush()
}
