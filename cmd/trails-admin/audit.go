package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
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
		return fmt.Errorf("want name=value, got %s", termsafe.Quote(v))
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
		return usageErrorf("audit: no query %s; try: trails-admin audit (lists them)", termsafe.Quote(args[0]))
	}
	var missing []string
	for _, p := range q.Params {
		if _, ok := c.params[p.Name]; !ok {
			missing = append(missing, fmt.Sprintf("--param %s=%s", p.Name, strings.ToUpper(string(p.Kind))))
		}
	}
	if len(missing) > 0 {
		return usageErrorf("audit %s needs %s; try: trails-admin audit (lists every query's parameters)", q.Name, strings.Join(missing, " "))
	}
	text, err := q.Bind(c.params)
	if errors.Is(err, prov.ErrInvalid) {
		return usageErrorf("audit %s: %s; try: trails-admin audit", q.Name, strings.TrimPrefix(err.Error(), "prov: invalid argument: "))
	}
	if err != nil {
		return err
	}
	if c.showQuery {
		fmt.Fprintf(a.stderr, "%s\n", strings.Join(termsafe.Lines(text), "\n"))
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
		rows := make([]map[string]any, len(res.Solutions))
		for i, s := range res.Solutions {
			rows[i] = map[string]any{}
			for _, v := range res.Vars {
				if t, ok := s[v]; ok {
					rows[i][v] = render.TermJSON(t)
				}
			}
		}
		return a.json(struct {
			Query string           `json:"query"`
			Vars  []string         `json:"vars"`
			Rows  []map[string]any `json:"rows"`
		}{q.Name, res.Vars, rows})
	}
	tw := a.table()
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(res.Vars, "\t")))
	for _, s := range res.Solutions {
		cells := make([]string, len(res.Vars))
		for i, v := range res.Vars {
			cells[i] = render.Cell(s[v])
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
		tw := a.table()
		for _, p := range q.Params {
			fmt.Fprintf(tw, "    --param %s=%s\t%s\n", p.Name, strings.ToUpper(string(p.Kind)), p.Description)
		}
		tw.Flush()
	}
	return nil
}
