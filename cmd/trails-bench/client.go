package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trails-kg/trails/internal/exit"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// allocRow is the client's allocation cost of loading one history:
// runtime.MemStats differences over the measured loads (what go test
// -benchmem reports), divided by the turns loaded.
type allocRow struct {
	What          string  `json:"what"`
	Turns         int     `json:"turns"`
	Loads         int     `json:"loads"`
	AllocsPerTurn float64 `json:"allocs_per_turn"`
	BytesPerTurn  float64 `json:"bytes_per_turn"`
	ContentPerTrn float64 `json:"content_bytes_per_turn"`
}

// rssResult is what the child process reports of its load of a large
// session: its resident set before the load, its peak (VmHWM) and the
// heap still in use after a GC with the session held.
type rssResult struct {
	Turns        int           `json:"turns"`
	ContentBytes int64         `json:"content_bytes"`
	BaseRSS      int64         `json:"base_rss_bytes"`
	PeakRSS      int64         `json:"peak_rss_bytes"`
	MaxRSS       int64         `json:"getrusage_maxrss_bytes"`
	HeapLive     int64         `json:"heap_live_bytes"`   // HeapAlloc after a GC: what the loaded session holds
	HeapInUse    int64         `json:"heap_in_use_bytes"` // HeapInuse after a GC: with the spans' free space
	Load         time.Duration `json:"load_ns"`
	Store        time.Duration `json:"store_ns"` // how long the parent took to bulk-load it
}

// Ratio is the peak resident set over the content's size.
func (r rssResult) Ratio() float64 {
	if r.ContentBytes == 0 {
		return 0
	}
	return float64(r.PeakRSS) / float64(r.ContentBytes)
}

// allocCost measures the client's allocations per loaded turn, on the load
// scenario's flat session and deepest chain of allocTurns turns.
func (b *bench) allocCost(ctx context.Context, fx *loadFixtures) ([]allocRow, error) {
	h := b.plan.allocTurns
	deepest := b.plan.depths[len(b.plan.depths)-1]
	targets := []struct {
		what string
		id   string
		s    *session.Session
	}{
		{"flat root", fx.flats[h].ID, fx.flats[h]},
		{fmt.Sprintf("fork at depth %d", deepest), fx.chains[[2]int{h, deepest}].leaf().ID, fx.chains[[2]int{h, deepest}].leaf()},
	}
	var rows []allocRow
	for _, t := range targets {
		if _, err := b.st.Load(ctx, t.id); err != nil { // warm-up
			return nil, err
		}
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range b.plan.runs {
			if _, err := b.st.Load(ctx, t.id); err != nil {
				return nil, err
			}
		}
		runtime.ReadMemStats(&m1)
		n := float64(b.plan.runs * h)
		var content int
		for _, turn := range t.s.Turns {
			content += len(turn.Content)
		}
		rows = append(rows, allocRow{
			What: t.what, Turns: h, Loads: b.plan.runs,
			AllocsPerTurn: float64(m1.Mallocs-m0.Mallocs) / n,
			BytesPerTurn:  float64(m1.TotalAlloc-m0.TotalAlloc) / n,
			ContentPerTrn: float64(content) / float64(h),
		})
	}
	return rows, nil
}

// childFlag, first on the command line, makes the binary the peak-memory
// child: trails-bench -rss-child STORE ENDPOINT ID loads session ID from
// the store of profile STORE at ENDPOINT and prints an rssResult as JSON.
// Not in the usage text.
const childFlag = "-rss-child"

// peakRSS bulk-loads a root session of rssTurns turns in the shape
// Persist writes (through Persist it takes minutes: Fuseki parses SPARQL
// Update several times slower than N-Quads) and has a child process (this
// binary again) load it with Store.Load and report its memory.
func (b *bench) peakRSS(ctx context.Context) (rssResult, error) {
	s := b.newRoot(b.plan.rssTurns)
	t0 := time.Now()
	if err := b.bulkRoot(ctx, s); err != nil {
		return rssResult{}, fmt.Errorf("rss: store a session of %d turns: %w", b.plan.rssTurns, err)
	}
	stored := time.Since(t0)
	var content int64
	for _, t := range s.Turns {
		content += int64(len(t.Content))
	}
	id := s.ID
	s = nil // the parent's copy is not the child's business
	runtime.GC()
	exe, err := os.Executable()
	if err != nil {
		return rssResult{}, err
	}
	cmd := exec.CommandContext(ctx, exe, childFlag, string(b.store), b.srv.Endpoint, id)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "GOGC=", "GOMEMLIMIT=") // the defaults
	if err := cmd.Run(); err != nil {
		return rssResult{}, fmt.Errorf("rss: child: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	var r rssResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return rssResult{}, fmt.Errorf("rss: child said %q: %v", out.String(), err)
	}
	if r.Turns != b.plan.rssTurns || r.ContentBytes != content {
		return rssResult{}, fmt.Errorf("rss: the child loaded %d turns, %d bytes; want %d, %d", r.Turns, r.ContentBytes, b.plan.rssTurns, content)
	}
	r.Store = stored
	b.logf("rss: %d turns, %.1f MB of content: peak RSS %.1f MB (%.2f×), load %v", r.Turns,
		float64(r.ContentBytes)/1e6, float64(r.PeakRSS)/1e6, r.Ratio(), ms(r.Load))
	return r, nil
}

// rssChild is the child's side of peakRSS.
func rssChild(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 3 {
		return exit.Usagef("%s STORE ENDPOINT ID", childFlag)
	}
	store, err := kg.ParseStore(args[0])
	if err != nil {
		return exit.Usagef("%s STORE ENDPOINT ID: %v", childFlag, err)
	}
	base, err := procStatus("VmRSS")
	if err != nil {
		return err
	}
	c, err := kg.New(kg.Config{Endpoint: args[1], Store: store, Timeout: 10 * time.Minute, MaxAttempts: 1})
	if err != nil {
		return err
	}
	st := session.NewStore(c)
	t0 := time.Now()
	s, err := st.Load(ctx, args[2])
	if err != nil {
		return err
	}
	d := time.Since(t0)
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	peak, err := procStatus("VmHWM")
	if err != nil {
		return err
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	r := rssResult{Turns: len(s.Turns), BaseRSS: base, PeakRSS: peak, MaxRSS: ru.Maxrss * 1024, HeapLive: int64(m.HeapAlloc), HeapInUse: int64(m.HeapInuse), Load: d}
	for _, t := range s.Turns {
		r.ContentBytes += int64(len(t.Content))
	}
	runtime.KeepAlive(s)
	return json.NewEncoder(stdout).Encode(r)
}

// procStatus returns a "kB" field of /proc/self/status in bytes.
func procStatus(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n * 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/self/status has no %s", field)
}
