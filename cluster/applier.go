package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/appendhint"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultTopic is the log topic when a Config or ApplierConfig names none.
const DefaultTopic = "trails"

// MaxRecordBytes is the largest record value a Client sends: 32 MiB, so
// that a 16 MiB turn fits in one record once N-Triples escapes its quotes
// and line breaks (a third more for text, up to six times for control
// characters, which the Client refuses with 413). The brokers and the
// topic that scripts/cluster starts take batches of MaxBatchBytes
// (Kafka's default is 1 MB), room for the record's framing.
const MaxRecordBytes = 32 << 20

// MaxBatchBytes is the largest record batch the brokers and the topic of
// scripts/cluster take (message.max.bytes, max.message.bytes,
// replica.fetch.max.bytes): one record of MaxRecordBytes and its framing.
const MaxBatchBytes = 33 << 20

// A record is a SPARQL Update, unless its header headerOp names a Graph
// Store request, which an applier sends alone (a Graph Store request is a
// transaction of its own) before it moves its offset past the record.
const (
	headerOp    = "trails-op"    // opPutGraph or opLoadQuads; absent for an update
	headerGraph = "trails-graph" // the graph a PUT replaces
	headerMedia = "trails-media" // the media type of a PUT's data
	headerAfter = "trails-after" // "LOG OFFSET": apply only once the dataset's offset of log LOG, if it has one, is at least OFFSET (a move's records: seal.go)

	opPutGraph  = "put-graph"  // Graph Store PUT of the record's value into headerGraph
	opLoadQuads = "load-quads" // Graph Store POST of the record's value, N-Quads
	opSeal      = "seal"       // an update writing seals (MoveTree): applied alone, then the seals are read again
	opDropMoved = "drop-moved" // an update removing a moved tree (MoveTree): applied alone, though it names sealed sessions
)

// Defaults of an ApplierConfig.
const (
	DefaultBatchRecords = 256     // records per transaction
	DefaultBatchBytes   = 8 << 20 // bytes of records per transaction (a larger record goes alone)
)

// ApplierConfig configures an Applier.
type ApplierConfig struct {
	// Brokers are the Kafka bootstrap servers, host:port.
	Brokers []string
	// Topic is the log topic; "" means DefaultTopic. Its partition 0 is
	// applied.
	Topic string
	// Store is the replica's dataset: a client of its Fuseki. Its
	// updates must be serializable (Fuseki's are).
	Store *kg.Client
	// BatchRecords and BatchBytes bound a transaction; 0 means
	// DefaultBatchRecords and DefaultBatchBytes.
	BatchRecords, BatchBytes int
	// Logf, when set, reports progress and the errors the Applier
	// retries.
	Logf func(format string, args ...any)
	// UpdatesOnly applies every record as its SPARQL Update, as Fuseki
	// evaluates it: the update path. Without it (the default) the
	// Applier decides the condition of appends that carry a hint
	// (session.Store's, through a Client) by reading, a run of them at a
	// time, and applies those that hold as data (decide.go): the same
	// dataset, several times faster to apply. trails-bench compares the
	// two.
	UpdatesOnly bool
	// NoPatch, on the decided path, decides appends by reading and
	// applies those that hold as SPARQL Update (DELETE DATA and INSERT
	// DATA after the position guard) even when the replica's Fuseki
	// serves the conditional-patch endpoint of Trails' module
	// (fuseki/module), which evaluates each append's condition and
	// applies its RDF Patch in the write transaction, without the read.
	// Without it the Applier asks at Run's start.
	NoPatch bool
}

// Applier applies the log to one replica's dataset. Run applies; the
// Applier serves its position and the outcomes of the records it applied
// over HTTP (ServeHTTP), for the writers. Its methods are safe for
// concurrent use.
type Applier struct {
	cfg   ApplierConfig
	topic string
	log   rdf.IRI // the partition's IRI, subject of its applied offset
	tel   telemetry.Replica

	decided atomic.Int64 // records applied as data (decide.go)
	groups  atomic.Int64 // of them, group commits' records (appendhint.Group)
	patch   atomic.Bool  // the dataset's Fuseki serves conditional-patch (probePatch)

	mu       sync.Mutex
	applied  int64              // the last offset applied, -1 for none
	from     int64              // the first offset this Applier applied itself; outcomes before it are read from the dataset's refusal markers
	refused  map[int64]*refusal // records refused since from, by offset, as the dataset's markers say
	sealed   map[string]int     // session id: the group its tree moved to, as this log's seals in the dataset say
	movedOut int                // the sealed sessions whose move finished (moves)
	advanced chan struct{}      // closed and replaced whenever applied grows
}

// refusal is what the store answered to a record it refused, as the
// record's refusal marker keeps it (Body cut to maxRefusalBody bytes).
type refusal struct {
	Status int    `json:"status"`
	Body   string `json:"message"`
}

// maxRefusalBody bounds the store's answer a refusal marker keeps.
const maxRefusalBody = 2 << 10

// newRefusal returns the refusal of a store that answered status and
// body, body made valid UTF-8 and cut to maxRefusalBody bytes (on a
// character's boundary), as its marker keeps it.
func newRefusal(status int, body string) *refusal {
	body = strings.ToValidUTF8(body, "\uFFFD")
	if len(body) > maxRefusalBody {
		cut := maxRefusalBody
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		body = body[:cut]
	}
	return &refusal{Status: status, Body: body}
}

// keepRefusals bounds how far behind the applied offset a refusal is
// kept in memory: a writer asks for its record's outcome as soon as it is
// in the log; one that asks later gets it from the record's refusal
// marker, or learns that the outcome is unknown. It also bounds how far
// past a request's records another applier's may have moved the offset
// for the request to read what became of them (send).
const keepRefusals = 100000

// NewApplier returns an Applier for cfg. It reads nothing yet.
func NewApplier(cfg ApplierConfig) (*Applier, error) {
	if len(cfg.Brokers) == 0 {
		return nil, fmt.Errorf("%w: an applier needs the Kafka brokers", kg.ErrConfig)
	}
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: an applier needs its replica's store", kg.ErrConfig)
	}
	if cfg.Store.Store() != kg.Fuseki {
		return nil, fmt.Errorf("%w: a replica is a Fuseki dataset, not %s (its updates must be serializable)", kg.ErrConfig, cfg.Store.Store())
	}
	a := &Applier{cfg: cfg, topic: cfg.Topic, applied: -1, from: -1, refused: map[int64]*refusal{}, sealed: map[string]int{}, advanced: make(chan struct{})}
	if a.topic == "" {
		a.topic = DefaultTopic
	}
	if a.cfg.BatchRecords <= 0 {
		a.cfg.BatchRecords = DefaultBatchRecords
	}
	if a.cfg.BatchBytes <= 0 {
		a.cfg.BatchBytes = DefaultBatchBytes
	}
	a.log = kg.MustIRI(ontology.LogIRI(a.topic, 0))
	a.tel = telemetry.NewReplica(a.topic, cfg.Store.Endpoint())
	return a, nil
}

// Position returns the offset of the last record applied (-1 for none),
// as this Applier knows it: after Run has read the dataset's.
func (a *Applier) Position() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied
}

// Run applies the log until ctx ends: it reads the offset the dataset
// holds, consumes the partition from the next one and applies what
// arrives. It retries a store or a log that is unavailable, and returns
// ctx's error when ctx ends, or an error when the dataset's offset cannot
// be read as one.
func (a *Applier) Run(ctx context.Context) error {
	var stored int64
	for {
		var err error
		if stored, err = a.stored(ctx); err == nil {
			break
		} else if !errors.Is(err, kg.ErrUnavailable) {
			return fmt.Errorf("applier: read the applied offset: %w", err)
		}
		a.logf("applier: read the applied offset: %v (retrying)", err)
		if err := proc.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	if err := a.reloadSeals(ctx); err != nil {
		return err
	}
	a.probePatch(ctx, stored)
	a.mu.Lock()
	a.applied, a.from = stored, stored+1
	a.mu.Unlock()
	a.advance(stored)
	cl, err := kgo.NewClient(append(quickFailover(),
		kgo.SeedBrokers(a.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{a.topic: {0: kgo.NewOffset().At(stored + 1)}}),
		kgo.FetchMaxBytes(2*MaxBatchBytes),
		kgo.FetchMaxPartitionBytes(2*MaxBatchBytes),
		kgo.BrokerMaxReadBytes(4*MaxBatchBytes),
		kgo.FetchMaxWait(time.Second),
	)...)
	if err != nil {
		return fmt.Errorf("applier: %w", err)
	}
	defer cl.Close()
	unobserve, err := a.tel.Observe(a.Position, func(ctx context.Context) (int64, error) { return lastOffset(ctx, cl, a.topic) })
	if err != nil {
		return fmt.Errorf("applier: %w", err)
	}
	defer unobserve()
	a.logf("applier: applying %s/0 from offset %d to %s", a.topic, stored+1, a.cfg.Store.Endpoint())
	for {
		fs := cl.PollRecords(ctx, a.cfg.BatchRecords)
		if err := ctx.Err(); err != nil {
			return err
		}
		fs.EachError(func(t string, p int32, err error) {
			a.logf("applier: fetch %s/%d: %v", t, p, err)
		})
		recs := fs.Records()
		for len(recs) > 0 {
			if op, rf := header(recs[0], headerOp), a.moved(recs[0]); op != "" || rf != nil {
				if err := a.waitAfter(ctx, recs[0]); err != nil {
					return err
				}
				var err error
				switch {
				case rf != nil:
					err = a.refuseAlone(ctx, recs[0], rf)
				case op == opSeal || op == opDropMoved:
					err = a.applyMoveOp(ctx, recs[0])
				default:
					err = a.applyGraphStore(ctx, recs[0], op)
				}
				if err != nil {
					return err // ctx ended, or the log lost records
				}
				recs = recs[1:]
				continue
			}
			n, size := 0, 0
			for n < len(recs) && header(recs[n], headerOp) == "" && a.moved(recs[n]) == nil && (n == 0 || size+len(recs[n].Value) <= a.cfg.BatchBytes) {
				size += len(recs[n].Value)
				n++
			}
			if err := a.applyBatch(ctx, recs[:n]); err != nil {
				return err // ctx ended, or the log lost records
			}
			recs = recs[n:]
		}
	}
}

// applyBatch applies recs (consecutive records of the partition, none
// naming a Graph Store request or a moved tree): appends that hold as
// data (decide.go), the others as their updates. It returns ctx's error,
// or an error when recs do not follow the applied offset.
func (a *Applier) applyBatch(ctx context.Context, recs []*kgo.Record) error {
	if done, err := a.follows(recs[0].Offset-1, recs[len(recs)-1].Offset); done || err != nil {
		return err
	}
	if a.cfg.UpdatesOnly {
		return a.applyUpdates(ctx, recs)
	}
	for len(recs) > 0 {
		if run := a.hintedRun(recs); len(run) > 0 {
			n, err := a.applyHeld(ctx, recs, run)
			if err != nil {
				return err
			}
			recs = recs[n:]
			if n == len(run) {
				continue
			}
		}
		if len(recs) == 0 {
			break
		}
		// The first record is not an append that holds: it and the
		// records after it without a hint go the update path.
		n := 1
		for n < len(recs) && header(recs[n], appendhint.Key) == "" && (header(recs[n], appendhint.GroupKey) == "" || !a.patches()) {
			n++
		}
		if err := a.applyUpdates(ctx, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// applyHeld applies, of run (the hinted records of recs, from the
// first), those whose condition holds as data, from the first up to the
// first that does not: by a conditional patch when the dataset's Fuseki
// serves one (applyConditional), else decided by reading and applied as
// SPARQL Update (decide, applyDecided). It returns how many records of
// recs it applied, and only ctx's error or applyConditional's.
func (a *Applier) applyHeld(ctx context.Context, recs []*kgo.Record, run []hinted) (int, error) {
	if a.patches() {
		n, err := a.applyConditional(ctx, recs, run)
		if !errors.Is(err, errNoPatch) {
			return n, err
		}
	}
	run = appends(run)
	if len(run) == 0 {
		return 0, nil
	}
	held := a.decide(ctx, recs, run)
	if len(held) == 0 {
		return 0, nil
	}
	return len(held), a.applyDecided(ctx, recs[:len(held)], held)
}

// applyDecided applies recs, appends whose conditions hold (decide; run
// holds their hints), as data in one transaction: DELETE DATA and
// INSERT DATA after the position guard. When the store refuses that,
// recs go the update path. It returns only ctx's error.
func (a *Applier) applyDecided(ctx context.Context, recs []*kgo.Record, run []hinted) error {
	prev, last := recs[0].Offset-1, recs[len(recs)-1].Offset
	ops := make([]string, len(run))
	for i, r := range run {
		ops[i] = dataOps(r)
	}
	err := a.send(ctx, prev, last, ops, nil)
	if err == nil {
		a.advance(last)
		a.decided.Add(int64(len(recs)))
		a.tel.Decided(ctx, len(recs))
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	a.logf("applier: apply offsets %d..%d as data: %v (the update path applies them)", prev+1, last, err)
	return a.applyUpdates(ctx, recs)
}

// applyUpdates applies recs (consecutive records of the partition, the
// first following the applied offset) as their updates in one
// transaction, or record by record when the store refuses the batch,
// retrying while the store is unavailable. It returns only ctx's error.
func (a *Applier) applyUpdates(ctx context.Context, recs []*kgo.Record) error {
	prev := recs[0].Offset - 1
	last := recs[len(recs)-1].Offset
	texts := make([]string, len(recs))
	for i, r := range recs {
		texts[i] = string(r.Value)
	}
	err := a.send(ctx, prev, last, texts, nil)
	if err == nil {
		a.advance(last)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Refused as a batch: one record (or more) fails. Each goes alone.
	for i, r := range recs {
		if err := a.applyAlone(ctx, r, texts[i]); err != nil {
			return err
		}
		a.advance(r.Offset)
	}
	return nil
}

// applyAlone applies record r, whose update is text, in a transaction of
// its own; when the store refuses it, the offset goes on without it, and
// its refusal marker with the offset. It returns ctx's error, or an error
// when the offset cannot move past r.
func (a *Applier) applyAlone(ctx context.Context, r *kgo.Record, text string) error {
	err := a.send(ctx, r.Offset-1, r.Offset, []string{text}, nil)
	var ke *kg.Error
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &ke):
		if err := a.send(ctx, r.Offset-1, r.Offset, nil, newRefusal(ke.Status, ke.Body)); err != nil {
			return fmt.Errorf("applier: record %d: %w", r.Offset, err)
		}
	default:
		return fmt.Errorf("applier: record %d: %w", r.Offset, err)
	}
	return nil
}

// follows reports whether the records after offset prev up to last were
// applied before (done: a fetch again after a restart of the consumer),
// and returns an error when they do not follow the applied offset.
func (a *Applier) follows(prev, last int64) (done bool, err error) {
	if p := a.Position(); p >= last {
		return true, nil
	} else if p != prev {
		// A gap: the log lost records (a retention or an unclean leader
		// election removed them) or the consumer skipped. Applying past it
		// would make this replica differ from the others: stop here.
		return false, fmt.Errorf("applier: the log jumps from offset %d to %d: records are missing (retention, or an unclean leader election); this replica cannot go on", p, prev+1)
	}
	return false, nil
}

// applyGraphStore applies r, a record naming the Graph Store request op,
// as that request to the dataset, then moves the dataset's offset past
// it. The request is not in the offset's transaction: an applier that
// stops between the two sends it again when it starts, which a PUT (the
// same graph again) and a POST of quads without blank nodes (quads that
// are there already) make harmless. A request the store refuses for its
// data (badData), or whose op is unknown, is refused alone, as a refused
// update is: the offset moves past it with its refusal marker, and the
// writer learns the refusal;
// any other failure is retried. It returns ctx's error, a gap in the
// log, or the dataset's offset moved under the applier.
func (a *Applier) applyGraphStore(ctx context.Context, r *kgo.Record, op string) error {
	if done, err := a.follows(r.Offset-1, r.Offset); done || err != nil {
		return err
	}
	var apply func() error
	switch op {
	case opPutGraph:
		if g, err := kg.IRI(header(r, headerGraph)); err == nil {
			apply = func() error { return a.cfg.Store.PutGraph(ctx, g, header(r, headerMedia), r.Value) }
		}
	case opLoadQuads:
		apply = func() error { return a.cfg.Store.LoadQuads(ctx, r.Value) }
	}
	// Refused unless applied: every replica refuses a record it cannot
	// read the same way.
	err := error(&kg.Error{Op: "apply", Status: http.StatusBadRequest, Body: fmt.Sprintf("record %d: %s %q with graph %q: not a Graph Store request an applier knows", r.Offset, headerOp, op, header(r, headerGraph))})
	for attempt := 0; apply != nil; attempt++ {
		if err = apply(); err == nil || ctx.Err() != nil || badData(err) {
			break
		}
		a.logf("applier: apply offset %d (%s): %v (retrying)", r.Offset, op, err)
		if err := proc.Sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var rf *refusal // nil: applied
	if err != nil {
		var ke *kg.Error
		rf = newRefusal(http.StatusBadRequest, err.Error())
		if errors.As(err, &ke) && ke.Status != 0 {
			rf = newRefusal(ke.Status, ke.Body)
		}
	}
	if err := a.send(ctx, r.Offset-1, r.Offset, nil, rf); err != nil {
		return fmt.Errorf("applier: record %d: %w", r.Offset, err)
	}
	a.advance(r.Offset)
	return nil
}

// header returns the value of r's header key, "" when it has none.
func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// send applies texts, the records after offset prev up to last, in one
// request that also moves the dataset's offset from prev to last: the
// request applies only while the dataset's offset is prev (the position
// guard, its first operations, a compare and swap that fences any other
// applier of the dataset), so a request sent again after a lost answer
// never applies a record twice. With rf (and no texts) the request
// refuses the record at last instead: it writes the record's refusal
// marker in the same transaction, so that the offset never passes a
// record without saying whether it applied.
//
// It retries while the store is unavailable. When a request fails and the
// dataset's offset is at last or past it, the records up to last were
// passed by some applier's request (its own, whose answer was lost, or
// another applier's on the same dataset): what became of each is what the
// dataset's refusal markers say, never inferred from the offset alone.
// Either way send records the refusals in a.refused before it returns
// nil. It returns the store's *kg.Error when it refused the request while
// the offset was prev, ctx's error, or an error when another applier
// moved the offset elsewhere.
func (a *Applier) send(ctx context.Context, prev, last int64, texts []string, rf *refusal) (err error) {
	var b strings.Builder
	b.WriteString(a.guard(prev, last))
	if rf != nil {
		b.WriteString(" ;\n")
		b.WriteString(a.marker(last, rf))
	}
	for _, t := range texts {
		b.WriteString(" ;\n")
		b.WriteString(trimUpdate(t))
		b.WriteString("\n")
	}
	u := b.String()
	return a.deliver(ctx, prev, last, rf, func() error { return a.cfg.Store.Update(ctx, u) })
}

// deliver sends a request (apply) that applies the records after offset
// prev up to last (or refuses the record at last, with rf) and moves the
// dataset's offset from prev to last, only while the offset is prev, and
// answers as send does.
func (a *Applier) deliver(ctx context.Context, prev, last int64, rf *refusal, apply func() error) (err error) {
	start := a.tel.StartApply(ctx)
	defer func() { a.tel.ApplyDone(ctx, start, err) }()
	failed := 0 // answers of 500 in a row
	for attempt := 0; ; attempt++ {
		err := apply()
		if err == nil {
			a.mu.Lock()
			if rf != nil {
				a.refused[last] = rf
			}
			a.mu.Unlock()
			if rf != nil {
				a.tel.Records(ctx, int(last-prev)-1, 1)
			} else {
				a.tel.Records(ctx, int(last-prev), 0) // texts, or a Graph Store record applied before
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Refused, or lost: the dataset's offset tells whether the records
		// were passed, and its markers which of them were refused.
		stored, serr := a.stored(ctx)
		if serr == nil && stored >= last {
			if stored-keepRefusals > prev {
				return fmt.Errorf("applier: the dataset's offset is %d, past %d: another applier writes this dataset, and what became of records %d..%d is no longer known", stored, last, prev+1, last)
			}
			rfs, merr := a.markers(ctx, prev, last)
			if merr == nil {
				a.mu.Lock()
				maps.Copy(a.refused, rfs)
				a.mu.Unlock()
				a.tel.Records(ctx, int(last-prev)-len(rfs), len(rfs))
				return nil // passed: applied, or refused as its marker says
			}
			err = merr
		} else if serr == nil && stored != prev {
			return fmt.Errorf("applier: the dataset's offset is %d, want %d: another applier writes this dataset", stored, prev)
		} else if serr == nil && refused(err, &failed) {
			return err // refused while at prev: the records' fault
		}
		a.logf("applier: apply offsets %d..%d: %v (retrying)", prev+1, last, err)
		if err := proc.Sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
}

// lastOffset returns the offset of the last record of partition 0 of
// topic (-1 for an empty log), as Kafka tells it within 2 s.
func lastOffset(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok {
		return 0, fmt.Errorf("no end offset of %s/0", topic)
	}
	if o.Err != nil {
		return 0, o.Err
	}
	return o.Offset - 1, nil
}

// marker returns the update that writes the refusal marker of the record
// at offset off (ontology.RefusalIRI) in the replica graph.
func (a *Applier) marker(off int64, rf *refusal) string {
	m := termOf(kg.MustIRI(ontology.RefusalIRI(a.topic, 0, off)))
	return "INSERT DATA { GRAPH " + termOf(kg.MustIRI(ontology.ReplicaGraph)) + " { " +
		m + " " + termOf(kg.MustIRI(ontology.RefusedIn)) + " " + termOf(a.log) + " ; " +
		termOf(kg.MustIRI(ontology.RefusedOffset)) + " " + termOf(kg.Int(int(off))) + " ; " +
		termOf(kg.MustIRI(ontology.RefusalStatus)) + " " + termOf(kg.Int(rf.Status)) + " ; " +
		termOf(kg.MustIRI(ontology.RefusalMessage)) + " " + termOf(kg.String(rf.Body)) + " } }"
}

// markers reads the refusal markers of the records after offset prev up
// to last, by offset.
func (a *Applier) markers(ctx context.Context, prev, last int64) (map[int64]*refusal, error) {
	q, err := kg.Bind(refusalsQuery, kg.Params{
		"g": kg.MustIRI(ontology.ReplicaGraph), "log": a.log,
		"in": kg.MustIRI(ontology.RefusedIn), "off": kg.MustIRI(ontology.RefusedOffset),
		"status": kg.MustIRI(ontology.RefusalStatus), "msg": kg.MustIRI(ontology.RefusalMessage),
		"prev": kg.Int(int(prev)), "last": kg.Int(int(last)),
	})
	if err != nil {
		return nil, err
	}
	res, err := a.cfg.Store.Select(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read the refusal markers of offsets %d..%d: %w", prev+1, last, err)
	}
	out := map[int64]*refusal{}
	for _, row := range res.Solutions {
		off, err := row.Int("o")
		if err != nil {
			return nil, fmt.Errorf("%w: refusal marker: offset: %v", kg.ErrProtocol, err)
		}
		st, err := row.Int("status")
		if err != nil {
			return nil, fmt.Errorf("%w: refusal marker %d: status: %v", kg.ErrProtocol, off, err)
		}
		msg, _ := row.Literal("msg")
		out[int64(off)] = &refusal{Status: st, Body: msg}
	}
	return out, nil
}

// refusalsQuery reads the refusal markers of a log partition ($log) for
// the offsets after $prev up to $last: the records its replica refused
// there. Each offset has one marker or none (applied).
const refusalsQuery = `SELECT ?o ?status ?msg WHERE {
  GRAPH $g { ?m $in $log ; $off ?o ; $status ?status ; $msg ?msg }
  FILTER(?o > $prev && ?o <= $last)
}`

// refusedAfter is how many answers of 500 in a row make a refusal: Fuseki
// answers 500 to an update that fails as it runs (ADD from a graph that
// does not exist, which Trails' conditional writes use to fail a request
// whose condition did not hold), as it would to a passing failure of its
// own; asked again, the update that fails by its text fails again.
const refusedAfter = 3

// noSuchTrailsGraph starts Fuseki's answer (500) to the ADD that fails a
// Trails write whose condition did not hold: the ADD of its
// acknowledgement or staging graph, which the update made only if the
// condition held (session's acked, internal/staged). It depends on the
// dataset only, so a record that got it is refused at once, not after
// refusedAfter tries.
const noSuchTrailsGraph = "No such graph: " + ontology.StagingBase

// refused reports whether err, the answer to an apply request sent while
// the dataset's offset was the one it expects, refuses the records: a 400
// (the store cannot take the text), a 500 saying a Trails write's
// condition did not hold (noSuchTrailsGraph), or any other 500 answered
// refusedAfter times in a row (failed counts them). Anything else (no answer, 502, 503, 504,
// a timeout) is retried.
func refused(err error, failed *int) bool {
	var ke *kg.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke.Status {
	case http.StatusBadRequest:
		return true
	case http.StatusInternalServerError:
		if strings.Contains(ke.Body, noSuchTrailsGraph) {
			return true // a condition of Trails' writes did not hold: the same on every try
		}
		*failed++
		return *failed >= refusedAfter
	}
	*failed = 0
	return false
}

// badData reports whether err is a store's answer to a Graph Store
// request that every replica gives alike, since it depends on the
// record only: 400 (data the store cannot read) or 415 (a media type it
// does not take). Its other answers (401, 403, 404, 413, 500) may depend
// on the replica's own setup or state: retried until an operator fixes
// it, rather than refused by one replica and applied by another.
func badData(err error) bool {
	var ke *kg.Error
	return errors.As(err, &ke) && (ke.Status == http.StatusBadRequest || ke.Status == http.StatusUnsupportedMediaType)
}

// guard returns the first operations of an apply request: they set the
// dataset's offset from prev (-1: none stored yet) to last, and fail the
// request (Fuseki refuses ADD from a graph that does not exist) unless
// the offset was prev. The request is one transaction, so the records
// after the guard apply with the offset's move or not at all. The gate
// graph is made and dropped in the request: no reader ever sees it. One
// operation both checks and moves the offset: a check before the records
// and a move after them cost about 4 ms more per request (docs/scale-out.md).
func (a *Applier) guard(prev, last int64) string {
	gate := termOf(kg.MustIRI(ontology.ReplicaGraph + "/gate"))
	rg, l, off := termOf(kg.MustIRI(ontology.ReplicaGraph)), termOf(a.log), termOf(kg.MustIRI(ontology.AppliedOffset))
	now := l + " " + off + " " + termOf(kg.Int(int(prev)))
	del, cond := "DELETE { GRAPH "+rg+" { "+now+" } } ", "GRAPH "+rg+" { "+now+" }"
	if prev < 0 {
		del, cond = "", "FILTER NOT EXISTS { GRAPH "+rg+" { "+l+" "+off+" ?any } }"
	}
	return del + "INSERT { GRAPH " + rg + " { " + l + " " + off + " " + termOf(kg.Int(int(last))) + " } GRAPH " + gate + " { " + gate + " " + gate + " " + gate + " } } WHERE { " + cond + " } ;\n" +
		"ADD " + gate + " TO " + gate + " ;\nDROP GRAPH " + gate
}

// stored reads the dataset's applied offset: -1 when none is stored.
func (a *Applier) stored(ctx context.Context) (int64, error) {
	q, err := kg.Bind(`SELECT ?o WHERE { GRAPH $g { $log $off ?o } }`, kg.Params{
		"g": kg.MustIRI(ontology.ReplicaGraph), "log": a.log, "off": kg.MustIRI(ontology.AppliedOffset),
	})
	if err != nil {
		return 0, err
	}
	res, err := a.cfg.Store.Select(ctx, q)
	if err != nil {
		return 0, err
	}
	switch len(res.Solutions) {
	case 0:
		return -1, nil
	case 1:
		n, err := res.Solutions[0].Int("o")
		if err != nil {
			return 0, fmt.Errorf("%w: applied offset: %v", kg.ErrProtocol, err)
		}
		return int64(n), nil
	}
	return 0, fmt.Errorf("%w: %d applied offsets stored for %s", kg.ErrProtocol, len(res.Solutions), a.log)
}

// advance records that every record up to last is applied, and wakes the
// writers waiting for it.
func (a *Applier) advance(last int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if last > a.applied {
		a.applied = last
	}
	for off := range a.refused {
		if off < a.applied-keepRefusals {
			delete(a.refused, off)
		}
	}
	close(a.advanced)
	a.advanced = make(chan struct{})
}

// wait returns once the applied offset is at least off, or when ctx
// ends, with the applied offset.
func (a *Applier) wait(ctx context.Context, off int64) int64 {
	for {
		a.mu.Lock()
		applied, ch := a.applied, a.advanced
		a.mu.Unlock()
		if applied >= off {
			return applied
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return applied
		}
	}
}

// Outcome is an Applier's answer about one record (GET /outcome).
type Outcome struct {
	Offset   int64  `json:"offset"`
	Position int64  `json:"position"` // the applier's applied offset
	State    string `json:"outcome"`  // OutcomeApplied, OutcomeRefused, OutcomeUnknown or OutcomePending
	Status   int    `json:"status,omitempty"`
	Message  string `json:"message,omitempty"`
	Moves    int    `json:"moves,omitempty"` // how many sessions moved out of this log's group (MoveTree), as the applier knows when it answers
}

// The states of an Outcome.
const (
	OutcomeApplied = "applied" // the record applied
	OutcomeRefused = "refused" // the store refused it (Status and Message say how); nothing of it applied
	OutcomeUnknown = "unknown" // passed before this applier kept outcomes, with no refusal marker: applied, or refused by an applier older than the markers
	OutcomePending = "pending" // not applied yet (the wait ran out)
)

// maxWait bounds the wait an HTTP request may ask for.
const maxWait = 30 * time.Second

// markerWait bounds the read of a refusal marker for an outcome this
// Applier did not keep (the outcome stays unknown past it).
const markerWait = 5 * time.Second

// ServeHTTP serves the Applier's position and outcomes, as JSON:
//
//	GET /position[?atLeast=N&wait=DURATION]  {"position": P}, once P >= N or the wait ran out
//	GET /outcome?offset=N[&wait=DURATION]    an Outcome, once N is applied or the wait ran out
//
// M is how many sessions moved out of the log's group (MoveTree: sealed,
// and the move's last record applied), as of P or later; a router that sees it grow
// reads the seals again. A wait is at most 30 s. The outcome of a record passed before this
// Applier started (or more than 100,000 records ago) is read from the
// dataset: refused when the record's refusal marker is there, else
// unknown.
func (a *Applier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	wait, err := time.ParseDuration(cmp.Or(q.Get("wait"), "0s"))
	if err != nil || wait < 0 {
		http.Error(w, "wait: want a duration such as 5s", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), min(wait, maxWait))
	defer cancel()
	switch r.URL.Path {
	case "/position":
		at := int64(-1)
		if v := q.Get("atLeast"); v != "" {
			if at, err = strconv.ParseInt(v, 10, 64); err != nil {
				http.Error(w, "atLeast: want an offset", http.StatusBadRequest)
				return
			}
		}
		p := a.wait(ctx, at)
		writeJSON(w, map[string]int64{"position": p, "moves": int64(a.moves())})
	case "/outcome":
		off, err := strconv.ParseInt(q.Get("offset"), 10, 64)
		if err != nil || off < 0 {
			http.Error(w, "offset: want an offset", http.StatusBadRequest)
			return
		}
		o := a.outcome(off, a.wait(ctx, off))
		o.Moves = a.moves()
		if o.State == OutcomeUnknown {
			// Passed before this Applier kept outcomes: its refusal marker,
			// when the dataset holds one, says it was refused.
			mctx, cancel := context.WithTimeout(r.Context(), markerWait)
			rfs, err := a.markers(mctx, off-1, off)
			cancel()
			if rf := rfs[off]; err == nil && rf != nil {
				o.State, o.Status, o.Message = OutcomeRefused, rf.Status, rf.Body
			}
		}
		writeJSON(w, o)
	default:
		http.NotFound(w, r)
	}
}

// outcome returns what the Applier knows of record off, its applied
// offset being pos.
func (a *Applier) outcome(off, pos int64) Outcome {
	o := Outcome{Offset: off, Position: pos}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch rf := a.refused[off]; {
	case pos < off:
		o.State = OutcomePending
	case off < a.from || off < a.applied-keepRefusals:
		o.State = OutcomeUnknown
	case rf != nil:
		o.State, o.Status, o.Message = OutcomeRefused, rf.Status, rf.Body
	default:
		o.State = OutcomeApplied
	}
	return o
}

func (a *Applier) logf(format string, args ...any) {
	if a.cfg.Logf != nil {
		a.cfg.Logf(format, args...)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// trimUpdate returns update u without trailing blanks and a final ';', so
// that it can be followed by " ;" and another operation.
func trimUpdate(u string) string {
	u = strings.TrimRight(u, " \t\r\n")
	return strings.TrimRight(strings.TrimSuffix(u, ";"), " \t\r\n")
}

// termOf serializes a term the package builds itself (never fails).
func termOf(t rdf.Term) string {
	s, err := kg.Term(t)
	if err != nil {
		panic("cluster: " + err.Error())
	}
	return s
}

// quickFailover returns the options that let a Kafka client find a
// partition's new leader soon after the old one dies: metadata refreshed
// as often as every 250 ms (franz-go's default minimum is 5 s) and
// retries after 100 ms doubling to 500 ms (its default, 250 ms to 5 s).
// The brokers fence a dead node after 3 s (scripts/kafka/
// server.properties); with the defaults a client took 2 to 5 s more.
func quickFailover() []kgo.Opt {
	return []kgo.Opt{
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryBackoffFn(func(tries int) time.Duration { return min(100*time.Millisecond<<min(tries, 3), 500*time.Millisecond) }),
	}
}

// backoff is the wait before retry attempt+1: 50 ms doubling to 2 s.
func backoff(attempt int) time.Duration {
	return min(50*time.Millisecond<<min(attempt, 6), 2*time.Second)
}
