package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
)

// signingResult is scenario 11, the bound of issues 24 and 37 on what
// session.WithSigning costs: single-turn appends and the agent loop of
// scenario 9 through four Stores taking turns call by call, one without
// signing, one adding its statements to the witness as a process of its
// own (trails-admin witness serve) over HTTP through a witness.Spool, one
// to that witness over HTTP directly, one to a witness.Dir in this
// process; and witness.Sign and each witness's Add timed alone.
type signingResult struct {
	ServerDir       string        `json:"witness_server_dir"` // trails-admin witness serve's --dir
	ServerURL       string        `json:"witness_server_url"`
	CheckpointEvery time.Duration `json:"witness_server_checkpoint_every_ns"`
	WitnessDir      string        `json:"witness_dir"` // the in-process witness.Dir's
	SpoolDir        string        `json:"spool_dir"`   // the witness.Spool's
	FileSystem      string        `json:"file_system"` // of the directory both are under, from /proc/mounts
	Store           kg.Store      `json:"store"`       // the store the four Stores write to
	Turns           int           `json:"turns"`       // of each Store's session before its first append
	Appends         int           `json:"appends"`     // by each Store, over all measured runs
	Loops           int           `json:"agent_loops"` // through each Store, over all measured runs
	LoopsPerRun     int           `json:"agent_loops_per_run"`

	Unsigned storeTimes `json:"unsigned"`
	Spool    storeTimes `json:"spool"` // signing, the witness server over HTTP through a Spool
	HTTP     storeTimes `json:"http"`  // signing, the witness server over HTTP
	Dir      storeTimes `json:"dir"`   // signing, witness.Dir in this process

	Sign       opTimes `json:"sign"`        // witness.Sign alone
	SpoolAdd   opTimes `json:"spool_add"`   // Spool.Add alone
	SpoolFlush opTimes `json:"spool_flush"` // Spool.Add then Flush alone: until the server has it
	HTTPAdd    opTimes `json:"http_add"`    // witness.Client.Add alone
	DirAdd     opTimes `json:"dir_add"`     // Dir.Add alone
}

// storeTimes is what one Store measured, per call: its single-turn
// appends and its agent loops, and the Adds its witness made in the
// measured appends (none without signing).
type storeTimes struct {
	Append    stat          `json:"append"` // the median of the runs' mean
	AppendP50 time.Duration `json:"append_p50_ns"`
	AppendP99 time.Duration `json:"append_p99_ns"`
	Loop      stat          `json:"agent_loop"`
	LoopP50   time.Duration `json:"agent_loop_p50_ns"`
	LoopP99   time.Duration `json:"agent_loop_p99_ns"`
	Adds      opTimes       `json:"adds"`
}

// opTimes is the latency of calls timed one by one.
type opTimes struct {
	Calls int           `json:"calls"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
}

func timesOf(xs []float64) opTimes {
	return opTimes{Calls: len(xs), P50: time.Duration(percentile(xs, 50)), P99: time.Duration(percentile(xs, 99))}
}

// signOverhead is the issues' bound on what signing adds: to a single
// append's p50 and to the agent loop's.
const signOverhead = 0.05

// appendOverhead is t's append p50 over the unsigned one's, less one.
func (s *signingResult) appendOverhead(t storeTimes) float64 {
	return ratio(float64(t.AppendP50), float64(s.Unsigned.AppendP50)) - 1
}

// loopOverhead is t's agent loop p50 over the unsigned one's, less one.
func (s *signingResult) loopOverhead(t storeTimes) float64 {
	return ratio(float64(t.LoopP50), float64(s.Unsigned.LoopP50)) - 1
}

func (s *signingResult) appendOK(t storeTimes) bool {
	return s.Unsigned.AppendP50 > 0 && t.AppendP50 > 0 && s.appendOverhead(t) <= signOverhead
}

func (s *signingResult) loopOK(t storeTimes) bool {
	return s.Unsigned.LoopP50 > 0 && t.LoopP50 > 0 && s.loopOverhead(t) <= signOverhead
}

// timedWitness is a signing Store's witness: it times each Add of the
// witness it wraps. It is safe for concurrent use, as session.Witness
// must be.
type timedWitness struct {
	next  session.Witness
	mu    sync.Mutex
	took  []float64
	added int // entries added, over its life
}

var _ session.Witness = (*timedWitness)(nil)

// Add adds entry to the wrapped witness and records how long it took.
func (w *timedWitness) Add(ctx context.Context, entry []byte) (uint64, error) {
	t0 := time.Now()
	i, err := w.next.Add(ctx, entry)
	d := time.Since(t0)
	w.mu.Lock()
	w.took = append(w.took, float64(d))
	if err == nil {
		w.added++
	}
	w.mu.Unlock()
	return i, err
}

// take returns the times of the Adds since the last take and forgets them.
func (w *timedWitness) take() []float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.took
	w.took = nil
	return t
}

// count returns how many entries it added.
func (w *timedWitness) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.added
}

// newNoteKey returns a new ed25519 note key's signer and verifier, and
// the verifier key's text form (name+hash+base64, as a key list has it).
func newNoteKey(name string) (note.Signer, note.Verifier, string, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return nil, nil, "", err
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, nil, "", err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, nil, "", err
	}
	return s, v, vkey, nil
}

// signWay is one of the Stores scenario 11 measures, and its calls.
type signWay struct {
	st *session.Store
	tw *timedWitness // its witness; nil for the unsigned Store
	s  *session.Session
	t  *storeTimes // where its figures go
}

// signing runs scenario 11 with bin, trails-admin, as the witness server.
// The server, the spool and the in-process witness.Dir keep their files in new
// directories under scratch, the directory of the store's database (so
// on the same disk), removed at the end; the server is stopped at the end,
// whatever happened. Four Stores over the benchmark's client differ only
// by WithSigning and its witness: single-turn appends through all four,
// taking turns; then witness.Sign and each witness's Add alone; then agent
// loops through all four, taking turns.
func (b *bench) signing(ctx context.Context, scratch, bin string) (*signingResult, error) {
	wdir, err := os.MkdirTemp(scratch, "witness-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(wdir)
	witnessKey, witnessVerifier, _, err := newNoteKey("witness.trails-bench")
	if err != nil {
		return nil, err
	}
	writerKey, writerVerifier, writerText, err := newNoteKey("writer.trails-bench")
	if err != nil {
		return nil, err
	}
	d, err := witness.OpenDir(ctx, wdir, witnessKey)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	srv, err := startWitness(ctx, bin, scratch, writerText)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	b.logf("signing: trails-admin witness serve answers at %s (log %s)", srv.URL, srv.Log)
	client, err := witness.NewClient(srv.URL, nil)
	if err != nil {
		return nil, err
	}
	sdir, err := os.MkdirTemp(scratch, "spool-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(sdir)
	sp, err := witness.OpenSpool(sdir, client, nil)
	if err != nil {
		return nil, err
	}
	defer sp.Close()
	r := &signingResult{ServerDir: srv.Dir, ServerURL: srv.URL, CheckpointEvery: witnessEvery, WitnessDir: wdir, SpoolDir: sdir,
		FileSystem: fileSystem(scratch), Store: b.store, Turns: b.plan.signTurns, LoopsPerRun: b.plan.signLoops}
	spoolTW, httpTW, dirTW := &timedWitness{next: sp}, &timedWitness{next: client}, &timedWitness{next: d}
	ways := []*signWay{
		{st: b.newStore(), t: &r.Unsigned},
		{st: b.newStore(session.WithSigning(writerKey, httpTW)), tw: httpTW, t: &r.HTTP},
		{st: b.newStore(session.WithSigning(writerKey, dirTW)), tw: dirTW, t: &r.Dir},
		{st: b.newStore(session.WithSigning(writerKey, spoolTW)), tw: spoolTW, t: &r.Spool},
	}
	err = b.signAppends(ctx, r, ways)
	if err == nil {
		err = b.signAlone(ctx, r, writerKey, writerVerifier, witnessVerifier, srv, client, d, sp, ways)
	}
	if err == nil {
		err = b.signLoops(ctx, r, ways)
	}
	if err == nil {
		// The server's log: the two HTTP Stores' entries, and the HTTP
		// client's and the spool's timed alone.
		n := uint64(ways[1].tw.count() + ways[3].tw.count() + 2*r.Sign.Calls)
		err = b.spoolDelivered(ctx, sp, srv, client, writerVerifier, ways[3], n)
	}
	if err != nil && ctx.Err() == nil && srv.exited() {
		return nil, fmt.Errorf("%w (the witness server exited, %v; its log ends:\n%s)", err, srv.cmd.ProcessState, srv.tail())
	}
	return r, err
}

// signAlone checks that each witness holds the last head of the session
// its Store appended to, then times witness.Sign of a statement of that
// head (at a new time) and the Add of the entry it made to each witness,
// alone (nothing else running in the benchmark), the two witnesses taking
// turns going first.
func (b *bench) signAlone(ctx context.Context, r *signingResult, writerKey note.Signer, writer, dirKey note.Verifier,
	srv *witnessProc, client *witness.Client, d *witness.Dir, sp *witness.Spool, ways []*signWay) error {
	if err := flushSpool(ctx, sp); err != nil {
		return err
	}
	signed, err := srv.checkpoint(ctx, client, uint64(ways[1].tw.count()+ways[3].tw.count()))
	if err != nil {
		return err
	}
	if _, err := lastHead(ctx, "the witness server (the spooled Store's)", client, signed, srv.verifier, writer, ways[3].s); err != nil {
		return err
	}
	if _, err := lastHead(ctx, "the witness server", client, signed, srv.verifier, writer, ways[1].s); err != nil {
		return err
	}
	if signed, err = d.Checkpoint(ctx); err != nil {
		return err
	}
	h, err := lastHead(ctx, "the witness.Dir", d, signed, dirKey, writer, ways[2].s)
	if err != nil {
		return err
	}

	stmt := h.Statement
	wits := []session.Witness{client, d, sp}
	var signs, flushes []float64
	adds := make([][]float64, len(wits))
	for i := range b.plan.signOps {
		stmt.Time = time.Now()
		t0 := time.Now()
		entry, err := witness.Sign(stmt, writerKey)
		signs = append(signs, float64(time.Since(t0)))
		if err != nil {
			return err
		}
		for j := range wits {
			x := (i + j) % len(wits)
			t0 := time.Now()
			if _, err := wits[x].Add(ctx, entry); err != nil {
				return fmt.Errorf("signing: add alone: %w", err)
			}
			adds[x] = append(adds[x], float64(time.Since(t0)))
			if wits[x] == session.Witness(sp) {
				if err := flushSpool(ctx, sp); err != nil {
					return err
				}
				flushes = append(flushes, float64(time.Since(t0)))
			}
		}
	}
	r.Sign, r.HTTPAdd, r.DirAdd, r.SpoolAdd, r.SpoolFlush = timesOf(signs), timesOf(adds[0]), timesOf(adds[1]), timesOf(adds[2]), timesOf(flushes)
	b.logf("signing: alone (%d each), witness.Sign p50 %v; Add p50 over HTTP %v (p99 %v), Dir %v (p99 %v), Spool %v (p99 %v; in the server's log after %v)", b.plan.signOps,
		r.Sign.P50.Round(time.Microsecond), r.HTTPAdd.P50.Round(time.Microsecond), r.HTTPAdd.P99.Round(time.Microsecond),
		r.DirAdd.P50.Round(time.Microsecond), r.DirAdd.P99.Round(time.Microsecond),
		r.SpoolAdd.P50.Round(time.Microsecond), r.SpoolAdd.P99.Round(time.Microsecond), r.SpoolFlush.P50.Round(time.Microsecond))
	return nil
}

// flushSpool waits, at most a minute, until sp has forwarded every entry.
func flushSpool(ctx context.Context, sp *witness.Spool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := sp.Flush(ctx); err != nil {
		return fmt.Errorf("signing: %w (spool %+v)", err, sp.Stats())
	}
	return nil
}

// spoolDelivered checks, at the end, that the witness server holds the
// spooled Store's last head in a checkpoint of size entries, and that the
// spool refused nothing.
func (b *bench) spoolDelivered(ctx context.Context, sp *witness.Spool, srv *witnessProc, client *witness.Client, writer note.Verifier, w *signWay, size uint64) error {
	if err := flushSpool(ctx, sp); err != nil {
		return err
	}
	if st := sp.Stats(); st.Refused > 0 {
		return fmt.Errorf("signing: the witness server refused %d spooled entries", st.Refused)
	}
	signed, err := srv.checkpoint(ctx, client, size)
	if err != nil {
		return err
	}
	_, err = lastHead(ctx, "the witness server (the spooled Store's)", client, signed, srv.verifier, writer, w.s)
	return err
}

// lastHead returns the last head of s that w (called name) holds as of its
// checkpoint signed, which v verifies, signed by writer; an error unless it
// has s's turn count.
func lastHead(ctx context.Context, name string, w witness.Witness, signed []byte, v, writer note.Verifier, s *session.Session) (witness.Head, error) {
	cp, err := witness.OpenCheckpoint(signed, v)
	if err != nil {
		return witness.Head{}, fmt.Errorf("signing: %s's checkpoint: %w", name, err)
	}
	heads, err := witness.LatestHeads(ctx, w, cp, note.VerifierList(writer))
	if err != nil {
		return witness.Head{}, fmt.Errorf("signing: read %s: %w", name, err)
	}
	h, ok := heads[s.ID]
	switch {
	case !ok:
		return h, fmt.Errorf("signing: %s holds no head of the signed session", name)
	case h.Turns != uint64(len(s.Turns)):
		return h, fmt.Errorf("signing: %s's last head of the signed session has %d turns, want %d", name, h.Turns, len(s.Turns))
	}
	return h, nil
}

// alternate makes calls through n ways: a warm-up run, then b.plan.runs
// measured runs of perRun rounds each (measured, if not nil, is called
// before the first measured run). Round k (counted over all runs) calls
// round(k) once, then the function it returns for each way i, the ways
// taking turns and which goes first rotating from round to round. It
// returns, per way, each measured run's mean per call and every measured
// call.
func (b *bench) alternate(n, perRun int, measured func(), round func(k int) func(i int) error) ([][]sample, [][]float64, error) {
	runs, lat := make([][]sample, n), make([][]float64, n)
	for run := 0; run <= b.plan.runs; run++ {
		if run == 1 && measured != nil {
			measured()
		}
		sums := make([]sample, n)
		for j := range perRun {
			k := run*perRun + j
			call := round(k)
			for i := range n {
				x := (i + k) % n
				one, err := b.measure(func() error { return call(x) })
				if err != nil {
					return nil, nil, fmt.Errorf("call %d: %w", k, err)
				}
				sums[x].d += one.d
				sums[x].trips += one.trips
				sums[x].bytes += one.bytes
				if run > 0 {
					lat[x] = append(lat[x], float64(one.d))
				}
			}
		}
		if run == 0 {
			continue
		}
		m := int64(perRun)
		for x := range n {
			runs[x] = append(runs[x], sample{d: sums[x].d / time.Duration(m), trips: sums[x].trips / m, bytes: sums[x].bytes / m})
		}
	}
	return runs, lat, nil
}

// signAppends measures single-turn appends through ways, each to a root
// of its own of signTurns turns stored first: one turn per Persist, the
// same content to every way, signAppends calls each per run. Each signed
// way's witness must have made one Add per measured append.
func (b *bench) signAppends(ctx context.Context, r *signingResult, ways []*signWay) error {
	for _, w := range ways {
		w.s = b.newRoot(b.plan.signTurns)
		if err := w.st.Persist(ctx, w.s); err != nil {
			return fmt.Errorf("signing: store a session of %d turns: %w", b.plan.signTurns, err)
		}
	}
	runs, lat, err := b.alternate(len(ways), b.plan.signAppends, func() {
		for _, w := range ways {
			if w.tw != nil {
				w.tw.take() // the creation's and the warm-up's
			}
		}
	}, func(int) func(int) error {
		c := b.gen.turn()
		return func(i int) error {
			w := ways[i]
			w.s.Append(role(len(w.s.Turns)), c)
			return w.st.Persist(ctx, w.s)
		}
	})
	if err != nil {
		return fmt.Errorf("signing: append: %w", err)
	}
	r.Appends = b.plan.runs * b.plan.signAppends
	for i, w := range ways {
		w.t.Append = medianOf(runs[i])
		w.t.AppendP50, w.t.AppendP99 = time.Duration(percentile(lat[i], 50)), time.Duration(percentile(lat[i], 99))
		if w.tw == nil {
			continue
		}
		adds := w.tw.take()
		if len(adds) != r.Appends {
			return fmt.Errorf("signing: a signing Store added %d entries to its witness in %d appends, want one each", len(adds), r.Appends)
		}
		w.t.Adds = timesOf(adds)
	}
	b.logf("signing: %d single-turn appends each: p50 unsigned %v (p99 %v), spooled %v (p99 %v): %s, over HTTP %v (p99 %v): %s, Dir %v (p99 %v): %s",
		r.Appends, ms(r.Unsigned.AppendP50), ms(r.Unsigned.AppendP99), ms(r.Spool.AppendP50), ms(r.Spool.AppendP99), pct(r.appendOverhead(r.Spool)),
		ms(r.HTTP.AppendP50), ms(r.HTTP.AppendP99), pct(r.appendOverhead(r.HTTP)),
		ms(r.Dir.AppendP50), ms(r.Dir.AppendP99), pct(r.appendOverhead(r.Dir)))
	return nil
}

// signLoops measures section 9's agent loop (four structured turns per
// Persist) through ways, each to a session of its own stored empty first,
// the same loops to every way, loopsPerRun calls each per run.
func (b *bench) signLoops(ctx context.Context, r *signingResult, ways []*signWay) error {
	for _, w := range ways {
		w.s = session.New(principal)
		if err := w.st.Persist(ctx, w.s); err != nil {
			return fmt.Errorf("signing: agent loop: store its session: %w", err)
		}
	}
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	runs, lat, err := b.alternate(len(ways), b.plan.signLoops, nil, func(k int) func(int) error {
		loop := b.agentLoop(k, t0.Add(time.Duration(k)*time.Second))
		return func(i int) error {
			w := ways[i]
			for _, t := range loop {
				w.s.AppendTurn(t)
			}
			return w.st.Persist(ctx, w.s)
		}
	})
	if err != nil {
		return fmt.Errorf("signing: agent loop: %w", err)
	}
	r.Loops = b.plan.runs * b.plan.signLoops
	for i, w := range ways {
		w.t.Loop = medianOf(runs[i])
		w.t.LoopP50, w.t.LoopP99 = time.Duration(percentile(lat[i], 50)), time.Duration(percentile(lat[i], 99))
		if w.tw != nil {
			w.tw.take()
		}
	}
	b.logf("signing: %d agent loops each: Persist p50 unsigned %v (p99 %v), spooled %v (p99 %v): %s, over HTTP %v (p99 %v): %s, Dir %v (p99 %v): %s",
		r.Loops, ms(r.Unsigned.LoopP50), ms(r.Unsigned.LoopP99), ms(r.Spool.LoopP50), ms(r.Spool.LoopP99), pct(r.loopOverhead(r.Spool)),
		ms(r.HTTP.LoopP50), ms(r.HTTP.LoopP99), pct(r.loopOverhead(r.HTTP)),
		ms(r.Dir.LoopP50), ms(r.Dir.LoopP99), pct(r.loopOverhead(r.Dir)))
	return nil
}

// fileSystem describes the file system path is on, from /proc/mounts: its
// type, device and mount point; "file system unknown" when it cannot tell.
func fileSystem(path string) string {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "file system unknown"
	}
	mounts, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return "file system unknown"
	}
	best, desc := "", "file system unknown"
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		mnt := strings.ReplaceAll(f[1], `\040`, " ")
		under := p == mnt || strings.HasPrefix(p, strings.TrimSuffix(mnt, "/")+"/")
		if under && len(mnt) >= len(best) { // the last mount on a point hides those before
			best, desc = mnt, fmt.Sprintf("%s, %s mounted on %s", f[2], f[0], mnt)
		}
	}
	return desc
}

// judge returns the targets of scenario 11: the witness server's (issue
// 37's), through a spool and waited for, then the in-process
// witness.Dir's (issue 24's).
func (s *signingResult) judge() []target {
	app := func(name, way string, t storeTimes, add opTimes, addName string) target {
		return target{name, fmt.Sprintf("one-turn Persist p50 unsigned %s ms, signing %s %s ms (p99 %s, %s ms): %s; alone, witness.Sign p50 %s µs, %s %s µs",
			msf(s.Unsigned.AppendP50), way, msf(t.AppendP50), msf(s.Unsigned.AppendP99), msf(t.AppendP99), pct(s.appendOverhead(t)),
			us(s.Sign.P50), addName, us(add.P50)), s.appendOK(t)}
	}
	loop := func(name, way string, t storeTimes) target {
		return target{name, fmt.Sprintf("agent loop (four structured turns per Persist), Persist p50 unsigned %s ms, signing %s %s ms (p99 %s, %s ms): %s",
			msf(s.Unsigned.LoopP50), way, msf(t.LoopP50), msf(s.Unsigned.LoopP99), msf(t.LoopP99), pct(s.loopOverhead(t))), s.loopOK(t)}
	}
	return []target{
		app(tSpoolAppend, "over HTTP through a spool", s.Spool, s.SpoolAdd, "Spool.Add"),
		loop(tSpoolLoop, "over HTTP through a spool", s.Spool),
		app(tSignAppend, "over HTTP", s.HTTP, s.HTTPAdd, "Client.Add"),
		loop(tSignLoop, "over HTTP", s.HTTP),
		app(tSignDirAppend, "to a local Dir", s.Dir, s.DirAdd, "Dir.Add"),
		loop(tSignDirLoop, "to a local Dir", s.Dir),
	}
}

// markdown writes section 11.
func (s *signingResult) markdown(w io.Writer) {
	fmt.Fprintf(w, "## 11. Signing and witnessing (issues 24 and 37)\n\n")
	fmt.Fprintf(w, "What `session.WithSigning` costs: after each write the store acknowledged, the Store signs a `witness.Statement` "+
		"of the session's new head with the writer's ed25519 note key (`witness.Sign`) and adds it to its witness. Three signing Stores: "+
		"**over HTTP, spooled**, the witness as a process of its own that alone holds the witness key (`trails-admin witness serve` "+
		"built from this checkout, `--checkpoint-every %v`, so it signs checkpoints while the writers add), reached through a "+
		"`witness.Spool` (directory `%s`), whose `Add` writes the entry to the writer's spool file and fsyncs it, a goroutine "+
		"forwarding it to the server with a `witness.Client`; **over HTTP**, the same server reached by a `witness.Client` directly, "+
		"whose `Add` is one `POST /add` on the loopback interface, answered once the server has checked the writer's signature "+
		"against its key list and written and fsynced the entry (the server's directory `%s`); and **local Dir**, `witness.OpenDir` "+
		"in the benchmark's process, whose `Add` writes and fsyncs the entry (directory `%s`). All directories are beside the %s "+
		"database, on the same disk (%s), not a RAM disk. The four Stores (with the unsigned one) share the benchmark's client and "+
		"%s and differ only by the option; each call goes through all four, taking turns, and which goes first rotates from "+
		"call to call. At the end the benchmark checks that the server's signed checkpoint holds the spooled Store's last head.\n\n",
		s.CheckpointEvery, s.SpoolDir, s.ServerDir, s.WitnessDir, storeDisk(s.Store), s.FileSystem, storeName(s.Store))

	row := func(name string, t storeTimes, over string, verdicts ...string) []string {
		return append([]string{name, msf(t.AppendP50), msf(t.AppendP99), fmt.Sprintf("%.0f", t.Append.Trips), over}, verdicts...)
	}
	fmt.Fprintf(w, "**Single-turn appends.** `Persist` of one new turn through each Store, to a session of its own of %d turns "+
		"before the first append, the same content to each; %s appends each, percentiles over every measured call, trips per call. "+
		"The overhead is the signing Store's p50 over the unsigned one's, less one.\n\n", s.Turns, thousands(s.Appends))
	table(w, []string{"Store", "p50 ms", "p99 ms", "trips", "overhead at p50", tSpoolAppend, tSignAppend, tSignDirAppend}, [][]string{
		row("unsigned", s.Unsigned, "—", "—", "—", "—"),
		row("signing, over HTTP, spooled", s.Spool, pct(s.appendOverhead(s.Spool)), verdict(s.appendOK(s.Spool)), "—", "—"),
		row("signing, over HTTP", s.HTTP, pct(s.appendOverhead(s.HTTP)), "—", verdict(s.appendOK(s.HTTP)), "—"),
		row("signing, local Dir", s.Dir, pct(s.appendOverhead(s.Dir)), "—", "—", verdict(s.appendOK(s.Dir))),
	})

	fmt.Fprintf(w, "**Where signing spends its time.** Timed in-process: `witness.Sign` of a head statement of a signed session "+
		"(its canonical text and an ed25519 note signature), and the `Add` of the entry it made to each witness, alone (nothing else "+
		"running in the benchmark), the three witnesses taking turns going first, the spool's `Add` followed by a `Flush` that waits "+
		"until the server has the entry; and each `Add` the signing Stores made in the measured appends above (their witnesses "+
		"wrapped in a timer). The last column is the p50 over the unsigned append's p50.\n\n")
	share := func(d time.Duration) string {
		return fmt.Sprintf("%.1f%%", 100*ratio(float64(d), float64(s.Unsigned.AppendP50)))
	}
	tableLeft(w, 1, []string{"step", "calls", "p50 µs", "p99 µs", "p50 / unsigned append p50"}, [][]string{
		{"`witness.Sign` alone", thousands(s.Sign.Calls), us(s.Sign.P50), us(s.Sign.P99), share(s.Sign.P50)},
		{"`Spool.Add` alone (write, fsync)", thousands(s.SpoolAdd.Calls), us(s.SpoolAdd.P50), us(s.SpoolAdd.P99), share(s.SpoolAdd.P50)},
		{"`Spool.Add`, then `Flush` (the entry in the server's log)", thousands(s.SpoolFlush.Calls), us(s.SpoolFlush.P50), us(s.SpoolFlush.P99), "—"},
		{"`Spool.Add` in the signed appends", thousands(s.Spool.Adds.Calls), us(s.Spool.Adds.P50), us(s.Spool.Adds.P99), share(s.Spool.Adds.P50)},
		{"`Client.Add` alone (HTTP: the server checks, writes, fsyncs)", thousands(s.HTTPAdd.Calls), us(s.HTTPAdd.P50), us(s.HTTPAdd.P99), share(s.HTTPAdd.P50)},
		{"`witness.Sign` + `Client.Add` alone (p50s added)", "—", us(s.Sign.P50 + s.HTTPAdd.P50), "—", share(s.Sign.P50 + s.HTTPAdd.P50)},
		{"`Client.Add` in the signed appends", thousands(s.HTTP.Adds.Calls), us(s.HTTP.Adds.P50), us(s.HTTP.Adds.P99), share(s.HTTP.Adds.P50)},
		{"`Dir.Add` alone (write, fsync)", thousands(s.DirAdd.Calls), us(s.DirAdd.P50), us(s.DirAdd.P99), share(s.DirAdd.P50)},
		{"`witness.Sign` + `Dir.Add` alone (p50s added)", "—", us(s.Sign.P50 + s.DirAdd.P50), "—", share(s.Sign.P50 + s.DirAdd.P50)},
		{"`Dir.Add` in the signed appends", thousands(s.Dir.Adds.Calls), us(s.Dir.Adds.P50), us(s.Dir.Adds.P99), share(s.Dir.Adds.P50)},
	})

	fmt.Fprintf(w, "**Agent loop.** Section 9's agent loop (a question, a model turn with a tool call, its result and the answer: "+
		"four structured turns per `Persist`) through each Store, to a session of its own stored empty first, the same loops to each; "+
		"%s loops each, %d per run; percentiles over every measured call, and the median of the runs' mean time per call. "+
		"The overhead is the signing Store's p50 over the unsigned one's, less one.\n\n", thousands(s.Loops), s.LoopsPerRun)
	lrow := func(name string, t storeTimes, over string, verdicts ...string) []string {
		return append([]string{name, msf(t.LoopP50), msf(t.LoopP99), msf(t.Loop.D), fmt.Sprintf("%.0f", t.Loop.Trips), over}, verdicts...)
	}
	table(w, []string{"Store", "p50 ms", "p99 ms", "mean ms per call", "trips", "overhead at p50", tSpoolLoop, tSignLoop, tSignDirLoop}, [][]string{
		lrow("unsigned", s.Unsigned, "—", "—", "—", "—"),
		lrow("signing, over HTTP, spooled", s.Spool, pct(s.loopOverhead(s.Spool)), verdict(s.loopOK(s.Spool)), "—", "—"),
		lrow("signing, over HTTP", s.HTTP, pct(s.loopOverhead(s.HTTP)), "—", verdict(s.loopOK(s.HTTP)), "—"),
		lrow("signing, local Dir", s.Dir, pct(s.loopOverhead(s.Dir)), "—", "—", verdict(s.loopOK(s.Dir))),
	})
}
