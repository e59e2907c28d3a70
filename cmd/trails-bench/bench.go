package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

//go:embed queries/*.rq
var queryFS embed.FS

func query(name string) string {
	b, err := queryFS.ReadFile("queries/" + name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var (
	qCountQuads  = query("count-quads.rq")
	qCountTurns  = query("count-turns.rq")
	qNaiveParent = query("naive-parent.rq")
	qNaiveTurns  = query("naive-turns.rq")
	qFloor       = query("floor.rq")
	qFloorState  = query("floor-state.rq")
)

// principal is the principal of every session the benchmark writes.
const principal = "bench-agent"

// bench is one benchmark run: its store (Fuseki or Oxigraph), a client
// that counts its round trips, a Store and a Dataset over it and the
// content generator.
type bench struct {
	plan plan
	log  io.Writer
	t0   time.Time

	store kg.Store // the store's profile, -store
	srv   *fusekitest.Server
	ct    *counter
	c     *kg.Client
	st    *session.Store
	ds    *admin.Dataset // the operators' view: Export and Check
	gen   *textGen

	adminBin string // trails-admin, scenario 11's witness server: -trails-admin, or built by the run
}

// storeClient returns a client of the benchmark's store, of its
// profile, counting through ct.
func (b *bench) storeClient(ct *counter) (*kg.Client, error) {
	return clientOf(b.srv.Endpoint, b.store, ct)
}

// newClient returns a client of the Fuseki dataset at endpoint counting
// through ct (the cluster scenario's direct store: Fuseki only).
func newClient(endpoint string, ct *counter) (*kg.Client, error) {
	return clientOf(endpoint, kg.Fuseki, ct)
}

// clientOf returns a client of the store of profile st at endpoint
// counting through ct. Requests may take long (bulk loads of hundreds of
// megabytes).
func clientOf(endpoint string, st kg.Store, ct *counter) (*kg.Client, error) {
	return kg.New(kg.Config{
		Endpoint:    endpoint,
		Store:       st,
		HTTPClient:  &http.Client{Transport: ct},
		Timeout:     30 * time.Minute,
		MaxAttempts: 1, // a benchmark reports failures, it does not hide them
	})
}

// newStore returns a Store over the benchmark's client with opts, a
// session's forks unlimited (the fork scenario forks one parent once per
// run).
func (b *bench) newStore(opts ...session.StoreOption) *session.Store {
	return session.NewStore(b.c, append([]session.StoreOption{session.WithMaxChildren(0)}, opts...)...)
}

// logf writes a progress line to the diagnostics writer.
func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "[%6.1fs] %s\n", time.Since(b.t0).Seconds(), fmt.Sprintf(format, args...))
}

// sample is one measured run.
type sample struct {
	d     time.Duration
	trips int64
	bytes int64
}

// measure runs f once and returns its wall time and the round trips and
// bytes the benchmark's client made meanwhile. Only for phases where
// nothing else uses the client.
func (b *bench) measure(f func() error) (sample, error) {
	r0, b0 := b.ct.snapshot()
	t0 := time.Now()
	err := f()
	d := time.Since(t0)
	r1, b1 := b.ct.snapshot()
	return sample{d: d, trips: r1 - r0, bytes: b1 - b0}, err
}

// stat is the median of several samples, and the fastest.
type stat struct {
	D     time.Duration `json:"ns"`
	Min   time.Duration `json:"min_ns"`
	Trips float64       `json:"round_trips"`
	Bytes float64       `json:"bytes_received"`
	Runs  int           `json:"runs"`
}

func medianOf(ss []sample) stat {
	ds := make([]float64, len(ss))
	ts := make([]float64, len(ss))
	bs := make([]float64, len(ss))
	for i, s := range ss {
		ds[i], ts[i], bs[i] = float64(s.d), float64(s.trips), float64(s.bytes)
	}
	return stat{D: time.Duration(median(ds)), Min: time.Duration(slices.Min(ds)), Trips: median(ts), Bytes: median(bs), Runs: len(ss)}
}

// median returns the median of xs (the mean of the middle two for an even
// count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// count runs a COUNT query with one variable ?n.
func (b *bench) count(ctx context.Context, q string) (int, error) {
	res, err := b.c.Select(ctx, q)
	if err != nil {
		return 0, err
	}
	if len(res.Solutions) != 1 {
		return 0, fmt.Errorf("count: %d rows", len(res.Solutions))
	}
	return res.Solutions[0].Int("n")
}

// newRoot returns an unsaved root session with n turns of fresh content.
func (b *bench) newRoot(n int) *session.Session {
	s := session.New(principal)
	b.appendTurns(s, n)
	return s
}

// contents returns n turns' contents, fresh.
func (b *bench) contents(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = b.gen.turn()
	}
	return out
}

// appendTurns appends n turns of fresh content to s.
func (b *bench) appendTurns(s *session.Session, n int) {
	for range n {
		s.Append(role(len(s.Turns)), b.gen.turn())
	}
}

// persistInSteps persists s with Persist, at most step of its own turns
// per request (large sessions would make one request of many megabytes).
func (b *bench) persistInSteps(ctx context.Context, st *session.Store, s *session.Session, step int) error {
	all := s.Turns
	defer func() { s.Turns = all }()
	for n := s.ForkedAt + step; n < len(all); n += step {
		s.Turns = all[:n]
		if err := st.Persist(ctx, s); err != nil {
			return err
		}
	}
	s.Turns = all
	return st.Persist(ctx, s)
}

// chain is a stored parent chain: sessions[0] is the root, the last one
// the leaf, whose effective history has total turns.
type chain struct {
	sessions []*session.Session
	total    int
}

func (c *chain) leaf() *session.Session { return c.sessions[len(c.sessions)-1] }

// ranges returns, for each session of the chain, the indices of the leaf's
// history it owns: [lo, hi).
func (c *chain) ranges() []turnRange {
	rs := make([]turnRange, len(c.sessions))
	for k, s := range c.sessions {
		hi := c.total
		if k+1 < len(c.sessions) {
			hi = c.sessions[k+1].ForkedAt
		}
		rs[k] = turnRange{id: s.ID, lo: s.ForkedAt, hi: hi}
	}
	return rs
}

type turnRange struct {
	id     string
	lo, hi int
}

// buildChain stores, through Persist, an effective history of total turns
// spread over a root and depth forks, each forked at the end of its parent
// and holding total/(depth+1) turns of its own (the root takes the rest).
func (b *bench) buildChain(ctx context.Context, total, depth int) (*chain, error) {
	per := total / (depth + 1)
	s := b.newRoot(total - per*depth)
	if err := b.persistInSteps(ctx, b.st, s, 2000); err != nil {
		return nil, err
	}
	ch := &chain{sessions: []*session.Session{s}, total: total}
	for range depth {
		f, err := s.Fork(len(s.Turns))
		if err != nil {
			return nil, err
		}
		b.appendTurns(f, per)
		if err := b.persistInSteps(ctx, b.st, f, 2000); err != nil {
			return nil, err
		}
		ch.sessions = append(ch.sessions, f)
		s = f
	}
	return ch, nil
}

// warmUp loads ch's leaf each way (Load, the naive walk, the floor) until
// Load's time has settled: at least warmLoads rounds, then until the
// median of the last five Loads is within 25% of the fastest so far, or
// warmMax has passed. The JVM compiles the store's code paths meanwhile;
// without it the first measurements pay for that (early on this machine a
// 1,000-turn Load takes 5 to 10 times longer than a minute later).
func (b *bench) warmUp(ctx context.Context, ch *chain, allWays bool) error {
	leaf, ranges := ch.leaf().ID, ch.ranges()
	t0 := time.Now()
	var times []float64
	settled := func() bool {
		if len(times) < max(b.plan.warmLoads, 5) {
			return false
		}
		return median(times[len(times)-5:]) <= 1.25*slices.Min(times)
	}
	for !settled() && (len(times) < b.plan.warmLoads || time.Since(t0) < b.plan.warmMax) {
		l0 := time.Now()
		if _, err := b.st.Load(ctx, leaf); err != nil {
			return err
		}
		times = append(times, float64(time.Since(l0)))
		if !allWays {
			continue
		}
		if _, err := naiveLoad(ctx, b.c, leaf); err != nil {
			return err
		}
		if _, err := floorLoad(ctx, b.c, ranges); err != nil {
			return err
		}
	}
	b.logf("warm-up: %d rounds in %v; Load's last five took %v (median), the fastest %v", len(times),
		time.Since(t0).Round(time.Millisecond), ms(time.Duration(median(times[max(0, len(times)-5):]))), ms(time.Duration(slices.Min(times))))
	return nil
}

// bulkRoot stores root session s, not stored yet, as N-Quads through the
// Graph Store Protocol, with the triples Persist would write (its head
// digest is a runningDigest, which nothing reads), in requests of about
// fillerBatchBytes.
func (b *bench) bulkRoot(ctx context.Context, s *session.Session) error {
	w := &quadWriter{}
	g := addRootSession(w, s.ID, s.Principal, time.Now().UTC().Truncate(time.Millisecond))
	d := newRunningDigest()
	head := ""
	for i, t := range s.Turns {
		head = d.add(t)
		addTurn(w, g, t, d.chain)
		if i == len(s.Turns)-1 {
			addHead(w, g, len(s.Turns), head)
		}
		if w.err != nil {
			return w.err
		}
		if w.buf.Len() >= b.plan.fillerBatchBytes || i == len(s.Turns)-1 {
			if err := b.c.LoadQuads(ctx, w.buf.Bytes()); err != nil {
				return fmt.Errorf("bulk load: %w", err)
			}
			w.reset()
		}
	}
	return nil
}

// fill bulk-loads n filler turns, in root sessions of p.fillerPerSession
// turns written in Persist's shape, as N-Quads through the Graph Store
// Protocol in batches (one transaction each). Filler turn k gets content
// unique to k; from is the first k, so that calls add new content.
func (b *bench) fill(ctx context.Context, pl *pool, from, n int) error {
	per := b.plan.fillerPerSession
	batches := make(chan *quadWriter, 1)
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(batches)
		created := time.Now().UTC().Truncate(time.Millisecond)
		w := &quadWriter{}
		for k := 0; k < n; {
			id := session.New(principal).ID
			g := addRootSession(w, id, principal, created)
			d := newRunningDigest()
			head := ""
			m := min(per, n-k)
			for i := range m {
				t := session.Turn{Index: i, Role: role(i), Content: pl.content(from + k + i), Branch: session.MainBranch, Created: created}
				head = d.add(t)
				addTurn(w, g, t, d.chain)
			}
			addHead(w, g, m, head)
			k += m
			if w.err != nil {
				errc <- w.err
				return
			}
			if w.buf.Len() >= b.plan.fillerBatchBytes || k == n {
				select {
				case batches <- w:
				case <-ctx.Done():
					return
				}
				w = &quadWriter{}
			}
		}
	}()
	quads, size := 0, 0
	for w := range batches {
		if err := b.c.LoadQuads(ctx, w.buf.Bytes()); err != nil {
			return fmt.Errorf("bulk load: %w", err)
		}
		quads, size = quads+w.n, size+w.buf.Len()
		b.logf("  filler: %d quads (%.0f MB of N-Quads) loaded", quads, float64(size)/1e6)
	}
	select {
	case err := <-errc:
		return err
	default:
	}
	return ctx.Err()
}
