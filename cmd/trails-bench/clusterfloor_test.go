package main

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

// TestClusterFloor: the replicas' floor of the cluster scenario sends
// the data of real appends (the patch of every append a Store makes,
// each naming its session) and a replica then holds every copy it was
// sent, each under a session of its own, with the floor's offset moved
// once a request: the floor measures ingest, not a request that does
// nothing. Against a Fuseki of its own, as a replica of the scenario.
func TestClusterFloor(t *testing.T) {
	srv, err := fusekitest.StartServer(fusekitest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	b := &bench{log: io.Discard, t0: time.Now(), store: kg.Fuseki, srv: srv, ct: newCounter(), gen: newTextGen(1)}
	rig := &clusterRig{b: b, fusekis: []*fusekitest.Server{srv}}
	ctx := context.Background()
	pats, err := rig.floorPatches(ctx, 12, b.contents(16))
	if err != nil {
		t.Fatal(err)
	}
	if len(pats) != 12 {
		t.Fatalf("%d patches, want 12", len(pats))
	}
	ids := map[string]bool{}
	for _, p := range pats {
		ids[p.id] = true
		if !strings.Contains(p.text, "\nA ") || !strings.HasPrefix(p.text, "D ") {
			t.Fatalf("a patch that does not move its session's count and add data:\n%s", p.text)
		}
	}
	if len(ids) != 2 {
		t.Errorf("patches of %d sessions, want 2 (8 appends each)", len(ids))
	}
	c, err := newClient(srv.Endpoint, newCounter())
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		res, err := c.Select(ctx, "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
		if err != nil {
			t.Fatal(err)
		}
		n, err := res.Solutions[0].Int("n")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	log := kg.MustIRI("urn:trails-bench:floor:" + uuid.NewString())
	offsets := []int64{-1}
	const per = 5
	rate, err := floorRun(ctx, []*kg.Client{c}, log, offsets, pats, per, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	requests := int(offsets[0]) + 1
	if requests < 1 || rate <= 0 {
		t.Fatalf("%d requests at %.1f appends/s, want some", requests, rate)
	}
	want := 1 // the floor's offset
	for k := range requests * per {
		want += strings.Count("\n"+pats[k%len(pats)].text, "\nA ")
	}
	if got := count() - before; got != want {
		t.Errorf("the floor added %d quads in %d requests, want %d (each copy's data under a session of its own)", got, requests, want)
	}
	ok, err := c.Ask(ctx, "ASK { GRAPH <https://w3id.org/trails/graph/replica> { "+"<"+log.String()+"> <https://w3id.org/trails/ns#appliedOffset> ?o FILTER(?o = "+strconv.Itoa(requests-1)+") } }")
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Errorf("the floor's offset is not %d", requests-1)
	}
}
