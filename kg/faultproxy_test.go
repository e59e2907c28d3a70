package kg_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// The tests of this file put a TCP proxy of their own between a kg.Client
// and the test binary's real Fuseki (issue 6, "Network faults"). The proxy
// resets a fraction of connections, before the request reaches Fuseki or
// after Fuseki has begun to answer; stalls others past the client's timeout
// and then delivers them anyway; and can go dark (hold every connection
// without a word) or close (refuse connections), as a store that is gone.

// fault is what the proxy does to one connection.
type fault int

const (
	faultPass       fault = iota // forward both ways
	faultResetEarly              // reset at once: the request never reaches the store
	faultResetLate               // forward the request, reset the client once the store has begun to answer: done, never heard
	faultStall                   // hold the request until the client gives up, then deliver it anyway
	faultHeld                    // dark: hold the connection, say nothing
	nFaults
)

var faultNames = [nFaults]string{"passed", "reset early", "reset late", "stalled", "held dark"}

// faultProxy is a TCP proxy to one upstream address. Each new connection
// is passed or faulted at random (at most maxRun faulted in a row, so that
// a client with more attempts than that always gets through); SetDark and
// Close make the store look gone. Safe for concurrent use.
type faultProxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	rng    *rand.Rand
	rate   float64      // fraction of connections faulted
	weight [nFaults]int // relative weights of faultResetEarly, faultResetLate, faultStall
	maxRun int          // most faulted connections in a row
	run    int          // faulted connections in a row so far
	dark   bool         // hold every new connection; cut those open
	closed bool
	conns  map[net.Conn]bool
	counts [nFaults]atomic.Int64
	wg     sync.WaitGroup // the accept loop and every connection's handler
}

// newFaultProxy starts a proxy to upstream (host:port) on a free port of
// 127.0.0.1 and closes it when tb ends. It passes everything until
// configured.
func newFaultProxy(tb testing.TB, upstream string, seed uint64) *faultProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &faultProxy{ln: ln, upstream: upstream, rng: rand.New(rand.NewPCG(seed, 0x7a11)), conns: map[net.Conn]bool{}}
	p.weight = [nFaults]int{faultResetEarly: 1, faultResetLate: 1, faultStall: 1}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr returns the proxy's host:port.
func (p *faultProxy) Addr() string { return p.ln.Addr().String() }

// SetFaults makes the proxy fault a fraction rate of new connections, at
// most maxRun in a row, choosing faultResetEarly, faultResetLate and
// faultStall by the weights given.
func (p *faultProxy) SetFaults(rate float64, maxRun, early, late, stalled int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate, p.maxRun = rate, maxRun
	p.weight = [nFaults]int{faultResetEarly: early, faultResetLate: late, faultStall: stalled}
}

// SetDark makes the proxy hold every new connection without a word, and
// cuts the connections open now, as a store that vanished would.
func (p *faultProxy) SetDark(dark bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dark = dark
	if dark {
		for c := range p.conns {
			reset(c)
		}
	}
}

// Close stops listening (new connections are refused), cuts every
// connection and waits until every handler has returned.
func (p *faultProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		reset(c)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Drain stops listening and waits until every connection has run its
// course: a late delivery is made and answered, a passed request answered.
// Call it once every client call has returned.
func (p *faultProxy) Drain() {
	p.ln.Close()
	p.wg.Wait()
}

// Counts returns how many connections met each fault so far.
func (p *faultProxy) Counts() [nFaults]int64 {
	var out [nFaults]int64
	for i := range out {
		out[i] = p.counts[i].Load()
	}
	return out
}

// Summary returns the counts as one line.
func (p *faultProxy) Summary() string {
	c := p.Counts()
	var parts []string
	for i, n := range c {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, faultNames[i]))
		}
	}
	return strings.Join(parts, ", ")
}

// faulted returns the sum of the counts of every fault but faultPass.
func (p *faultProxy) faulted() int64 {
	var n int64
	for i, c := range p.Counts() {
		if fault(i) != faultPass {
			n += c
		}
	}
	return n
}

func (p *faultProxy) choose() fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dark {
		return faultHeld
	}
	if p.run >= p.maxRun || p.rng.Float64() >= p.rate {
		p.run = 0
		return faultPass
	}
	p.run++
	total := 0
	for _, w := range p.weight {
		total += w
	}
	if total == 0 {
		return faultPass
	}
	k := p.rng.IntN(total)
	for f, w := range p.weight {
		if k < w {
			return fault(f)
		}
		k -= w
	}
	return faultPass
}

// track registers c, so that SetDark and Close can cut it, or forgets it.
// It reports false, having reset c, when the proxy is closed.
func (p *faultProxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !on {
		delete(p.conns, c)
		return true
	}
	if p.closed {
		reset(c)
		return false
	}
	p.conns[c] = true
	return true
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c, true) {
			return
		}
		f := p.choose()
		p.counts[f].Add(1)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(c, false)
			p.handle(c, f)
		}()
	}
}

// reset closes c with an RST instead of a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (p *faultProxy) handle(c net.Conn, f fault) {
	switch f {
	case faultResetEarly:
		reset(c)
		return
	case faultHeld:
		io.Copy(io.Discard, c) // until the client gives up or Close cuts it
		c.Close()
		return
	}
	var early []byte
	if f == faultStall {
		// Take the request and keep it until the client gives up (it
		// closes the connection when its attempt times out), then send it
		// on all the same: a request delivered late.
		var buf bytes.Buffer
		io.Copy(&buf, c)
		c.Close()
		early = buf.Bytes()
	}
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		reset(c)
		return
	}
	if !p.track(up, true) {
		c.Close()
		return
	}
	defer p.track(up, false)
	defer up.Close()
	if early != nil {
		up.Write(early)
		up.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, up) // let the store finish its answer
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(up, c)
		up.(*net.TCPConn).CloseWrite()
	}()
	if f == faultResetLate {
		// Wait until the store begins to answer (it has done the work),
		// then cut the client off before it hears a byte.
		var b [1]byte
		io.ReadFull(up, b[:])
		reset(c)
		up.Close()
		<-done
		return
	}
	io.Copy(c, up)
	c.Close()
	up.Close()
	<-done
}

// proxied returns the dataset URL of the test binary's Fuseki as seen
// through a new fault proxy.
func proxied(tb testing.TB, seed uint64) (*faultProxy, string) {
	tb.Helper()
	u, err := url.Parse(fusekitest.Endpoint(tb))
	if err != nil {
		tb.Fatal(err)
	}
	p := newFaultProxy(tb, u.Host, seed)
	return p, "http://" + p.Addr() + u.Path
}

// faultSeed returns a seed for a test's faults and logs it.
func faultSeed(tb testing.TB) uint64 {
	tb.Helper()
	seed := uint64(time.Now().UnixNano())
	tb.Logf("fault seed %d", seed)
	return seed
}

// attempts counts the requests a client sends, and those that failed to
// connect (which the client may repeat, since nothing was sent).
type attempts struct {
	n, dialFailed atomic.Int64
	next          http.RoundTripper
}

func (a *attempts) RoundTrip(r *http.Request) (*http.Response, error) {
	a.n.Add(1)
	resp, err := a.next.RoundTrip(r)
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		a.dialFailed.Add(1)
	}
	return resp, err
}

// oneShot returns a client over ep that opens a connection per request, so
// that every attempt meets the proxy's dice, and the counter of its
// attempts.
func oneShot(tb testing.TB, ep string, cfg kg.Config) (*kg.Client, *attempts) {
	tb.Helper()
	ct := &attempts{next: &http.Transport{DisableKeepAlives: true}}
	cfg.Endpoint = ep
	cfg.HTTPClient = &http.Client{Transport: ct}
	return fusekitest.Client(tb, cfg), ct
}

// testGraph returns a graph IRI of the test's own.
func testGraph(name string) string {
	return fmt.Sprintf("urn:trails-test:%s:%d", name, time.Now().UnixNano())
}

// TestFaultsQueriesRetry sends queries, Graph Store reads and idempotent
// updates through a proxy that faults 40% of connections (at most 2 in a
// row, fewer than the client's 5 attempts): every call succeeds, with the
// right answer. (Ping makes one attempt by design, so it is not here.)
func TestFaultsQueriesRetry(t *testing.T) {
	const rounds = 20
	ctx := context.Background()
	direct := fusekitest.New(t)
	p, ep := proxied(t, faultSeed(t))
	p.SetFaults(0.4, 2, 3, 3, 1)
	c, ct := oneShot(t, ep, kg.Config{Timeout: time.Second, MaxAttempts: 5, Backoff: 5 * time.Millisecond})

	g := kg.MustIRI(testGraph("retry"))
	var d kg.Data
	for i := range 20 {
		d.Add(g, kg.MustIRI(fmt.Sprintf("urn:trails-test:s%d", i)), kg.MustIRI("urn:trails-test:p"), kg.Int(i))
	}
	ins, err := d.InsertData()
	if err != nil {
		t.Fatal(err)
	}
	if err := direct.Update(ctx, ins); err != nil {
		t.Fatal(err)
	}
	count, _ := kg.Bind(`SELECT (COUNT(*) AS ?n) WHERE { GRAPH $g { ?s ?p ?o } }`, kg.Params{"g": g})
	ask, _ := kg.Bind(`ASK { GRAPH $g { <urn:trails-test:s7> ?p 7 } }`, kg.Params{"g": g})
	rows, _ := kg.Bind(`SELECT ?s ?o WHERE { GRAPH $g { ?s ?p ?o } } ORDER BY ?o`, kg.Params{"g": g})
	calls := 0
	for r := range rounds {
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"query", func() error {
				res, err := c.Select(ctx, count)
				if err != nil {
					return err
				}
				if n, _ := res.Solutions[0].Int("n"); n != 20+r {
					return fmt.Errorf("got %d triples, want %d", n, 20+r)
				}
				return nil
			}},
			{"select", func() error {
				res, err := c.Select(ctx, rows)
				if err != nil {
					return err
				}
				if len(res.Solutions) != 20+r {
					return fmt.Errorf("got %d rows, want %d", len(res.Solutions), 20+r)
				}
				return nil
			}},
			{"ask", func() error {
				ok, err := c.Ask(ctx, ask)
				if err == nil && !ok {
					err = errors.New("got false, want true")
				}
				return err
			}},
			{"get graph", func() error {
				nt, err := c.GetGraph(ctx, g)
				if err == nil && bytes.Count(nt, []byte("\n")) != 20+r {
					err = fmt.Errorf("got %d lines, want %d", bytes.Count(nt, []byte("\n")), 20+r)
				}
				return err
			}},
			{"idempotent update", func() error {
				var d kg.Data
				d.Add(g, kg.MustIRI(fmt.Sprintf("urn:trails-test:r%d", r)), kg.MustIRI("urn:trails-test:p"), kg.Int(100+r))
				u, err := d.InsertData()
				if err != nil {
					return err
				}
				return c.Update(ctx, u, kg.Idempotent())
			}},
		} {
			calls++
			if err := tc.call(); err != nil {
				t.Fatalf("round %d: %s through the proxy: %v (proxy: %s)", r, tc.name, err, p.Summary())
			}
		}
	}
	t.Logf("%d calls all succeeded in %d attempts; proxy: %s", calls, ct.n.Load(), p.Summary())
	if p.faulted() == 0 {
		t.Fatal("the proxy injected no fault")
	}
}

// TestFaultsPersistRetries persists a growing session and forks of it
// through a faulty proxy: every Persist succeeds (the update is safe to
// repeat, and the confirming ASK tells a repeat from a loss), and the
// store holds exactly what was persisted, each fork once.
func TestFaultsPersistRetries(t *testing.T) {
	const batches = 15
	ctx := context.Background()
	p, ep := proxied(t, faultSeed(t))
	p.SetFaults(0.35, 2, 2, 3, 1)
	c, ct := oneShot(t, ep, kg.Config{Timeout: 2 * time.Second, MaxAttempts: 4, Backoff: 5 * time.Millisecond})
	st := session.NewStore(c)
	direct := session.NewStore(fusekitest.New(t))

	s := session.New("faulty-net")
	var forks []*session.Session
	for b := range batches {
		for k := range 5 {
			s.Append("user", fmt.Sprintf("batch %d turn %d \"quoted\"\n", b, k))
		}
		if err := st.Persist(ctx, s); err != nil {
			t.Fatalf("batch %d: persist through the proxy: %v (proxy: %s)", b, err, p.Summary())
		}
		if b%3 == 2 {
			f, err := s.Fork(len(s.Turns) - 2)
			if err != nil {
				t.Fatal(err)
			}
			f.Append("assistant", fmt.Sprintf("fork %d", b))
			if err := st.Persist(ctx, f); err != nil {
				t.Fatalf("fork after batch %d: persist through the proxy: %v (proxy: %s)", b, err, p.Summary())
			}
			forks = append(forks, f)
		}
	}
	got, err := st.Load(ctx, s.ID)
	if err != nil {
		t.Fatalf("load through the proxy: %v", err)
	}
	p.Drain() // every late delivery done: what is stored is final
	for _, want := range append([]*session.Session{s}, forks...) {
		g, err := direct.Load(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameTurns(t, g, want)
	}
	sameTurns(t, got, s)
	kids, err := direct.Branches(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != len(forks) {
		t.Fatalf("got %d forks, want %d", len(kids), len(forks))
	}
	t.Logf("%d persists of %d turns and %d forks succeeded in %d attempts; proxy: %s", batches, len(s.Turns), len(forks), ct.n.Load(), p.Summary())
}

// sameTurns fails tb unless got holds the turns of want.
func sameTurns(tb testing.TB, got, want *session.Session) {
	tb.Helper()
	if len(got.Turns) != len(want.Turns) || got.ParentID != want.ParentID || got.ForkedAt != want.ForkedAt {
		tb.Fatalf("session %s: got %d turns (parent %q at %d), want %d (parent %q at %d)", want.ID,
			len(got.Turns), got.ParentID, got.ForkedAt, len(want.Turns), want.ParentID, want.ForkedAt)
	}
	for i := range want.Turns {
		g, w := got.Turns[i], want.Turns[i]
		if g.Index != w.Index || g.Role != w.Role || g.Content != w.Content || g.Branch != w.Branch || !g.Created.Equal(w.Created) {
			tb.Fatalf("session %s turn %d: got %+v, want %+v", want.ID, i, g, w)
		}
	}
}

// TestFaultsNonIdempotentAtMostOnce sends updates that are not safe to
// repeat (each application inserts a new node, so a repeat would show)
// through a proxy that faults half the connections, resets included after
// the store did the work and late deliveries: each update is applied at
// most once, exactly once when the client was told it succeeded, and is
// sent once.
func TestFaultsNonIdempotentAtMostOnce(t *testing.T) {
	const n = 40
	ctx := context.Background()
	direct := fusekitest.New(t)
	p, ep := proxied(t, faultSeed(t))
	p.SetFaults(0.5, 1000, 1, 2, 1)
	c, ct := oneShot(t, ep, kg.Config{Timeout: time.Second, MaxAttempts: 4, Backoff: 5 * time.Millisecond})

	g := kg.MustIRI(testGraph("once"))
	errs := make([]error, n)
	for i := range n {
		u, err := kg.Bind(`INSERT { GRAPH $g { ?x <urn:trails-test:token> $tok } }
WHERE { BIND(IRI(CONCAT("urn:trails-test:application:", STRUUID())) AS ?x) }`, kg.Params{"g": g, "tok": kg.Int(i)})
		if err != nil {
			t.Fatal(err)
		}
		errs[i] = c.Update(ctx, u)
		if errs[i] != nil && !errors.Is(errs[i], kg.ErrUnavailable) {
			t.Fatalf("update %d: got %v, want nil or kg.ErrUnavailable", i, errs[i])
		}
	}
	p.Drain() // every late delivery done: what is stored is final
	q, _ := kg.Bind(`SELECT ?tok (COUNT(?x) AS ?n) WHERE { GRAPH $g { ?x <urn:trails-test:token> ?tok } } GROUP BY ?tok`, kg.Params{"g": g})
	res, err := direct.Select(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	applied := make(map[int]int)
	for _, row := range res.Solutions {
		tok, _ := row.Int("tok")
		applied[tok], _ = row.Int("n")
	}
	var ok, failedApplied, failedNot int
	for i, err := range errs {
		switch {
		case applied[i] > 1:
			t.Errorf("update %d applied %d times", i, applied[i])
		case err == nil && applied[i] != 1:
			t.Errorf("update %d succeeded but was applied %d times", i, applied[i])
		case err == nil:
			ok++
		case applied[i] == 1:
			failedApplied++
		default:
			failedNot++
		}
	}
	if got := ct.n.Load() - ct.dialFailed.Load(); got != n {
		t.Errorf("got %d attempts that connected for %d updates, want one each: a non-idempotent update that reached the store is never repeated", got, n)
	}
	t.Logf("%d non-idempotent updates: %d succeeded, %d failed but were applied (the store did it, the client never heard), %d failed and were not applied; none applied twice; %d attempts, %d of them repeats after a failed connect; proxy: %s",
		n, ok, failedApplied, failedNot, ct.n.Load(), ct.dialFailed.Load(), p.Summary())
}

// callsOf returns every call the tests make of a client and a Store
// through a store that is not there: each may make one request or
// several, each must fail.
func callsOf(c *kg.Client, st *session.Store, g string) []struct {
	name string
	call func(context.Context) error
} {
	persistMe := session.New("gone")
	persistMe.Append("user", "hello?")
	return []struct {
		name string
		call func(context.Context) error
	}{
		{"Ping", func(ctx context.Context) error { return c.Ping(ctx) }},
		{"Rows", func(ctx context.Context) error { _, err := rowsOf(c)(ctx, "SELECT * { ?s ?p ?o } LIMIT 1"); return err }},
		{"Select", func(ctx context.Context) error { _, err := c.Select(ctx, "SELECT * { ?s ?p ?o } LIMIT 1"); return err }},
		{"Ask", func(ctx context.Context) error { _, err := c.Ask(ctx, "ASK {}"); return err }},
		{"Update", func(ctx context.Context) error {
			return c.Update(ctx, "INSERT DATA { GRAPH <urn:trails-test:gone> { <urn:a> <urn:b> <urn:c> } }")
		}},
		{"Update idempotent", func(ctx context.Context) error {
			return c.Update(ctx, "INSERT DATA { GRAPH <urn:trails-test:gone> { <urn:a> <urn:b> <urn:c> } }", kg.Idempotent())
		}},
		{"GetGraph", func(ctx context.Context) error { _, err := c.GetGraph(ctx, kg.MustIRI(g)); return err }},
		{"Store.Load", func(ctx context.Context) error { _, err := st.Load(ctx, persistMe.ID); return err }},
		{"Store.Persist", func(ctx context.Context) error { return st.Persist(ctx, persistMe) }},
	}
}

// steadyGoroutines returns the number of goroutines once it has stayed the
// same for 200 ms (or after 2 s).
func steadyGoroutines() int {
	n, same := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(2 * time.Second); same < 10 && time.Now().Before(deadline); same++ {
		time.Sleep(20 * time.Millisecond)
		if m := runtime.NumGoroutine(); m != n {
			n, same = m, 0
		}
	}
	return n
}

// settledGoroutines waits up to 5 s for the number of goroutines to come
// down to at most want, and returns the last count.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

// TestFaultsStoreGone makes the store vanish behind the proxy, first dark
// (connections accepted and never answered, so each attempt runs out of
// time) then closed (connections refused): every call of the client and
// the Store returns kg.ErrUnavailable within the configured bound, the
// attempts' timeouts plus the backoffs, and no goroutine is left behind.
func TestFaultsStoreGone(t *testing.T) {
	const (
		timeout  = 300 * time.Millisecond
		attempts = 3
		backoff  = 20 * time.Millisecond
		slack    = 2 * time.Second
	)
	// Each backoff is at most 1.5 times its nominal value.
	bound := timeout*attempts + 3*(backoff*(1<<(attempts-1)-1))/2 + slack
	for _, mode := range []string{"dark", "closed"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			g := testGraph("gone")
			before := steadyGoroutines()
			p, ep := proxied(t, faultSeed(t))
			// The package's own transport (nil HTTPClient), keep-alive on:
			// what a program gets.
			c := fusekitest.Client(t, kg.Config{Endpoint: ep, Timeout: timeout, MaxAttempts: attempts, Backoff: backoff})
			st := session.NewStore(c)
			if err := c.Ping(ctx); err != nil { // a connection to keep alive
				t.Fatal(err)
			}
			if mode == "dark" {
				p.SetDark(true)
			} else {
				p.Close()
			}
			var slowest time.Duration
			var line []string
			for _, tc := range callsOf(c, st, g) {
				t0 := time.Now()
				err := tc.call(ctx)
				took := time.Since(t0)
				slowest = max(slowest, took)
				line = append(line, fmt.Sprintf("%s %v", tc.name, took.Round(time.Millisecond)))
				if !errors.Is(err, kg.ErrUnavailable) {
					t.Errorf("%s: got %v, want kg.ErrUnavailable", tc.name, err)
				}
				if took > bound {
					t.Errorf("%s: returned after %v, more than %v (timeout %v × %d attempts, the backoffs and %v slack)", tc.name, took, bound, timeout, attempts, slack)
				}
			}
			t.Logf("store %s: every call failed with kg.ErrUnavailable (bound %v): %s", mode, bound.Round(time.Millisecond), strings.Join(line, ", "))
			p.Close()
			after := settledGoroutines(before)
			t.Logf("goroutines: %d before, %d after; proxy: %s", before, after, p.Summary())
			if after > before {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines left behind:\n%s", after-before, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// TestFaultsContextDeadline holds every connection (a dark store) with a
// client whose own timeout is long: each call returns when the caller's
// context expires, with context.DeadlineExceeded and not
// kg.ErrUnavailable. Then, with every connection reset and a long
// backoff, a call returns when the context expires during the backoff.
func TestFaultsContextDeadline(t *testing.T) {
	const deadline = 250 * time.Millisecond
	const slack = time.Second
	g := testGraph("deadline")
	p, ep := proxied(t, faultSeed(t))
	c := fusekitest.Client(t, kg.Config{Endpoint: ep, Timeout: time.Minute, MaxAttempts: 4})
	st := session.NewStore(c)
	p.SetDark(true)
	var line []string
	for _, tc := range callsOf(c, st, g) {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		t0 := time.Now()
		err := tc.call(ctx)
		took := time.Since(t0)
		cancel()
		line = append(line, fmt.Sprintf("%s %v", tc.name, took.Round(time.Millisecond)))
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kg.ErrUnavailable) {
			t.Errorf("%s: got %v, want context.DeadlineExceeded only", tc.name, err)
		}
		if took > deadline+slack {
			t.Errorf("%s: returned after %v, want about %v", tc.name, took, deadline)
		}
	}
	t.Logf("dark store, %v deadline, 1 min client timeout: %s", deadline, strings.Join(line, ", "))

	p.SetDark(false)
	p.SetFaults(1, 1<<30, 1, 0, 0) // reset every connection at once
	c2 := fusekitest.Client(t, kg.Config{Endpoint: ep, Timeout: time.Minute, MaxAttempts: 10, Backoff: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	t0 := time.Now()
	_, err := c2.Select(ctx, "SELECT * {} LIMIT 1")
	took := time.Since(t0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("query during a 10 s backoff: got %v, want context.DeadlineExceeded", err)
	}
	if took > deadline+slack {
		t.Errorf("query during a 10 s backoff: returned after %v, want about %v", took, deadline)
	}
	t.Logf("resets with a 10 s backoff, %v deadline: returned after %v with %v; proxy: %s", deadline, took.Round(time.Millisecond), err, p.Summary())
}
