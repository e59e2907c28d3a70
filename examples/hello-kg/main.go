// Command hello-kg is the first thing to run against a Trails Fuseki: it
// writes a few triples through the kg client, reads them back with plain
// SPARQL, validates them with the project's SHACL shapes and prints what it
// did. It stands in for `trails-admin demo` until that command exists.
//
//	go run ./examples/hello-kg [-endpoint URL]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/google/uuid"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hello-kg:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("hello-kg", flag.ContinueOnError)
	endpoint := fs.String("endpoint", envOr("TRAILS_ENDPOINT", "http://127.0.0.1:3030/trails"), "Fuseki dataset URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := kg.New(kg.Config{
		Endpoint: *endpoint,
		Username: os.Getenv("TRAILS_USER"),
		Password: os.Getenv("TRAILS_PASSWORD"),
		Timeout:  10 * time.Second,
	})
	if err != nil {
		return err
	}
	if err := c.Ping(ctx); err != nil {
		if errors.Is(err, kg.ErrUnavailable) {
			return fmt.Errorf("%w\nstart a local Fuseki first: scripts/fuseki start", err)
		}
		return err
	}
	fmt.Fprintf(out, "Fuseki answers at %s\n", c.Endpoint())

	// One session with two turns, in the session's own named graph.
	id := uuid.Must(uuid.NewV7()).String()
	sess := kg.MustIRI(ontology.SessionBase + id)
	now := time.Now().UTC().Truncate(time.Millisecond)
	var d kg.Data
	d.Add(sess, sess, kg.MustIRI(ontology.RDFType), kg.MustIRI(ontology.Session))
	d.Add(sess, sess, kg.MustIRI(ontology.DCTIdentifier), kg.String(id))
	d.Add(sess, sess, kg.MustIRI(ontology.Branch), kg.String("main"))
	d.Add(sess, sess, kg.MustIRI(ontology.Created), kg.DateTime(now))
	for i, t := range []struct{ role, content string }{
		{"user", "What does \"share, don't copy\" mean for a fork?"},
		{"assistant", "A fork stores only its own turns;\nthe prefix stays with its parent."},
	} {
		turn := kg.MustIRI(fmt.Sprintf("%s%s%d", sess.String(), ontology.TurnPath, i))
		d.Add(sess, turn, kg.MustIRI(ontology.RDFType), kg.MustIRI(ontology.Turn))
		d.Add(sess, turn, kg.MustIRI(ontology.TurnSession), sess)
		d.Add(sess, turn, kg.MustIRI(ontology.Index), kg.Int(i))
		d.Add(sess, turn, kg.MustIRI(ontology.Role), kg.String(t.role))
		d.Add(sess, turn, kg.MustIRI(ontology.Content), kg.String(t.content))
		d.Add(sess, turn, kg.MustIRI(ontology.Branch), kg.String("main"))
		d.Add(sess, turn, kg.MustIRI(ontology.Created), kg.DateTime(now))
	}
	update, err := d.InsertData()
	if err != nil {
		return err
	}
	if err := c.Update(ctx, update, kg.Idempotent()); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %d triples into graph <%s>\n\n", d.Len(), sess.String())

	// Read them back the way an auditor would: plain SPARQL, no GRAPH clause.
	query, err := kg.Bind(`PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX dcterms: <http://purl.org/dc/terms/>
SELECT ?index ?role ?content WHERE {
  ?session dcterms:identifier $id .
  ?turn trails:session ?session ; trails:index ?index ;
        trails:role ?role ; trails:content ?content .
} ORDER BY ?index`, kg.Params{"id": kg.String(id)})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "SPARQL (paste into Fuseki's UI):\n%s\n\n", query)
	res, err := c.Query(ctx, query)
	if err != nil {
		return err
	}
	for _, s := range res.Solutions {
		fmt.Fprintf(out, "  [%s] %-9s %q\n", s.String("index"), s.String("role"), s.String("content"))
	}

	rep, err := c.Validate(ctx, ontology.Shapes, sess.String())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nSHACL (ontology/shapes.ttl) on the session's graph: conforms=%v, %d results\n", rep.Conforms, len(rep.Results))
	if !rep.Conforms {
		return errors.New("the written data does not conform to the shapes")
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
