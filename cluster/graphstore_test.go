package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

var _ admin.Querier = (*cluster.Client)(nil)

// testGraphStore: what goes to a store through the Graph Store Protocol
// goes through the log as records of its own. A 16 MiB turn is staged
// (a PUT record) and bound by its append (an update record); a PUT of
// data the store cannot read is refused by every replica alike and the
// log goes on; quads loaded are on every replica; trails-admin's check
// runs through the Client and finds nothing.
func testGraphStore(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	r := newRig(t, k, srv, 3)
	c := r.client(t)
	st := session.NewStore(c)

	s := session.New("dora")
	s.Append("user", "summarize the attached report")
	big := strings.Repeat("a long report, line after line \"quoted\"\n", 16<<20/40)
	s.Append("tool", big)
	if err := st.Persist(ctx, s); err != nil {
		t.Fatalf("persist a %d-byte turn: %v", len(big), err)
	}
	got, err := st.Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 2 || got.Turns[1].Content != big {
		t.Fatalf("loaded %d turns; the long one is %d bytes, want %d", len(got.Turns), len(got.Turns[len(got.Turns)-1].Content), len(big))
	}

	g := kg.MustIRI("https://example.org/graph/put")
	if err := c.PutGraph(ctx, g, kg.NTriples, []byte("not n-triples\n")); !errors.Is(err, kg.ErrBadRequest) {
		t.Errorf("PutGraph of bad data: got %v, want kg.ErrBadRequest", err)
	}
	if err := c.PutGraph(ctx, g, "text/x-unknown", []byte("<a:s> <a:p> <a:o> .\n")); !errors.Is(err, kg.ErrBadRequest) {
		t.Errorf("PutGraph of an unknown media type: got %v, want kg.ErrBadRequest", err)
	}
	nt := "<https://example.org/s> <https://example.org/p> \"put\" .\n"
	if err := c.PutGraph(ctx, g, kg.NTriples, []byte(nt)); err != nil {
		t.Fatal(err)
	}
	if back, err := c.GetGraph(ctx, g); err != nil || string(back) != nt {
		t.Errorf("GetGraph after PutGraph: got %q, %v; want %q", back, err, nt)
	}
	q := "<https://example.org/s> <https://example.org/p> \"loaded\" <https://example.org/graph/load> .\n"
	if err := c.LoadQuads(ctx, []byte(q)); err != nil {
		t.Fatal(err)
	}
	quads := r.converged(t, c.Position())
	for _, want := range []string{strings.TrimSpace(nt[:len(nt)-2]) + " <" + g.String() + "> .", strings.TrimSpace(q)} {
		if !strings.Contains(quads, want) {
			t.Errorf("the replicas lack %s", want)
		}
	}

	findings, err := admin.New(c).Check(ctx)
	if err != nil {
		t.Fatalf("check through the cluster: %v", err)
	}
	if len(findings) > 0 {
		t.Errorf("check through the cluster: %d findings, first %+v", len(findings), findings[0])
	}
}
