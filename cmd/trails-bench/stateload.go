package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// stateResult is scenario 9c: Store.Load, state included, of the leaf of
// a chain whose sessions start with values and whose turns change them
// (session, user: and app: keys), against its floor.
type stateResult struct {
	History int  `json:"history"`
	Depth   int  `json:"depth"`
	Changes int  `json:"changes"` // turns with a delta, start values included
	Keys    int  `json:"keys"`    // of the leaf's state
	Trails  stat `json:"trails"`
	Floor   stat `json:"floor"`
}

// Ratio is Load's time over the floor's.
func (s *stateResult) Ratio() float64 { return ratio(float64(s.Trails.D), float64(s.Floor.D)) }

// The bounds for a load with state.
const (
	stateTrips       = 3
	stateFloorTarget = 1.3
)

// stateApp is the app of the chain's sessions.
const stateApp = "bench-app"

// stateChain stores, through Persist, a history of total turns over a
// root and depth forks, each forked at the end of its parent, belonging
// to stateApp. Every session starts with values (a key of its own, a
// user: and an app: key); every fourth turn changes a session key, every
// eighth a user: key and every twelfth an app: key (a removal now and
// then). It returns the chain and how many changes it made.
func (b *bench) stateChain(ctx context.Context, total, depth int) (*chain, int, error) {
	per := total / (depth + 1)
	changes := 0
	addTurns := func(s *session.Session, n int) {
		for range n {
			i := len(s.Turns)
			t := session.Turn{Role: role(i), Content: b.gen.turn()}
			d := map[string]json.RawMessage{}
			if i%4 == 0 {
				d[fmt.Sprintf("step%d", i%5)] = json.RawMessage(fmt.Sprintf(`{"turn":%d,"note":%q}`, i, b.gen.text(20)))
			}
			if i%8 == 0 {
				d[session.UserPrefix+"lang"] = json.RawMessage(fmt.Sprintf(`"lang-%d"`, i))
			}
			if i%12 == 0 {
				d[session.AppPrefix+"counter"] = json.RawMessage(fmt.Sprint(i))
			}
			if i%40 == 20 {
				d["step0"] = nil // removed
			}
			if len(d) > 0 {
				t.Structure = &session.Structure{Delta: d}
				changes++
			}
			s.AppendTurn(t)
		}
	}
	start := func(s *session.Session, k int) {
		s.Initial = map[string]json.RawMessage{
			fmt.Sprintf("start%d", k):   json.RawMessage(fmt.Sprintf(`{"session":%d}`, k)),
			session.UserPrefix + "name": json.RawMessage(fmt.Sprintf(`"user of %d"`, k)),
			session.AppPrefix + "mode":  json.RawMessage(fmt.Sprintf(`"mode-%d"`, k%3)),
		}
		changes++
	}
	s := session.New(principal)
	s.App = stateApp
	start(s, 0)
	addTurns(s, total-per*depth)
	if err := b.persistInSteps(ctx, b.st, s, 2000); err != nil {
		return nil, 0, err
	}
	ch := &chain{sessions: []*session.Session{s}, total: total}
	for k := range depth {
		f, err := s.Fork(len(s.Turns))
		if err != nil {
			return nil, 0, err
		}
		start(f, k+1)
		addTurns(f, per)
		if err := b.persistInSteps(ctx, b.st, f, 2000); err != nil {
			return nil, 0, err
		}
		ch.sessions = append(ch.sessions, f)
		s = f
	}
	return ch, changes, nil
}

// stateBench runs scenario 9c: Load of the chain's leaf (its turns and
// its state: the chain query brings the start and shared values, one
// more request the turns' deltas) against the floor, one hand-written
// SELECT of exactly those turns, their changes, the sessions' start
// values and the shared values (queries/floor-state.rq), the chain's
// sessions and ranges given; run by run, alternating which goes first,
// after warm-up runs. The first run checks that the loaded state has the
// keys the leaf's own value holds.
func (b *bench) stateBench(ctx context.Context) (*stateResult, error) {
	ch, changes, err := b.stateChain(ctx, b.plan.stateTurns, b.plan.stateDepth)
	if err != nil {
		return nil, fmt.Errorf("load with state: store the chain: %w", err)
	}
	leaf := ch.leaf()
	r := &stateResult{History: ch.total, Depth: len(ch.sessions) - 1, Changes: changes}
	warm := max(b.plan.warmLoads, 1)
	var tr, fl []sample
	for run := 0; run < warm+b.plan.runs; run++ {
		ways := []struct {
			samples *[]sample
			f       func() (int, error)
		}{
			{&tr, func() (int, error) {
				got, err := b.st.Load(ctx, leaf.ID)
				if err != nil {
					return 0, err
				}
				if run == 0 {
					// The leaf's own value holds the keys its history
					// changed; Load adds those its sessions start with.
					for _, k := range append(slices.Sorted(maps.Keys(leaf.Values)), fmt.Sprintf("start%d", r.Depth)) {
						if _, ok := got.Values[k]; !ok {
							return 0, fmt.Errorf("the loaded state has keys %v, not %q", slices.Sorted(maps.Keys(got.Values)), k)
						}
					}
					r.Keys = len(got.Values)
				}
				return len(got.Turns), nil
			}},
			{&fl, func() (int, error) { return floorState(ctx, b.c, ch) }},
		}
		for j := range ways {
			w := ways[(j+run)%len(ways)]
			var n int
			one, err := b.measure(func() error {
				var err error
				n, err = w.f()
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("load with state: %w", err)
			}
			if n != ch.total {
				return nil, fmt.Errorf("load with state: got %d turns, want %d", n, ch.total)
			}
			if run >= warm {
				*w.samples = append(*w.samples, one)
			}
		}
	}
	r.Trails, r.Floor = medianOf(tr), medianOf(fl)
	b.logf("load with state: %d turns, depth %d, %d changes, %d keys: Load %v (%v trips), floor %v: %s",
		r.History, r.Depth, r.Changes, r.Keys, ms(r.Trails.D), r.Trails.Trips, ms(r.Floor.D), x(r.Ratio()))
	return r, nil
}

// floorState runs the floor of a load with state and returns how many
// turns it read (each once, however many changes it has).
func floorState(ctx context.Context, c selecter, ch *chain) (int, error) {
	ranges := ch.ranges()
	rr := make([][]rdf.Term, len(ranges))
	ss := make([][]rdf.Term, len(ranges))
	for k, r := range ranges {
		rr[k] = []rdf.Term{sessionIRI(r.id), kg.Int(r.lo), kg.Int(r.hi)}
		ss[k] = []rdf.Term{sessionIRI(r.id)}
	}
	holders := [][]rdf.Term{{iri(ontology.AgentIRI(principal))}, {iri(ontology.AppIRI(stateApp))}}
	q, err := kg.BindTables(qFloorState, nil, map[string]kg.Table{
		"ranges":   {Vars: []string{"s", "lo", "hi"}, Rows: rr},
		"sessions": {Vars: []string{"s"}, Rows: ss},
		"holders":  {Vars: []string{"h"}, Rows: holders},
	})
	if err != nil {
		return 0, err
	}
	res, err := c.Select(ctx, q)
	if err != nil {
		return 0, err
	}
	turns := map[int]session.Turn{}
	values := map[string]string{}
	for _, row := range res.Solutions {
		if _, ok := row["i"]; ok {
			i, err := row.Int("i")
			if err != nil {
				return 0, err
			}
			if _, seen := turns[i]; !seen {
				created, err := row.Time("created")
				if err != nil {
					return 0, err
				}
				turns[i] = session.Turn{Index: i, Role: row.String("role"), Content: row.String("content"), Branch: row.String("branch"), Created: created}
			}
		}
		if _, ok := row["key"]; ok {
			values[row.String("key")] = row.String("value")
		}
	}
	return len(turns), nil
}
