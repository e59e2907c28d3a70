package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/pytools"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The versions scripts/python-requirements.txt pins; checked so that a
// change of pins is a change of these tests too.
const (
	pySHACLVersion = "0.40.1"
	pyProvVersion  = "3.2.3"
)

// needPython returns the python of the tests' Python environment
// (scripts/pytools, made on first use under ~/.cache/trails), failing tb
// unless it can import module at version want. It never skips: the failure
// says what to install (python3 and its venv module) when the environment
// cannot be made.
func needPython(tb testing.TB, module, want string) string {
	tb.Helper()
	root, err := fusekitest.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	py, err := pytools.Command(root, "python")
	if err != nil {
		tb.Fatalf("the tests' Python environment: %v", err)
	}
	out, err := exec.Command(py, "-c", "import "+module+"; print("+module+".__version__)").CombinedOutput()
	if err != nil {
		tb.Fatalf("%s cannot import %s: %v\n%s\n(remove its environment, scripts/pytools ensure prints where, and run again)", py, module, err, lastLine(out))
	}
	if got := strings.TrimSpace(string(out)); got != want {
		tb.Fatalf("%s has %s %s, want %s: scripts/python-requirements.txt and these tests disagree", py, module, got, want)
	}
	return py
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// exportFile exports the whole dataset as N-Quads into a file of tb's
// temporary directory and returns its path.
func exportFile(tb testing.TB, st *store) string {
	tb.Helper()
	var b bytes.Buffer
	if _, err := st.Export(context.Background(), &b, admin.NQuads); err != nil {
		tb.Fatalf("export: %v", err)
	}
	p := filepath.Join(tb.TempDir(), "export.nq")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// shaclResult is what both validators' results are compared on.
type shaclResult struct{ focus, path, value, component, shape string }

func (r shaclResult) String() string {
	return fmt.Sprintf("%s %s %s [%s %s]", r.focus, curieOf(r.path), r.value, curieOf(r.component), curieOf(r.shape))
}

func curieOf(iri string) string {
	for _, p := range []struct{ prefix, ns string }{
		{"trails:", ontology.NS}, {"prov:", ontology.ProvNS}, {"sh:", ontology.SHNS},
		{"tsh:", "https://w3id.org/trails/shapes#"},
	} {
		if rest, ok := strings.CutPrefix(iri, p.ns); ok {
			return p.prefix + rest
		}
	}
	return iri
}

func compareResults(a, b shaclResult) int {
	return strings.Compare(a.String(), b.String())
}

// fusekiResults validates the store's union graph with ontology.Shapes
// through Fuseki's SHACL endpoint.
func fusekiResults(tb testing.TB, c *kg.Client) []shaclResult {
	tb.Helper()
	rep, err := c.Validate(context.Background(), ontology.Shapes, kg.UnionGraph)
	if err != nil {
		tb.Fatalf("fuseki validate: %v", err)
	}
	var out []shaclResult
	for _, r := range rep.Results {
		out = append(out, shaclResult{r.Focus, r.Path, r.Value, r.Component, r.Shape})
	}
	slices.SortFunc(out, compareResults)
	return out
}

// pySHACLResults validates the export at path with ontology/shapes.ttl
// through scripts/pyshacl-report; extra is its optional ontology argument
// (RDFS inference).
func pySHACLResults(tb testing.TB, py, export string, extra ...string) []shaclResult {
	tb.Helper()
	args := append([]string{filepath.Join("..", "scripts", "pyshacl-report"), export, filepath.Join("..", "ontology", "shapes.ttl")}, extra...)
	cmd := exec.Command(py, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("scripts/pyshacl-report: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Conforms bool
		Results  []struct{ Focus, Path, Value, Component, Shape string }
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		tb.Fatalf("scripts/pyshacl-report: %v\n%s", err, out)
	}
	if rep.Conforms != (len(rep.Results) == 0) {
		tb.Fatalf("pySHACL: conforms=%v with %d results", rep.Conforms, len(rep.Results))
	}
	var res []shaclResult
	for _, r := range rep.Results {
		res = append(res, shaclResult{r.Focus, r.Path, r.Value, r.Component, r.Shape})
	}
	slices.SortFunc(res, compareResults)
	return res
}

// validatorFixture is the data of validatorStore.
type validatorFixture struct {
	checkFixture
	other      string // a root unrelated to root
	reparented string // a fork of rewound, re-parented to its archive
	structured string // a root with structured turns: turn 1 holds a tool call at part 0
}

// validatorStore is soundStore (every kind of session and deletion) plus a
// rewind that re-parents a fork (two derivations), a merge, tags and an
// anchor, with the ids a damage needs.
func validatorStore(tb testing.TB) (*store, *kg.Client, validatorFixture) {
	tb.Helper()
	ctx := context.Background()
	st, c, fx := soundStore(tb)
	vf := validatorFixture{checkFixture: fx}
	vf.other = storetest.Persisted(tb, st, "other", 2).ID
	rewound := storetest.Persisted(tb, st, "rewinder", 4)
	late := storetest.MustFork(tb, rewound, 3)
	storetest.AppendN(late, 1, "late")
	storetest.MustPersist(tb, st, late)
	vf.reparented = late.ID
	if _, res, err := st.Rewind(ctx, rewound.ID, 2, session.RewindOptions{}); err != nil {
		tb.Fatalf("rewind: %v", err)
	} else if !slices.Equal(res.Reparented, []string{late.ID}) {
		tb.Fatalf("rewind re-parented %v, want [%s]", res.Reparented, late.ID)
	}
	if _, err := st.Merge(ctx, fx.forkOfFork.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "done"}); err != nil {
		tb.Fatalf("merge: %v", err)
	}
	// Tags and anchor names are where the shapes' patterns apply (pySHACL
	// compiles a pattern when it first meets a value).
	if err := st.Tag(ctx, fx.root.ID, "experiment", "naïve-ünïcode"); err != nil {
		tb.Fatalf("tag: %v", err)
	}
	if _, err := st.Anchor(ctx, fx.root.ID, "task_start", map[string]string{"k": "v"}); err != nil {
		tb.Fatalf("anchor: %v", err)
	}
	agent := session.New("agent")
	agent.Append("user", "weather?")
	agent.AppendTurn(session.Turn{Role: "assistant", Structure: &session.Structure{Author: "a", Model: "m", FinishReason: "tool_calls",
		Usage:    &session.Usage{Input: 3, Output: 2, Total: 5},
		Metadata: map[string]json.RawMessage{"k": json.RawMessage(`[1, "ü"]`)},
		Raw:      &session.Raw{Format: "adk.event/v2", Data: []byte{0, 1, 2}},
		Parts: []session.Part{{Kind: session.PartToolCall, CallID: "c1", ToolName: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{Kind: session.PartReasoning, Text: "thinking"}}}})
	agent.AppendTurn(session.Turn{Role: "tool", Structure: &session.Structure{Parts: []session.Part{
		{Kind: session.PartToolResult, CallID: "c1", ToolName: "get_weather", Result: json.RawMessage(`"sunny"`), IsError: true},
		{Kind: session.PartData, MIMEType: "image/png", Data: []byte{0x89, 'P'}},
		{Kind: session.PartData, MIMEType: "text/plain", URI: "https://example.org/f.txt"},
		{Kind: session.PartText, Text: ""}}}})
	storetest.MustPersist(tb, st, agent)
	vf.structured = agent.ID
	return st, c, vf
}

// TestValidatorsAgree damages a sound dataset in each of the ways an outside
// check found both validators blind to, and checks that Fuseki's SHACL
// (Jena) and pySHACL, run on an export of the same data, report the same
// results, among them the damage; and that Check reports it too. The
// damages touch different resources and shapes, so they go into one
// dataset together (each in a dataset of its own, the test set the admin
// package's time): the sound dataset is checked first, then the damaged.
func TestValidatorsAgree(t *testing.T) {
	fusekitest.RequireFuseki(t, "the SHACL endpoint (compared with pySHACL)")
	fusekitest.RequireFuseki(t, "the SHACL endpoint (compared with pySHACL)")
	fusekitest.Parallel(t)
	py := needPython(t, "pyshacl", pySHACLVersion)
	ctx := context.Background()
	typ := ontology.RDFType
	damages := []struct {
		name   string
		damage func(t *testing.T, c *kg.Client, fx validatorFixture) []shaclResult // the results it must cause
	}{
		{"duplicate turn index", func(t *testing.T, c *kg.Client, fx validatorFixture) []shaclResult {
			g := storetest.SessionRef(fx.root.ID)
			dup := kg.MustIRI(g.String() + "/turn/dup")
			var d kg.Data
			d.Add(g, dup, kg.MustIRI(typ), kg.MustIRI(ontology.Turn))
			d.Add(g, dup, kg.MustIRI(ontology.TurnSession), g)
			d.Add(g, dup, kg.MustIRI(ontology.Index), kg.Int(1))
			d.Add(g, dup, kg.MustIRI(ontology.Role), kg.String("user"))
			d.Add(g, dup, kg.MustIRI(ontology.Content), kg.String("a second turn 1"))
			storetest.RawChange(t, c, nil, &d)
			unique := "https://w3id.org/trails/shapes#UniqueTurnIndexShape"
			return []shaclResult{
				{g.String(), ontology.Index, "1", ontology.SHNS + "SPARQLConstraintComponent", unique},
			}
		}},
		{"turn without rdf:type", func(t *testing.T, c *kg.Client, fx validatorFixture) []shaclResult {
			g, turn := storetest.SessionRef(fx.root.ID), storetest.TurnRef(fx.root.ID, 0)
			storetest.RawChange(t, c, storetest.RawTriple(g, turn, typ, kg.MustIRI(ontology.Turn)), nil)
			if err := clustertest.Update(ctx, t, c, "DELETE WHERE { GRAPH ?g { <"+turn.String()+"> a ?type } }"); err != nil {
				t.Fatal(err)
			}
			return []shaclResult{{turn.String(), "", turn.String(), ontology.SHNS + "ClassConstraintComponent", "https://w3id.org/trails/shapes#IndexedTurnShape"}}
		}},
		{"fork point beyond the parent's history", func(t *testing.T, c *kg.Client, fx validatorFixture) []shaclResult {
			g := storetest.SessionRef(fx.fork.ID)
			storetest.RawChange(t, c, storetest.RawTriple(g, g, ontology.ForkedAtIndex, kg.Int(2)), storetest.RawTriple(g, g, ontology.ForkedAtIndex, kg.Int(9)))
			return []shaclResult{{g.String(), ontology.ForkedAtIndex, "9", ontology.SHNS + "SPARQLConstraintComponent", "https://w3id.org/trails/shapes#ForkShape"}}
		}},
		{"trails:session of a non-session", func(t *testing.T, c *kg.Client, fx validatorFixture) []shaclResult {
			g, turn := storetest.SessionRef(fx.root.ID), storetest.TurnRef(fx.root.ID, 2)
			notSession := kg.MustIRI("https://example.org/not-a-session")
			storetest.RawChange(t, c, storetest.RawTriple(g, turn, ontology.TurnSession, g), storetest.RawTriple(g, turn, ontology.TurnSession, notSession))
			return []shaclResult{{turn.String(), ontology.TurnSession, notSession.String(), ontology.SHNS + "ClassConstraintComponent", "https://w3id.org/trails/shapes#TurnSession"}}
		}},
		{"fork's PROV activity removed", func(t *testing.T, c *kg.Client, fx validatorFixture) []shaclResult {
			act := "<" + ontology.ActivityIRI("fork", fx.fork.ID) + ">"
			pg := "<" + ontology.ProvGraph + ">"
			if err := clustertest.Update(ctx, t, c, "DELETE WHERE { GRAPH "+pg+" { "+act+" ?p ?o } } ;\nDELETE WHERE { GRAPH "+pg+" { ?s ?p "+act+" } }"); err != nil {
				t.Fatal(err)
			}
			return []shaclResult{{storetest.SessionRef(fx.fork.ID).String(), ontology.ProvWasGeneratedBy, "", ontology.SHNS + "QualifiedMinCountConstraintComponent", "https://w3id.org/trails/shapes#ForkGeneratedBy"}}
		}},
		{"tool call part without arguments", func(t *testing.T, c *kg.Client, fx validatorFixture) []shaclResult {
			g := storetest.SessionRef(fx.structured)
			part := kg.MustIRI(ontology.PartIRI(ontology.TurnIRI(g.String(), 1), 0))
			storetest.RawChange(t, c, storetest.RawTriple(g, part, ontology.Arguments, rdf.NewTypedLiteral(`{"city":"Paris"}`, kg.MustIRI(ontology.RDFJSON))), nil)
			return []shaclResult{{part.String(), ontology.Arguments, "", ontology.SHNS + "MinCountConstraintComponent", "https://w3id.org/trails/shapes#ToolCallPartArguments"}}
		}},
		{"state change on a turn that does not exist", func(t *testing.T, c *kg.Client, fx validatorFixture) []shaclResult {
			g := storetest.SessionRef(fx.root.ID)
			ghost := kg.MustIRI(ontology.TurnIRI(g.String(), 99))
			change := kg.MustIRI(ghost.String() + "/change/k")
			var d kg.Data
			d.Add(g, ghost, kg.MustIRI(ontology.Changes), change)
			d.Add(g, change, kg.MustIRI(typ), kg.MustIRI(ontology.ValueChange))
			d.Add(g, change, kg.MustIRI(typ), kg.MustIRI(ontology.ProvEntity))
			d.Add(g, change, kg.MustIRI(ontology.Key), kg.String("k"))
			d.Add(g, change, kg.MustIRI(ontology.Scope), kg.String("session"))
			d.Add(g, change, kg.MustIRI(ontology.Value), rdf.NewTypedLiteral(`1`, kg.MustIRI(ontology.RDFJSON)))
			storetest.RawChange(t, c, nil, &d)
			return []shaclResult{{ghost.String(), "", "", ontology.SHNS + "OrConstraintComponent", "https://w3id.org/trails/shapes#ChangesOwnerShape"}}
		}},
		{"second prov:wasDerivedFrom", func(t *testing.T, c *kg.Client, fx validatorFixture) []shaclResult {
			g := storetest.SessionRef(fx.fork.ID)
			storetest.RawChange(t, c, nil, storetest.RawTriple(g, g, ontology.ProvWasDerivedFrom, storetest.SessionRef(fx.other)))
			return []shaclResult{{g.String(), ontology.ProvWasDerivedFrom, storetest.SessionRef(fx.other).String(), ontology.SHNS + "SPARQLConstraintComponent", "https://w3id.org/trails/shapes#DerivedSessionShape"}}
		}},
	}
	for _, tc := range []struct {
		name    string
		damaged bool
	}{{"sound", false}, {"damaged", true}} {
		t.Run(tc.name, func(t *testing.T) {
			st, c, fx := validatorStore(t)
			var want []shaclResult
			for _, d := range damages {
				if tc.damaged {
					want = append(want, d.damage(t, c, fx)...)
				}
			}
			jena := fusekiResults(t, c)
			pys := pySHACLResults(t, py, exportFile(t, st))
			if !slices.Equal(jena, pys) {
				t.Errorf("the validators disagree:\nFuseki (Jena):\n%s\npySHACL:\n%s", resultsText(jena), resultsText(pys))
			}
			for _, w := range want {
				if !slices.ContainsFunc(jena, func(r shaclResult) bool { return sameResult(r, w) }) {
					t.Errorf("Fuseki does not report %v; it reports:\n%s", w, resultsText(jena))
				}
				if !slices.ContainsFunc(pys, func(r shaclResult) bool { return sameResult(r, w) }) {
					t.Errorf("pySHACL does not report %v; it reports:\n%s", w, resultsText(pys))
				}
			}
			if len(want) == 0 && (len(jena) != 0 || len(pys) != 0) {
				t.Errorf("got results on sound data, want none:\nFuseki:\n%s\npySHACL:\n%s", resultsText(jena), resultsText(pys))
			}
			findings, err := st.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				res := resourceName(w.focus)
				if !slices.ContainsFunc(findings, func(f admin.Finding) bool { return f.Resource == res }) {
					t.Errorf("Check reports nothing on %s; it reports:\n%s", res, storetest.FindingsText(findings))
				}
			}
			if len(want) == 0 && len(findings) != 0 {
				t.Errorf("Check: got findings on sound data, want none:\n%s", storetest.FindingsText(findings))
			}
		})
	}
}

// sameResult matches a result against a wanted one; a wanted value of ""
// matches any.
func sameResult(r, w shaclResult) bool {
	return r.focus == w.focus && r.path == w.path && r.component == w.component && r.shape == w.shape &&
		(w.value == "" || r.value == w.value)
}

// resourceName is how a finding names resource iri (a session by its id).
func resourceName(iri string) string {
	if id, ok := strings.CutPrefix(iri, ontology.SessionBase); ok && !strings.Contains(id, "/") {
		return id
	}
	return iri
}

func resultsText(rs []shaclResult) string {
	if len(rs) == 0 {
		return "  (none)\n"
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %v\n", r)
	}
	return b.String()
}

// TestProvToolsRead reads an export of every kind of session and PROV
// record (forks, a detach, deletions, a rewind, a merge, anchors) with the
// python prov package (scripts/prov-roundtrip) and fails if it drops any
// triple of the PROV graph, or any triple at all: prov sees only resources
// typed prov:Entity, prov:Activity or prov:Agent in the data itself, and
// drops the properties of the others.
func TestProvToolsRead(t *testing.T) {
	fusekitest.Parallel(t)
	py := needPython(t, "prov", pyProvVersion)
	st, _, _ := validatorStore(t)
	export := exportFile(t, st)
	cmd := exec.Command(py, filepath.Join("..", "scripts", "prov-roundtrip"), export)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/prov-roundtrip: %v\n%s", err, stderr.String())
	}
	var got struct {
		Records     int
		ProvTriples int `json:"prov_triples"`
		Dropped     []string
		AllTriples  int      `json:"all_triples"`
		AllDropped  []string `json:"all_dropped"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("scripts/prov-roundtrip: %v\n%s", err, out)
	}
	t.Logf("prov read %d records; of the export's %d triples it dropped %d; of the PROV graph's %d, %d",
		got.Records, got.AllTriples, len(got.AllDropped), got.ProvTriples, len(got.Dropped))
	if got.ProvTriples == 0 {
		t.Fatal("the export has no PROV graph")
	}
	if len(got.Dropped) != 0 {
		t.Errorf("prov dropped %d of the PROV graph's %d triples, want none:\n  %s",
			len(got.Dropped), got.ProvTriples, strings.Join(got.Dropped, "\n  "))
	}
	// Sessions, turns and anchors are prov:Entity in the data, so prov keeps
	// their other properties as attributes: nothing of the export is lost
	// but what the legacy session (testdata/session/legacy, written before
	// the type) holds.
	var lost []string
	for _, tr := range got.AllDropped {
		if !strings.HasPrefix(tr, "<"+ontology.SessionIRI(storetest.LegacyID)) {
			lost = append(lost, tr)
		}
	}
	if len(lost) != 0 {
		t.Errorf("prov dropped %d of the export's %d triples written by this version, want none:\n  %s",
			len(lost), got.AllTriples, strings.Join(lost, "\n  "))
	}
}

// TestValidUnderRDFS validates an export holding PROV records of deleted
// sessions, turns copied from a deleted session, a rewind and a merge with
// pySHACL under RDFS inference with the vocabulary (ontology/trails.ttl):
// a record that points at a deleted resource must not make it an
// incomplete trails:Session or trails:Turn.
func TestValidUnderRDFS(t *testing.T) {
	fusekitest.Parallel(t)
	py := needPython(t, "pyshacl", pySHACLVersion)
	st, _, _ := validatorStore(t)
	got := pySHACLResults(t, py, exportFile(t, st), filepath.Join("..", "ontology", "trails.ttl"))
	if len(got) != 0 {
		t.Errorf("got %d results under RDFS, want none:\n%s", len(got), resultsText(got))
	}
}
