package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
)

type checkCmd struct{ json bool }

func (*checkCmd) name() string  { return "check" }
func (*checkCmd) usage() string { return "[--json]" }
func (*checkCmd) synopsis() string {
	return "check the whole dataset's integrity (structure, PROV, SHACL shapes); exit 1 on any finding"
}
func (*checkCmd) example() string          { return "trails-admin check --json > findings.json" }
func (c *checkCmd) flags(fs *flag.FlagSet) { fs.BoolVar(&c.json, "json", false, "print JSON") }

// findingJSON is the JSON form of an integrity finding (stable names).
type findingJSON struct {
	Rule     string `json:"rule"`
	Resource string `json:"resource"`
	Message  string `json:"message"`
}

// longWork is the request time limit of commands that read the whole
// dataset, unless --timeout is given: SHACL validation of a million turns
// takes about 40 s on a small machine.
const longWork = 15 * time.Minute

func (c *checkCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return usageErrorf("check takes no arguments; try: trails-admin check -h")
	}
	a.longRequests()
	ds, err := a.dataset(ctx)
	if err != nil {
		return err
	}
	p := a.progress("check")
	p.update(0, 1, "querying the whole dataset")
	findings, err := ds.Check(ctx)
	p.finish()
	shaclNotRun := errors.Is(err, admin.ErrSHACLNotRun)
	if err != nil && !shaclNotRun {
		return err
	}
	if c.json {
		out := struct {
			Findings []findingJSON `json:"findings"`
			Count    int           `json:"count"`
		}{Findings: []findingJSON{}, Count: len(findings)}
		for _, f := range findings {
			out.Findings = append(out.Findings, findingJSON{Rule: f.Rule, Resource: f.Resource, Message: f.Message})
		}
		if err := a.json(out); err != nil {
			return err
		}
	} else {
		tw := a.table()
		if len(findings) > 0 {
			fmt.Fprintln(tw, "RULE\tRESOURCE\tFINDING")
		}
		for _, f := range findings {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", termsafe.String(f.Rule), termsafe.String(f.Resource), termsafe.String(f.Message))
		}
		tw.Flush()
	}
	if shaclNotRun {
		fmt.Fprintf(a.stderr, "shacl: not run: the store (%s) has no SHACL endpoint; the other rules ran (validate an export with pySHACL for the shapes)\n", a.client.Store())
	}
	if len(findings) > 0 {
		fmt.Fprintf(a.stderr, "%s\n", render.Plural(len(findings), "finding"))
		return errFindings
	}
	fmt.Fprintln(a.stderr, "no findings")
	return nil
}
