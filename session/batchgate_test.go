package session_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The gate: a transport between a Store and Fuseki that counts update
// requests, holds one in flight so that the writes started meanwhile
// queue into one batch, and faults chosen requests.

// fault is what the gate does to one update request.
type fault int

const (
	pass       fault = iota
	answerLost       // forwarded to the store, its answer dropped: done, never heard
	neverSent        // dropped before it reaches the store
	late             // held, the client hears nothing (as after its Timeout); the store gets it when the test calls deliver
)

// gate is a transport that counts update requests, can hold the next one
// until released, and can fault chosen ones (by number, from 1).
type gate struct {
	next    http.RoundTripper
	updates atomic.Int64

	mu       sync.Mutex
	hold     chan struct{} // non-nil: the next update waits until it is closed
	held     chan struct{} // closed once that update is waiting
	faults   map[int64]fault
	bodies   map[int64]string
	params   map[int64]url.Values // of each update request's URL
	rules    []*rule
	lateReqs []*http.Request // late requests, in order, for deliver
}

// rule faults the requests whose text contains match: the k-th of them
// meets faults[k] (then pass), for updates, or queries with query set.
// before runs once, before the first matching request goes on; after
// runs once, after the first matching request that passed was answered.
type rule struct {
	match         string
	query         bool
	faults        []fault
	before, after func()
	seen          int
}

// on adds a rule for the updates whose text contains match.
func (g *gate) on(match string, faults ...fault) *rule {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := &rule{match: match, faults: faults}
	g.rules = append(g.rules, r)
	return r
}

// onQuery adds a rule for the queries whose text contains match; it runs
// before ahead of the first.
func (g *gate) onQuery(match string, before func()) *rule {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := &rule{match: match, query: true, before: before}
	g.rules = append(g.rules, r)
	return r
}

// apply finds the rule for a request with text: the fault it meets and
// the hooks to run.
func (g *gate) apply(text string, query bool) (f fault, before, after func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.rules {
		if r.query != query || !strings.Contains(text, r.match) {
			continue
		}
		if r.seen < len(r.faults) {
			f = r.faults[r.seen]
		}
		r.seen++
		before, r.before = r.before, nil
		if f == pass {
			after, r.after = r.after, nil
		}
		return f, before, after
	}
	return pass, nil, nil
}

// matched returns how many requests met r.
func (g *gate) matched(r *rule) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return r.seen
}

// deliver sends the late requests to the store, in order, each once the
// one before was answered, and returns the HTTP status of each.
func (g *gate) deliver() []int {
	g.mu.Lock()
	reqs := g.lateReqs
	g.lateReqs = nil
	g.mu.Unlock()
	codes := make([]int, len(reqs))
	for i, r := range reqs {
		resp, err := g.next.RoundTrip(r)
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes[i] = resp.StatusCode
	}
	return codes
}

// queryText returns the SPARQL text of a query request.
func queryText(r *http.Request) (string, error) {
	if r.Method == http.MethodGet {
		return r.URL.Query().Get("query"), nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return "", err
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	return string(body), nil
}

func newGate() *gate {
	return &gate{next: &http.Transport{MaxIdleConnsPerHost: 16}, faults: map[int64]fault{}, bodies: map[int64]string{}, params: map[int64]url.Values{}}
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	if !isWrite(r) {
		if strings.HasSuffix(r.URL.Path, "/query") || strings.HasSuffix(r.URL.Path, "/template-query") {
			q, err := queryText(r)
			if err != nil {
				return nil, err
			}
			if _, before, _ := g.apply(q, true); before != nil {
				before()
			}
		}
		return g.next.RoundTrip(r)
	}
	n := g.updates.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	g.mu.Lock()
	hold, held, f := g.hold, g.held, g.faults[n]
	g.hold, g.held = nil, nil
	g.bodies[n], g.params[n] = string(body), r.URL.Query()
	g.mu.Unlock()
	if hold != nil {
		close(held)
		<-hold
	}
	rf, before, after := g.apply(string(body), false)
	if f == pass {
		f = rf
	}
	if before != nil {
		before()
	}
	switch f {
	case late:
		lr := r.Clone(context.Background())
		lr.Body = io.NopCloser(strings.NewReader(string(body)))
		g.mu.Lock()
		g.lateReqs = append(g.lateReqs, lr)
		g.mu.Unlock()
		return nil, errors.New("attempt timed out (test: the store holds the request)")
	case neverSent:
		return nil, errors.New("connection reset (test: the request never reached the store)")
	case answerLost:
		resp, err := g.next.RoundTrip(r)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, errors.New("connection reset (test: the answer was lost)")
	}
	resp, err := g.next.RoundTrip(r)
	if after != nil && err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		after()
	}
	return resp, err
}

// holdNext makes the next update request wait; it returns a channel closed
// once that request waits, and the function that lets it go.
func (g *gate) holdNext() (held <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold, g.held = make(chan struct{}), make(chan struct{})
	hold := g.hold
	return g.held, func() { close(hold) }
}

// fault makes update request n (counted from the gate's first) meet f.
func (g *gate) fault(n int64, f fault) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults[n] = f
}

// receiptGraph returns the receipt graph update request n writes, as an
// IRI in angle brackets: in its text (a SPARQL Update) or its parameter
// receipt (a conditional patch); "" for none.
func (g *gate) receiptGraph(n int64) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.params[n].Get("receipt"); r != "" {
		return "<" + r + ">"
	}
	m := regexp.MustCompile(`GRAPH (<` + regexp.QuoteMeta(ontology.StagingBase) + `[^>]+>) \{ <[^>]+> <` + regexp.QuoteMeta(ontology.Applied) + `>`).FindStringSubmatch(g.bodies[n])
	if m == nil {
		return ""
	}
	return m[1]
}

// body returns the text of update request n.
func (g *gate) body(n int64) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bodies[n]
}

// gatedStore returns a Store over tb's dataset whose requests pass g, with
// cfg's MaxAttempts and Backoff.
func gatedStore(tb testing.TB, g *gate, cfg kg.Config, opts ...session.StoreOption) (*session.Store, *kg.Client) {
	tb.Helper()
	fusekitest.RequireDirect(tb, "it holds, fails or delivers late its store's HTTP requests (a gate)")
	cfg.Endpoint, cfg.HTTPClient = fusekitest.Endpoint(tb), &http.Client{Transport: g}
	c := fusekitest.Client(tb, cfg)
	return session.NewStore(c, opts...), c
}

// inOneBatch runs first and holds its update request in flight; starts
// writes, one after another, each once the one before has queued behind
// that request; then lets it go, so that the writes leave in one batch, in
// the order given. It returns first's error and the writes'.
func inOneBatch(tb testing.TB, st *session.Store, g *gate, first func() error, writes ...func() error) (error, []error) {
	tb.Helper()
	held, release := g.holdNext()
	firstErr := make(chan error, 1)
	go func() { firstErr <- first() }()
	select {
	case <-held:
	case err := <-firstErr:
		tb.Fatalf("the first write returned (%v) before its update was held", err)
	}
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = w() }()
		waitQueued(tb, st, i+1)
	}
	release()
	err := <-firstErr
	wg.Wait()
	return err, errs
}

// waitQueued waits until n writes of st wait for the request in flight.
func waitQueued(tb testing.TB, st *session.Store, n int) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for session.Queued(st) < n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d writes queued behind the request in flight, want %d: no group commit?", session.Queued(st), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// persistFn returns a write that persists s.
func persistFn(st *session.Store, s *session.Session) func() error {
	return func() error { return st.Persist(context.Background(), s) }
}

// isWrite reports whether r is a write request: a SPARQL Update, or a
// conditional patch (the path of plain appends on a Fuseki with Trails'
// module, batchpatch.go).
func isWrite(r *http.Request) bool {
	return r.Method == http.MethodPost && (strings.HasSuffix(r.URL.Path, "/update") || strings.HasSuffix(r.URL.Path, "/conditional-patch"))
}

// writesIn returns how many conditional writes the body of write request
// body carries: its ASKs and update records (a conditional patch), or its
// DELETE operations (a SPARQL Update).
func writesIn(body string) int {
	if strings.HasPrefix(body, "trails-conditional-patch/1\n") {
		return strings.Count(body, "\nASK {") + len(updateRecord.FindAllString(body, -1))
	}
	return strings.Count(body, "DELETE")
}

// updateRecord matches the line of an update record in a conditional
// patch's body.
var updateRecord = regexp.MustCompile(`(?m)^[0-9]+ U [0-9]+ \S+$`)
