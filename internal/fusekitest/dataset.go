package fusekitest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trails-kg/trails/kg"
)

// spareDatasets is how many datasets a server started from the jar holds
// besides /trails, for the tests of its binary to take one each (see
// Endpoint). It bounds how many of them run at once; the tests are bound
// by Fuseki's CPU and disk more than by waiting, so more than a few at
// once on a small machine only adds contention.
const spareDatasets = 8

// parallelTests is how many tests Main runs at once unless told otherwise
// with -parallel (see Main); fewer than spareDatasets.
const parallelTests = 4

// waitDataset bounds how long a test waits for a spare dataset before it
// fails: longer than any test holds one, so that a test that took one
// before calling t.Parallel (and so holds it while paused) is named
// instead of hanging the binary.
const waitDataset = 5 * time.Minute

var (
	spare chan string // the spare datasets not taken; nil with the shared one only

	heldMu sync.Mutex
	held   = map[string]*hold{} // top-level test name → its dataset
)

// hold is a dataset taken by a top-level test, and the number of its tests
// (it and its subtests) that asked for it and have not ended.
type hold struct {
	ep    string
	users map[testing.TB]bool
}

// dataset returns the dataset of tb's top-level test, taking a spare one
// and wiping it on the first call. The dataset goes back when the last
// test that asked for it ends: normally the top-level test, which asks
// first; a subtest that asks before its test does holds it only for
// itself, and a later subtest gets it wiped.
func dataset(tb testing.TB) string {
	tb.Helper()
	top, _, _ := strings.Cut(tb.Name(), "/")
	heldMu.Lock()
	h, ok := held[top]
	if ok {
		if !h.users[tb] {
			h.users[tb] = true
			tb.Cleanup(func() { unhold(top, tb) })
		}
		heldMu.Unlock()
		return h.ep
	}
	heldMu.Unlock()
	var ep string
	select {
	case ep = <-spare:
	case <-time.After(waitDataset):
		tb.Fatalf("fusekitest: all %d datasets stayed taken for %v: does a test call Endpoint, New or Empty before t.Parallel (see Parallel)?", spareDatasets, waitDataset)
	}
	// A connection of its own, closed after: tests count goroutines.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c, err := kg.New(kg.Config{Endpoint: ep, Store: TestStore(), HTTPClient: &http.Client{Transport: tr}})
	if err == nil {
		err = c.Update(context.Background(), "DROP ALL", kg.Idempotent())
	}
	if err != nil {
		spare <- ep
		tb.Fatalf("fusekitest: wipe %s: %v", ep, err)
	}
	heldMu.Lock()
	if h, ok := held[top]; ok { // a parallel subtest of top took one meanwhile: share it
		h.users[tb] = true
		spare <- ep
		ep = h.ep
	} else {
		held[top] = &hold{ep: ep, users: map[testing.TB]bool{tb: true}}
	}
	heldMu.Unlock()
	tb.Cleanup(func() { unhold(top, tb) })
	return ep
}

// unhold records that tb, of top-level test top, ended, and gives the
// dataset back when no test of top that asked for it is left.
func unhold(top string, tb testing.TB) {
	heldMu.Lock()
	defer heldMu.Unlock()
	h := held[top]
	delete(h.users, tb)
	if len(h.users) == 0 {
		delete(held, top)
		spare <- h.ep
	}
}

// Parallel calls t.Parallel when each test of the binary has a dataset of
// its own (see Endpoint), and does nothing when they share one: then the
// tests run one after another, as a test that wipes or checks the whole
// dataset needs. Call it first in a top-level test, before Endpoint, New
// or Empty: a test that holds a dataset while it waits to run in parallel
// keeps it from the tests that run.
func Parallel(t *testing.T) {
	t.Helper()
	if _, err := Start(); err != nil {
		t.Fatal(err)
	}
	if spare != nil {
		t.Parallel()
	}
}
