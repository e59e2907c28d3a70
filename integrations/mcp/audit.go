package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/prov"
)

// QueriesOutput is the result of list_audit_queries (trails-admin audit
// --json without a name: the list, in an object).
type QueriesOutput struct {
	Queries []QueryJSON `json:"queries"`
}

// QueryJSON describes an audit query of prov/queries.
type QueryJSON struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Params      []ParamJSON `json:"params"`
}

// ParamJSON is a parameter of an audit query: its value is bound as an RDF
// term of its kind.
type ParamJSON struct {
	Name        string `json:"name"`
	Kind        string `json:"kind" jsonschema:"session-id, iri, string, dateTime (RFC 3339 or a date) or integer"`
	Description string `json:"description"`
}

// AuditInput is the input of run_audit_query.
type AuditInput struct {
	Name   string            `json:"name" jsonschema:"the query's name, as list_audit_queries gives it"`
	Params map[string]string `json:"params,omitempty" jsonschema:"the query's parameters by name (with or without the $), each a string bound as an RDF term of the parameter's kind"`
	Limit  int               `json:"limit,omitempty" jsonschema:"the most rows to return (default 500, at most 10000)"`
}

// AuditOutput is the result of run_audit_query (trails-admin audit
// --json's fields, with the row count).
type AuditOutput struct {
	Query string           `json:"query"`
	Vars  []string         `json:"vars"`
	Rows  []map[string]any `json:"rows" jsonschema:"one object per row, by variable: integers and booleans as JSON, other values as strings (IRIs whole)"`
	Total int              `json:"total" jsonschema:"how many rows the query gave, more than returned when limit cut them"`
}

// Limits of run_audit_query.
const (
	defaultRows = 500
	maxRows     = 10000
)

func (t *tools) addAuditTools(srv *sdk.Server) {
	addTool(srv, &sdk.Tool{Name: ToolListAuditQueries, Annotations: readOnly,
		Description: "List the auditors' named SPARQL queries (lineage, forks, rewinds, merges, tool calls, token usage, state, ...) with their parameters."},
		t.queries)
	addTool(srv, &sdk.Tool{Name: ToolRunAuditQuery, Annotations: readOnly,
		Description: "Run one of the auditors' named SPARQL queries (see list_audit_queries), its parameters bound as RDF terms of their kinds, never pasted into the query text."},
		t.audit)
}

func (t *tools) queries(context.Context, struct{}) (QueriesOutput, string, error) {
	out := QueriesOutput{Queries: []QueryJSON{}}
	var b strings.Builder
	for _, q := range prov.Queries() {
		qj := QueryJSON{Name: q.Name, Description: q.Description, Params: []ParamJSON{}}
		fmt.Fprintf(&b, "%s\n    %s\n", q.Name, q.Description)
		for _, p := range q.Params {
			qj.Params = append(qj.Params, ParamJSON{Name: p.Name, Kind: string(p.Kind), Description: p.Description})
			fmt.Fprintf(&b, "    %s (%s): %s\n", p.Name, p.Kind, p.Description)
		}
		out.Queries = append(out.Queries, qj)
	}
	return out, b.String(), nil
}

func (t *tools) audit(ctx context.Context, in AuditInput) (AuditOutput, string, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = defaultRows
	case limit < 0 || limit > maxRows:
		return AuditOutput{}, "", fmt.Errorf("limit %d: want 1 to %d", in.Limit, maxRows)
	}
	q, ok := prov.Lookup(in.Name)
	if !ok {
		return AuditOutput{}, "", fmt.Errorf("no audit query %s; list_audit_queries lists them", termsafe.Quote(in.Name))
	}
	params := make(map[string]string, len(in.Params))
	for k, v := range in.Params {
		params[strings.TrimPrefix(k, "$")] = v
	}
	var missing []string
	for _, p := range q.Params {
		if _, ok := params[p.Name]; !ok {
			missing = append(missing, fmt.Sprintf("%s (%s)", p.Name, p.Kind))
		}
	}
	if len(missing) > 0 {
		return AuditOutput{}, "", fmt.Errorf("%s needs the parameters %s", q.Name, strings.Join(missing, ", "))
	}
	res, err := t.pr.Run(ctx, q.Name, params)
	if err != nil {
		return AuditOutput{}, "", err
	}
	out := AuditOutput{Query: q.Name, Vars: res.Vars, Rows: []map[string]any{}, Total: len(res.Solutions)}
	if out.Vars == nil {
		out.Vars = []string{}
	}
	var b strings.Builder
	tw := render.Table(&b)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(res.Vars, "\t")))
	for _, s := range res.Solutions[:min(limit, len(res.Solutions))] {
		row := map[string]any{}
		cells := make([]string, len(res.Vars))
		for i, v := range res.Vars {
			term, ok := s[v]
			cells[i] = "-"
			if ok {
				row[v] = render.TermJSON(term)
				cells[i] = form.Cell(term)
			}
		}
		out.Rows = append(out.Rows, row)
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	if len(out.Rows) < out.Total {
		fmt.Fprintf(&b, "(%d of %d rows: give a larger limit for the others)\n", len(out.Rows), out.Total)
	}
	return out, b.String(), nil
}
