package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/trails-kg/trails/internal/tdbjournal"
)

type journalCmd struct {
	mend bool
	json bool
}

func (*journalCmd) name() string  { return "journal" }
func (*journalCmd) usage() string { return "[--mend] [--json] DIR" }
func (*journalCmd) synopsis() string {
	return "check a stopped Fuseki's TDB2 journal; --mend cuts off an entry a crash tore (Fuseki will not start on it)"
}
func (*journalCmd) example() string {
	return "trails-admin journal --mend ~/.local/share/trails/fuseki/databases/trails"
}
func (c *journalCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.mend, "mend", false, "cut off a torn last entry (the server must be stopped; nothing committed is lost)")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// journalJSON is the JSON form of a journal's report (stable names).
type journalJSON struct {
	Path      string `json:"path"`
	Bytes     int64  `json:"bytes"`
	Entries   int    `json:"entries"`
	Commits   int    `json:"commits"`
	Pending   int    `json:"not_committed"`
	TornBytes int64  `json:"torn_bytes"`
	Torn      string `json:"torn,omitempty"`
	Mended    bool   `json:"mended"`
}

// run checks (or mends) every journal of the TDB2 database at the
// directory given, which needs no store: it reads files on this machine.
func (c *journalCmd) run(_ context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("journal takes one argument, the dataset's TDB2 directory (holding Data-NNNN); try: trails-admin journal -h")
	}
	paths, err := tdbjournal.Journals(args[0])
	if err != nil {
		return err
	}
	var out []journalJSON
	torn := false
	for _, p := range paths {
		check := tdbjournal.Check
		if c.mend {
			check = tdbjournal.Mend
		}
		r, err := check(p)
		if err != nil {
			return err
		}
		torn = torn || (!r.Clean() && !r.Mended)
		out = append(out, journalJSON{Path: r.Path, Bytes: r.Size, Entries: r.Entries, Commits: r.Commits, Pending: r.Pending,
			TornBytes: r.Torn, Torn: r.Why, Mended: r.Mended})
		if !c.json {
			fmt.Fprintln(a.stdout, r)
		}
	}
	if c.json {
		if err := a.json(out); err != nil {
			return err
		}
	}
	if torn {
		fmt.Fprintln(a.stderr, "a journal's last entry is torn (a crash while the server committed): Fuseki will not start on it; stop the server and run again with --mend")
		return errFindings
	}
	return nil
}
