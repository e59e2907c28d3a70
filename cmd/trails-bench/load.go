package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// loadRow is the load scenario for one history length and chain depth.
type loadRow struct {
	History int  `json:"history"`
	Depth   int  `json:"depth"`
	Trails  stat `json:"trails"` // Store.Load of the chain's leaf
	Naive   stat `json:"naive"`  // one request per ancestor for its link, one for its turns
	Flat    stat `json:"flat"`   // Store.Load of a root with the same number of turns
	Floor   stat `json:"floor"`  // one SELECT of exactly those turns, sessions and ranges given
}

// loadFixtures are the sessions of the load scenario, kept for the client
// cost scenario.
type loadFixtures struct {
	flats  map[int]*session.Session
	chains map[[2]int]*chain // by history, depth
}

// loadVsDepth runs scenario 2: for each history length a flat root and a
// chain per depth, all stored through Persist; then, run by run, each way
// of loading each chain, interleaved so that drift in the machine's speed
// touches all of them alike, and in an order that rotates from run to run,
// since a way that follows another reading the same turns finds the store's
// caches warm. The warm-up run checks that Load, the naive walk and the
// floor return the same turns.
func (b *bench) loadVsDepth(ctx context.Context) ([]loadRow, *loadFixtures, error) {
	fx := &loadFixtures{flats: map[int]*session.Session{}, chains: map[[2]int]*chain{}}
	for _, h := range b.plan.histories {
		flat := b.newRoot(h)
		if err := b.persistInSteps(ctx, b.st, flat, 2000); err != nil {
			return nil, nil, fmt.Errorf("load: store a flat session: %w", err)
		}
		fx.flats[h] = flat
		for _, d := range b.plan.depths {
			ch, err := b.buildChain(ctx, h, d)
			if err != nil {
				return nil, nil, fmt.Errorf("load: store a chain of depth %d: %w", d, err)
			}
			fx.chains[[2]int{h, d}] = ch
		}
		b.logf("load: stored the sessions of a %d-turn history", h)
	}
	var rows []loadRow
	for _, h := range b.plan.histories {
		for _, d := range b.plan.depths {
			ch := fx.chains[[2]int{h, d}]
			leaf, ranges := ch.leaf().ID, ch.ranges()
			var tr, nv, fl, fo []sample
			for run := 0; run <= b.plan.runs; run++ {
				var got [3][]session.Turn
				ways := []struct {
					samples *[]sample
					f       func() ([]session.Turn, error)
				}{
					{&tr, func() ([]session.Turn, error) { return loadTurns(b.st.Load(ctx, leaf)) }},
					{&nv, func() ([]session.Turn, error) { return naiveLoad(ctx, b.c, leaf) }},
					{&fo, func() ([]session.Turn, error) { return floorLoad(ctx, b.c, ranges) }},
					{&fl, func() ([]session.Turn, error) { return loadTurns(b.st.Load(ctx, fx.flats[h].ID)) }},
				}
				for j := range ways {
					k := (j + run) % len(ways)
					w := ways[k]
					var turns []session.Turn
					s, err := b.measure(func() error {
						var err error
						turns, err = w.f()
						return err
					})
					if err != nil {
						return nil, nil, fmt.Errorf("load: history %d, depth %d: %w", h, d, err)
					}
					if len(turns) != h {
						return nil, nil, fmt.Errorf("load: history %d, depth %d, way %d: got %d turns, want %d", h, d, k, len(turns), h)
					}
					if k < len(got) {
						got[k] = turns
					}
					if run > 0 {
						*w.samples = append(*w.samples, s)
					}
				}
				if run == 0 {
					if !slices.EqualFunc(got[0], got[1], sameTurn) || !slices.EqualFunc(got[0], got[2], sameTurn) {
						return nil, nil, fmt.Errorf("load: history %d, depth %d: Load, the naive walk and the floor disagree", h, d)
					}
					if !slices.EqualFunc(got[0], ch.leaf().Turns, sameTurn) {
						return nil, nil, fmt.Errorf("load: history %d, depth %d: Load differs from what was persisted", h, d)
					}
				}
			}
			row := loadRow{History: h, Depth: d, Trails: medianOf(tr), Naive: medianOf(nv), Flat: medianOf(fl), Floor: medianOf(fo)}
			rows = append(rows, row)
			b.logf("load: %d turns, depth %2d: Trails %v (%v trips), naive %v (%v), flat %v, floor %v", h, d,
				ms(row.Trails.D), row.Trails.Trips, ms(row.Naive.D), row.Naive.Trips, ms(row.Flat.D), ms(row.Floor.D))
		}
	}
	return rows, fx, nil
}

// latencyRow is Load against the naive walk at the deepest chain, through
// a client that adds a fixed latency to every round trip.
type latencyRow struct {
	History int           `json:"history"`
	Depth   int           `json:"depth"`
	RTT     time.Duration `json:"added_latency_ns"`
	Trails  stat          `json:"trails"`
	Naive   stat          `json:"naive"`
}

// overNetwork measures Load and the naive walk of the deepest chain of
// each history with b.plan.rtt added to every round trip (a store across a
// network rather than on the same machine), interleaved like loadVsDepth.
func (b *bench) overNetwork(ctx context.Context, fx *loadFixtures) ([]latencyRow, error) {
	ct := newCounter()
	ct.next = &delayed{d: b.plan.rtt, next: ct.next}
	c, err := b.storeClient(ct)
	if err != nil {
		return nil, err
	}
	st := session.NewStore(c)
	deepest := b.plan.depths[len(b.plan.depths)-1]
	var rows []latencyRow
	for _, h := range b.plan.histories {
		leaf := fx.chains[[2]int{h, deepest}].leaf().ID
		var tr, nv []sample
		for run := 0; run <= b.plan.runs; run++ {
			ways := []struct {
				samples *[]sample
				f       func() ([]session.Turn, error)
			}{
				{&tr, func() ([]session.Turn, error) { return loadTurns(st.Load(ctx, leaf)) }},
				{&nv, func() ([]session.Turn, error) { return naiveLoad(ctx, c, leaf) }},
			}
			for j := range ways {
				w := ways[(j+run)%len(ways)]
				r0, b0 := ct.snapshot()
				t0 := time.Now()
				turns, err := w.f()
				s := sample{d: time.Since(t0)}
				r1, b1 := ct.snapshot()
				s.trips, s.bytes = r1-r0, b1-b0
				if err != nil {
					return nil, fmt.Errorf("load over a network: %w", err)
				}
				if len(turns) != h {
					return nil, fmt.Errorf("load over a network: got %d turns, want %d", len(turns), h)
				}
				if run > 0 {
					*w.samples = append(*w.samples, s)
				}
			}
		}
		row := latencyRow{History: h, Depth: deepest, RTT: b.plan.rtt, Trails: medianOf(tr), Naive: medianOf(nv)}
		rows = append(rows, row)
		b.logf("load with %v per round trip: %d turns, depth %d: Trails %v, naive %v", b.plan.rtt, h, deepest, ms(row.Trails.D), ms(row.Naive.D))
	}
	return rows, nil
}

func ms(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }

func loadTurns(s *session.Session, err error) ([]session.Turn, error) {
	if err != nil {
		return nil, err
	}
	return s.Turns, nil
}

func sameTurn(a, b session.Turn) bool {
	return a.Index == b.Index && a.Role == b.Role && a.Content == b.Content && a.Branch == b.Branch && a.Created.Equal(b.Created)
}

// selecter is what the load baselines need of the store: whole answers to
// SELECT queries, read as tab-separated results like Load's.
type selecter interface {
	Select(ctx context.Context, query string) (*kg.Results, error)
}

var _ selecter = (*kg.Client)(nil)

// naiveLoad is the naive walker: from the session up, one query per
// session for its parent link and fork point, then one query per session
// for the turns it contributes. It reads turns from the same tab-separated
// results as Load, so that only the number of round trips differs.
func naiveLoad(ctx context.Context, c selecter, id string) ([]session.Turn, error) {
	type hop struct {
		s  rdf.IRI
		at int
	}
	var hops []hop
	for cur := sessionIRI(id); ; {
		if len(hops) > session.MaxForkDepth {
			return nil, fmt.Errorf("naive load %s: chain longer than %d", id, session.MaxForkDepth)
		}
		q, err := kg.Bind(qNaiveParent, kg.Params{"s": cur})
		if err != nil {
			return nil, err
		}
		res, err := c.Select(ctx, q)
		if err != nil {
			return nil, err
		}
		if len(res.Solutions) != 1 {
			return nil, fmt.Errorf("naive load %s: %d rows for session %s", id, len(res.Solutions), cur)
		}
		row := res.Solutions[0]
		h := hop{s: cur}
		if _, ok := row["at"]; ok {
			if h.at, err = row.Int("at"); err != nil {
				return nil, err
			}
		}
		hops = append(hops, h)
		p, ok := row["parent"]
		if !ok {
			break
		}
		if cur, err = kg.IRI(p.String()); err != nil {
			return nil, err
		}
	}
	var turns []session.Turn
	hi := -1
	for _, h := range hops {
		q, err := kg.Bind(qNaiveTurns, kg.Params{"s": h.s, "lo": kg.Int(h.at), "hi": kg.Int(hi)})
		if err != nil {
			return nil, err
		}
		res, err := c.Select(ctx, q)
		if err != nil {
			return nil, err
		}
		ts, err := readTurns(res)
		if err != nil {
			return nil, err
		}
		turns = append(turns, ts...)
		hi = h.at
	}
	slices.SortFunc(turns, func(a, b session.Turn) int { return a.Index - b.Index })
	return turns, nil
}

// floorLoad is the floor: one hand-written SELECT of exactly the turns of
// the history, given the sessions that own them and their ranges (what
// Load must first discover), read like Load reads its results.
func floorLoad(ctx context.Context, c selecter, ranges []turnRange) ([]session.Turn, error) {
	rows := make([][]rdf.Term, len(ranges))
	for k, r := range ranges {
		rows[k] = []rdf.Term{sessionIRI(r.id), kg.Int(r.lo), kg.Int(r.hi)}
	}
	q, err := kg.BindTables(qFloor, nil, map[string]kg.Table{"ranges": {Vars: []string{"s", "lo", "hi"}, Rows: rows}})
	if err != nil {
		return nil, err
	}
	res, err := c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	turns, err := readTurns(res)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(turns, func(a, b session.Turn) int { return a.Index - b.Index })
	return turns, nil
}

// readTurns reads rows of ?i ?role ?content ?branch ?created.
func readTurns(res *kg.Results) ([]session.Turn, error) {
	turns := make([]session.Turn, 0, len(res.Solutions))
	for _, row := range res.Solutions {
		i, err := row.Int("i")
		if err != nil {
			return nil, err
		}
		created, err := row.Time("created")
		if err != nil {
			return nil, err
		}
		turns = append(turns, session.Turn{Index: i, Role: row.String("role"), Content: row.String("content"), Branch: row.String("branch"), Created: created})
	}
	return turns, nil
}
