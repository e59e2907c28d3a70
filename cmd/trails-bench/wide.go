package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

var (
	qWideRoots    = query("wide-roots.rq")
	qWideTree     = query("wide-tree.rq")
	qWideBranches = query("wide-branches.rq")
)

// wideTree is scenario 7: one parent with many forks (a wide tree), and
// what the operators' commands cost on it next to a hand-written SELECT of
// the same rows.
type wideTree struct {
	Forks       int `json:"forks"`
	ParentTurns int `json:"parent_turns"`
	ForkTurns   int `json:"fork_turns"` // own turns of each fork
	Roots       int `json:"roots"`      // root sessions in the store
	Quads       int `json:"quads"`      // quads the forks added to the store

	Setup time.Duration `json:"setup_ns"` // bulk-loading the forks

	List          stat           `json:"list_roots"` // Store.List(Roots())
	ListFloor     stat           `json:"list_roots_floor"`
	Tree          stat           `json:"tree"` // Store.Tree of the parent
	TreeFloor     stat           `json:"tree_floor"`
	Branches      stat           `json:"branches"` // Store.Branches of the parent
	BranchesFloor stat           `json:"branches_floor"`
	Export        stat           `json:"export"` // Store.Export of the tree, N-Quads
	ExportBytes   int            `json:"export_bytes"`
	Check         stat           `json:"check"` // Store.Check of the whole store
	Findings      int            `json:"findings"`
	FindingRules  map[string]int `json:"finding_rules"`              // findings by rule
	NoSHACL       string         `json:"shacl_not_run_on,omitempty"` // the store whose lack of a SHACL endpoint left the shapes out of Check

	Delete      time.Duration `json:"delete_ns"` // Store.Delete of the parent with Cascade, once
	DeleteSteps int           `json:"delete_steps"`
	DeleteTrips int64         `json:"delete_round_trips"`
}

// DeleteRate is the sessions a cascading delete removed per second.
func (w *wideTree) DeleteRate() float64 {
	if w.Delete <= 0 {
		return 0
	}
	return float64(w.DeleteSteps) / w.Delete.Seconds()
}

// wide runs scenario 7: it stores a parent through Persist, a few other
// roots and two forks through Persist, then bulk-loads the other forks with
// INSERT DATA in the shape Persist writes (so that setting up 10,000 forks
// takes seconds, not the minutes of 10,000 Persists), checks that each bulk
// fork added as many quads as the second Persisted one, and measures, run by run
// in a rotating order: the root listing, the tree and the direct forks of
// the parent, each against its floor query, the export of the tree and the
// check of the store. Last, once, it deletes the tree with Cascade.
func (b *bench) wide(ctx context.Context) (*wideTree, error) {
	p := b.plan
	w := &wideTree{Forks: p.wideForks, ParentTurns: p.wideParentTurns, ForkTurns: p.wideForkTurns}
	parent := b.newRoot(p.wideParentTurns)
	if err := b.st.Persist(ctx, parent); err != nil {
		return nil, fmt.Errorf("wide: store the parent: %w", err)
	}
	for range p.wideOtherRoots {
		if err := b.st.Persist(ctx, b.newRoot(2)); err != nil {
			return nil, fmt.Errorf("wide: store a root: %w", err)
		}
	}
	pool := newPool(newTextGen(3), 1024, 200, 400)
	// Two forks through Persist: the first also describes the principal's
	// agent in the PROV graph; the second adds what every later fork adds.
	var q0, q1 int
	for k := range 2 {
		f, err := parent.Fork(k)
		if err != nil {
			return nil, err
		}
		for i := range p.wideForkTurns {
			f.Append(role(i), pool.content(i))
		}
		if q0, err = b.count(ctx, qCountQuads); err != nil {
			return nil, err
		}
		if err := b.st.Persist(ctx, f); err != nil {
			return nil, fmt.Errorf("wide: persist a fork: %w", err)
		}
		if q1, err = b.count(ctx, qCountQuads); err != nil {
			return nil, err
		}
	}
	bulk := p.wideForks - 2
	t0 := time.Now()
	if err := b.bulkForks(ctx, parent, bulk, pool); err != nil {
		return nil, err
	}
	w.Setup = time.Since(t0)
	q2, err := b.count(ctx, qCountQuads)
	if err != nil {
		return nil, err
	}
	if per := q1 - q0; q2-q1 != per*bulk {
		return nil, fmt.Errorf("wide: the bulk-loaded forks added %d quads, want %d (%d per fork, as Persist wrote)", q2-q1, per*bulk, per)
	}
	w.Quads = (q1 - q0) * p.wideForks
	b.logf("wide: bulk-loaded %d forks (%d quads each, as Persist writes) in %v", bulk, q1-q0, w.Setup.Round(time.Millisecond))

	roots, err := b.st.List(ctx, session.Roots())
	if err != nil {
		return nil, err
	}
	w.Roots = len(roots)
	var rs, rf, ts, tf, bs, bf, es, cs []sample
	pid := parent.ID
	for run := 0; run <= p.runs; run++ {
		ways := []struct {
			samples *[]sample
			f       func() (int, error) // rows (or bytes, or findings) it got
			want    int                 // rows it must get, 0 for any
		}{
			{&rs, func() (int, error) { return lenOf(b.st.List(ctx, session.Roots())) }, w.Roots},
			{&rf, func() (int, error) { return b.floorRows(ctx, qWideRoots, nil) }, w.Roots},
			{&ts, func() (int, error) { return nodes(b.st.Tree(ctx, pid)) }, p.wideForks + 1},
			{&tf, func() (int, error) { return b.floorRows(ctx, qWideTree, kg.Params{"root": sessionIRI(pid)}) }, p.wideForks + 1},
			{&bs, func() (int, error) { return lenOf(b.st.Branches(ctx, pid)) }, p.wideForks},
			{&bf, func() (int, error) { return b.floorRows(ctx, qWideBranches, kg.Params{"parent": sessionIRI(pid)}) }, p.wideForks},
			{&es, func() (int, error) {
				var cw countWriter
				_, err := b.ds.Export(ctx, &cw, admin.NQuads, pid)
				w.ExportBytes = cw.n
				return cw.n, err
			}, 0},
			{&cs, func() (int, error) {
				fs, err := b.ds.Check(ctx)
				if errors.Is(err, admin.ErrSHACLNotRun) && b.store != kg.Fuseki {
					// Every other rule ran (the report says so).
					w.NoSHACL, err = storeName(b.store), nil
				}
				w.Findings = len(fs)
				w.FindingRules = map[string]int{}
				for _, f := range fs {
					w.FindingRules[f.Rule]++
				}
				return len(fs), err
			}, 0},
		}
		for j := range ways {
			k := (j + run) % len(ways)
			way := ways[k]
			var got int
			s, err := b.measure(func() error {
				var err error
				got, err = way.f()
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("wide: way %d: %w", k, err)
			}
			if way.want > 0 && got != way.want {
				return nil, fmt.Errorf("wide: way %d: got %d rows, want %d", k, got, way.want)
			}
			if run > 0 {
				*way.samples = append(*way.samples, s)
			}
		}
	}
	w.List, w.ListFloor = medianOf(rs), medianOf(rf)
	w.Tree, w.TreeFloor = medianOf(ts), medianOf(tf)
	w.Branches, w.BranchesFloor = medianOf(bs), medianOf(bf)
	w.Export, w.Check = medianOf(es), medianOf(cs)
	b.logf("wide: roots %v (floor %v), tree %v (floor %v), branches %v (floor %v), export %v, check %v (%d findings: %v)",
		ms(w.List.D), ms(w.ListFloor.D), ms(w.Tree.D), ms(w.TreeFloor.D), ms(w.Branches.D), ms(w.BranchesFloor.D),
		ms(w.Export.D), ms(w.Check.D), w.Findings, w.FindingRules)
	s, err := b.measure(func() error {
		return b.st.Delete(ctx, pid, session.DeleteOptions{Cascade: true, Progress: func(done, total int, _ session.Step) {
			w.DeleteSteps = done
		}})
	})
	if err != nil {
		return nil, fmt.Errorf("wide: delete the tree: %w", err)
	}
	w.Delete, w.DeleteTrips = s.d, s.trips
	if w.DeleteSteps != p.wideForks+1 {
		return nil, fmt.Errorf("wide: delete took %d steps, want %d", w.DeleteSteps, p.wideForks+1)
	}
	b.logf("wide: deleted the tree (%d sessions) in %v: %.0f sessions/s", w.DeleteSteps, w.Delete.Round(time.Millisecond), w.DeleteRate())
	return w, nil
}

// bulkForks stores n forks of parent, each with wideForkTurns turns of its
// own, forked at indices that go round the parent's history, in requests
// of INSERT DATA of 500 forks each: the quads Persist writes for a new fork
// (session.addSession, addTurn, addHead; prov.AddFork), its head
// digest a runningDigest, which nothing reads.
func (b *bench) bulkForks(ctx context.Context, parent *session.Session, n int, pool *pool) error {
	base := time.Now().UTC().Truncate(time.Millisecond)
	chain := make([]string, len(parent.Turns)+1) // chain[i]: the digest before turn i
	for i, t := range parent.Turns {
		chain[i+1] = session.TurnDigest(chain[i], t)
	}
	var d kg.Data
	batch := 0
	for k := range n {
		id := session.New(principal).ID
		created := base.Add(time.Duration(k) * time.Millisecond)
		var r [4]byte
		rand.Read(r[:])
		branch := "fork-" + hex.EncodeToString(r[:])
		at := k % (len(parent.Turns) + 1)
		g := addForkSession(&d, id, parent.ID, at, branch, principal, created)
		dg := newRunningDigest()
		dg.chain = chain[at] // a fork's chain goes on from its parent's turn at-1
		head := ""
		for i := range b.plan.wideForkTurns {
			t := session.Turn{Index: at + i, Role: role(i), Content: pool.content(k + i), Branch: branch, Created: created}
			head = dg.add(t)
			addTurn(&d, g, t, dg.chain)
		}
		addHead(&d, g, b.plan.wideForkTurns, head)
		prov.AddFork(&d, prov.Fork{Child: id, Parent: parent.ID, At: at, Principal: principal, Time: created})
		if batch++; batch == 500 || k == n-1 {
			u, err := d.InsertData()
			if err != nil {
				return err
			}
			if err := b.c.Update(ctx, u); err != nil {
				return fmt.Errorf("wide: bulk-load forks: %w", err)
			}
			d, batch = kg.Data{}, 0
		}
	}
	return nil
}

// addForkSession adds what Persist writes for a new fork besides its turns
// and head (session.addSession): types (trails:Session,
// prov:Entity), id, branch, kind, creation time, principal and its agent,
// parent link, derivation and fork point (12 triples).
func addForkSession(a adder, id, parent string, at int, branch, principal string, created time.Time) rdf.IRI {
	g := sessionIRI(id)
	p := sessionIRI(parent)
	a.Add(g, g, pType, cSession)
	a.Add(g, g, pType, cEntity)
	a.Add(g, g, pID, kg.String(id))
	a.Add(g, g, pBranch, kg.String(branch))
	a.Add(g, g, pKind, kg.String(string(session.KindBranch)))
	a.Add(g, g, pCreated, kg.DateTime(created))
	agent := iri(ontology.AgentIRI(principal))
	a.Add(g, agent, pType, cAgent)
	a.Add(g, agent, pID, kg.String(principal))
	a.Add(g, g, pPrincipal, agent)
	a.Add(g, g, pParent, p)
	a.Add(g, g, pDerived, p)
	a.Add(g, g, pForkedAt, kg.Int(at))
	return g
}

// floorRows runs a floor query and reads its rows as the library reads
// a session's description: id, principal, parent, fork point, branch, own
// turns, creation time and kind, one per session (the first row, as the
// library does). It returns how many sessions it read.
func (b *bench) floorRows(ctx context.Context, q string, p kg.Params) (int, error) {
	if p != nil {
		var err error
		if q, err = kg.Bind(q, p); err != nil {
			return 0, err
		}
	}
	res, err := b.c.Select(ctx, q)
	if err != nil {
		return 0, err
	}
	infos := make([]session.Info, 0, len(res.Solutions))
	seen := make(map[string]bool, len(res.Solutions))
	for _, row := range res.Solutions {
		if s := row.String("s"); seen[s] {
			continue // a second value of a column (the raw INSERT DATA baseline adds turn counts): the library keeps the first row too
		} else {
			seen[s] = true
		}
		in := session.Info{ID: row.String("id"), Principal: row.String("principal"), ParentID: row.String("parent"),
			Branch: row.String("branch"), Kind: session.Kind(row.String("kind"))}
		if _, ok := row["at"]; ok {
			if in.ForkedAt, err = row.Int("at"); err != nil {
				return 0, err
			}
		}
		if in.OwnTurns, err = row.Int("own"); err != nil {
			return 0, err
		}
		if in.Created, err = row.Time("created"); err != nil {
			return 0, err
		}
		infos = append(infos, in)
	}
	return len(infos), nil
}

func lenOf(infos []session.Info, err error) (int, error) { return len(infos), err }

func nodes(t *session.Node, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n := 0
	t.Walk(func(*session.Node) { n++ })
	return n, nil
}

// countWriter counts the bytes written to it.
type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
}

var _ io.Writer = (*countWriter)(nil)
