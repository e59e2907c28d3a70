package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// offsetMoveHolder is the transport of an applier's store that holds the
// first update moving the offset past a refused record (an update of the
// replica graph alone, no record's text in it) until release is closed,
// then sends it whatever became of the applier: a request already on its
// way to the store when its applier died. held is closed once it holds
// the request, sent once the store has answered it.
type offsetMoveHolder struct {
	next    http.RoundTripper
	once    sync.Once
	held    chan struct{}
	release chan struct{}
	sent    chan struct{}
}

func newOffsetMoveHolder() *offsetMoveHolder {
	return &offsetMoveHolder{next: http.DefaultTransport, held: make(chan struct{}), release: make(chan struct{}), sent: make(chan struct{})}
}

func (h *offsetMoveHolder) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.URL.Path, "/update") || r.GetBody == nil {
		return h.next.RoundTrip(r)
	}
	body, err := r.GetBody()
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	u := string(b)
	if !strings.Contains(u, ontology.AppliedOffset) || strings.Contains(u, ontology.SessionBase) {
		return h.next.RoundTrip(r) // a record's application, not the offset's move alone
	}
	mine := false
	h.once.Do(func() { mine = true })
	if !mine {
		return h.next.RoundTrip(r)
	}
	close(h.held)
	<-h.release
	defer close(h.sent)
	return h.next.RoundTrip(r.Clone(context.WithoutCancel(r.Context()))) // on the wire: the applier's end does not stop it
}

// firstUpdateGate is the transport of an applier's store whose first
// update waits until open is closed; ready is closed when it starts to
// wait (the applier has read its dataset's offset by then).
type firstUpdateGate struct {
	next  http.RoundTripper
	once  sync.Once
	ready chan struct{}
	open  chan struct{}
	first string // the first update's text, once ready is closed
}

func (g *firstUpdateGate) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/update") {
		g.once.Do(func() {
			if r.GetBody != nil {
				if b, err := r.GetBody(); err == nil {
					u, _ := io.ReadAll(b)
					g.first = string(u)
				}
			}
			close(g.ready)
			<-g.open
		})
	}
	return g.next.RoundTrip(r)
}

// testRefusalInFlight (issue 36, part 2): a stale append's record is
// refused by the replica; the request that moves the replica's offset past
// it is still on its way to the store when its applier ends; a new
// applier on the same dataset reads the offset before that request
// commits, and then applies the record itself: its request fails the
// offset's guard, and it finds the offset past the record. The outcome it
// serves is the refusal (the record's refusal marker, written in the old
// request's transaction), not "applied": Persist of the stale append
// fails and its turn is not stored. One replica, so that the writer hears
// from no other. An applier started after that serves the same refusal,
// from the marker, for a record passed before it started.
func testRefusalInFlight(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	brokers, topic := k.Brokers(), "t"+strings.ReplaceAll(t.Name(), "/", "-")
	k.CreateTopic(t, topic, 1)
	endpoint := srv.Datasets[5]
	direct := fusekitest.Client(t, kg.Config{Endpoint: endpoint, Store: kg.Fuseki})
	if err := direct.Update(ctx, "DROP ALL", kg.Idempotent()); err != nil {
		t.Fatal(err)
	}
	holder := newOffsetMoveHolder()
	t.Cleanup(func() {
		select {
		case <-holder.release:
		default:
			close(holder.release)
		}
	})
	rs := &replicaServer{}
	hs := httptest.NewServer(rs)
	t.Cleanup(hs.Close)
	old := rs.start(t, brokers, topic, fusekitest.Client(t, kg.Config{Endpoint: endpoint, Store: kg.Fuseki, HTTPClient: &http.Client{Transport: holder}}))
	cc, err := cluster.Open(cluster.Config{Brokers: brokers, Topic: topic, Replicas: []cluster.Replica{{Dataset: endpoint, Applier: hs.URL}}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Close)

	c := &updateErrs{Client: cc}
	st := session.NewStore(c, session.WithGroupCommit(false))
	fresh := session.NewStore(c.Client, session.WithGroupCommit(false))
	s := session.New("erin")
	s.Append("user", "book a table for two")
	if err := st.Persist(ctx, s); err != nil {
		t.Fatal(err)
	}
	stale, err := st.Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Another writer's append lands after the stale one checked what is
	// stored and before its record is in the log: the store refuses that
	// record, by the condition it carries.
	c.before.key, c.before.f = "a stale answer, refused", func() {
		s.Append("assistant", "at eight, by the window")
		if err := fresh.Persist(ctx, s); err != nil {
			t.Errorf("the other writer's append: %v", err)
		}
	}
	stale.Append("assistant", "a stale answer, refused")
	persisted := make(chan error, 1)
	go func() { persisted <- st.Persist(ctx, stale) }()

	select {
	case <-holder.held:
	case err := <-persisted:
		t.Fatalf("the stale append returned %v before its record's offset move was held", err)
	case <-time.After(time.Minute):
		t.Fatal("the applier sent no offset move past the stale append's record within a minute")
	}
	// The old applier dies with its offset move in flight: it answers no
	// writer any more. A new one serves on the same address.
	old.kill()
	gate := &firstUpdateGate{next: http.DefaultTransport, ready: make(chan struct{}), open: make(chan struct{})}
	renewed := rs.start(t, brokers, topic, fusekitest.Client(t, kg.Config{Endpoint: endpoint, Store: kg.Fuseki, HTTPClient: &http.Client{Transport: gate}}))
	select {
	case <-gate.ready: // it has read the offset, which is before the refused record
	case <-time.After(time.Minute):
		t.Fatal("the new applier sent nothing within a minute")
	}
	close(holder.release)
	select {
	case <-holder.sent: // the old offset move committed
	case <-time.After(time.Minute):
		t.Fatal("the old applier's offset move got no answer within a minute")
	}
	close(gate.open)
	old.wait(t)

	err = <-persisted
	if uerr := c.last(); uerr == nil {
		t.Errorf("cluster.Client.Update of the stale append's record: got nil, want the store's refusal")
	} else {
		t.Logf("cluster.Client.Update of the stale append's record: %v", uerr)
	}
	if err == nil {
		t.Errorf("Persist of the stale append: got nil, want an error (its record was refused)")
	} else if !errors.Is(err, session.ErrConflict) {
		t.Logf("Persist of the stale append: %v (an error, as it must; ErrConflict expected)", err)
	}
	off := c.Position()
	if o := outcomeOf(t, hs.URL, off); o.State != cluster.OutcomeRefused {
		t.Errorf("outcome of the refused record (offset %d) from the new applier: got %+v, want %q", off, o, cluster.OutcomeRefused)
	}
	got, err := session.NewStore(direct).Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range got.Turns {
		if tn.Content == "a stale answer, refused" {
			t.Errorf("the refused turn is stored: %+v", turnContents(got.Turns))
		}
	}
	if len(got.Turns) != 2 {
		t.Errorf("got %d turns, want 2: %q", len(got.Turns), turnContents(got.Turns))
	}
	// An applier that starts after the record was passed serves its
	// outcome from the refusal marker.
	renewed.kill()
	renewed.wait(t)
	rs.start(t, brokers, topic, direct)
	if o := outcomeOf(t, hs.URL, off); o.State != cluster.OutcomeRefused {
		t.Errorf("outcome of the refused record (offset %d) from an applier started after it: got %+v, want %q", off, o, cluster.OutcomeRefused)
	}
	if o := outcomeOf(t, hs.URL, off-1); o.State != cluster.OutcomeUnknown {
		t.Errorf("outcome of an applied record (offset %d) from an applier started after it: got %+v, want %q", off-1, o, cluster.OutcomeUnknown)
	}
}

// replicaServer serves the outcomes of the applier it started last; one
// that it killed answers nothing more (the requests it is answering end,
// pending).
type replicaServer struct {
	cur atomic.Pointer[killable]
}

// killable is an Applier run in this process; kill ends it as a crash
// would for the writers: it answers no more, whatever its store requests
// in flight do.
type killable struct {
	a    *cluster.Applier
	dead context.Context
	kill context.CancelFunc
	done chan error
}

func (s *replicaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := s.cur.Load()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(k.dead, cancel)()
	if k.dead.Err() != nil {
		http.Error(w, "dead", http.StatusServiceUnavailable)
		return
	}
	k.a.ServeHTTP(w, r.WithContext(ctx))
}

// start runs an Applier of store on topic and serves it.
func (s *replicaServer) start(t *testing.T, brokers []string, topic string, store *kg.Client) *killable {
	t.Helper()
	a, err := cluster.NewApplier(cluster.ApplierConfig{Brokers: brokers, Topic: topic, Store: store, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &killable{a: a, dead: ctx, kill: cancel, done: make(chan error, 1)}
	go func() { k.done <- a.Run(ctx) }()
	t.Cleanup(cancel)
	s.cur.Store(k)
	return k
}

// wait waits until the killed Applier's Run has returned.
func (k *killable) wait(t *testing.T) {
	t.Helper()
	if err := <-k.done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("applier: %v", err)
	}
}

// outcomeOf asks the applier at url for the outcome of record off,
// waiting up to 20 s for it to apply it.
func outcomeOf(t *testing.T, url string, off int64) cluster.Outcome {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/outcome?offset=%d&wait=20s", url, off))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var o cluster.Outcome
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		t.Fatal(err)
	}
	return o
}

// updateErrs is a session.Querier of a Client that keeps what each
// Update answered. The first Update whose text holds before's key runs
// before's function first.
type updateErrs struct {
	*cluster.Client
	mu     sync.Mutex
	errs   []error
	before struct {
		key string
		f   func()
	}
}

func (u *updateErrs) Update(ctx context.Context, update string, opts ...kg.UpdateOption) error {
	u.mu.Lock()
	f := u.before.f
	if f != nil && strings.Contains(update, u.before.key) {
		u.before.f = nil
	} else {
		f = nil
	}
	u.mu.Unlock()
	if f != nil {
		f()
	}
	err := u.Client.Update(ctx, update, opts...)
	u.mu.Lock()
	u.errs = append(u.errs, err)
	u.mu.Unlock()
	return err
}

// last returns what the last Update answered.
func (u *updateErrs) last() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.errs[len(u.errs)-1]
}

// holdingProxy stands between trails-replica processes and their Fuseki:
// it holds the first update that moves the offset past a refused record
// (held, then release) and sends it on to Fuseki whatever became of the
// process that sent it, as a request already in Fuseki's queue (sent,
// once Fuseki answered it); and once gate is armed, it holds the next
// update until gate opens.
type holdingProxy struct {
	target  string // Fuseki's base URL, http://host:port
	once    sync.Once
	held    chan struct{}
	release chan struct{}
	sent    chan struct{}
	gate    atomic.Pointer[firstUpdateGate]
	err     error // what the held request got, once sent is closed
}

func (p *holdingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	ctx := r.Context()
	if strings.HasSuffix(r.URL.Path, "/update") {
		u := string(body)
		mine := false
		if strings.Contains(u, ontology.AppliedOffset) && !strings.Contains(u, ontology.SessionBase) {
			p.once.Do(func() { mine = true })
		}
		if mine {
			close(p.held)
			<-p.release
			defer close(p.sent)
			ctx = context.WithoutCancel(ctx) // in Fuseki's queue: its sender's death does not take it back
		} else if g := p.gate.Swap(nil); g != nil {
			close(g.ready)
			<-g.open
		}
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, p.target+r.URL.RequestURI(), strings.NewReader(string(body)))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && ctx != r.Context() && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(resp.Body)
		err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	if ctx != r.Context() {
		p.err = err
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// testRefusalAtKill is testRefusalInFlight with trails-replica processes:
// replica 0's applier reaches its Fuseki through a proxy that holds its
// move of the offset past the refused record of a stale append; the
// process is killed with SIGKILL; a new one starts on the same address
// and reads the offset; then the held move reaches Fuseki and commits;
// then the new process applies the record itself. The writer (one
// replica: it hears from no other) gets the refusal, the turn is not
// stored, and an applier started after that serves the refusal too.
func testRefusalAtKill(t *testing.T, fx *faultEnv) {
	ctx := context.Background()
	f := fx.fuseki(t)
	direct := fusekitest.Client(t, kg.Config{Endpoint: f.Endpoint, Store: kg.Fuseki})
	if err := direct.Update(ctx, "DROP ALL", kg.Idempotent()); err != nil {
		t.Fatal(err)
	}
	base, path, _ := strings.Cut(strings.TrimPrefix(f.Endpoint, "http://"), "/")
	px := &holdingProxy{target: "http://" + base, held: make(chan struct{}), release: make(chan struct{}), sent: make(chan struct{})}
	hs := httptest.NewServer(px)
	t.Cleanup(hs.Close)
	t.Cleanup(func() {
		select {
		case <-px.release:
		default:
			close(px.release)
		}
	})
	r := &faultRig{fx: fx, brokers: fx.k.Brokers(), topic: "t" + strings.ReplaceAll(t.Name(), "/", "-"), logs: t.TempDir()}
	fx.k.CreateTopic(t, r.topic, 1)
	r.add(t, fusekitest.Client(t, kg.Config{Endpoint: hs.URL + "/" + path, Store: kg.Fuseki}))
	p := r.appliers[0]
	t.Cleanup(func() {
		p.resume()
		p.kill()
		if t.Failed() {
			t.Logf("--- the applier's log (tail) ---\n%s", proc.Tail(p.log, 30))
		}
	})
	cc, err := cluster.Open(cluster.Config{Brokers: r.brokers, Topic: r.topic, Replicas: []cluster.Replica{{Dataset: f.Endpoint, Applier: p.url()}}, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Close)
	c := &updateErrs{Client: cc}
	st := session.NewStore(c, session.WithGroupCommit(false))
	fresh := session.NewStore(cc, session.WithGroupCommit(false))
	s := session.New("frank")
	s.Append("user", "which trains go to Porto?")
	if err := st.Persist(ctx, s); err != nil {
		t.Fatal(err)
	}
	stale, err := st.Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	c.before.key, c.before.f = "a stale answer, refused", func() {
		s.Append("assistant", "the Alfa Pendular, hourly")
		if err := fresh.Persist(ctx, s); err != nil {
			t.Errorf("the other writer's append: %v", err)
		}
	}
	stale.Append("assistant", "a stale answer, refused")
	persisted := make(chan error, 1)
	go func() { persisted <- st.Persist(ctx, stale) }()
	select {
	case <-px.held:
	case err := <-persisted:
		t.Fatalf("the stale append returned %v before its record's offset move was held", err)
	case <-time.After(time.Minute):
		t.Fatal("the applier sent no offset move past the stale append's record within a minute")
	}
	p.kill()
	stored := r.storedOffset(t, 0)
	gate := &firstUpdateGate{ready: make(chan struct{}), open: make(chan struct{})}
	px.gate.Store(gate)
	p.start(t)
	select {
	case <-gate.ready: // it has read the offset
	case <-time.After(time.Minute):
		t.Fatal("the new applier sent nothing within a minute")
	}
	if from := p.startedFrom(t); from != stored+1 {
		t.Errorf("the new applier applies from offset %d, want %d (the refused record)", from, stored+1)
	}
	close(px.release)
	select {
	case <-px.sent:
	case <-time.After(time.Minute):
		t.Fatal("the killed applier's offset move got no answer within a minute")
	}
	if now := r.storedOffset(t, 0); now != stored+1 {
		t.Fatalf("the killed applier's offset move left offset %d, want %d (proxy: %v)", now, stored+1, px.err)
	}
	close(gate.open)
	t.Logf("killed the applier (kill -9) with its offset move past record %d in flight; the new one read offset %d; the move committed before its first request", stored+1, stored)

	err = <-persisted
	if uerr := c.last(); uerr == nil {
		t.Errorf("cluster.Client.Update of the stale append's record: got nil, want the store's refusal")
	}
	if err == nil {
		t.Errorf("Persist of the stale append: got nil, want an error (its record was refused)")
	}
	off := cc.Position()
	if off != stored+1 {
		t.Errorf("the writer's position is %d, want the refused record's offset %d", off, stored+1)
	}
	if o := outcomeOf(t, p.url(), off); o.State != cluster.OutcomeRefused {
		t.Errorf("outcome of the refused record (offset %d) from the new applier: got %+v, want %q", off, o, cluster.OutcomeRefused)
	}
	got, err := session.NewStore(direct).Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 2 || got.Turns[1].Content != "the Alfa Pendular, hourly" {
		t.Errorf("got turns %q, want the two acknowledged", turnContents(got.Turns))
	}
	p.kill()
	p.start(t)
	if o := outcomeOf(t, p.url(), off); o.State != cluster.OutcomeRefused {
		t.Errorf("outcome of the refused record (offset %d) from an applier started after it: got %+v, want %q", off, o, cluster.OutcomeRefused)
	}
}

// testPassedIntoBatch: a killed applier's request, applying the first
// record alone, commits after a new applier read the offset and fetched
// that record and the next two: the new applier's batch of three fails
// the offset's check with the offset at its first record. It sends the
// records one by one (as after a refused batch): the first finds the
// offset past it and no marker (applied), the other two apply once; it
// does not stop, and every writer hears "applied".
func testPassedIntoBatch(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	brokers, topic := k.Brokers(), "t"+strings.ReplaceAll(t.Name(), "/", "-")
	k.CreateTopic(t, topic, 1)
	endpoint := srv.Datasets[5]
	direct := fusekitest.Client(t, kg.Config{Endpoint: endpoint, Store: kg.Fuseki})
	if err := direct.Update(ctx, "DROP ALL", kg.Idempotent()); err != nil {
		t.Fatal(err)
	}
	holder := newOffsetMoveHolder() // holds the first update: the records here write no session graph
	t.Cleanup(func() {
		select {
		case <-holder.release:
		default:
			close(holder.release)
		}
	})
	rs := &replicaServer{}
	hs := httptest.NewServer(rs)
	t.Cleanup(hs.Close)
	old := rs.start(t, brokers, topic, fusekitest.Client(t, kg.Config{Endpoint: endpoint, Store: kg.Fuseki, HTTPClient: &http.Client{Transport: holder}}))
	c, err := cluster.Open(cluster.Config{Brokers: brokers, Topic: topic, Replicas: []cluster.Replica{{Dataset: endpoint, Applier: hs.URL}}, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	update := func(i int) string {
		return fmt.Sprintf("INSERT DATA { GRAPH <urn:trails-test:g> { <urn:trails-test:s> <urn:trails-test:p> %d } }", i)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Go(func() { errs[0] = c.Update(ctx, update(0)) })
	select {
	case <-holder.held:
	case <-time.After(time.Minute):
		t.Fatal("the applier sent nothing within a minute")
	}
	old.kill()
	for i := 1; i < 3; i++ {
		wg.Go(func() { errs[i] = c.Update(ctx, update(i)) })
	}
	lr := &faultRig{brokers: brokers, topic: topic}
	for lr.logEnd(t) < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	gate := &firstUpdateGate{next: http.DefaultTransport, ready: make(chan struct{}), open: make(chan struct{})}
	a, err := cluster.NewApplier(cluster.ApplierConfig{Brokers: brokers, Topic: topic, Logf: t.Logf,
		Store: fusekitest.Client(t, kg.Config{Endpoint: endpoint, Store: kg.Fuseki, HTTPClient: &http.Client{Transport: gate}})})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	renewed := &killable{a: a, dead: runCtx, kill: cancel, done: make(chan error, 1)}
	go func() { renewed.done <- a.Run(runCtx) }()
	t.Cleanup(cancel)
	rs.cur.Store(renewed)
	select {
	case <-gate.ready:
	case <-time.After(time.Minute):
		t.Fatal("the new applier sent nothing within a minute")
	}
	if n := strings.Count(gate.first, "INSERT DATA"); n != 3 {
		t.Logf("the new applier's first batch holds %d records, not 3: the race does not happen", n)
	}
	close(holder.release)
	<-holder.sent
	close(gate.open)
	old.wait(t)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("update %d: %v", i, err)
		}
	}
	select {
	case err := <-renewed.done:
		t.Fatalf("the new applier stopped: %v", err)
	default:
	}
	res, err := direct.Select(ctx, "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <urn:trails-test:g> { ?s ?p ?o } }")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.Solutions[0].Int("n"); n != 3 {
		t.Errorf("the dataset holds %d of the 3 records' triples", n)
	}
	renewed.kill()
	renewed.wait(t)
}
