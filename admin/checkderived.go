package admin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The query of the derived rule.
var qCheckStructure = query("check-structure.rq")

// checkDerived compares what the store holds about the structured
// resources of turns (of session id, their structured fields read) with
// the triples Persist writes for those fields (session.StructureTriples),
// and reports each turn where a triple differs, is missing or is extra
// (RuleDerived). The digest covers the fields; the triples it does not
// cover (a tool call activity's trails:toolName and trails:toolCallId, a
// part's types and position, a model invocation's types) are derived
// from them, and so checked here.
func (ds *Dataset) checkDerived(ctx context.Context, id string, turns []session.Turn) ([]Finding, error) {
	rows := make([][]rdf.Term, 0, len(turns))
	named := kg.Table{Vars: []string{"t", "x"}}
	for _, t := range turns {
		ti := kg.MustIRI(t.ID)
		rows = append(rows, []rdf.Term{ti})
		named.Rows = append(named.Rows, []rdf.Term{ti, kg.MustIRI(ontology.InvocationIRI(t.ID))})
		if t.Structure != nil {
			for k := range t.Structure.Parts {
				named.Rows = append(named.Rows, []rdf.Term{ti, kg.MustIRI(ontology.ToolCallIRI(t.ID, k))})
			}
		}
	}
	q, err := kg.BindTables(qCheckStructure, nil, map[string]kg.Table{"turns": {Vars: []string{"t"}, Rows: rows}, "named": named})
	if err != nil {
		return nil, fmt.Errorf("check-structure: %w", err)
	}
	stored := make(map[string]map[string][3]rdf.Term, len(turns))
	err = eachRow(ctx, ds.c, q, func(r kg.Solution) error {
		t := r.String("t")
		if stored[t] == nil {
			stored[t] = make(map[string][3]rdf.Term)
		}
		tr := [3]rdf.Term{r["x"], r["p"], r["o"]}
		stored[t][termsKey(tr)] = tr
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, t := range turns {
		want := make(map[string][3]rdf.Term)
		for _, tr := range session.StructureTriples(t.ID, t) {
			want[termsKey(tr)] = tr
		}
		var missing, extra []string
		for k, tr := range want {
			if _, ok := stored[t.ID][k]; !ok {
				missing = append(missing, tripleText(t.ID, tr))
			}
		}
		for k, tr := range stored[t.ID] {
			if _, ok := want[k]; !ok {
				extra = append(extra, tripleText(t.ID, tr))
			}
		}
		if len(missing)+len(extra) == 0 {
			continue
		}
		var says []string
		if len(extra) > 0 {
			says = append(says, fmt.Sprintf("stored and not derived from its fields: %s", triplesText(extra)))
		}
		if len(missing) > 0 {
			says = append(says, fmt.Sprintf("derived from its fields and not stored: %s", triplesText(missing)))
		}
		out = append(out, Finding{RuleDerived, t.ID, fmt.Sprintf("turn %d of session %s: the triples of its structured resources are not those its fields give (its digest covers the fields): %s",
			t.Index, id, strings.Join(says, "; "))})
	}
	return out, nil
}

// triplesText shows up to three triples (tripleText), sorted, and how
// many more there are.
func triplesText(ts []string) string {
	slices.Sort(ts)
	shown := ts[:min(3, len(ts))]
	if n := len(ts) - len(shown); n > 0 {
		return strings.Join(shown, ", ") + fmt.Sprintf(" and %d more", n)
	}
	return strings.Join(shown, ", ")
}

// tripleText shows a triple of turn's structured resources: its subject
// relative to the turn ("…/part/0/call"), its predicate as a CURIE, its
// object escaped and cut.
func tripleText(turn string, tr [3]rdf.Term) string {
	subj := tr[0].String()
	if rest, ok := strings.CutPrefix(subj, turn); ok {
		subj = "…" + rest
	}
	o := "<" + termsafe.String(curie(tr[2].String())) + ">"
	if l, ok := tr[2].(rdf.Literal); ok {
		o = termsafe.Quote(l.String())
	}
	return fmt.Sprintf("<%s> %s %s", termsafe.String(subj), curie(tr[1].String()), o)
}
