package lincheck

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

func TestMain(m *testing.M) { fusekitest.Main(m) }

var (
	seedFlag      = flag.Uint64("lincheck.seed", 0, "seed of the first history (0: from $TRAILS_LINCHECK_SEED, else the clock); history i uses seed+i")
	historiesFlag = flag.Int("lincheck.histories", 0, "histories per test (0: from $TRAILS_LINCHECK_HISTORIES, else the default of the test)")
)

// Environment variables that set the run (the flags win).
const (
	envSeed      = "TRAILS_LINCHECK_SEED"
	envHistories = "TRAILS_LINCHECK_HISTORIES" // histories of TestHistories; the fault and kill tests run a share of it
	envOut       = "TRAILS_LINCHECK_OUT"       // directory for the visualizations of failing histories
	envFor       = "TRAILS_LINCHECK_FOR"       // a duration (e.g. 45m): each test stops starting histories after it
)

// runFor returns $TRAILS_LINCHECK_FOR, 0 when unset.
func runFor(tb testing.TB) time.Duration {
	v := os.Getenv(envFor)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		tb.Fatalf("%s=%q: %v", envFor, v, err)
	}
	return d
}

// baseSeed returns the seed of the run's first history.
func baseSeed(tb testing.TB) uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if v := os.Getenv(envSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			tb.Fatalf("%s=%q: %v", envSeed, v, err)
		}
		return n
	}
	return uint64(time.Now().UnixNano()) & (1<<40 - 1)
}

// histories returns how many histories a test runs: the flag's number,
// else share of $TRAILS_LINCHECK_HISTORIES (at least one), else def, or
// short in -short mode.
func histories(tb testing.TB, def, short int, share float64) int {
	if *historiesFlag > 0 {
		return *historiesFlag
	}
	if v := os.Getenv(envHistories); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			tb.Fatalf("%s=%q: %v", envHistories, v, err)
		}
		return max(1, int(float64(n)*share))
	}
	if testing.Short() {
		return short
	}
	return def
}

// opsPerClient is how many calls each of a history's clients makes: 8 in
// -short mode, else 10.
func opsPerClient() int {
	if testing.Short() {
		return 8
	}
	return 10
}

// config is how a history runs.
type config struct {
	clients, ops int
	faults       float64                        // fraction of connections the proxy faults
	proxy        *proxy                         // nil: no proxy
	kill         *fusekitest.Server             // when set, killed with SIGKILL once during the history and restarted
	restart      *replica                       // when set, its applier is killed once during the history, an apply request in flight, and a new one started
	ownKeysOnly  bool                           // turns change no shared (app: or user:) key
	move         func(seed uint64, root string) // when set, run once during the history (a move of the root's tree)
}

// world is one history being recorded: the session ids the clients know,
// the operations and the clock.
type world struct {
	seed        uint64
	faulty      bool // faults are injected
	ownKeysOnly bool // config.ownKeysOnly
	start       time.Time

	mu    sync.Mutex
	ids   []string
	names map[string]string
	ops   []porcupine.Operation
	up    chan struct{} // closed when the store is up; replaced while it is killed

	vid, seq atomic.Int64
	unknown  atomic.Int64
}

func newWorld(seed uint64) *world {
	up := make(chan struct{})
	close(up)
	return &world{seed: seed, start: time.Now(), names: map[string]string{}, up: up}
}

func (w *world) now() int64 { return int64(time.Since(w.start)) }

// learn adds a session id the clients may use.
func (w *world) learn(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.names[id]; ok || id == "" {
		return
	}
	w.names[id] = "s" + strconv.Itoa(len(w.ids))
	w.ids = append(w.ids, id)
}

func (w *world) name(id string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n, ok := w.names[id]; ok {
		return n
	}
	return id
}

func (w *world) known() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ids)
}

// record adds a finished call. An unknown outcome returns at infinity.
func (w *world) record(client int, in input, out output, call, ret int64) {
	if out.Unknown {
		ret = math.MaxInt64 / 2
		w.unknown.Add(1)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ops = append(w.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// waitUp waits while the store is killed.
func (w *world) waitUp() {
	w.mu.Lock()
	up := w.up
	w.mu.Unlock()
	<-up
}

// sentinels are the errors a call may answer, by the names the model uses.
var sentinels = []struct {
	name string
	err  error
}{
	{errNotFound, session.ErrNotFound}, {errConflict, session.ErrConflict}, {errInvalid, session.ErrInvalid},
	{errState, session.ErrState}, {errMerged, session.ErrMerged}, {errHasKids, session.ErrHasChildren},
	{errNotFork, session.ErrNotForkable}, {errTooMany, session.ErrTooManyChildren}, {errParentGone, session.ErrParentMissing},
	{"ErrForkDepth", session.ErrForkDepth}, {"ErrForkCycle", session.ErrForkCycle}, {errCorrupt, session.ErrCorrupt},
	{"ErrExists", session.ErrExists}, {"ErrForbidden", session.ErrForbidden},
}

// outcome classifies err: success, a documented answer, or unknown (a
// store error: the call may or may not have taken effect).
func outcome(err error) output {
	if err == nil {
		return output{}
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return output{Err: s.name, Msg: err.Error()}
		}
	}
	return output{Unknown: true, Msg: err.Error()}
}

// held is a Session value a client keeps, as the model's value vid.
type held struct {
	vid int
	s   *session.Session
}

// client issues random calls.
type client struct {
	id     int
	w      *world
	st     *session.Store
	ds     *admin.Dataset
	rng    *rand.Rand
	vals   []held
	k      int // turns written
	errs   []string
	unsure int
}

func (c *client) content() string {
	c.k++
	return fmt.Sprintf("c%d.%d", c.id, c.k)
}

// delta returns a change for a new turn: none, the session's own key, or
// a shared one.
func (c *client) delta(v string) (string, map[string]json.RawMessage) {
	keys := []string{"", "", "k", "user:u", "app:a"}
	if c.w.ownKeysOnly {
		keys = keys[:3]
	}
	k := keys[c.rng.IntN(len(keys))]
	if k == "" {
		return "", nil
	}
	j := strconv.Quote(v)
	return k + "=" + j, map[string]json.RawMessage{k: json.RawMessage(j)}
}

func (c *client) pickID() string {
	ids := c.w.known()
	return ids[c.rng.IntN(len(ids))]
}

// pickVictim picks a session to delete: seldom the root, whose deletion
// (with Cascade) ends the history's interest.
func (c *client) pickVictim() string {
	ids := c.w.known()
	if len(ids) > 1 && c.rng.IntN(5) != 0 {
		return ids[1+c.rng.IntN(len(ids)-1)]
	}
	if len(ids) == 1 && c.rng.IntN(5) != 0 {
		return ""
	}
	return ids[0]
}

// call runs f between two readings of the clock and records it.
func (c *client) call(in input, f func(ctx context.Context) (output, error)) output {
	in.Seq = int(c.w.seq.Add(1))
	in.Faulty = c.w.faulty
	in.Lax = !strict
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t0 := c.w.now()
	out, err := f(ctx)
	t1 := c.w.now()
	if err != nil {
		o := outcome(err)
		o.NewID = out.NewID
		out = o
		if out.Unknown {
			c.errs = append(c.errs, err.Error())
		}
	}
	if out.Unknown && (in.Op == opLoad || in.Op == opInfo) {
		c.w.waitUp()
		return out // a read with no answer tells nothing
	}
	c.w.record(c.id, in, out, t0, t1)
	if out.Unknown {
		c.w.waitUp()
	}
	return out
}

// run issues n random calls.
func (c *client) run(n int) {
	for i := 0; i < n; i++ {
		c.once()
	}
}

func (c *client) keep(s *session.Session) int {
	vid := int(c.w.vid.Add(1))
	c.vals = append(c.vals, held{vid, s})
	if len(c.vals) > 4 {
		c.vals = c.vals[1:]
	}
	return vid
}

func (c *client) drop(vid int) {
	c.vals = slices.DeleteFunc(c.vals, func(h held) bool { return h.vid == vid })
}

func (c *client) once() {
	r := c.rng.IntN(100)
	grow := len(c.w.known()) < 12 // forks and rewinds while the tree is small (a Delete with Cascade then steps one session at a time)
	switch {
	case r < 16:
		c.load()
	case r < 36 && len(c.vals) > 0:
		c.append()
	case r < 44 && len(c.vals) > 0 && grow:
		c.vfork()
	case r < 50 && grow:
		c.fork()
	case r < 57:
		c.merge()
	case r < 63 && grow:
		c.rewind()
	case r < 66:
		c.detach()
	case r < 71:
		c.delete()
	case r < 77:
		c.setState()
	case r < 80:
		c.expiry()
	case r < 82:
		c.expire()
	case r < 86:
		c.tag()
	default:
		c.info()
	}
}

func (c *client) load() {
	id := c.pickID()
	vid := int(c.w.vid.Add(1))
	var s *session.Session
	out := c.call(input{Op: opLoad, ID: id, Vid: vid}, func(ctx context.Context) (output, error) {
		var err error
		if s, err = c.st.Load(ctx, id); err != nil {
			return output{}, err
		}
		return output{Contents: turnContents(s.Turns), State: string(s.State), Cancel: s.CancelRequested, Values: valuesText(s.Values)}, nil
	})
	if !out.Unknown && out.Err == "" {
		c.vals = append(c.vals, held{vid, s})
		if len(c.vals) > 4 {
			c.vals = c.vals[1:]
		}
	}
}

func turnContents(ts []session.Turn) []string {
	c := make([]string, len(ts))
	for i, t := range ts {
		c[i] = t.Content
	}
	return c
}

func valuesText(v map[string]json.RawMessage) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, k+"="+string(v[k]))
	}
	return strings.Join(parts, ",")
}

func (c *client) append() {
	h := c.vals[c.rng.IntN(len(c.vals))]
	content := c.content()
	d, delta := c.delta(content)
	t := session.Turn{Role: "user", Content: content}
	if delta != nil {
		t.Structure = &session.Structure{Delta: delta}
	}
	out := c.call(input{Op: opAppend, Vid: h.vid, Content: content, Delta: d}, func(ctx context.Context) (output, error) {
		h.s.AppendTurn(t)
		return output{}, c.st.Persist(ctx, h.s)
	})
	if out.Unknown || out.Err != "" {
		c.drop(h.vid)
	}
}

func (c *client) vfork() {
	h := c.vals[c.rng.IntN(len(c.vals))]
	if h.s.Kind == session.KindWorker {
		c.load()
		return
	}
	at := h.s.From + c.rng.IntN(len(h.s.Turns)+1) // a fork of Store.Fork's value is a tail: its indexes start at From
	worker := c.rng.IntN(4) == 0
	var opts []session.ForkOption
	if worker {
		opts = append(opts, session.AsWorker())
	}
	f, err := h.s.Fork(at, opts...)
	if err != nil {
		c.errs = append(c.errs, "in-memory Fork: "+err.Error())
		return
	}
	in := input{Op: opVFork, Vid: h.vid, At: at, NewID: f.ID, Worker: worker}
	if c.rng.IntN(3) == 0 {
		in.Initial, f.Initial = c.delta("i" + f.ID[len(f.ID)-4:])
		if !strings.Contains(in.Initial, ":") {
			in.Initial, f.Initial = "", nil // own keys a fork starts with: not modelled
		}
	}
	if c.rng.IntN(2) == 0 {
		in.Content = c.content()
		var delta map[string]json.RawMessage
		in.Delta, delta = c.delta(in.Content)
		t := session.Turn{Role: "user", Content: in.Content}
		if delta != nil {
			t.Structure = &session.Structure{Delta: delta}
		}
		f.AppendTurn(t)
	}
	in.NewVid = int(c.w.vid.Add(1))
	c.w.learn(f.ID)
	out := c.call(in, func(ctx context.Context) (output, error) { return output{}, c.st.Persist(ctx, f) })
	if !out.Unknown && out.Err == "" {
		c.vals = append(c.vals, held{in.NewVid, f})
	}
}

func (c *client) fork() {
	id := c.pickID()
	at := c.rng.IntN(5)
	worker := c.rng.IntN(4) == 0
	var opts []session.ForkOption
	if worker {
		opts = append(opts, session.AsWorker())
	}
	vid := int(c.w.vid.Add(1))
	var f *session.Session
	out := c.call(input{Op: opFork, ID: id, At: at, Worker: worker, NewVid: vid}, func(ctx context.Context) (output, error) {
		var err error
		if f, err = c.st.Fork(ctx, id, at, opts...); err != nil {
			return output{}, err
		}
		return output{NewID: f.ID, Contents: turnContents(f.Turns)}, nil
	})
	if !out.Unknown && out.Err == "" {
		c.w.learn(f.ID)
		c.vals = append(c.vals, held{vid, f})
	}
}

func (c *client) merge() {
	id := c.pickID()
	summary := "m" + c.content()
	c.call(input{Op: opMerge, ID: id, Content: summary}, func(ctx context.Context) (output, error) {
		_, err := c.st.Merge(ctx, id, session.MergeResult{Status: session.MergeCompleted, Summary: summary})
		return output{}, err
	})
}

func (c *client) rewind() {
	id := c.pickID()
	to := c.rng.IntN(5)
	out := c.call(input{Op: opRewind, ID: id, At: to}, func(ctx context.Context) (output, error) {
		_, res, err := c.st.Rewind(ctx, id, to, session.RewindOptions{})
		return output{NewID: res.Archive}, err
	})
	if !out.Unknown && out.Err == "" {
		c.w.learn(out.NewID)
	}
}

func (c *client) detach() {
	id := c.pickID()
	c.call(input{Op: opDetach, ID: id}, func(ctx context.Context) (output, error) {
		return output{}, c.st.Detach(ctx, id, session.DetachOptions{})
	})
}

// delete deletes a session, half of the time with Cascade: then each step
// Progress reports is recorded as a call of its own (one session per
// atomic update), taking effect between the Delete's call and the report.
func (c *client) delete() {
	id := c.pickVictim()
	if id == "" {
		c.load()
		return
	}
	if c.rng.IntN(2) == 0 {
		c.call(input{Op: opDelete, ID: id}, func(ctx context.Context) (output, error) {
			return output{}, c.st.Delete(ctx, id, session.DeleteOptions{})
		})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t0 := c.w.now()
	steps := 0
	err := c.st.Delete(ctx, id, session.DeleteOptions{Cascade: true, Progress: func(done, total int, s session.Step) {
		steps++
		c.w.record(c.id, input{Op: opDelStep, ID: s.Session, Top: id, Seq: int(c.w.seq.Add(1))}, output{}, t0, c.w.now())
	}})
	t1 := c.w.now()
	out := outcome(err)
	switch {
	case out.Unknown:
		c.errs = append(c.errs, err.Error())
		c.w.record(c.id, input{Op: opCascade, ID: id, Seq: int(c.w.seq.Add(1))}, out, t0, t1)
		c.w.waitUp()
	case out.Err != "" && steps == 0:
		c.w.record(c.id, input{Op: opDelete, ID: id, Seq: int(c.w.seq.Add(1))}, out, t0, t1)
	case out.Err != "":
		c.errs = append(c.errs, "cascade stopped, not checked: "+err.Error())
	}
}

func (c *client) setState() {
	id := c.pickID()
	to := []session.State{session.StateActive, session.StateSuspended, session.StateSuspended, session.StateActive,
		session.StateCompleted, session.StateFailed}[c.rng.IntN(6)]
	c.call(input{Op: opSetState, ID: id, To: string(to)}, func(ctx context.Context) (output, error) {
		tr, err := c.st.SetState(ctx, id, to, session.StateOptions{})
		return output{Changed: tr.Changed, Count: len(tr.Flagged)}, err
	})
}

func (c *client) expiry() {
	id := c.pickID()
	past := c.rng.IntN(3) != 0
	var at time.Time
	if past {
		at = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	c.call(input{Op: opExpiry, ID: id, Past: past}, func(ctx context.Context) (output, error) {
		return output{}, c.st.SetExpiry(ctx, id, at)
	})
}

func (c *client) expire() {
	c.call(input{Op: opExpire}, func(ctx context.Context) (output, error) {
		_, err := c.ds.Expire(ctx, time.Now(), admin.ExpireOptions{})
		return output{}, err
	})
}

func (c *client) tag() {
	id := c.pickID()
	tag := "t" + strconv.Itoa(c.rng.IntN(3))
	c.call(input{Op: opTag, ID: id, Tag: tag}, func(ctx context.Context) (output, error) {
		return output{}, c.st.Tag(ctx, id, tag)
	})
}

func (c *client) info() {
	id := c.pickID()
	c.call(input{Op: opInfo, ID: id}, func(ctx context.Context) (output, error) {
		in, err := c.st.Info(ctx, id)
		return output{State: string(in.State), Cancel: in.CancelRequested, Tags: strings.Join(in.Tags, ","), Count: in.Turns,
			ForkedAt: in.ForkedAt, Root: in.ParentID == "", Worker: in.Kind == session.KindWorker}, err
	})
}

// stats add up what the histories did.
type stats struct {
	histories, ops, unknown, anomalies, known, undecided int
}

// runHistory runs one history of seed against the store behind q and
// checks it; it returns the history's figures.
func runHistory(t *testing.T, q admin.Querier, cfg config, seed uint64) stats {
	t.Helper()
	w := newWorld(seed)
	w.faulty = cfg.faults > 0 || cfg.kill != nil || cfg.restart != nil
	w.ownKeysOnly = cfg.ownKeysOnly
	st := session.NewStore(q, session.WithMaxChildren(maxChildren))
	ds := admin.New(q)
	if cfg.proxy != nil {
		cfg.proxy.setFaults(0, seed)
	}

	// The root, written before the clients start.
	root := session.New(fmt.Sprintf("lc-%d", seed))
	root.App = fmt.Sprintf("lc-app-%d", seed)
	root.Append("user", "r0")
	root.Append("assistant", "r1")
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := st.Persist(ctx, root)
		cancel()
		if err == nil {
			break
		}
		if try == 20 {
			t.Fatalf("seed %d: the history's root: %v", seed, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.learn(root.ID)
	w.record(0, input{Op: opCreate, ID: root.ID, Turns: []string{"r0", "r1"}}, output{}, w.now(), w.now())

	if cfg.proxy != nil {
		cfg.proxy.setFaults(cfg.faults, seed)
	}
	var killed chan struct{}
	if cfg.kill != nil {
		killed = make(chan struct{})
		go func() {
			defer close(killed)
			time.Sleep(time.Duration(50+rand.New(rand.NewPCG(seed, 9)).IntN(600)) * time.Millisecond)
			w.mu.Lock()
			w.up = make(chan struct{})
			w.mu.Unlock()
			cfg.kill.Kill()
			err := cfg.kill.Start()
			w.mu.Lock()
			close(w.up)
			w.mu.Unlock()
			if err != nil {
				t.Errorf("seed %d: restart after kill -9: %v", seed, err)
			}
		}()
	}
	if cfg.restart != nil {
		killed = make(chan struct{})
		go func() {
			defer close(killed)
			time.Sleep(time.Duration(rand.New(rand.NewPCG(seed, 9)).IntN(200)) * time.Millisecond)
			cfg.restart.killDuringApply(seed)
		}()
	}
	var moved chan struct{}
	if cfg.move != nil {
		moved = make(chan struct{})
		go func() {
			defer close(moved)
			cfg.move(seed, root.ID)
		}()
	}
	var wg sync.WaitGroup
	clients := make([]*client, cfg.clients)
	for i := range clients {
		clients[i] = &client{id: i, w: w, st: st, ds: ds, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
		wg.Add(1)
		go func(c *client) {
			defer wg.Done()
			c.run(cfg.ops)
		}(clients[i])
	}
	wg.Wait()
	if killed != nil {
		<-killed
	}
	if moved != nil {
		<-moved
	}
	if cfg.proxy != nil {
		cfg.proxy.setFaults(0, seed)
	}
	return check(t, w, seed)
}

// check asks Porcupine whether w's history is linearizable; when it is
// not, it reports the history, the seed and where the visualization is.
// A history that is linearizable only because the model accepts the known
// anomalies (its calls are Lax) is checked again strictly; if it fails
// then, it is logged the same way as a known anomaly, counted apart and
// not failed: so that a run says how often each still happens, with the
// errors' texts to diagnose it.
func check(t *testing.T, w *world, seed uint64) stats {
	t.Helper()
	s := stats{histories: 1, ops: len(w.ops), unknown: int(w.unknown.Load())}
	model := newModel(w.name)
	res, info := porcupine.CheckOperationsVerbose(model, w.ops, 60*time.Second)
	switch res {
	case porcupine.Unknown:
		s.undecided = 1
		t.Logf("seed %d: Porcupine could not decide within 60 s (%d operations, %d unknown outcomes)", seed, s.ops, s.unknown)
		return s
	case porcupine.Illegal:
		s.anomalies = 1
		t.Errorf("seed %d: the history is not linearizable (no order of the calls explains the answers)\n%s",
			seed, report(t, w, seed, model, info, ""))
		return s
	}
	strictOps := slices.Clone(w.ops)
	lax := false
	for i, o := range strictOps {
		in := o.Input.(input)
		lax = lax || in.Lax
		in.Lax = false
		strictOps[i].Input = in
	}
	if !lax {
		return s
	}
	res, info = porcupine.CheckOperationsVerbose(model, strictOps, 60*time.Second)
	if res == porcupine.Illegal {
		s.known = 1
		t.Logf("seed %d: known anomaly: linearizable only with the known anomalies of docs/reliability.md accepted\n%s",
			seed, report(t, w, seed, model, info, "-strict"))
	}
	return s
}

// report describes w's history whose check failed with info: its calls
// in order of invocation, where Porcupine got stuck, the visualization it
// writes (its file name ends with suffix) and how to replay the seed.
func report(t *testing.T, w *world, seed uint64, model porcupine.Model, info porcupine.LinearizationInfo, suffix string) string {
	t.Helper()
	dir := os.Getenv(envOut)
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("%s: %v", envOut, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("lincheck-%d%s.html", seed, suffix))
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		t.Errorf("visualization: %v", err)
	}
	var b strings.Builder
	ops := slices.Clone(w.ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
	for _, o := range ops {
		ret := fmt.Sprintf("%.1f ms", float64(o.Return)/1e6)
		if o.Return >= math.MaxInt64/2 {
			ret = "never"
		}
		fmt.Fprintf(&b, "  client %d [%.1f ms, %s] %s\n", o.ClientId, float64(o.Call)/1e6, ret, describe(o.Input.(input), o.Output.(output), w.name))
	}
	b.WriteString(stuck(info, w.ops, w.name))
	fmt.Fprintf(&b, "visualization: %s\nreplay: go test ./internal/lincheck -run '%s' -lincheck.seed=%d -lincheck.histories=1", path, t.Name(), seed)
	return b.String()
}

// kgClient returns a kg client of endpoint; with faults it opens a
// connection per request (so that the proxy faults requests, not
// connections) and gives up on an attempt after 1 s.
func kgClient(tb testing.TB, endpoint string, faults bool) *kg.Client {
	tb.Helper()
	cfg := kg.Config{Endpoint: endpoint, Timeout: 10 * time.Second, MaxAttempts: 2, Backoff: 20 * time.Millisecond}
	if faults {
		cfg.Timeout = time.Second
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	return fusekitest.Client(tb, cfg)
}

// runAll runs n histories from seed and logs the figures.
func runAll(t *testing.T, q admin.Querier, cfg config, n int, p *proxy) stats {
	seed := baseSeed(t)
	var total stats
	t0 := time.Now()
	limit := runFor(t)
	for i := 0; i < n && total.anomalies < 10; i++ {
		if limit > 0 && time.Since(t0) > limit {
			t.Logf("stopped after %v (%s)", limit, envFor)
			break
		}
		s := runHistory(t, q, cfg, seed+uint64(i))
		total.histories += s.histories
		total.ops += s.ops
		total.unknown += s.unknown
		total.anomalies += s.anomalies
		total.known += s.known
		total.undecided += s.undecided
		if total.histories%100 == 0 {
			t.Logf("%d histories, %d operations, %d of unknown outcome, %d anomalies, %d known anomalies so far (%v)",
				total.histories, total.ops, total.unknown, total.anomalies, total.known, time.Since(t0).Round(time.Second))
		}
	}
	msg := fmt.Sprintf("%d histories from seed %d in %v: %d operations (%d clients × %d calls each, plus Cascade steps), %d of unknown outcome, %d anomalies, %d known anomalies (accepted), %d undecided",
		total.histories, seed, time.Since(t0).Round(time.Millisecond), total.ops, cfg.clients, cfg.ops, total.unknown, total.anomalies, total.known, total.undecided)
	if p != nil {
		f := p.faulted()
		msg += fmt.Sprintf("; proxy: %d connections passed, %d dropped, %d cut, %d delayed", f[faultPass], f[faultDrop], f[faultCut], f[faultDelay])
	}
	t.Log(msg)
	return total
}

// TestHistories runs random concurrent histories against the test
// binary's Fuseki, without faults, and checks each with Porcupine.
func TestHistories(t *testing.T) {
	t.Parallel()
	c := kgClient(t, fusekitest.Endpoint(t), false)
	runAll(t, c, config{clients: 4, ops: opsPerClient()}, histories(t, 140, 140, 1), nil)
}

// TestHistoriesFaults runs histories through a proxy that drops, cuts or
// delays a fifth of the requests.
func TestHistoriesFaults(t *testing.T) {
	t.Parallel()
	ep := fusekitest.Endpoint(t)
	host, ds := hostOf(t, ep)
	p := newProxy(t, host)
	c := kgClient(t, "http://"+p.addr()+ds, true)
	runAll(t, c, config{clients: 4, ops: opsPerClient(), faults: 0.2, proxy: p}, histories(t, 60, 60, 0.5), p)
}

// hostOf splits a dataset URL http://host:port/path into host:port and
// /path.
func hostOf(tb testing.TB, endpoint string) (string, string) {
	tb.Helper()
	rest, ok := strings.CutPrefix(endpoint, "http://")
	if !ok {
		tb.Fatalf("the proxy needs an http:// endpoint, not %s", endpoint)
	}
	host, path, _ := strings.Cut(rest, "/")
	return host, "/" + path
}

// TestHistoriesKill runs histories against a Fuseki of its own on TDB2,
// killed with SIGKILL once during each and restarted on the same files.
func TestHistoriesKill(t *testing.T) {
	t.Parallel()
	n := histories(t, 3, 2, 0.02)
	dir, err := os.MkdirTemp(fusekitest.ScratchDir(), "trails-lincheck-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := fusekitest.StartServer(fusekitest.Options{DataDir: dir})
	if err != nil {
		t.Fatalf("a Fuseki on TDB2 to kill: %v\nTo get one: install Java 17+ and Maven and run scripts/fuseki fetch", err)
	}
	t.Cleanup(func() { srv.Close() })
	cfg := kg.Config{Endpoint: srv.Endpoint, Timeout: 5 * time.Second, MaxAttempts: 2, Backoff: 20 * time.Millisecond}
	c := fusekitest.Client(t, cfg)
	runAll(t, c, config{clients: 4, ops: opsPerClient(), kill: srv}, n, nil)
}

// stuck describes where the longest order Porcupine found stops: the
// calls it could not place next (those whose call came first), which is
// where to look.
func stuck(info porcupine.LinearizationInfo, all []porcupine.Operation, names func(string) string) string {
	var longest []porcupine.Operation
	for _, part := range info.PartialLinearizationsOperations() {
		for _, lin := range part {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	placed := map[string]bool{}
	for _, o := range longest {
		placed[fmt.Sprint(o.Input)] = true
	}
	var left []porcupine.Operation
	seen := map[string]bool{}
	for _, o := range all {
		k := fmt.Sprint(o.Input)
		if !placed[k] && !seen[k] {
			seen[k] = true
			left = append(left, o)
		}
	}
	slices.SortFunc(left, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
	var b strings.Builder
	fmt.Fprintf(&b, "  the longest order places %d calls", len(longest))
	if len(longest) > 0 {
		o := longest[len(longest)-1]
		fmt.Fprintf(&b, ", the last: %s", describe(o.Input.(input), o.Output.(output), names))
	}
	b.WriteString("; first calls left out:\n")
	for i, o := range left {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, "    %s\n", describe(o.Input.(input), o.Output.(output), names))
	}
	return b.String()
}
