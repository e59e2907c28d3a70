package cluster

import (
	"testing"

	"github.com/trails-kg/trails/ontology"
)

// TestDropsOnly: what Sharded sends to every group (dropEverywhere) is
// only an update that drops staging graphs and nothing else.
func TestDropsOnly(t *testing.T) {
	a, b := "<"+ontology.StagingBase+"0193a0b2-aaaa-7bbb-8ccc-000000000001>", "<"+ontology.StagingBase+"0193a0b2-aaaa-7bbb-8ccc-000000000002>"
	for _, c := range []struct {
		update string
		want   bool
	}{
		{"DROP SILENT GRAPH " + a, true},
		{"DROP SILENT GRAPH " + a + " ;\nDROP SILENT GRAPH " + b, true},
		{"DROP SILENT GRAPH " + a + " ;\n", true},
		{"DROP SILENT GRAPH " + a + " ;\nDROP SILENT GRAPH <https://w3id.org/trails/id/session/x>", false},
		{"DROP SILENT GRAPH " + a + " ;\nINSERT DATA { GRAPH " + b + " { <urn:s> <urn:p> 1 } }", false},
		{"INSERT DATA { GRAPH " + a + " { <urn:s> <urn:p> 1 } }", false},
		{"DROP GRAPH " + a, false},
	} {
		if got := dropsOnly.MatchString(c.update); got != c.want {
			t.Errorf("%q: got %v, want %v", c.update, got, c.want)
		}
	}
}
