package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/knakk/rdf"
	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	trails "github.com/trails-kg/trails/session"
)

// printEvent writes one line per part of ev after prefix: its author and
// the part (a text, a tool call → or a tool's response ←), escaped: an
// agent's output never reaches the terminal as is.
func printEvent(w io.Writer, prefix string, ev *session.Event) {
	var parts []string
	if ev.Content != nil {
		for _, p := range ev.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				parts = append(parts, fmt.Sprintf("→ %s %s  [%s]", p.FunctionCall.Name, compact(p.FunctionCall.Args), p.FunctionCall.ID))
			case p.FunctionResponse != nil:
				parts = append(parts, fmt.Sprintf("← %s %s  [%s]", p.FunctionResponse.Name, compact(p.FunctionResponse.Response), p.FunctionResponse.ID))
			case p.Text != "":
				parts = append(parts, p.Text)
			}
		}
	}
	if len(parts) == 0 {
		parts = []string{"(no content)"}
	}
	for _, p := range parts {
		fmt.Fprintf(w, "%s  %-14s %s\n", prefix, termsafe.String(ev.Author), termsafe.String(p))
	}
}

// compact is v as JSON on one line (map keys sorted).
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// renderTree writes the fork tree under n as trails-admin tree does: each
// session with its branch, and each fork with its fork point and its own
// turns.
func renderTree(w io.Writer, n *trails.Node) {
	var line func(n *trails.Node, prefix, branch, next string)
	line = func(n *trails.Node, prefix, branch, next string) {
		desc := fmt.Sprintf("%s  %s  %s  %d turns", n.ID, termsafe.String(n.Branch), termsafe.String(n.Principal), n.Turns)
		if branch != "" {
			desc = fmt.Sprintf("%s  %s  @%d  +%d turns (%d in all)", n.ID, termsafe.String(n.Branch), n.ForkedAt, n.OwnTurns, n.Turns)
		}
		fmt.Fprintf(w, "%s%s%s\n", prefix, branch, desc)
		for i, c := range n.Children {
			if i == len(n.Children)-1 {
				line(c, prefix+next, "└── ", "    ")
			} else {
				line(c, prefix+next, "├── ", "│   ")
			}
		}
	}
	line(n, "", "", "")
}

// printRows writes the rows of an audit query as a table, as trails-admin
// audit does: Trails' own IRIs without their common base, times to the
// millisecond, other values on one line, escaped.
func printRows(w io.Writer, res *kg.Results) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(res.Vars, "\t")))
	for _, s := range res.Solutions {
		cells := make([]string, len(res.Vars))
		for i, v := range res.Vars {
			cells[i] = cell(s[v])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if len(res.Solutions) == 0 {
		fmt.Fprintln(tw, "(no rows)")
	}
	return tw.Flush()
}

// idBase is the common base of the IRIs of Trails' resources.
const idBase = "https://w3id.org/trails/id/"

func cell(t rdf.Term) string {
	if t == nil {
		return "-"
	}
	if iri, ok := t.(rdf.IRI); ok {
		return termsafe.String(strings.TrimPrefix(strings.TrimPrefix(iri.String(), ontology.SessionBase), idBase))
	}
	if l, ok := t.(rdf.Literal); ok && l.DataType.String() == "http://www.w3.org/2001/XMLSchema#dateTime" {
		if tm, err := time.Parse(time.RFC3339Nano, l.String()); err == nil {
			return tm.UTC().Format("2006-01-02T15:04:05.000Z")
		}
	}
	s := termsafe.String(strings.ReplaceAll(t.String(), "\n", "⏎"))
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	if s == "" {
		return "-"
	}
	return s
}
