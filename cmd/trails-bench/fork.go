package main

import (
	"context"
	"fmt"
	"time"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// forkRow is the fork scenario for one parent size: a Trails fork (Persist
// of a fork with no turns of its own yet) against copy-on-fork, which
// writes a new session holding a copy of the whole prefix.
type forkRow struct {
	ParentTurns   int  `json:"parent_turns"`
	Trails        stat `json:"trails"`
	TrailsTriples int  `json:"trails_triples"`
	Copy          stat `json:"copy"`
	CopyTriples   int  `json:"copy_triples"`
}

// forkCost runs scenario 1. Triples written are counted in the store: the
// quads of the whole dataset after the write minus before.
func (b *bench) forkCost(ctx context.Context) ([]forkRow, error) {
	var rows []forkRow
	for _, n := range b.plan.forkParents {
		parent := b.newRoot(n)
		if err := b.persistInSteps(ctx, b.st, parent, 2000); err != nil {
			return nil, fmt.Errorf("fork: store a parent of %d turns: %w", n, err)
		}
		row := forkRow{ParentTurns: n}
		var trails, copies []sample
		for run := 0; run <= b.plan.runs; run++ { // run 0 warms up
			q0, err := b.count(ctx, qCountQuads)
			if err != nil {
				return nil, err
			}
			f, err := parent.Fork(n)
			if err != nil {
				return nil, err
			}
			s, err := b.measure(func() error { return b.st.Persist(ctx, f) })
			if err != nil {
				return nil, fmt.Errorf("fork: persist a fork of %d turns: %w", n, err)
			}
			q1, err := b.count(ctx, qCountQuads)
			if err != nil {
				return nil, err
			}
			c, err := b.measure(func() error { return copyOnFork(ctx, b.c, parent) })
			if err != nil {
				return nil, fmt.Errorf("fork: copy a prefix of %d turns: %w", n, err)
			}
			q2, err := b.count(ctx, qCountQuads)
			if err != nil {
				return nil, err
			}
			if run == 0 {
				row.TrailsTriples, row.CopyTriples = q1-q0, q2-q1
				continue
			}
			if q1-q0 != row.TrailsTriples || q2-q1 != row.CopyTriples {
				return nil, fmt.Errorf("fork of %d turns: runs wrote different numbers of triples (%d and %d, copy %d and %d)",
					n, row.TrailsTriples, q1-q0, row.CopyTriples, q2-q1)
			}
			trails, copies = append(trails, s), append(copies, c)
		}
		row.Trails, row.Copy = medianOf(trails), medianOf(copies)
		rows = append(rows, row)
		b.logf("fork: parent %d turns: Trails %d triples %v, copy %d triples %v", n,
			row.TrailsTriples, row.Trails.D.Round(time.Microsecond), row.CopyTriples, row.Copy.D.Round(time.Microsecond))
	}
	return rows, nil
}

// copyOnFork is the copy-on-fork baseline: a fork that duplicates its
// parent's history into a session of its own (what the bub tape and kagent
// forks do), written as one INSERT DATA: the session's metadata and a link
// to the parent, seven triples per copied turn, its turn count and digest.
func copyOnFork(ctx context.Context, c *kg.Client, parent *session.Session) error {
	var d kg.Data
	id := session.New(parent.Principal).ID
	g := addRootSession(&d, id, parent.Principal, time.Now())
	d.Add(g, g, pDerived, sessionIRI(parent.ID))
	dg := newRunningDigest()
	head := ""
	for _, t := range parent.Turns {
		head = dg.add(t)
		addTurn(&d, g, t, dg.chain)
	}
	addHead(&d, g, len(parent.Turns), head)
	u, err := d.InsertData()
	if err != nil {
		return err
	}
	return c.Update(ctx, u)
}
