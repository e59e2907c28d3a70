package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/staged"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/rdfio"
)

// importStagedLine is the longest N-Quads line an import sends in a Graph
// Store POST: a session graph with a longer one (a turn of over 1 MiB) is
// written alone, through staging (importStaged), since Oxigraph's N-Quads
// parser takes no token over 16 MiB.
const importStagedLine = staged.Chunk

// needsStaging reports whether a session graph's lines hold one too long
// for a Graph Store POST (importStagedLine).
func needsStaging(lines []string) bool {
	for _, l := range lines {
		if len(l) > importStagedLine {
			return true
		}
	}
	return false
}

// importStaged writes one graph's N-Quads lines in one request, as
// Persist writes a long turn: its literals over staged.Above bytes go
// ahead through the Graph Store into a staging graph, the rest into one
// SPARQL Update that copies them in and drops the staging graph. The
// graph is written whole or not at all, as by a LoadQuads batch.
func (ds *Dataset) importStaged(ctx context.Context, lines []string) error {
	var d kg.Data
	set := staged.Set{Whole: staged.Whole(ds.c)}
	dec := rdfio.NewDecoder(strings.NewReader(strings.Join(lines, "")), rdfio.NQuads)
	for {
		q, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err // the input was read and checked before: a bug
		}
		g, okG := q.G.(rdf.IRI)
		s, okS := q.S.(rdf.IRI)
		p, okP := q.P.(rdf.IRI)
		if !okG || !okS || !okP {
			return fmt.Errorf("import: line %d: a quad that is not in a named graph or has a blank node", q.Line)
		}
		if lit, ok := q.O.(rdf.Literal); ok && len(lit.String()) > staged.Above {
			set.Add(g, s, p, lit)
			continue
		}
		d.Add(g, s, p, q.O)
	}
	tmpl, err := set.Bind("INSERT {\n#DATA\n}\nWHERE {\n#STAGED\n}")
	if err != nil {
		return err
	}
	u, err := kg.BindData(tmpl, &d, nil, nil)
	if err != nil {
		return err
	}
	u += set.Drop()
	if err := set.Send(ctx, ds.c); err != nil {
		set.Remove(ctx, ds.c) // a PUT whose answer was lost may have landed
		return err
	}
	if err := ds.c.Update(ctx, u, kg.Idempotent()); err != nil {
		set.Remove(ctx, ds.c)
		return err
	}
	return nil
}
