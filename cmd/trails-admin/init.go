package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/trails-kg/trails/ontology"
)

type initCmd struct{}

func (*initCmd) name() string  { return "init" }
func (*initCmd) usage() string { return "" }
func (*initCmd) synopsis() string {
	return "load the vocabulary and SHACL shapes into the store (idempotent)"
}
func (*initCmd) example() string     { return "trails-admin init --endpoint http://127.0.0.1:3030/trails" }
func (*initCmd) flags(*flag.FlagSet) {}

func (*initCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return usageErrorf("init takes no arguments; try: trails-admin init -h")
	}
	ds, err := a.dataset(ctx)
	if err != nil {
		return err
	}
	n, err := ds.Init(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "loaded the vocabulary and shapes (%d bytes of Turtle) into <%s>\n", n, ontology.OntologyGraph)
	return nil
}
