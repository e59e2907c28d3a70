// Package storetest holds the helpers the tests of packages session and
// admin share: writing and reading a Trails dataset behind the library's
// back (raw changes that simulate damage, the IRIs they name, the legacy
// fixture of testdata/session/legacy, counts, the text of Check's
// findings; this file), and building and comparing sessions through the
// library, failing the test on an error (session.go). Only tests import
// it.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// LegacyID is the session of testdata/session/legacy: a session written
// before Trails kept counts, digests or the hash chain.
const LegacyID = "0190a000-0000-7000-8000-00000000000a"

// LegacyQuads returns the N-Quads of testdata/session/legacy, read from a
// package directory one level below the repository's root.
func LegacyQuads(tb testing.TB) []byte {
	tb.Helper()
	nq, err := os.ReadFile(filepath.Join("..", "testdata", "session", "legacy", "session.nq"))
	if err != nil {
		tb.Fatal(err)
	}
	return nq
}

// LoadLegacy puts testdata/session/legacy into the dataset of c, replacing
// its graph, and returns its id (LegacyID). On the kafka profile it goes
// through the log of c's replicated store (see clustertest.LoadQuads).
func LoadLegacy(tb testing.TB, c *kg.Client) string {
	tb.Helper()
	nq := LegacyQuads(tb)
	ctx := context.Background()
	clustertest.Update(ctx, tb, c, "DROP SILENT GRAPH "+TermText(tb, kg.MustIRI(ontology.SessionIRI(LegacyID))))
	if err := clustertest.LoadQuads(ctx, tb, c, nq); err != nil {
		tb.Fatal(err)
	}
	return LegacyID
}

// SessionRef is the IRI of session id.
func SessionRef(id string) rdf.IRI { return kg.MustIRI(ontology.SessionIRI(id)) }

// TurnRef is the IRI of the turn at index i of session id.
func TurnRef(id string, i int) rdf.IRI {
	return kg.MustIRI(ontology.TurnIRI(ontology.SessionIRI(id), i))
}

// AddRawFork adds to d a fork id of parent at index at with no turns of its
// own, complete with its PROV record (so that it satisfies the shapes), but
// written without any of the library's checks: how cycles, over-deep chains
// and bad fork points get into a store.
func AddRawFork(d *kg.Data, id, parent string, at int) {
	g := SessionRef(id)
	p := func(s string) rdf.IRI { return kg.MustIRI(s) }
	d.Add(g, g, p(ontology.RDFType), p(ontology.Session))
	d.Add(g, g, p(ontology.DCTIdentifier), kg.String(id))
	d.Add(g, g, p(ontology.Branch), kg.String("fork-"+id[len(id)-8:]))
	d.Add(g, g, p(ontology.Created), kg.DateTime(time.Now()))
	d.Add(g, g, p(ontology.Principal), prov.AddAgent(d, g, "raw"))
	d.Add(g, g, p(ontology.ParentSession), SessionRef(parent))
	d.Add(g, g, p(ontology.ProvWasDerivedFrom), SessionRef(parent))
	d.Add(g, g, p(ontology.ForkedAtIndex), kg.Int(at))
	d.Add(g, g, p(ontology.OwnTurns), kg.Int(0))
	prov.AddFork(d, prov.Fork{Child: id, Parent: parent, At: at, Principal: "raw", Time: time.Now()})
}

// RawChange deletes the triples of del and then inserts those of ins, in one
// update, behind the library's back.
func RawChange(tb testing.TB, c *kg.Client, del, ins *kg.Data) {
	tb.Helper()
	var u string
	if del != nil {
		q, err := del.Quads()
		if err != nil {
			tb.Fatal(err)
		}
		u = "DELETE DATA {\n" + q + "} ;\n"
	}
	if ins != nil {
		q, err := ins.InsertData()
		if err != nil {
			tb.Fatal(err)
		}
		u += q
	}
	if err := clustertest.Update(context.Background(), tb, c, u); err != nil {
		tb.Fatalf("%v\n%s", err, u)
	}
}

// RawTriple returns Data holding the one triple (s, p, o) in graph g.
func RawTriple(g, s rdf.IRI, p string, o rdf.Term) *kg.Data {
	var d kg.Data
	d.Add(g, s, kg.MustIRI(p), o)
	return &d
}

// TermText returns t as SPARQL writes it.
func TermText(tb testing.TB, t rdf.Term) string {
	tb.Helper()
	s, err := kg.Term(t)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// CountQuads counts the quads of graph g in c's dataset, of every named
// graph when g is "" but the replica graph (ontology.ReplicaGraph: a
// replica of a log keeps its offsets and refusals there, on the kafka
// profile).
func CountQuads(tb testing.TB, c *kg.Client, g string) int {
	tb.Helper()
	if g == "" {
		return QueryInt(tb, c, `SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } FILTER (?g != $replica) }`,
			kg.Params{"replica": kg.MustIRI(ontology.ReplicaGraph)})
	}
	return QueryInt(tb, c, `SELECT (COUNT(*) AS ?n) WHERE { GRAPH $g { ?s ?p ?o } }`, kg.Params{"g": kg.MustIRI(g)})
}

// CountUnchained counts the turns in the graph of session id that have no
// trails:digest.
func CountUnchained(tb testing.TB, c *kg.Client, id string) int {
	tb.Helper()
	return QueryInt(tb, c, `SELECT (COUNT(?t) AS ?n) WHERE { GRAPH $g { ?t a <`+ontology.Turn+`> . FILTER NOT EXISTS { ?t <`+ontology.Digest+`> ?d } } }`,
		kg.Params{"g": kg.MustIRI(ontology.SessionIRI(id))})
}

// Tamper replaces the value of predicate pred of turn in the store with
// v, as a hand edit would, and puts the old value back when tb ends, so
// that the binary's other tests find a sound dataset.
func Tamper(tb testing.TB, c *kg.Client, turn, pred string, v rdf.Term) {
	tb.Helper()
	ctx := context.Background()
	q, err := kg.Bind(`SELECT ?g ?o WHERE { GRAPH ?g { $t $p ?o } }`, kg.Params{"t": kg.MustIRI(turn), "p": kg.MustIRI(pred)})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Select(ctx, q)
	if err != nil || len(res.Solutions) != 1 {
		tb.Fatalf("tamper: got %d values of %s, %v; want one", len(res.Solutions), pred, err)
	}
	g, old := res.Solutions[0]["g"], res.Solutions[0]["o"]
	swap := func(from, to rdf.Term) {
		u, err := kg.Bind(`DELETE DATA { GRAPH $g { $t $p $from } } ; INSERT DATA { GRAPH $g { $t $p $to } }`,
			kg.Params{"g": g, "t": kg.MustIRI(turn), "p": kg.MustIRI(pred), "from": from, "to": to})
		if err != nil {
			tb.Fatal(err)
		}
		if err := clustertest.Update(ctx, tb, c, u); err != nil {
			tb.Fatal(err)
		}
	}
	swap(old, v)
	tb.Cleanup(func() { swap(v, old) })
}

// FindingsText returns findings one per line, for a failure message.
func FindingsText(fs []admin.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s\t%s\t%s\n", f.Rule, f.Resource, f.Message)
	}
	return b.String()
}

// Check is ds.Check for the tests of Check's SPARQL rules: on a test store
// without a SHACL endpoint (TRAILS_TEST_STORE=oxigraph) Check returns the
// other rules' findings with admin.ErrSHACLNotRun, which Check drops
// there, and only there.
func Check(ctx context.Context, ds *admin.Dataset) ([]admin.Finding, error) {
	fs, err := ds.Check(ctx)
	if errors.Is(err, admin.ErrSHACLNotRun) && fusekitest.TestStore() != kg.Fuseki {
		err = nil
	}
	return fs, err
}
