package admin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// StagingGrace is how long a staging graph may exist before Check reports
// it (RuleStaging) and SweepStaging(ctx, StagingGrace) removes it. A write
// sends its staging graph and its update seconds apart (session.Persist),
// so a staging graph an hour old belongs to no write in flight.
const StagingGrace = time.Hour

// The queries that list staging graphs and receipt graphs, read once.
var (
	qCheckStaging    = query("check-staging.rq")
	qStagingReceipts = query("staging-receipts.rq")
)

// stagingGraph is a staging graph and the time it was made.
type stagingGraph struct {
	g    rdf.IRI
	made time.Time // zero when its IRI holds no version 7 uuid
}

// stagingGraphs lists the graphs under ontology.StagingBase that query q
// finds (qCheckStaging or qStagingReceipts) made more than age ago (a
// graph whose IRI tells no time counts as old).
func (ds *Dataset) stagingGraphs(ctx context.Context, q string, age time.Duration) ([]stagingGraph, error) {
	res, err := ds.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	var out []stagingGraph
	for _, row := range res.Solutions {
		g, ok := row["g"].(rdf.IRI)
		if !ok {
			continue
		}
		sg := stagingGraph{g: g}
		if id, ok := strings.CutPrefix(g.String(), ontology.StagingBase); ok {
			if u, err := uuid.Parse(id); err == nil && u.Version() == 7 {
				sec, nsec := u.Time().UnixTime()
				sg.made = time.Unix(sec, nsec).UTC()
			}
		}
		if sg.made.IsZero() || ds.now().Sub(sg.made) > age {
			out = append(out, sg)
		}
	}
	return out, nil
}

// checkStaging reports every staging graph older than StagingGrace. It
// leaves receipt graphs alone: a writer keeps its last one until its next
// write, however long that takes, and one left holds no session data.
func (ds *Dataset) checkStaging(ctx context.Context) ([]Finding, error) {
	gs, err := ds.stagingGraphs(ctx, qCheckStaging, StagingGrace)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, sg := range gs {
		made := "at an unknown time"
		if !sg.made.IsZero() {
			made = "at " + sg.made.Format(time.RFC3339)
		}
		out = append(out, Finding{RuleStaging, sg.g.String(),
			"a staging graph made " + made + " outlived its write (the writer stopped between sending it and its update): its contents are no session's data; SweepStaging (trails-admin sweep) removes it"})
	}
	return out, nil
}

// SweepStaging removes, in one update, every staging graph made more than
// olderThan ago (give StagingGrace; less may remove the staging graph of
// a write in flight, which then fails with ErrConflict and changes
// nothing), and returns how many it removed. A staging graph holds the
// long contents of a write that stopped between sending them and its
// update (session.MaxTurnBytes): no session refers to them. It removes
// the receipt graphs of group commit requests (trails:applied) as old
// too: a writer drops its own in its next request, and one that stopped
// writing, or died, leaves its last few; Check does not report them.
//
// It returns an error wrapping the kg error of a failed request, or a
// context error.
func (ds *Dataset) SweepStaging(ctx context.Context, olderThan time.Duration) (_ int, err error) {
	ctx, call := telemetry.Start(ctx, "admin.SweepStaging", "")
	defer func() { call.End(err) }()
	gs, err := ds.stagingGraphs(ctx, qCheckStaging, olderThan)
	if err != nil {
		return 0, err
	}
	rs, err := ds.stagingGraphs(ctx, qStagingReceipts, olderThan)
	if err != nil {
		return 0, err
	}
	gs = append(gs, rs...)
	if len(gs) == 0 {
		return 0, nil
	}
	ops := make([]string, len(gs))
	for i, sg := range gs {
		t, err := kg.Term(sg.g)
		if err != nil {
			return 0, fmt.Errorf("sweep staging: %w", err)
		}
		ops[i] = "DROP SILENT GRAPH " + t
	}
	if err := ds.c.Update(ctx, strings.Join(ops, " ;\n"), kg.Idempotent()); err != nil {
		return 0, fmt.Errorf("sweep staging: %w", err)
	}
	return len(gs), nil
}
