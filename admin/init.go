package admin

import (
	"bytes"
	"context"
	"fmt"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Init loads the Trails vocabulary and SHACL shapes into the store's
// ontology graph (ontology.OntologyGraph), replacing what was there, so
// that auditors can query the terms' labels and comments next to the data.
// Running it again changes nothing. It returns the number of bytes of
// Turtle loaded, or a store error wrapping the kg error.
func (ds *Dataset) Init(ctx context.Context) (_ int, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Init", "")
	defer func() { call.End(err) }()
	var b bytes.Buffer
	b.Write(ontology.Vocabulary)
	b.WriteString("\n")
	b.Write(ontology.Shapes)
	if err := ds.c.PutGraph(ctx, kg.MustIRI(ontology.OntologyGraph), kg.Turtle, b.Bytes()); err != nil {
		return 0, fmt.Errorf("init: %w", err)
	}
	return b.Len(), nil
}
