package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/trails-kg/trails/prov"
)

type auditCmd struct {
	params    paramFlags
	json      bool
	showQuery bool
}

// paramFlags collects repeated --param k=v flags.
type paramFlags map[string]string

func (p *paramFlags) String() string { return "" }
func (p *paramFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want name=value, got %q", v)
	}
	if *p == nil {
		*p = paramFlags{}
	}
	(*p)[strings.TrimPrefix(k, "$")] = val
	return nil
}

func (*auditCmd) name() string  { return "audit" }
func (*auditCmd) usage() string { return "[NAME] [--param k=v ...] [--query] [--json]" }
func (*auditCmd) synopsis() string {
	return "run a named audit query (prov/queries); alone, list them with their parameters"
}
func (*auditCmd) example() string {
	return "trails-admin audit forks-by-principal --param principal=agent-7 --param from=2026-11-01 --param to=2026-12-01"
}
func (c *auditCmd) flags(fs *flag.FlagSet) {
	fs.Var(&c.params, "param", "a parameter as name=value, bound as an RDF term of the parameter's kind (repeatable)")
	fs.BoolVar(&c.showQuery, "query", false, "also print the bound SPARQL on stderr, to paste into Fuseki's UI")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// queryJSON is the JSON form of an audit query's description (stable names).
type queryJSON struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Params      []paramJSON `json:"params"`
}

type paramJSON struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description"`
}

func (c *auditCmd) run(ctx context.Context, a *app, args []string) error {
	switch len(args) {
	case 0:
		return c.list(a)
	case 1:
	default:
		return usageErrorf("audit takes one query name; try: trails-admin audit")
	}
	q, ok := prov.Lookup(args[0])
	if !ok {
		return usageErrorf("audit: no query %q; try: trails-admin audit (lists them)", args[0])
	}
	text, err := q.Bind(c.params)
	if errors.Is(err, prov.ErrInvalid) {
		return usageErrorf("audit %s: %v; try: trails-admin audit", q.Name, err)
	}
	if err != nil {
		return err
	}
	if c.showQuery {
		fmt.Fprintf(a.stderr, "%s\n", text)
	}
	r, err := a.reader(ctx)
	if err != nil {
		return err
	}
	res, err := r.Run(ctx, q.Name, c.params)
	if err != nil {
		return err
	}
	if c.json {
		rows := make([]map[string]string, len(res.Solutions))
		for i, s := range res.Solutions {
			rows[i] = map[string]string{}
			for _, v := range res.Vars {
				if _, ok := s[v]; ok {
					rows[i][v] = s.String(v)
				}
			}
		}
		return a.json(struct {
			Query string              `json:"query"`
			Vars  []string            `json:"vars"`
			Rows  []map[string]string `json:"rows"`
		}{q.Name, res.Vars, rows})
	}
	tw := a.table()
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(res.Vars, "\t")))
	for _, s := range res.Solutions {
		cells := make([]string, len(res.Vars))
		for i, v := range res.Vars {
			cells[i] = oneLine(s.String(v))
			if cells[i] == "" {
				cells[i] = "-"
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func (c *auditCmd) list(a *app) error {
	qs := prov.Queries()
	if c.json {
		out := make([]queryJSON, len(qs))
		for i, q := range qs {
			out[i] = queryJSON{Name: q.Name, Description: q.Description, Params: []paramJSON{}}
			for _, p := range q.Params {
				out[i].Params = append(out[i].Params, paramJSON{Name: p.Name, Kind: string(p.Kind), Description: p.Description})
			}
		}
		return a.json(out)
	}
	for _, q := range qs {
		fmt.Fprintf(a.stdout, "%s\n    %s\n", q.Name, q.Description)
		for _, p := range q.Params {
			fmt.Fprintf(a.stdout, "    --param %s=%s  %s\n", p.Name, strings.ToUpper(string(p.Kind)), p.Description)
		}
	}
	return nil
}

// oneLine shortens a value for a table cell.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return s
}
