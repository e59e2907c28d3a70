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

	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
)

// signingResult is scenario 11, issue 24's bound on what
// session.WithSigning costs: single-turn appends and the agent loop of
// scenario 9 through a Store that signs each head and adds it to a local
// directory witness, alternating with the same Store without the option;
// and witness.Sign and the witness's Add timed alone.
type signingResult struct {
	WitnessDir string `json:"witness_dir"`
	FileSystem string `json:"file_system"` // the witness directory's, from /proc/mounts
	Turns      int    `json:"turns"`       // of each Store's session before its first append
	Appends    int    `json:"appends"`     // by each Store, over all measured runs

	Unsigned    stat          `json:"unsigned"` // per call
	UnsignedP50 time.Duration `json:"unsigned_p50_ns"`
	UnsignedP99 time.Duration `json:"unsigned_p99_ns"`
	Signed      stat          `json:"signed"`
	SignedP50   time.Duration `json:"signed_p50_ns"`
	SignedP99   time.Duration `json:"signed_p99_ns"`

	Sign     opTimes `json:"sign"`      // witness.Sign alone
	Add      opTimes `json:"add"`       // Dir.Add alone
	StoreAdd opTimes `json:"store_add"` // Dir.Add as the signing Store called it in the measured appends

	Loops                          int           `json:"agent_loops"`         // through each Store, over all measured runs
	LoopUnsigned                   stat          `json:"agent_loop_unsigned"` // Persist per call, median of the runs
	LoopSigned                     stat          `json:"agent_loop_signed"`
	LoopUnsignedP50, LoopSignedP50 time.Duration // over every measured call
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

// signOverhead is the bound on what signing adds: to a single
// append's p50 and to the agent loop's time per call.
const signOverhead = 0.05

// AppendOverhead is the signed append's p50 over the unsigned one's, less
// one.
func (s *signingResult) AppendOverhead() float64 {
	return ratio(float64(s.SignedP50), float64(s.UnsignedP50)) - 1
}

// LoopOverhead is the agent loop's Persist time per call through the
// signing Store over that through the unsigned one, less one.
func (s *signingResult) LoopOverhead() float64 {
	return ratio(float64(s.LoopSigned.D), float64(s.LoopUnsigned.D)) - 1
}

func (s *signingResult) appendOK() bool {
	return s.UnsignedP50 > 0 && s.AppendOverhead() <= signOverhead
}

func (s *signingResult) loopOK() bool {
	return s.LoopUnsigned.D > 0 && s.LoopOverhead() <= signOverhead
}

// timedWitness is the signing Store's witness: it times each Add of the
// witness it wraps. It is safe for concurrent use, as session.Witness
// must be.
type timedWitness struct {
	next session.Witness
	mu   sync.Mutex
	took []float64
}

var _ session.Witness = (*timedWitness)(nil)

// Add adds entry to the wrapped witness and records how long it took.
func (w *timedWitness) Add(ctx context.Context, entry []byte) (uint64, error) {
	t0 := time.Now()
	i, err := w.next.Add(ctx, entry)
	d := time.Since(t0)
	w.mu.Lock()
	w.took = append(w.took, float64(d))
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

// newNoteKey returns a new ed25519 note key's signer and verifier.
func newNoteKey(name string) (note.Signer, note.Verifier, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return nil, nil, err
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, nil, err
	}
	return s, v, nil
}

// signing runs scenario 11. The witness is a witness.Dir in a new
// directory under scratch, the directory of the TDB2 database (so on the
// same disk), removed at the end. Two Stores over the benchmark's client
// differ only by WithSigning: single-turn appends through both,
// alternating; then witness.Sign and Dir.Add alone; then agent loops
// through both, alternating.
func (b *bench) signing(ctx context.Context, scratch string) (*signingResult, error) {
	wdir, err := os.MkdirTemp(scratch, "witness-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(wdir)
	witnessKey, witnessVerifier, err := newNoteKey("witness.trails-bench")
	if err != nil {
		return nil, err
	}
	writerKey, writerVerifier, err := newNoteKey("writer.trails-bench")
	if err != nil {
		return nil, err
	}
	d, err := witness.OpenDir(ctx, wdir, witnessKey)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	tw := &timedWitness{next: d}
	unsigned := b.newStore()
	signed := b.newStore(session.WithSigning(writerKey, tw))
	r := &signingResult{WitnessDir: wdir, FileSystem: fileSystem(wdir), Turns: b.plan.signTurns}

	s, err := b.signAppends(ctx, r, unsigned, signed, tw)
	if err != nil {
		return nil, err
	}
	cp, err := d.Checkpoint(ctx)
	if err != nil {
		return nil, err
	}
	ocp, err := witness.OpenCheckpoint(cp, witnessVerifier)
	if err != nil {
		return nil, err
	}
	heads, err := witness.LatestHeads(ctx, d, ocp, note.VerifierList(writerVerifier))
	if err != nil {
		return nil, fmt.Errorf("signing: read the witness: %w", err)
	}
	h, ok := heads[s.ID]
	switch {
	case !ok:
		return nil, fmt.Errorf("signing: the witness holds no head of the signed session")
	case h.Turns != uint64(len(s.Turns)):
		return nil, fmt.Errorf("signing: the witness's last head of the signed session has %d turns, want %d", h.Turns, len(s.Turns))
	}

	// Alone: the statement of the signed session's head, at a new time.
	stmt := h.Statement
	var signs, adds []float64
	for range b.plan.signOps {
		stmt.Time = time.Now()
		t0 := time.Now()
		entry, err := witness.Sign(stmt, writerKey)
		t1 := time.Now()
		if err != nil {
			return nil, err
		}
		if _, err := d.Add(ctx, entry); err != nil {
			return nil, err
		}
		signs, adds = append(signs, float64(t1.Sub(t0))), append(adds, float64(time.Since(t1)))
	}
	r.Sign, r.Add = timesOf(signs), timesOf(adds)
	b.logf("signing: witness.Sign alone p50 %v, Dir.Add alone p50 %v (%d each), in the appends p50 %v",
		r.Sign.P50.Round(time.Microsecond), r.Add.P50.Round(time.Microsecond), b.plan.signOps, r.StoreAdd.P50.Round(time.Microsecond))

	if err := b.signLoops(ctx, r, unsigned, signed); err != nil {
		return nil, err
	}
	return r, nil
}

// signLoops measures section 9's agent loop (four structured turns per
// Persist) through unsigned and signed, each to a session of its own
// stored empty first, the same loops to both, alternating call by call and
// which goes first, loopsPerRun calls each per run after a warm-up run.
func (b *bench) signLoops(ctx context.Context, r *signingResult, unsigned, signed *session.Store) error {
	perRun := b.plan.loopsPerRun
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	type way struct {
		st   *session.Store
		s    *session.Session
		runs []sample
		lat  []float64
	}
	ways := []*way{{st: unsigned}, {st: signed}}
	for _, w := range ways {
		w.s = session.New(principal)
		if err := w.st.Persist(ctx, w.s); err != nil {
			return fmt.Errorf("signing: agent loop: store its session: %w", err)
		}
	}
	for run := 0; run <= b.plan.runs; run++ {
		sums := make([]sample, len(ways))
		for j := range perRun {
			k := run*perRun + j
			loop := b.agentLoop(k, t0.Add(time.Duration(k)*time.Second))
			for i := range ways {
				x := (i + k) % len(ways)
				w := ways[x]
				one, err := b.measure(func() error {
					for _, t := range loop {
						w.s.AppendTurn(t)
					}
					return w.st.Persist(ctx, w.s)
				})
				if err != nil {
					return fmt.Errorf("signing: agent loop %d: %w", k, err)
				}
				sums[x].d += one.d
				sums[x].trips += one.trips
				sums[x].bytes += one.bytes
				if run > 0 {
					w.lat = append(w.lat, float64(one.d))
				}
			}
		}
		if run == 0 {
			continue
		}
		n := int64(perRun)
		r.Loops += perRun
		for x, w := range ways {
			w.runs = append(w.runs, sample{d: sums[x].d / time.Duration(n), trips: sums[x].trips / n, bytes: sums[x].bytes / n})
		}
	}
	r.LoopUnsigned, r.LoopSigned = medianOf(ways[0].runs), medianOf(ways[1].runs)
	r.LoopUnsignedP50, r.LoopSignedP50 = time.Duration(percentile(ways[0].lat, 50)), time.Duration(percentile(ways[1].lat, 50))
	b.logf("signing: %d agent loops each: Persist per call unsigned %v, signed %v: %s",
		r.Loops, ms(r.LoopUnsigned.D), ms(r.LoopSigned.D), pct(r.LoopOverhead()))
	return nil
}

// signAppends measures single-turn appends through unsigned and signed,
// each to a root of its own of signTurns turns stored first: one turn per
// Persist, the same content to both, alternating call by call and which
// goes first; signAppends calls each per run after a warm-up run.
// It returns the signed Store's session. tw is signed's witness: each
// measured signed append must have made one Add.
func (b *bench) signAppends(ctx context.Context, r *signingResult, unsigned, signed *session.Store, tw *timedWitness) (*session.Session, error) {
	type way struct {
		st   *session.Store
		s    *session.Session
		runs []sample  // per call, of each measured run
		lat  []float64 // every measured call
	}
	ways := []*way{{st: unsigned}, {st: signed}}
	for _, w := range ways {
		w.s = b.newRoot(b.plan.signTurns)
		if err := w.st.Persist(ctx, w.s); err != nil {
			return nil, fmt.Errorf("signing: store a session of %d turns: %w", b.plan.signTurns, err)
		}
	}
	for run := 0; run <= b.plan.runs; run++ {
		if run == 1 {
			tw.take() // the creation's and the warm-up's
		}
		contents := make([]string, b.plan.signAppends)
		for i := range contents {
			contents[i] = b.gen.turn()
		}
		sums := make([]sample, len(ways))
		for i, c := range contents {
			for j := range ways {
				k := (i + j) % len(ways)
				w := ways[k]
				one, err := b.measure(func() error {
					w.s.Append(role(len(w.s.Turns)), c)
					return w.st.Persist(ctx, w.s)
				})
				if err != nil {
					return nil, fmt.Errorf("signing: append: %w", err)
				}
				sums[k].d += one.d
				sums[k].trips += one.trips
				sums[k].bytes += one.bytes
				if run > 0 {
					w.lat = append(w.lat, float64(one.d))
				}
			}
		}
		if run == 0 {
			continue
		}
		n := int64(len(contents))
		r.Appends += len(contents)
		for k, w := range ways {
			w.runs = append(w.runs, sample{d: sums[k].d / time.Duration(n), trips: sums[k].trips / n, bytes: sums[k].bytes / n})
		}
	}
	adds := tw.take()
	if len(adds) != r.Appends {
		return nil, fmt.Errorf("signing: the signing Store added %d entries to its witness in %d appends, want one each", len(adds), r.Appends)
	}
	r.StoreAdd = timesOf(adds)
	u, s := ways[0], ways[1]
	r.Unsigned, r.Signed = medianOf(u.runs), medianOf(s.runs)
	r.UnsignedP50, r.UnsignedP99 = time.Duration(percentile(u.lat, 50)), time.Duration(percentile(u.lat, 99))
	r.SignedP50, r.SignedP99 = time.Duration(percentile(s.lat, 50)), time.Duration(percentile(s.lat, 99))
	b.logf("signing: %d single-turn appends each: unsigned p50 %v (p99 %v), signed p50 %v (p99 %v): %s",
		r.Appends, ms(r.UnsignedP50), ms(r.UnsignedP99), ms(r.SignedP50), ms(r.SignedP99), pct(r.AppendOverhead()))
	return s.s, nil
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

// judge returns the targets of scenario 11.
func (s *signingResult) judge() []target {
	return []target{
		{tSignAppend, fmt.Sprintf("one-turn Persist p50 unsigned %s ms, signed %s ms (p99 %s, %s ms): %s; alone, witness.Sign p50 %s µs, Dir.Add %s µs",
			msf(s.UnsignedP50), msf(s.SignedP50), msf(s.UnsignedP99), msf(s.SignedP99), pct(s.AppendOverhead()), us(s.Sign.P50), us(s.Add.P50)),
			s.appendOK()},
		{tSignLoop, fmt.Sprintf("agent loop (four structured turns per Persist), Persist per call unsigned %s ms, signed %s ms: %s",
			msf(s.LoopUnsigned.D), msf(s.LoopSigned.D), pct(s.LoopOverhead())),
			s.loopOK()},
	}
}

// markdown writes section 11.
func (s *signingResult) markdown(w io.Writer) {
	fmt.Fprintf(w, "## 11. Signing and witnessing (issue 24)\n\n")
	fmt.Fprintf(w, "What `session.WithSigning` costs: after each write the store acknowledged, the Store signs a `witness.Statement` "+
		"of the session's new head with an ed25519 note key (`witness.Sign`) and adds it to its witness, here `witness.OpenDir`, "+
		"the local append-only directory log, whose `Add` writes and fsyncs the entry before it returns. "+
		"The witness directory is `%s`, beside the TDB2 database, on the same disk (%s), not a RAM disk. "+
		"The signing and the unsigned Store share the benchmark's client and Fuseki and differ only by the option.\n\n",
		s.WitnessDir, s.FileSystem)

	fmt.Fprintf(w, "**Single-turn appends.** `Persist` of one new turn through each Store, to a session of its own of %d turns "+
		"before the first append, the two alternating call by call and which goes first; percentiles over every measured call, "+
		"trips per call. The overhead is the signed p50 over the unsigned p50, less one.\n\n", s.Turns)
	table(w, []string{"appends", "turns before", "unsigned p50 ms", "p99 ms", "trips", "signed p50 ms", "p99 ms", "trips", "overhead at p50", tSignAppend},
		[][]string{{thousands(s.Appends), thousands(s.Turns), msf(s.UnsignedP50), msf(s.UnsignedP99), fmt.Sprintf("%.0f", s.Unsigned.Trips),
			msf(s.SignedP50), msf(s.SignedP99), fmt.Sprintf("%.0f", s.Signed.Trips), pct(s.AppendOverhead()), verdict(s.appendOK())}})

	fmt.Fprintf(w, "**Where signing spends its time.** Timed in-process: `witness.Sign` of a head statement of the signed session "+
		"(its canonical text and an ed25519 note signature) and `Dir.Add` of the entry it made, alone (nothing else running in "+
		"the benchmark), one after the other; and each `Dir.Add` the signing Store made in the measured appends above "+
		"(its witness wrapped in a timer). The last column is the p50 over the unsigned append's p50.\n\n")
	share := func(d time.Duration) string {
		return fmt.Sprintf("%.1f%%", 100*ratio(float64(d), float64(s.UnsignedP50)))
	}
	tableLeft(w, 1, []string{"step", "calls", "p50 µs", "p99 µs", "p50 / unsigned append p50"}, [][]string{
		{"`witness.Sign` alone", thousands(s.Sign.Calls), us(s.Sign.P50), us(s.Sign.P99), share(s.Sign.P50)},
		{"`Dir.Add` alone (write, fsync)", thousands(s.Add.Calls), us(s.Add.P50), us(s.Add.P99), share(s.Add.P50)},
		{"both alone (p50s added)", "—", us(s.Sign.P50 + s.Add.P50), "—", share(s.Sign.P50 + s.Add.P50)},
		{"`Dir.Add` in the signed appends", thousands(s.StoreAdd.Calls), us(s.StoreAdd.P50), us(s.StoreAdd.P99), share(s.StoreAdd.P50)},
	})

	fmt.Fprintf(w, "**Agent loop.** Section 9's agent loop (a question, a model turn with a tool call, its result and the answer: "+
		"four structured turns per `Persist`) through each Store, to a session of its own stored empty first, the same loops to both, "+
		"alternating call by call and which goes first; %d calls each per run, the median of the runs' mean time per call, "+
		"and the p50 over every measured call. The overhead is the signed median over the unsigned one, less one.\n\n", s.Loops/max(1, s.LoopUnsigned.Runs))
	table(w, []string{"Store", "loops", "Persist ms per call", "p50 ms", "trips", "overhead", tSignLoop},
		[][]string{
			{"unsigned", thousands(s.Loops), msf(s.LoopUnsigned.D), msf(s.LoopUnsignedP50), fmt.Sprintf("%.0f", s.LoopUnsigned.Trips), "—", "—"},
			{"signing", thousands(s.Loops), msf(s.LoopSigned.D), msf(s.LoopSignedP50), fmt.Sprintf("%.0f", s.LoopSigned.Trips), pct(s.LoopOverhead()), verdict(s.loopOK())},
		})
}
