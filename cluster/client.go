package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/appendhint"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures a Client.
type Config struct {
	// Brokers are the Kafka bootstrap servers, host:port.
	Brokers []string
	// Topic is the log topic; "" means DefaultTopic. Writes go to its
	// partition 0.
	Topic string
	// Replicas are the replicas reads go to and outcomes come from, the
	// first preferred.
	Replicas []Replica
	// Timeout bounds how long an Update waits for its record to be in the
	// log and applied by a replica; 0 means DefaultTimeout. Past it the
	// outcome is unknown (kg.ErrUnavailable).
	Timeout time.Duration
	// Store configures the clients of the replicas' datasets (credentials,
	// timeouts); its Endpoint and Store are set per replica. With more
	// than one replica and no MaxAttempts, a read is tried once per
	// replica: a replica whose Fuseki answers no ping (ASK {}) within 2 s,
	// asked after the read waited 1 s, costs a read about 3 s before it
	// goes to another; the last replica tried is waited for up to
	// Store.Timeout (kg's default, 30 s).
	Store kg.Config
	// Transport, when set, carries the Client's requests to the appliers
	// (outcomes, positions); nil means a transport the process's Clients
	// share, keeping up to 64 idle connections to each applier. A program
	// that traces those requests wraps http.DefaultTransport (trails-bench
	// does).
	Transport http.RoundTripper
}

// DefaultTimeout is a Client's Timeout when its Config gives none.
const DefaultTimeout = 30 * time.Second

// Replica names one replica: its dataset and its applier.
type Replica struct {
	// Dataset is the replica's Fuseki dataset URL, e.g.
	// http://127.0.0.1:3131/trails: reads go there.
	Dataset string
	// Applier is the base URL of its Applier's HTTP service, e.g.
	// http://127.0.0.1:3141 (trails-replica's -listen): positions and
	// outcomes come from there.
	Applier string
}

// Client is a session.Querier on a replicated log: updates go to the log,
// reads to a replica that has applied this Client's last write. It is safe
// for concurrent use; Close releases it.
type Client struct {
	log      *kgo.Client
	topic    string
	timeout  time.Duration
	replicas []*replica
	http     *http.Client

	mu       sync.Mutex
	last     int64 // the offset of this Client's last write, or of the newest position a read relied on; -1 for none
	pref     int   // the replica that answered last
	prefAt   int64 // an offset pref is known to have applied (-1: none known)
	readFrom int   // the replica of the last read, -1 for none
	moves    int   // the most sessions an applier said the log sealed (moved out: MoveTree)
}

type replica struct {
	q       *kg.Client
	applier string
}

// Open returns a Client for cfg. It checks the configuration, not that
// the log or the replicas answer.
//
// It returns an error matching kg.ErrConfig for a bad configuration.
func Open(cfg Config) (*Client, error) {
	if len(cfg.Brokers) == 0 {
		return nil, fmt.Errorf("%w: cluster: no Kafka brokers", kg.ErrConfig)
	}
	if len(cfg.Replicas) == 0 {
		return nil, fmt.Errorf("%w: cluster: no replicas", kg.ErrConfig)
	}
	c := &Client{topic: cfg.Topic, timeout: cfg.Timeout, last: -1, prefAt: -1, readFrom: -1, http: &http.Client{Transport: applierTransport}}
	if cfg.Transport != nil {
		c.http.Transport = cfg.Transport
	}
	if c.topic == "" {
		c.topic = DefaultTopic
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	for _, r := range cfg.Replicas {
		if _, err := url.Parse(r.Applier); err != nil || r.Applier == "" {
			return nil, fmt.Errorf("%w: cluster: replica %s: applier URL %q", kg.ErrConfig, r.Dataset, r.Applier)
		}
		sc := cfg.Store
		sc.Endpoint, sc.Store = r.Dataset, kg.Fuseki
		if sc.MaxAttempts == 0 && len(cfg.Replicas) > 1 {
			// A read that fails goes to another replica (read): asking
			// the same one again first would only make a silent
			// replica cost several Timeouts.
			sc.MaxAttempts = 1
		}
		q, err := kg.New(sc)
		if err != nil {
			return nil, fmt.Errorf("cluster: replica %s: %w", r.Dataset, err)
		}
		c.replicas = append(c.replicas, &replica{q: q, applier: r.Applier})
	}
	var err error
	c.log, err = kgo.NewClient(append(quickFailover(),
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.DefaultProduceTopic(c.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), // with the idempotent producer, franz-go's default
		kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(MaxBatchBytes),
		kgo.BrokerMaxWriteBytes(2*MaxBatchBytes),
		kgo.RecordDeliveryTimeout(c.timeout),
	)...)
	if err != nil {
		return nil, fmt.Errorf("%w: cluster: %v", kg.ErrConfig, err)
	}
	return c, nil
}

// Close releases the Client's connections to the log.
func (c *Client) Close() { c.log.Close() }

// Store returns kg.Fuseki: the replicas are Fuseki datasets, and an
// update applies, or fails whole, as one Fuseki's does.
func (c *Client) Store() kg.Store { return kg.Fuseki }

// Endpoint returns the dataset URL of the first replica: where a SPARQL
// tool may read what this Client wrote, once that replica has applied it.
func (c *Client) Endpoint() string { return c.replicas[0].q.Endpoint() }

// Replicated returns true: each update is applied by every replica, so
// it must carry what a store would fill in (session.Store asks).
func (c *Client) Replicated() bool { return true }

// Position returns the offset of this Client's last write (-1 for none):
// its reads go to a replica at or past it.
func (c *Client) Position() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// ErrNondeterministic: an update calls a SPARQL function whose value
// depends on where or when it is evaluated (NOW, RAND, UUID, STRUUID or
// BNODE: see kg.NondeterministicCall). Each replica would fill in its own
// value and the replicas would differ, so Client.Update refuses it before
// it reaches the log; the error also matches kg.ErrBadRequest. A
// session.Store fills such values in itself when its Querier says it is
// replicated (a Replicated() bool method, which *Client has): a Querier
// that wraps a Client must pass that method on.
var ErrNondeterministic = errors.New("cluster: the update depends on where or when it is applied")

// Update sends update as one record to the log and waits for a replica to
// apply it (see the package documentation). update must be whole: a
// request that a store would take alone. Of the options only an append's
// hint and a group commit's (kg.Hint with appendhint's Key or GroupKey,
// which session.Store attaches) count: each goes with the record as a
// header, for the appliers' decided path (ApplierConfig.UpdatesOnly); a
// record is written to the log once.
//
// It returns nil when the update applied; a *kg.Error matching
// kg.ErrBadRequest when the store refused it; a *kg.Error matching
// kg.ErrUnavailable when its outcome is unknown (the record may be in the
// log and may apply); a *kg.Error matching kg.ErrBadRequest (HTTP 413)
// for a record over MaxRecordBytes, sent to nobody; ErrNondeterministic
// (also matching kg.ErrBadRequest) for an update that calls NOW(), RAND(),
// UUID(), STRUUID() or BNODE(), sent to nobody.
func (c *Client) Update(ctx context.Context, update string, opts ...kg.UpdateOption) error {
	if f := kg.NondeterministicCall(update); f != "" {
		return fmt.Errorf("%w: %w: it calls %s(), which each replica would evaluate on its own (a Querier that wraps a *cluster.Client must pass on its Replicated method)", ErrNondeterministic, kg.ErrBadRequest, f)
	}
	rec := &kgo.Record{Value: []byte(update)}
	for _, h := range kg.HintsOf(opts...) {
		if h[0] == appendhint.Key || h[0] == appendhint.GroupKey { // the hints an applier reads
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
		}
	}
	return c.write(ctx, "update", rec)
}

// PutGraph replaces graph g with data, of the given media type (kg.NTriples
// or kg.Turtle), on every replica: a record that each applier applies as a
// Graph Store PUT to its dataset, then moves its offset past it. A PUT
// applied twice (an applier that stopped between the two) leaves the
// same graph. It answers as Update does.
//
// Blank nodes in data get labels of each replica's own: the graph is the
// same graph on every replica (isomorphic), not the same labels in a
// dump. Trails' session writes stage no blank nodes.
func (c *Client) PutGraph(ctx context.Context, g rdf.IRI, mediaType string, data []byte) error {
	if _, err := kg.IRI(g.String()); err != nil {
		return err
	}
	return c.write(ctx, "put graph", &kgo.Record{Value: data, Headers: []kgo.RecordHeader{
		{Key: headerOp, Value: []byte(opPutGraph)},
		{Key: headerGraph, Value: []byte(g.String())},
		{Key: headerMedia, Value: []byte(mediaType)},
	}})
}

// LoadQuads adds N-Quads to every replica's dataset: a record that each
// applier applies as a Graph Store POST, then moves its offset past it.
// Adding quads that are there changes nothing, so a POST applied twice
// leaves the same dataset. It answers as Update does.
func (c *Client) LoadQuads(ctx context.Context, nquads []byte) error {
	return c.write(ctx, "load quads", &kgo.Record{Value: nquads, Headers: []kgo.RecordHeader{
		{Key: headerOp, Value: []byte(opLoadQuads)},
	}})
}

// write sends rec as one record to partition 0 of the log and waits for a
// replica to apply it; op names the request in errors.
func (c *Client) write(ctx context.Context, op string, rec *kgo.Record) error {
	_, err := c.writeAt(ctx, op, rec)
	return err
}

// writeAt is write, returning the record's offset (-1 when it is not in
// the log).
func (c *Client) writeAt(ctx context.Context, op string, rec *kgo.Record) (off int64, err error) {
	if len(rec.Value) > MaxRecordBytes {
		return -1, &kg.Error{Op: op, Status: http.StatusRequestEntityTooLarge, Body: fmt.Sprintf("%d bytes: the log takes records of at most %d bytes", len(rec.Value), MaxRecordBytes)}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	text := "" // an update's first line names it (telemetry.QueryName)
	if header(rec, headerOp) == "" {
		text = string(rec.Value[:min(len(rec.Value), 80)])
	}
	ctx, send := telemetry.StartSend(ctx, c.topic, op, text, len(rec.Value))
	defer func() { send.End(err) }()
	rec.Topic, rec.Partition = c.topic, 0
	res, err := c.log.ProduceSync(ctx, rec).First()
	if err != nil {
		send.Sent(ctx, -1, err)
		return -1, &kg.Error{Op: op, Err: fmt.Errorf("log: %w", err)}
	}
	send.Sent(ctx, res.Offset, nil)
	o, err := c.outcome(ctx, res.Offset)
	if err != nil {
		return res.Offset, &kg.Error{Op: op, Err: fmt.Errorf("log offset %d: %w", res.Offset, err)}
	}
	switch o.State {
	case OutcomeApplied:
		return res.Offset, nil
	case OutcomeRefused:
		return res.Offset, &kg.Error{Op: op, Status: o.Status, Body: o.Message}
	}
	return res.Offset, &kg.Error{Op: op, Status: http.StatusServiceUnavailable, Body: fmt.Sprintf("log offset %d: no replica kept its outcome", res.Offset)}
}

// outcome asks the replicas, the preferred first, for the outcome of
// record off until one knows it or ctx ends.
func (c *Client) outcome(ctx context.Context, off int64) (Outcome, error) {
	var last error
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		pref := c.pref
		c.mu.Unlock()
		for k := range c.replicas {
			i := (pref + k) % len(c.replicas)
			var o Outcome
			err := c.get(ctx, c.replicas[i].applier+"/outcome?offset="+strconv.FormatInt(off, 10)+"&wait="+askWait.String(), &o)
			if err != nil {
				last = err
				continue
			}
			c.noteMoves(o.Moves)
			if o.State == OutcomePending {
				last = fmt.Errorf("replica %d has applied up to %d", i, o.Position)
				continue
			}
			c.saw(i, off)
			return o, nil
		}
		if err := ctx.Err(); err != nil {
			return Outcome{}, fmt.Errorf("%w (last: %v)", err, last)
		}
		if err := proc.Sleep(ctx, backoff(attempt)); err != nil {
			return Outcome{}, fmt.Errorf("%w (last: %v)", err, last)
		}
	}
}

// saw records that replica i has applied offset off.
func (c *Client) saw(i int, off int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = max(c.last, off)
	if i != c.pref {
		c.pref, c.prefAt = i, -1
	}
	c.prefAt = max(c.prefAt, off)
}

// noteMoves records that an applier of the log said it sealed n
// sessions.
func (c *Client) noteMoves(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.moves = max(c.moves, n)
}

// movesSeen returns the most sessions an applier of the log said it
// sealed, in an answer to this Client.
func (c *Client) movesSeen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.moves
}

// askWait is how long a Client asks an applier to wait for an offset
// (/outcome, /position) before it asks the next replica: an applier whose
// Fuseki died stays up but applies nothing, and a writer asking it alone
// would wait as long as it does. An applier that keeps up answers at
// once.
const askWait = time.Second

// answerWithin bounds the wait for an applier's answer: askWait and a
// margin. A replica cut off from the network answers nothing, not even a
// refusal: past this the Client asks another.
const answerWithin = askWait + 2*time.Second

// get GETs u and decodes its JSON answer into v, within answerWithin.
func (c *Client) get(ctx context.Context, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, answerWithin)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// reader returns a replica at or past this Client's position: the
// preferred one with no request when it is known to be there (it
// answered this Client's last write) and the last read went to it too,
// else the first that says so, waiting for one for at most the Client's
// timeout.
//
// A read on another replica than the last read's must not see less than
// that one showed: it may have applied more than this Client knows of by
// the time it answered. So a replica that is not the last read's must
// have applied the log up to its end as of now (which no replica can have
// passed), one request to Kafka; when Kafka does not answer, up to this
// Client's position only. Reads that overlap on one Client (goroutines
// sharing it) are ordered only as they pass here: one already running on
// the last replica may still see more than the next one shown.
func (c *Client) reader(ctx context.Context) (int, error) {
	c.mu.Lock()
	pref, from := c.pref, c.readFrom
	if c.prefAt >= 0 && c.prefAt >= c.last && (from < 0 || from == pref) {
		c.readFrom = pref
		c.mu.Unlock()
		return pref, nil
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var last error
	end := int64(-2) // the log's last offset, read once if needed; -2: not yet
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		pref, at := c.pref, c.last
		c.mu.Unlock()
		for k := range c.replicas {
			i := (pref + k) % len(c.replicas)
			need := at
			if from >= 0 && i != from {
				if end == -2 {
					end = c.logEnd(ctx)
				}
				need = max(need, end)
			}
			var p struct {
				Position int64
				Moves    int
			}
			err := c.get(ctx, c.replicas[i].applier+"/position?atLeast="+strconv.FormatInt(need, 10)+"&wait="+askWait.String(), &p)
			if err == nil {
				c.noteMoves(p.Moves)
			}
			switch {
			case err != nil:
				last = err
			case p.Position < need:
				last = fmt.Errorf("replica %d has applied up to %d, this client needs %d", i, p.Position, need)
			default:
				c.saw(i, p.Position) // monotonic: later reads go no further back
				c.mu.Lock()
				c.readFrom = i
				c.mu.Unlock()
				return i, nil
			}
		}
		if err := ctx.Err(); err != nil {
			return 0, &kg.Error{Op: "select", Err: fmt.Errorf("no replica at offset %d: %w (last: %v)", at, err, last)}
		}
		if err := proc.Sleep(ctx, backoff(attempt)); err != nil {
			return 0, &kg.Error{Op: "select", Err: fmt.Errorf("no replica at offset %d: %w (last: %v)", at, err, last)}
		}
	}
}

// logEnd returns the offset of the log's last record (-1 for an empty
// log), or -1 when Kafka does not tell it within answerWithin.
func (c *Client) logEnd(ctx context.Context) int64 {
	ctx, cancel := context.WithTimeout(ctx, answerWithin)
	defer cancel()
	ends, err := kadm.NewClient(c.log).ListEndOffsets(ctx, c.topic)
	if err != nil {
		return -1
	}
	o, ok := ends.Lookup(c.topic, 0)
	if !ok || o.Err != nil {
		return -1
	}
	return o.Offset - 1
}

// applierTransport carries the requests of every Client and Sharded of
// the process to the appliers (outcomes, positions): http.DefaultTransport's
// settings, but keeping up to 64 idle connections to each applier, where
// the default keeps 2 and concurrent writers waiting for their outcomes
// opened a new connection each.
var applierTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}()

// read runs f on a replica at or past this Client's position, and on
// another when that one is unavailable or silent (see watch).
func read[T any](ctx context.Context, c *Client, f func(ctx context.Context, q *kg.Client) (T, error), discard func(T)) (T, error) {
	var zero T
	tried := map[int]bool{}
	for {
		i, err := c.reader(ctx)
		if err != nil {
			return zero, err
		}
		lastChance := tried[i] || len(tried)+1 >= len(c.replicas)
		var v T
		if lastChance {
			v, err = f(ctx, c.replicas[i].q)
		} else {
			v, err = watch(ctx, c.replicas[i].q, f, discard)
		}
		if err == nil || !errors.Is(err, kg.ErrUnavailable) || lastChance {
			return v, err
		}
		tried[i] = true
		c.mu.Lock()
		c.pref, c.prefAt = (i+1)%len(c.replicas), -1
		c.mu.Unlock()
	}
}

// Bounds of a read on a replica that may have gone silent (watch).
const (
	// probeAfter is how long a read waits for its answer before it asks
	// whether the replica's Fuseki answers at all.
	probeAfter = time.Second
	// probeWithin bounds that question (an ASK {}): a Fuseki busy with a
	// long query answers it on another thread at once.
	probeWithin = 2 * time.Second
)

// errSilent is the cause of a read abandoned because its replica's Fuseki
// answered no ping within probeWithin.
var errSilent = errors.New("the replica's Fuseki answers no ping")

// watch runs f on q and, while f has not returned, pings q every
// probeAfter: a replica that answers no ping within probeWithin (frozen,
// cut off) fails the read with a *kg.Error matching kg.ErrUnavailable
// within about probeAfter+probeWithin, instead of the replica client's
// Timeout, so read goes to another replica. A read that takes long on a
// live replica (an export, a SHACL validation, a big SELECT) goes on as
// long as the pings answer. f's context is cancelled when the read is
// abandoned, unless discard is set: then f is left to end on its own (its
// result, e.g. open Rows whose context must outlive this call, given to
// discard if it arrives).
func watch[T any](ctx context.Context, q *kg.Client, f func(ctx context.Context, q *kg.Client) (T, error), discard func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	fctx := ctx
	if discard == nil {
		var cancel context.CancelFunc
		fctx, cancel = context.WithCancel(ctx)
		defer cancel()
	}
	done := make(chan result, 1)
	abandoned := make(chan struct{})
	go func() {
		v, err := f(fctx, q)
		select {
		case done <- result{v, err}:
		case <-abandoned:
			if err == nil && discard != nil {
				discard(v)
			}
		}
	}()
	t := time.NewTicker(probeAfter)
	defer t.Stop()
	for {
		select {
		case r := <-done:
			return r.v, r.err
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, probeWithin)
		err := q.Ping(pctx)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, kg.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
			continue // alive (or it refused the ping: not silent), or the caller gave up: f ends with ctx
		}
		select {
		case r := <-done: // it answered meanwhile
			return r.v, r.err
		default:
		}
		close(abandoned)
		var zero T
		return zero, &kg.Error{Op: "read", Err: fmt.Errorf("%w within %v of the read's first %v (%v)", errSilent, probeWithin, probeAfter, err)}
	}
}

// Select runs a SELECT query on a replica at or past this Client's last
// write. It returns what kg.Client.Select returns.
func (c *Client) Select(ctx context.Context, query string) (*kg.Results, error) {
	return read(ctx, c, func(ctx context.Context, q *kg.Client) (*kg.Results, error) { return q.Select(ctx, query) }, nil)
}

// Rows runs a SELECT query on a replica at or past this Client's last
// write and returns its rows as they arrive. It returns what
// kg.Client.Rows returns.
func (c *Client) Rows(ctx context.Context, query string) (*kg.Rows, error) {
	return read(ctx, c, func(ctx context.Context, q *kg.Client) (*kg.Rows, error) { return q.Rows(ctx, query) }, func(r *kg.Rows) { r.Close() })
}

// Ask runs an ASK query on a replica at or past this Client's last write.
// It returns what kg.Client.Ask returns.
func (c *Client) Ask(ctx context.Context, query string) (bool, error) {
	return read(ctx, c, func(ctx context.Context, q *kg.Client) (bool, error) { return q.Ask(ctx, query) }, nil)
}

// GetGraph returns graph g as N-Triples from a replica at or past this
// Client's last write. It returns what kg.Client.GetGraph returns.
func (c *Client) GetGraph(ctx context.Context, g rdf.IRI) ([]byte, error) {
	return read(ctx, c, func(ctx context.Context, q *kg.Client) ([]byte, error) { return q.GetGraph(ctx, g) }, nil)
}

// Validate validates graph (kg.UnionGraph for all) of a replica at or past
// this Client's last write against shapes, with the replica's SHACL
// endpoint. It returns what kg.Client.Validate returns.
func (c *Client) Validate(ctx context.Context, shapes []byte, graph string) (*kg.Report, error) {
	return read(ctx, c, func(ctx context.Context, q *kg.Client) (*kg.Report, error) { return q.Validate(ctx, shapes, graph) }, nil)
}

// Dump writes the whole dataset of a replica at or past this Client's last
// write to w as N-Quads: a prefix of the log, whole batches. A replica
// that goes silent before it sent anything is left for another, as in
// Select; once something was written to w, which cannot be taken back,
// there is no other attempt. It returns what kg.Client.Dump returns.
func (c *Client) Dump(ctx context.Context, w io.Writer) error {
	dw := &dumpWriter{w: w}
	_, err := read(ctx, c, func(ctx context.Context, q *kg.Client) (struct{}, error) {
		n, ok := dw.begin()
		if !ok {
			return struct{}{}, &kg.Error{Op: "dump", Err: errors.New("the replica went silent after part of the dump was written")}
		}
		return struct{}{}, q.Dump(ctx, &attemptWriter{dw, n})
	}, nil)
	return err
}

// dumpWriter passes the writes of one attempt of a Dump on to w: the
// writes of an attempt abandoned for a later one fail.
type dumpWriter struct {
	w       io.Writer
	mu      sync.Mutex
	attempt int
	written bool
}

// begin starts attempt n, unless an earlier one wrote something.
func (d *dumpWriter) begin() (n int, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.attempt++
	return d.attempt, !d.written
}

type attemptWriter struct {
	d *dumpWriter
	n int
}

func (a *attemptWriter) Write(p []byte) (int, error) {
	a.d.mu.Lock()
	defer a.d.mu.Unlock()
	if a.n != a.d.attempt {
		return 0, errors.New("cluster: dump attempt abandoned")
	}
	a.d.written = a.d.written || len(p) > 0
	return a.d.w.Write(p)
}
