package ontology_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

func TestMain(m *testing.M) { fusekitest.Main(m) }

// TestShapesThroughFuseki validates the good and bad fixtures with
// shapes.ttl through the SHACL endpoint of the project's Fuseki config.
func TestShapesThroughFuseki(t *testing.T) {
	c := fusekitest.New(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		file     string
		conforms bool
	}{
		{"good", "good.ttl", true},
		{"bad", "bad.ttl", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := kg.MustIRI("urn:test:shacl:" + tc.name)
			if err := c.PutGraph(ctx, g, kg.Turtle, readFixture(t, tc.file)); err != nil {
				t.Fatalf("load %s: %v", tc.file, err)
			}
			rep, err := c.Validate(ctx, ontology.Shapes, g.String())
			if err != nil {
				t.Fatalf("validate: %v", err)
			}
			if rep.Conforms != tc.conforms {
				t.Fatalf("got conforms=%v, want %v; results: %+v", rep.Conforms, tc.conforms, rep.Results)
			}
			if tc.conforms && len(rep.Results) != 0 {
				t.Fatalf("got %d results for conforming data, want 0: %+v", len(rep.Results), rep.Results)
			}
			for _, r := range rep.Results {
				if r.Focus == "" || r.Message == "" || !strings.HasSuffix(r.Severity, "#Violation") {
					t.Errorf("result lacks focus, message or severity: %+v", r)
				}
				t.Logf("%s: %s %s", r.Focus, r.Path, r.Message)
			}
			if !tc.conforms {
				checkBreakages(t, rep)
			}
		})
	}
}

// checkBreakages checks that each breakage commented in bad.ttl is reported
// by the shape property it breaks.
func checkBreakages(t *testing.T, rep *kg.Report) {
	t.Helper()
	want := map[string]bool{ // result path (or component for node-level) → found
		ontology.Index:         false, // a turn with a negative index
		ontology.Role:          false, // a turn without a role
		ontology.ForkedAtIndex: false, // a fork without forkedAtIndex
		ontology.Branch:        false, // a bad branch label
		ontology.Tag:           false, // a tag with a space
		ontology.AnchorIndex:   false, // an anchor without an index
		ontology.ForkType:      false, // an unknown fork type
		ontology.State:         false, // a state not among the five
		ontology.MergeStatus:   false, // a merge turn's unknown status
		ontology.MergeFirst:    false, // a merge range that starts after it ends
		ontology.Rewinds:       false, // a rewind count of 0
		ontology.ProvGenerated: false, // a Rewind activity without its archive
	}
	for _, r := range rep.Results {
		if _, ok := want[r.Path]; ok {
			want[r.Path] = true
		}
	}
	for path, found := range want {
		if !found {
			t.Errorf("no violation reported on %s; results: %+v", path, rep.Results)
		}
	}
}
