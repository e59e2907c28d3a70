package session_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The tests of this file race writers, forkers and readers on one session
// of the test binary's Fuseki, each with its own kg.Client and http.Client
// as separate processes would have, and check the invariants of issue 6
// ("Concurrency"): no acknowledged turn lost, no index gap or duplicate, and
// a fork sees exactly the prefix it was taken at.

// ownStore returns a Store over ep with a kg.Client and an http.Client of
// its own.
func ownStore(tb testing.TB, ep string) *session.Store {
	tb.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	tb.Cleanup(tr.CloseIdleConnections)
	c := fusekitest.Client(tb, kg.Config{Endpoint: ep, HTTPClient: &http.Client{Transport: tr}})
	return session.NewStore(querier(tb, c), session.WithMaxChildren(0)) // the tests fork one parent many times
}

// seeded returns a random source for a test and logs its seed, so that a
// failing run can be told apart from the next.
func seeded(tb testing.TB) (*rand.Rand, uint64) {
	tb.Helper()
	seed := uint64(time.Now().UnixNano())
	tb.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed>>7)), seed
}

// limited reports the first few of a kind of failure in full and counts
// the rest, so that a bug hit a thousand times reads as one.
type limited struct {
	mu   sync.Mutex
	what string
	n    int
}

const reportFirst = 3

func (l *limited) errorf(tb testing.TB, format string, args ...any) {
	tb.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if l.n <= reportFirst {
		tb.Errorf(format, args...)
	}
}

func (l *limited) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// done reports how many failures were not shown.
func (l *limited) done(tb testing.TB) {
	tb.Helper()
	if n := l.count(); n > reportFirst {
		tb.Errorf("%s: %d more like the above (%d in all)", l.what, n-reportFirst, n)
	}
}

// mustCheck fails tb unless Check finds nothing in the dataset of c.
func mustCheck(tb testing.TB, c *kg.Client) {
	tb.Helper()
	fs, err := storetest.Check(context.Background(), admin.New(c))
	if err != nil {
		tb.Fatalf("check: %v", err)
	}
	for _, f := range fs {
		tb.Errorf("check: %s %s: %s", f.Rule, f.Resource, f.Message)
	}
	if len(fs) > 0 {
		tb.FailNow()
	}
}

// TestConcurrentWriters has 8 writers, each with its own Store and HTTP
// client, append 200 turns each to one session, retrying on ErrConflict as
// the documented protocol says (Load, re-append, retry, here after a short
// random pause). Each persist appends 1 to maxBatch turns. At the end the
// session holds exactly 1,600 turns, indices 0..1599, and every turn a
// writer was told was stored is there with its content. Two further
// promises are checked on the way: Load works while others append, and a
// Persist that reports ErrConflict stored nothing ("the loser changes
// nothing").
func TestConcurrentWriters(t *testing.T) {
	fusekitest.Parallel(t)
	const (
		writers   = 8
		perWriter = 200
		maxBatch  = 20 // turns per Persist, 1..maxBatch at random
	)
	ctx := context.Background()
	fusekitest.Empty(t) // Check at the end looks at the whole dataset
	ep := fusekitest.Endpoint(t)
	_, seed := seeded(t)

	root := session.New("writers")
	mustPersist(t, ownStore(t, ep), root) // no turns yet
	id := root.ID

	type acked struct {
		writer int
		turn   session.Turn
	}
	var (
		mu        sync.Mutex
		ack       []acked
		conflicts atomic.Int64 // ErrConflict retried
		persists  atomic.Int64 // successful persists
		loads     atomic.Int64 // loads
		badLoads  = &limited{what: "Load while others append"}
		lies      = &limited{what: "ErrConflict although stored"}
		wg        sync.WaitGroup
	)
	t0 := time.Now()
	for w := range writers {
		st := ownStore(t, ep)
		wrng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			// load loads the session; Load must work while others
			// append, so a failure is reported, and the writer loads again
			// so that the rest is still tested.
			load := func(when string) (*session.Session, error) {
				for try := 1; ; try++ {
					loads.Add(1)
					s, err := st.Load(ctx, id)
					if err == nil || !errors.Is(err, session.ErrCorrupt) || try == 50 {
						return s, err
					}
					badLoads.errorf(t, "writer %d: load %s: %v", w, when, err)
				}
			}
			s, err := load("at the start")
			if err != nil {
				t.Errorf("writer %d: giving up: %v", w, err)
				return
			}
			for j := 0; j < perWriter; {
				n := min(1+wrng.IntN(maxBatch), perWriter-j)
				for attempt := 1; ; attempt++ {
					base := len(s.Turns)
					for k := range n {
						role := "user"
						if (j+k)%2 == 1 {
							role = "assistant"
						}
						s.Append(role, writerText(w, j+k))
					}
					perr := st.Persist(ctx, s)
					if perr == nil {
						persists.Add(1)
						mu.Lock()
						for _, tn := range s.Turns[base:] {
							ack = append(ack, acked{w, tn})
						}
						mu.Unlock()
						break
					}
					if !errors.Is(perr, session.ErrConflict) {
						t.Errorf("writer %d: persist: %v", w, perr)
						return
					}
					conflicts.Add(1)
					time.Sleep(time.Duration(wrng.IntN(5*min(attempt, 8))) * time.Millisecond)
					mine := slices.Clone(s.Turns[base:])
					if s, err = load("after a conflict"); err != nil {
						t.Errorf("writer %d: giving up: %v", w, err)
						return
					}
					// The loser must have changed nothing: none of the
					// turns it just tried may be stored.
					if landed := storedOf(s.Turns, mine); len(landed) > 0 {
						lies.errorf(t, "writer %d: Persist returned %q, but its %d turns were stored at indices %d..%d",
							w, perr, len(landed), landed[0].Index, landed[len(landed)-1].Index)
						// Count them as stored, so the other invariants are
						// checked on their own; re-appending would duplicate.
						mu.Lock()
						for _, tn := range landed {
							ack = append(ack, acked{w, tn})
						}
						mu.Unlock()
						if len(landed) == len(mine) {
							break
						}
					}
				}
				j += n
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	t.Logf("%d writers × %d turns: %d persists, %d conflicts retried, %d loads (%d failed with ErrCorrupt), %d persists said ErrConflict but were stored; %v",
		writers, perWriter, persists.Load(), conflicts.Load(), loads.Load(), badLoads.count(), lies.count(), elapsed.Round(time.Millisecond))
	badLoads.done(t)
	lies.done(t)

	// Whatever Load says, look at the stored triples: every turn whole,
	// and the dataset sound.
	c := fusekitest.Client(t, kg.Config{Endpoint: ep})
	for _, p := range partialTurns(t, c, id) {
		t.Errorf("a partial turn is stored: %s", p)
	}
	mustCheck(t, c)

	got := mustLoad(t, ownStore(t, ep), id)
	if len(got.Turns) != writers*perWriter {
		t.Errorf("got %d turns, want %d", len(got.Turns), writers*perWriter)
	}
	seen := make(map[string]int)
	for i, tn := range got.Turns {
		if tn.Index != i {
			t.Fatalf("turn %d: got index %d, want %d", i, tn.Index, i)
		}
		if prev, dup := seen[tn.Content]; dup {
			t.Errorf("turn %d: content %q is also turn %d", i, tn.Content, prev)
		}
		seen[tn.Content] = i
	}
	for w := range writers {
		for j := range perWriter {
			if _, ok := seen[writerText(w, j)]; !ok {
				t.Errorf("writer %d turn %d is missing", w, j)
			}
		}
	}
	if len(ack) != writers*perWriter {
		t.Errorf("got %d acknowledged turns, want %d", len(ack), writers*perWriter)
	}
	for _, a := range ack {
		if a.turn.Index >= len(got.Turns) {
			t.Errorf("writer %d: acknowledged turn %d is missing", a.writer, a.turn.Index)
			continue
		}
		g := got.Turns[a.turn.Index]
		if g.Content != a.turn.Content || g.Role != a.turn.Role || !g.Created.Equal(a.turn.Created) {
			t.Errorf("writer %d: acknowledged turn %d: got %+v, want %+v", a.writer, a.turn.Index, g, a.turn)
		}
	}
}

// partialTurns returns, one line each, the turns stored in session id's
// graph that lack one of the nine triples a turn has (its two types,
// trails:Turn and prov:Entity, session, index, role, content, branch,
// created, digest) or hold one twice.
func partialTurns(tb testing.TB, c *kg.Client, id string) []string {
	tb.Helper()
	q, err := kg.Bind(`PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?t (COUNT(DISTINCT ?p) AS ?props) (COUNT(*) AS ?triples) (GROUP_CONCAT(STR(?p); separator=" ") AS ?ps) WHERE {
  GRAPH $g { ?t ?p ?o . FILTER(STRSTARTS(STR(?t), STR($g))) FILTER(?t != $g) }
} GROUP BY ?t HAVING (COUNT(DISTINCT ?p) != 8 || COUNT(*) != 9)`, kg.Params{"g": kg.MustIRI(ontology.SessionIRI(id))})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Select(context.Background(), q)
	if err != nil {
		tb.Fatalf("partial turns: %v", err)
	}
	var out []string
	for _, row := range res.Solutions {
		out = append(out, fmt.Sprintf("%s: %s properties in %s triples: %s", row.String("t"), row.String("props"), row.String("triples"), row.String("ps")))
	}
	return out
}

// writerText is the text of writer w's turn j: unique in the test.
func writerText(w, j int) string { return fmt.Sprintf("writer %d turn %03d \"q\"\n", w, j) }

// storedOf returns those of mine that stored holds at their index, with
// their content.
func storedOf(stored, mine []session.Turn) []session.Turn {
	var out []session.Turn
	for _, m := range mine {
		if m.Index < len(stored) && stored[m.Index].Content == m.Content && stored[m.Index].Created.Equal(m.Created) {
			out = append(out, m)
		}
	}
	return out
}

// TestForkDuringAppend takes forks of a session while one writer keeps
// appending to it: forks of the writer's own in-memory session, forks of a
// copy another Store loaded a moment earlier, and forks taken ahead of the
// parent's persist (refused with ErrConflict until the parent catches up).
// Every fork sees exactly the prefix it was taken at, however much the
// parent grew after.
func TestForkDuringAppend(t *testing.T) {
	fusekitest.Parallel(t)
	const batches, batch = 30, 7
	ctx := context.Background()
	ep := fusekitest.Endpoint(t)
	rng, _ := seeded(t)

	type taken struct {
		id     string
		at     int
		prefix []session.Turn
		own    []session.Turn
		how    string
	}
	var (
		mu     sync.Mutex
		forks  []taken
		ahead  int // forks refused while ahead of their parent
		bad    = &limited{what: "Load while the parent is appended to"}
		done   = make(chan struct{})
		wg     sync.WaitGroup
		parent = session.New("forker")
	)
	wst := ownStore(t, ep)
	mustPersist(t, wst, parent)
	record := func(f *session.Session, how string) {
		mu.Lock()
		defer mu.Unlock()
		forks = append(forks, taken{f.ID, f.ForkedAt, slices.Clone(f.Turns[:f.ForkedAt]), slices.Clone(f.Turns[f.ForkedAt:]), how})
	}

	// Two forkers, each with its own Store: they load the parent, fork it
	// at a random point of what they saw and persist the fork at once.
	for k := range 2 {
		st := ownStore(t, ep)
		frng := rand.New(rand.NewPCG(rng.Uint64(), uint64(k)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				p, err := st.Load(ctx, parent.ID)
				if err != nil {
					// Load must work while the parent grows; report it and
					// go on, so that the forks are still tested.
					bad.errorf(t, "forker %d: %v", k, err)
					if !errors.Is(err, session.ErrCorrupt) {
						return
					}
					continue
				}
				f, err := p.Fork(frng.IntN(len(p.Turns) + 1))
				if err != nil {
					t.Errorf("forker %d: %v", k, err)
					return
				}
				f.Append("assistant", fmt.Sprintf("forker %d's answer at %d", k, f.ForkedAt))
				if err := st.Persist(ctx, f); err != nil {
					t.Errorf("forker %d: persist fork at %d: %v", k, f.ForkedAt, err)
					return
				}
				record(f, "loaded")
			}
		}()
	}

	fst := ownStore(t, ep)
	for b := range batches {
		appendN(parent, batch, fmt.Sprintf("batch %d", b))
		if b%3 == 0 {
			// A fork of turns the parent has not persisted yet: refused,
			// and nothing is written.
			f := mustFork(t, parent, len(parent.Turns))
			f.Append("user", "too early")
			if err := fst.Persist(ctx, f); !errors.Is(err, session.ErrConflict) {
				t.Fatalf("fork ahead of its parent: got %v, want ErrConflict", err)
			}
			if _, err := fst.Info(ctx, f.ID); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("refused fork: got %v, want ErrNotFound", err)
			}
			mustPersist(t, wst, parent)
			mustPersist(t, fst, f) // the parent caught up
			ahead++
			record(f, "ahead")
			continue
		}
		mustPersist(t, wst, parent)
		f := mustFork(t, parent, rng.IntN(len(parent.Turns)+1))
		f.Append("user", "writer's fork")
		mustPersist(t, fst, f)
		record(f, "in-memory")
	}
	close(done)
	wg.Wait()
	bad.done(t)

	rst := ownStore(t, ep)
	final := mustLoad(t, rst, parent.ID)
	sameHistory(t, final.Turns, parent.Turns)
	kids, err := rst.Branches(ctx, parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != len(forks) {
		t.Errorf("got %d branches, want %d", len(kids), len(forks))
	}
	byHow := map[string]int{}
	for _, f := range forks {
		byHow[f.how]++
		got := mustLoad(t, rst, f.id)
		if got.ParentID != parent.ID || got.ForkedAt != f.at {
			t.Fatalf("fork %s: got parent %s at %d, want %s at %d", f.id, got.ParentID, got.ForkedAt, parent.ID, f.at)
		}
		sameHistory(t, got.Turns[:f.at], f.prefix)
		sameHistory(t, got.Turns[:f.at], final.Turns[:f.at])
		sameHistory(t, got.Turns[f.at:], f.own)
	}
	t.Logf("parent grew to %d turns in %d batches; %d forks each saw exactly its prefix (%d loaded by other stores, %d of the writer's memory, %d taken ahead of the parent and refused until it caught up); %d loads by the forkers failed",
		len(final.Turns), batches, len(forks), byHow["loaded"], byHow["in-memory"], ahead, bad.count())
}

// cloneSession returns a deep copy of s, as another process would hold
// after receiving the same fork request.
func cloneSession(s *session.Session) *session.Session {
	c := *s
	c.Turns = slices.Clone(s.Turns)
	return &c
}

// forkRecords returns how many trails:Fork activities used parent, and how
// many start times they have between them (one per activity if none was
// written twice).
func forkRecords(tb testing.TB, c *kg.Client, parent, child string) (acts, starts, derived int) {
	tb.Helper()
	q, err := kg.Bind(`PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT (COUNT(DISTINCT ?a) AS ?acts) (COUNT(?t) AS ?starts) WHERE {
  ?a a $fork ; prov:used $parent .
  $child prov:wasGeneratedBy ?a .
  OPTIONAL { ?a prov:startedAtTime ?t }
}`, kg.Params{"fork": kg.MustIRI(ontology.Fork), "parent": kg.MustIRI(ontology.SessionIRI(parent)), "child": kg.MustIRI(ontology.SessionIRI(child))})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Select(context.Background(), q)
	if err != nil {
		tb.Fatal(err)
	}
	acts, _ = res.Solutions[0].Int("acts")
	starts, _ = res.Solutions[0].Int("starts")
	q, _ = kg.Bind(`PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { $child prov:wasDerivedFrom $parent } }`,
		kg.Params{"parent": kg.MustIRI(ontology.SessionIRI(parent)), "child": kg.MustIRI(ontology.SessionIRI(child))})
	res, err = c.Select(context.Background(), q)
	if err != nil {
		tb.Fatal(err)
	}
	derived, _ = res.Solutions[0].Int("n")
	return acts, starts, derived
}
