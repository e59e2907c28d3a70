package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// TestAppendOneRoundTrip: an append by a value that stored the session
// before (what an agent does after every event) is one request to the
// store, and lands.
func TestAppendOneRoundTrip(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it counts its store's HTTP requests")
	st, ct, _ := newStore(t)
	s := persisted(t, st, "appender", 2)
	for i := range 3 {
		s.Append("user", "turn "+itoa(i))
		before := ct.requests.Load()
		mustPersist(t, st, s)
		if got := ct.requests.Load() - before; got != 1 {
			t.Errorf("append %d: got %d requests, want 1", i, got)
		}
	}
	sameSession(t, mustLoad(t, st, s.ID), s)
}

// TestAppendRefused: the one-request append of a value that stored the
// session before is refused, with the error the full path gives and
// nothing changed, when the session changed under the writer: another
// writer appended, the session was rewound, or it reached a terminal
// state; with a turn staged through the Graph Store too, whose staging
// graph is gone afterwards.
func TestAppendRefused(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	st, _, c := newStore(t)
	tests := []struct {
		name    string
		content string
		meddle  func(t *testing.T, id string)
		want    error
	}{
		{name: "another writer appended", meddle: func(t *testing.T, id string) {
			b := mustLoad(t, st, id)
			b.Append("user", "from b")
			mustPersist(t, st, b)
		}, want: session.ErrConflict},
		{name: "another writer appended, big turn", content: bigContent("refused", 2<<20), meddle: func(t *testing.T, id string) {
			b := mustLoad(t, st, id)
			b.Append("user", "from b")
			mustPersist(t, st, b)
		}, want: session.ErrConflict},
		{name: "rewound", meddle: func(t *testing.T, id string) {
			if _, _, err := st.Rewind(ctx, id, 1, session.RewindOptions{}); err != nil {
				t.Fatal(err)
			}
		}, want: session.ErrConflict},
		{name: "completed", meddle: func(t *testing.T, id string) {
			if _, err := st.SetState(ctx, id, session.StateCompleted, session.StateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, want: session.ErrState},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.content) > 1<<20 {
			}
			a := persisted(t, st, "appender", 2)
			a.Append("assistant", "stored by a")
			mustPersist(t, st, a) // a's next Persist takes the fast path
			tt.meddle(t, a.ID)
			want := mustLoad(t, st, a.ID)
			content := tt.content
			if content == "" {
				content = "refused turn"
			}
			a.Append("user", content)
			if err := st.Persist(ctx, a); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			sameSession(t, mustLoad(t, st, a.ID), want)
			if n := countStaging(t, c); n != 0 {
				t.Errorf("staging graphs left: got %d, want 0", n)
			}
			// Receipt graphs (trails:applied) of batches, which the
			// dataset may hold from other tests, stay until their
			// Store's next write (batch.go).
			if n := queryInt(t, c, `SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?x ?p ?o } FILTER(STRSTARTS(STR(?g), "https://w3id.org/trails/id/staging/")) FILTER NOT EXISTS { GRAPH ?g { ?g <https://w3id.org/trails/ns#applied> ?ack } } }`, nil); n != 0 {
				t.Errorf("graphs under the staging base left: got %d, want 0", n)
			}
		})
	}
}

// TestAppendForkFieldsChanged: an append from a value read before the
// session's fork fields changed, with its history unchanged, is refused
// with ErrConflict and nothing changed, as Persist documents: a Rewind of
// the parent moved the fork under its archive, or a Detach made a fork
// at 0 a root (known anomaly A4 of docs/reliability.md: the one-request
// append compared the history only, and landed).
func TestAppendForkFieldsChanged(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	st, _, _ := newStore(t)
	tests := []struct {
		name   string
		at     int
		meddle func(t *testing.T, parent, fork string)
	}{
		{name: "moved under an archive", at: 2, meddle: func(t *testing.T, parent, fork string) {
			if _, _, err := st.Rewind(ctx, parent, 1, session.RewindOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "detached", at: 0, meddle: func(t *testing.T, parent, fork string) {
			if err := st.Detach(ctx, fork, session.DetachOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		for _, how := range []string{"persisted", "loaded"} {
			t.Run(tt.name+", "+how, func(t *testing.T) {
				r := persisted(t, st, "appender", 3)
				f := mustFork(t, r, tt.at)
				f.Append("assistant", "stored by f")
				mustPersist(t, st, f) // f's next Persist takes the fast path
				if how == "loaded" {
					f = mustLoad(t, st, f.ID)
				}
				tt.meddle(t, r.ID, f.ID)
				want := mustLoad(t, st, f.ID)
				f.Append("user", "refused turn")
				if err := st.Persist(ctx, f); !errors.Is(err, session.ErrConflict) {
					t.Fatalf("got %v, want ErrConflict", err)
				}
				sameSession(t, mustLoad(t, st, f.ID), want)
			})
		}
	}
}

// TestAppendAnswerLost: the store applied the one-request append but its
// answer was lost (the update is reported failed): Persist learns from
// the store that its turn is there and reports success, storing it once.
func TestAppendAnswerLost(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "it loses an update's answer at its store's HTTP transport")
	ctx := context.Background()
	ep := fusekitest.Endpoint(t)
	wst := ownStore(t, ep)
	s := persisted(t, wst, "lost", 2)
	lt := &losingTransport{next: &http.Transport{}}
	lst := session.NewStore(fusekitest.Client(t, kg.Config{Endpoint: ep, HTTPClient: &http.Client{Transport: lt}}))
	a := mustLoad(t, lst, s.ID)
	a.Append("user", "first")
	mustPersist(t, lst, a) // full path; the next append takes the fast path
	a.Append("assistant", "answer lost")
	lt.lose.Store(true)
	if err := lst.Persist(ctx, a); err != nil {
		t.Fatalf("got %v, want nil: the append landed", err)
	}
	if lt.lose.Load() {
		t.Fatal("no update was sent")
	}
	sameSession(t, mustLoad(t, wst, s.ID), a)
}

// losingTransport, once lose is set, sends the next update and then loses
// its answer: the caller gets a transport error for an update the store
// applied.
type losingTransport struct {
	next http.RoundTripper
	lose atomic.Bool
}

func (l *losingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err != nil || !isWrite(r) || !l.lose.CompareAndSwap(true, false) {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errors.New("connection reset by the test")
}

// TestAppendSameTextOtherFields: two writers append, from the same stored
// history, turns alike in role, text and creation time (to the
// millisecond) but not in their other fields (an agent's events: a tool
// call's arguments, an event id in the raw copy). The second is refused
// with ErrConflict. Before, Persist compared a stored turn with the
// caller's by role, text and time only (the head digest and the check that
// an append applied), so it took the other writer's turn for its own and
// acknowledged a turn the store never held.
func TestAppendSameTextOtherFields(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	s := persisted(t, st, "twin", 2)
	at := time.Now().UTC().Truncate(time.Millisecond)
	turn := func(args string) session.Turn {
		return session.Turn{Role: "assistant", Content: "calling", Created: at, Structure: &session.Structure{
			Parts: []session.Part{{Kind: session.PartToolCall, CallID: "c1", ToolName: "f", Arguments: json.RawMessage(args)}}}}
	}
	a, b := mustLoad(t, st, s.ID), mustLoad(t, st, s.ID)
	a.AppendTurn(turn(`{"x":1}`))
	mustPersist(t, st, a)
	b.AppendTurn(turn(`{"x":2}`))
	if err := st.Persist(context.Background(), b); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("the second writer's append: got %v, want ErrConflict", err)
	}
	got := mustLoad(t, st, s.ID)
	if n := len(got.Turns); n != 3 || string(got.Turns[2].Structure.Parts[0].Arguments) != `{"x":1}` {
		t.Errorf("stored: %d turns, last arguments %s; want 3 and the first writer's {\"x\":1}", n, got.Turns[n-1].Structure.Parts[0].Arguments)
	}
}

// stateBarrier is a Querier whose first state query (Persist's) waits
// until every writer sharing wg has read its state: so that two creates of
// one id both find it free, and race in their updates.
type stateBarrier struct {
	session.Querier
	wg   *sync.WaitGroup
	once *sync.Once
}

func (q stateBarrier) Replicated() bool { return isReplicated(q.Querier) }

// Store tells the store's profile, as the client it wraps does (a Store
// takes its fast path's acknowledgement from it).
func (q stateBarrier) Store() kg.Store { return q.Querier.(interface{ Store() kg.Store }).Store() }

func (q stateBarrier) Select(ctx context.Context, query string) (*kg.Results, error) {
	r, err := q.Querier.Select(ctx, query)
	if strings.Contains(query, "?lastdigest") {
		q.once.Do(func() { q.wg.Done(); q.wg.Wait() })
	}
	return r, err
}

// TestCreateSameMillisecond: two writers create one session id in the
// same millisecond, for the same principal, with turns alike in role,
// text and time but not in their tool calls. One is stored; the other
// gets ErrConflict. Before, a create learned that it applied from the
// session's creation time alone, so both were acknowledged.
func TestCreateSameMillisecond(t *testing.T) {
	fusekitest.Parallel(t)
	_, _, c := newStore(t)
	at := time.Now().UTC().Truncate(time.Millisecond)
	clock := func() time.Time { return at }
	id := session.New("twin").ID
	var wg sync.WaitGroup
	wg.Add(2)
	errs := make(chan error, 2)
	for _, args := range []string{`{"x":1}`, `{"x":2}`} {
		st := session.NewStore(stateBarrier{Querier: querier(t, c), wg: &wg, once: new(sync.Once)}, session.WithClock(clock))
		s := session.New("twin")
		s.ID = id
		s.AppendTurn(session.Turn{Role: "assistant", Content: "calling", Created: at, Structure: &session.Structure{
			Parts: []session.Part{{Kind: session.PartToolCall, CallID: "c1", ToolName: "f", Arguments: json.RawMessage(args)}}}})
		go func() { errs <- st.Persist(context.Background(), s) }()
	}
	var ok, conflict int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, session.ErrConflict):
			conflict++
		default:
			t.Errorf("persist: got %v, want nil or ErrConflict", err)
		}
	}
	if ok != 1 || conflict != 1 {
		t.Errorf("got %d stored and %d ErrConflict, want 1 and 1", ok, conflict)
	}
}
