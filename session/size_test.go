package session_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// Turns and sessions at the sizes Trails promises: a 16 MiB turn (one byte
// more is refused), a 100,000-turn session.

// TestHugeTurn stores a turn of MaxTurnBytes (quotes, backslashes, line
// breaks, NUL, non-ASCII) and loads it back byte for byte, on a Fuseki of
// its own (TestBigTurnRoundTrip stores the sizes below, as a create, an
// append and a fork): a request the store is still working on
// when the client gives up goes on blocking the store's one writer. Each
// must be stored within a minute with the client's default settings; one
// byte over MaxTurnBytes is refused (ErrInvalid, before any request).
func TestHugeTurn(t *testing.T) {
	fusekitest.Parallel(t)
	srv, err := fusekitest.StartServer(fusekitest.Options{})
	if err != nil {
		t.Fatalf("start a Fuseki: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	ct := &counter{next: &http.Transport{}}
	c := fusekitest.Client(t, kg.Config{Endpoint: srv.Endpoint, HTTPClient: &http.Client{Transport: ct}})
	st := session.NewStore(querier(t, c))
	piece := "A \"quoted\" \"\"\"long\"\"\" line\\ with } and # and $x\n\r\t\x00 café 🎉 — "
	for _, size := range []int{session.MaxTurnBytes, session.MaxTurnBytes + 1} {
		t.Run(fmt.Sprintf("%d bytes", size), func(t *testing.T) {
			if size <= session.MaxTurnBytes {
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			content := strings.Repeat(piece, size/len(piece)+1)[:size]
			for !strings.HasSuffix(content, " ") { // do not cut a character in two
				content = content[:len(content)-1]
			}
			content += strings.Repeat("x", size-len(content)) // exactly size bytes
			s := session.New("huge")
			s.Append("user", "short question")
			s.Append("assistant", content)
			s.Append("user", "and after it")

			t0 := time.Now()
			n := ct.requests.Load()
			err := st.Persist(ctx, s)
			persisted := time.Since(t0)
			switch {
			case err == nil:
			case errors.Is(err, session.ErrInvalid) && len(content) > session.MaxTurnBytes && ct.requests.Load() == n:
				t.Logf("a %.1f MB turn is refused before any request: %v", float64(len(content))/1e6, err)
				return
			default:
				t.Fatalf("persist a %.1f MB turn: after %v, %d requests: %v; want it stored, or (over MaxTurnBytes) ErrInvalid before any request",
					float64(len(content))/1e6, persisted.Round(time.Millisecond), ct.requests.Load()-n, err)
			}
			before := ct.bytes.Load()
			t0 = time.Now()
			got, err := st.Load(ctx, s.ID)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			loaded := time.Since(t0)
			sameSession(t, got, s)
			t0 = time.Now()
			turns, err := st.Replay(ctx, s.ID, session.UpTo(2))
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			sameHistory(t, turns, s.Turns[:2])
			t.Logf("a %.1f MB turn: persist %v, load %v (%.1f MB received), replay %v",
				float64(len(content))/1e6, persisted.Round(time.Millisecond), loaded.Round(time.Millisecond),
				float64(ct.bytes.Load()-before)/1e6, time.Since(t0).Round(time.Millisecond))

			// A fork of it shares the huge turn without copying it.
			f := mustFork(t, s, 2)
			f.Append("assistant", "shorter")
			if err := st.Persist(ctx, f); err != nil {
				t.Fatalf("persist a fork: %v", err)
			}
			sameSession(t, mustLoad(t, st, f.ID), f)
		})
	}
}

// TestLongSession persists a session of 10,000 turns in batches of 2,500,
// loads it and compares, and logs the timings. It was 100,000 turns, the
// one test that set the session package's time (100 s of an idle machine,
// over 7 minutes of a loaded one: Fuseki parses SPARQL Update at some 850
// turns a second); trails-bench loads and tails a 100,000-turn session
// (bulk-loaded in Persist's shape) and records it in BENCHMARKS.md.
func TestLongSession(t *testing.T) {
	fusekitest.Parallel(t)
	const total, batch = 10_000, 2_500
	// What this test checks is that a long session persists and loads
	// whole, not how fast: a store on a busy machine (Oxigraph in CI beside
	// other test binaries) may take longer than kg's default 30 s for the
	// one request that reads them all, so each attempt gets 5 minutes.
	ct := &counter{next: &http.Transport{MaxIdleConnsPerHost: 8}}
	st := session.NewStore(querier(t, fusekitest.Client(t, kg.Config{Endpoint: fusekitest.Endpoint(t), Timeout: 5 * time.Minute, HTTPClient: &http.Client{Transport: ct}})))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s := session.New("long-runner")
	t0 := time.Now()
	var batches []string
	for len(s.Turns) < total {
		for range batch {
			i := len(s.Turns)
			s.Append([]string{"user", "assistant"}[i%2], fmt.Sprintf("turn %d: \"%d\" squared is %d\n", i, i, i*i))
		}
		t1 := time.Now()
		if err := st.Persist(ctx, s); err != nil {
			t.Fatalf("persist turns up to %d: %v", len(s.Turns), err)
		}
		batches = append(batches, time.Since(t1).Round(time.Millisecond).String())
	}
	persist := time.Since(t0)
	before := ct.bytes.Load()
	t0 = time.Now()
	got, err := st.Load(ctx, s.ID)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	load := time.Since(t0)
	sameSession(t, got, s)
	t0 = time.Now()
	head, err := st.Replay(ctx, s.ID, session.UpTo(10))
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	sameHistory(t, head, s.Turns[:10])
	t.Logf("%d turns in batches of %d: persist %v (batch by batch: %s), load %v (%.1f MB received), replay of the first 10 %v",
		total, batch, persist.Round(time.Millisecond), strings.Join(batches, " "), load.Round(time.Millisecond),
		float64(ct.bytes.Load()-before)/1e6, time.Since(t0).Round(time.Millisecond))
}
