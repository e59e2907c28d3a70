package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/knakk/rdf"

	"github.com/trails-kg/trails/internal/appendhint"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The replicas' floor for the writers' appends: the rate at which the
// two replicas' Fusekis take the data of those appends as raw RDF Patch
// (the fenced-patch endpoint of Trails' module: one write transaction
// a request, the fence one quad read), both at once as their appliers
// apply the log, in requests of as many appends as the appliers' apply
// requests held under the writers. No conditions, no log, no receipts:
// what the store alone costs. A target of the writers through the log
// above it is beyond what the replicas' store can ingest.

// floorPatch is the RDF Patch of one append captured from a Store (its
// data and the move of its session's count and head), and the id of its
// session, which copies replace to make the data their own.
type floorPatch struct {
	text string
	id   string
}

// patchCapture is a Querier over a kg.Client that keeps, of each append
// sent with an append hint, its RDF Patch (appendhint.Patch: what the
// decided path applies for it). It has no ConditionalBatch method, so a
// Store over it sends its appends as SPARQL Update with their hints, as
// through the log.
type patchCapture struct {
	c       *kg.Client
	mu      sync.Mutex
	patches []floorPatch
	id      string // the session being appended to
}

func (p *patchCapture) Select(ctx context.Context, q string) (*kg.Results, error) {
	return p.c.Select(ctx, q)
}

func (p *patchCapture) Rows(ctx context.Context, q string) (*kg.Rows, error) {
	return p.c.Rows(ctx, q)
}

func (p *patchCapture) Ask(ctx context.Context, q string) (bool, error) { return p.c.Ask(ctx, q) }

// Store tells the Store the kind of store, as kg.Client does: a Fuseki
// Store's appends carry their ack graph, and so their hint.
func (p *patchCapture) Store() kg.Store { return p.c.Store() }

func (p *patchCapture) Update(ctx context.Context, u string, opts ...kg.UpdateOption) error {
	if err := p.c.Update(ctx, u, opts...); err != nil {
		return err
	}
	for _, h := range kg.HintsOf(opts...) {
		if h[0] != appendhint.Key {
			continue
		}
		hint, err := appendhint.Decode(h[1], u)
		if err != nil {
			return err
		}
		patch, err := appendhint.Patch(u, hint)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.patches = append(p.patches, floorPatch{text: string(patch), id: p.id})
		p.mu.Unlock()
	}
	return nil
}

// floorPatches appends n turns of contents, one a Persist, to sessions
// of their own (8 turns each) on the direct Fuseki, as the writers
// append, and returns the RDF Patch of each append.
func (rig *clusterRig) floorPatches(ctx context.Context, n int, contents []string) ([]floorPatch, error) {
	c, err := newClient(rig.b.srv.Endpoint, newCounter())
	if err != nil {
		return nil, err
	}
	capt := &patchCapture{c: c}
	st := session.NewStore(capt)
	for len(capt.patches) < n {
		s := rig.b.newRoot(1)
		if err := st.Persist(ctx, s); err != nil {
			return nil, err
		}
		capt.id = s.ID
		for k := 0; k < 8 && len(capt.patches) < n; k++ {
			before := len(capt.patches)
			s.Append(role(len(s.Turns)), contents[(len(capt.patches)+k)%len(contents)])
			if err := st.Persist(ctx, s); err != nil {
				return nil, err
			}
			if len(capt.patches) != before+1 {
				return nil, fmt.Errorf("floor: an append sent %d patches, want 1 (no append hint?)", len(capt.patches)-before)
			}
		}
	}
	for _, p := range capt.patches {
		if !strings.Contains(p.text, p.id) {
			return nil, fmt.Errorf("floor: an append's patch does not name its session %s", p.id)
		}
	}
	return capt.patches, nil
}

// floorRun has each replica's Fuseki take appends as RDF Patch, per
// appends a request (each a copy of a captured patch with a session id
// of its own), for d, all replicas at once; it returns the slowest
// replica's appends per second, each over the time its last request
// ended. offsets holds each replica's offset of log, moved as applied.
func floorRun(ctx context.Context, cs []*kg.Client, log rdf.IRI, offsets []int64, pats []floorPatch, per int, d time.Duration) (float64, error) {
	rates := make([]float64, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			t0 := time.Now()
			var b strings.Builder
			n, k := 0, 0
			at := func(off int64) string { // the offset's quad, as the applier's patches write it
				return mustTerm(log) + " " + mustTerm(kg.MustIRI(ontology.AppliedOffset)) + " " + mustTerm(kg.Int(int(off))) + " " + mustTerm(kg.MustIRI(ontology.ReplicaGraph)) + " .\n"
			}
			for time.Since(t0) < d {
				b.Reset()
				if offsets[i] >= 0 {
					b.WriteString("D " + at(offsets[i]))
				}
				b.WriteString("A " + at(offsets[i]+1))
				for range per {
					p := pats[k%len(pats)]
					k++
					b.WriteString(strings.ReplaceAll(p.text, p.id, uuid.NewString()))
				}
				if err := c.FencedPatch(ctx, log, offsets[i], []byte(b.String())); err != nil {
					errs[i] = fmt.Errorf("floor: replica %d: %w", i, err)
					return
				}
				offsets[i]++
				n += per
			}
			rates[i] = float64(n) / time.Since(t0).Seconds()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return slices.Min(rates), nil
}

// patchFloor measures the replicas' floor for the writers' appends (see
// the top of this file) after the scenario's other parts, so that its
// data is in no replica a new one copies: plan.runs windows of
// plan.clusterWindow after a warm-up one, the median judged.
func (rig *clusterRig) patchFloor(ctx context.Context, r *clusterResult, contents []string) error {
	b := rig.b
	per := max(1, int(math.Round(r.BatchMean)))
	pats, err := rig.floorPatches(ctx, 256, contents)
	if err != nil {
		return err
	}
	var quads int
	for _, p := range pats {
		for line := range strings.Lines(p.text) {
			if strings.HasPrefix(line, "A ") {
				quads++
			}
		}
	}
	cs := make([]*kg.Client, len(rig.fusekis))
	for i, srv := range rig.fusekis {
		if cs[i], err = newClient(srv.Endpoint, newCounter()); err != nil {
			return err
		}
	}
	log := kg.MustIRI("urn:trails-bench:floor:" + uuid.NewString())
	offsets := make([]int64, len(cs))
	for i := range offsets {
		offsets[i] = -1
	}
	var rates []float64
	for run := 0; run <= b.plan.runs; run++ {
		rate, err := floorRun(ctx, cs, log, offsets, pats, per, b.plan.clusterWindow)
		if err != nil {
			return err
		}
		if run == 0 {
			continue
		}
		rates = append(rates, rate)
		b.logf("cluster: the replicas' floor, run %d: %.1f appends/s (%d a request)", run, rate, per)
	}
	r.FloorAPS, r.FloorPer, r.FloorQuads = median(rates), per, float64(quads)/float64(len(pats))
	return nil
}

// beyondFloor reports whether the writers' target through the log
// (decidedWriters× the update path) lies above the replicas' floor.
func (c *clusterResult) beyondFloor() bool {
	return c.FloorAPS > 0 && decidedWriters*c.UpdatesAPS > c.FloorAPS
}

// decidedMeets judges the decided path's writers: decidedWriters× the
// update path, or decidedFloorShare of the replicas' floor when that
// target is beyond it.
func (c *clusterResult) decidedMeets() bool {
	if c.UpdatesAPS <= 0 {
		return false
	}
	if c.beyondFloor() {
		return c.ClusterAPS >= decidedFloorShare*c.FloorAPS
	}
	return c.ClusterAPS >= decidedWriters*c.UpdatesAPS
}

// floorText is what the writers' target row says of the replicas'
// floor ("" when not measured).
func (c *clusterResult) floorText() string {
	if c.FloorAPS <= 0 {
		return ""
	}
	t := fmt.Sprintf("; the replicas' floor (the appends' data as raw RDF Patch, %d a request, both replicas at once) %.1f appends/s, the decided path at %s of it",
		c.FloorPer, c.FloorAPS, share(ratio(c.ClusterAPS, c.FloorAPS)))
	if c.beyondFloor() {
		t += fmt.Sprintf(": %.1f× the update path (%.1f appends/s) is beyond the floor, so judged as ≥ %.0f%% of it", decidedWriters, decidedWriters*c.UpdatesAPS, 100*decidedFloorShare)
	}
	return t
}
