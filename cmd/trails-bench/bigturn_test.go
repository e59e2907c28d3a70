package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

// TestBigTurnOxigraph runs scenario 9b at its full size (a turn of
// session.MaxTurnBytes less 4 KiB) on Oxigraph, once: Persist stores the
// turn (it sends the content in chunks) and the turn loads back, and the
// Graph Store POST of the same literal, which Oxigraph refuses (its
// N-Quads parser takes no token over 16 MiB: HTTP 400 "Reached the buffer
// maximal size of 16777216"), is left out with the reason in the report
// instead of failing the run. It asserts nothing about time.
func TestBigTurnOxigraph(t *testing.T) {
	t.Setenv(fusekitest.EnvScratch, t.TempDir())
	srv, _, err := startStore(kg.Oxigraph, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	p := shortPlan()
	p.bigTurnBytes, p.runs = fullPlan().bigTurnBytes, 1
	b := &bench{plan: p, log: io.Discard, t0: time.Now(), store: kg.Oxigraph, srv: srv, ct: newCounter(), gen: newTextGen(1)}
	if b.c, err = b.storeClient(b.ct); err != nil {
		t.Fatal(err)
	}
	b.st = b.newStore()
	g, err := b.bigTurnBench(context.Background())
	if err != nil {
		t.Fatalf("big turn on Oxigraph: %v", err)
	}
	if g.NoGSP == "" || !strings.Contains(g.NoGSP, "takes no token over 16,777,216") || g.GSP.Runs != 0 {
		t.Errorf("got reason %q and %d Graph Store runs, want the POST left out with the reason", g.NoGSP, g.GSP.Runs)
	}
	if g.Trails.Runs != 1 || g.Trails.D <= 0 {
		t.Errorf("got Persist %+v, want one measured run", g.Trails)
	}
	if ts := g.judge(); len(ts) != 0 {
		t.Errorf("got targets %+v, want none without the baseline", ts)
	}
	var md bytes.Buffer
	g.markdown(&md)
	if !strings.Contains(md.String(), "No Graph Store POST of the same turn's triples to compare with: ") {
		t.Errorf("the section does not say why there is no baseline:\n%s", md.String())
	}
}
