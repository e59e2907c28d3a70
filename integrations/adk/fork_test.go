package adk_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/integrations/adk/adkcore"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	trails "github.com/trails-kg/trails/session"
)

// conversation creates ADK session "conv" of u1 with two invocations of
// two events each (e1 e2 in inv1, e3 e4 in inv2) and the state key step.
func conversation(tb testing.TB, svc *adk.SessionService) adk.Key {
	tb.Helper()
	ctx := tb.(*testing.T).Context()
	k := adk.Key{AppName: "app", UserID: "u1", SessionID: "conv"}
	c, err := svc.Create(ctx, &session.CreateRequest{AppName: k.AppName, UserID: k.UserID, SessionID: k.SessionID})
	if err != nil {
		tb.Fatal(err)
	}
	for i, inv := range []string{"inv1", "inv1", "inv2", "inv2"} {
		ev := &session.Event{ID: "e" + string(rune('1'+i)), InvocationID: inv, Author: "agent",
			Actions: session.EventActions{StateDelta: map[string]any{"step": float64(i + 1)}}}
		ev.Content = genai.NewContentFromText("turn "+ev.ID, "model")
		if err := svc.AppendEvent(ctx, c.Session, ev); err != nil {
			tb.Fatal(err)
		}
	}
	return k
}

// eventIDs returns the ids of the events of session k, as Get returns them.
func eventIDs(tb testing.TB, svc *adk.SessionService, k adk.Key) ([]string, session.Session) {
	tb.Helper()
	g, err := svc.Get(tb.(*testing.T).Context(), &session.GetRequest{AppName: k.AppName, UserID: k.UserID, SessionID: k.SessionID})
	if err != nil {
		tb.Fatalf("get %s: %v", k.SessionID, err)
	}
	var ids []string
	for ev := range g.Session.Events().All() {
		ids = append(ids, ev.ID)
	}
	return ids, g.Session
}

func sameIDs(tb testing.TB, what string, got []string, want ...string) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			tb.Errorf("%s: got %v, want %v", what, got, want)
			return
		}
	}
}

// TestFork forks a session before an invocation and at an event: each
// fork's Get returns the parent's events before the fork point and its
// own after, the store holds only the fork's own turns, and Forks lists
// both.
func TestFork(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, st := newService(t)
	k := conversation(t, svc)

	f1, err := svc.Fork(ctx, k, adk.BeforeInvocation("inv2"), "try inv2 again")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f1.State().Get("step"); v != float64(2) {
		t.Errorf("fork's state step = %v, want 2 (as of the fork point)", v)
	}
	if err := svc.AppendEvent(ctx, f1, &session.Event{ID: "f1", InvocationID: "inv2b", Author: "agent",
		Actions: session.EventActions{StateDelta: map[string]any{"step": "fork"}}}); err != nil {
		t.Fatal(err)
	}
	fk := adk.Key{AppName: "app", UserID: "u1", SessionID: f1.ID()}
	ids, got := eventIDs(t, svc, fk)
	sameIDs(t, "fork before inv2", ids, "e1", "e2", "f1")
	if v, _ := got.State().Get("step"); v != "fork" {
		t.Errorf("fork's state step = %v, want fork", v)
	}
	ids, got = eventIDs(t, svc, k)
	sameIDs(t, "parent", ids, "e1", "e2", "e3", "e4")
	if v, _ := got.State().Get("step"); v != float64(4) {
		t.Errorf("parent's state step = %v, want 4", v)
	}
	info, err := st.Info(ctx, f1.TrailsID())
	if err != nil {
		t.Fatal(err)
	}
	if info.ParentID != got.(*adk.Session).TrailsID() || info.ForkedAt != 2 || info.OwnTurns != 1 {
		t.Errorf("fork stored as %+v, want parent %s, forked at 2, 1 own turn", info, got.(*adk.Session).TrailsID())
	}

	f2, err := svc.Fork(ctx, k, adk.AtEvent("e3"), "")
	if err != nil {
		t.Fatal(err)
	}
	ids, _ = eventIDs(t, svc, adk.Key{AppName: "app", UserID: "u1", SessionID: f2.ID()})
	sameIDs(t, "fork at e3", ids, "e1", "e2", "e3")

	forks, err := svc.Forks(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(forks) != 2 || forks[0].SessionID != f1.ID() || forks[0].ForkedAt != 2 || forks[0].Events != 3 ||
		forks[1].SessionID != f2.ID() || forks[1].ForkedAt != 3 || forks[0].Archive {
		t.Errorf("forks %+v", forks)
	}
	l, err := svc.List(ctx, &session.ListRequest{AppName: "app", UserID: "u1"})
	if err != nil || len(l.Sessions) != 3 {
		t.Errorf("List: %d sessions, %v; want 3 (the session and its forks)", len(l.Sessions), err)
	}
	if _, err := svc.Fork(ctx, k, adk.BeforeInvocation("nope"), ""); !errors.Is(err, adk.ErrNotFound) {
		t.Errorf("fork before an unknown invocation: got %v, want ErrNotFound", err)
	}
	if _, err := svc.Fork(ctx, adk.Key{AppName: "app", UserID: "u2", SessionID: "conv"}, adk.AtEvent("e1"), ""); !errors.Is(err, adk.ErrNotFound) {
		t.Errorf("fork of another user's session: got %v, want ErrNotFound", err)
	}

	// Deleting the parent leaves its forks whole.
	if err := svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u1", SessionID: "conv"}); err != nil {
		t.Fatal(err)
	}
	ids, _ = eventIDs(t, svc, fk)
	sameIDs(t, "fork after its parent's delete", ids, "e1", "e2", "f1")
}

// TestRewind rewinds a session before an invocation: Get returns the
// events before it, the archive (listed as a fork) holds them all, an old
// value of the session can no longer append, a fresh one can.
func TestRewind(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, _ := newService(t)
	k := conversation(t, svc)
	_, old := eventIDs(t, svc, k)

	rs, archive, err := svc.Rewind(ctx, k, adk.BeforeInvocation("inv2"), "wrong tool")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rs.State().Get("step"); v != float64(2) {
		t.Errorf("rewound state step = %v, want 2", v)
	}
	ids, _ := eventIDs(t, svc, k)
	sameIDs(t, "rewound", ids, "e1", "e2")
	ids, _ = eventIDs(t, svc, adk.Key{AppName: "app", UserID: "u1", SessionID: archive})
	sameIDs(t, "archive", ids, "e1", "e2", "e3", "e4")

	if err := svc.AppendEvent(ctx, old, &session.Event{ID: "late", Author: "user"}); !errors.Is(err, trails.ErrConflict) {
		t.Errorf("append to a value loaded before the rewind: got %v, want session.ErrConflict", err)
	}
	if err := svc.AppendEvent(ctx, rs, &session.Event{ID: "e3b", InvocationID: "inv2b", Author: "user"}); err != nil {
		t.Fatal(err)
	}
	ids, _ = eventIDs(t, svc, k)
	sameIDs(t, "after the rewind", ids, "e1", "e2", "e3b")

	forks, err := svc.Forks(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(forks) != 1 || forks[0].SessionID != archive || !forks[0].Archive || forks[0].ForkedAt != 2 {
		t.Errorf("forks %+v, want the archive", forks)
	}
}

// counter counts the requests a client sends and the bytes it receives.
type counter struct {
	requests, bytes atomic.Int64
	next            http.RoundTripper
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.bytes}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// forkCountedService is newService whose store's requests ct counts.
func forkCountedService(tb testing.TB) (*adk.SessionService, *trails.Store, *counter) {
	tb.Helper()
	fusekitest.RequireDirect(tb, "it counts its store's HTTP requests")
	ct := &counter{next: &http.Transport{MaxIdleConnsPerHost: 8}}
	c := fusekitest.Client(tb, kg.Config{Endpoint: fusekitest.Empty(tb).Endpoint(), HTTPClient: &http.Client{Transport: ct}})
	st := trails.NewStore(c)
	return adk.NewSessionService(st), st, ct
}

// bulkSession stores ADK session id of u1 in app "app" with n events (ids
// e0, e1, ...; four per invocation, inv0, inv1, ...; each setting state
// key step to its index) as the service stores events, 500 to a request;
// withoutIDs leaves out each event's trails:eventId, as events stored
// before Trails kept it.
func bulkSession(tb testing.TB, st *trails.Store, id string, n int, withoutIDs bool) adk.Key {
	tb.Helper()
	k := adk.Key{AppName: "app", UserID: "u1", SessionID: id}
	ts := trails.New(k.UserID)
	ts.ID, ts.App = adkcore.TrailsID(k.AppName, k.UserID, id), k.AppName
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	ctx := context.Background()
	for i := range n {
		ev := &session.Event{ID: "e" + strconv.Itoa(i), InvocationID: "inv" + strconv.Itoa(i/4), Author: "agent",
			Timestamp: t0.Add(time.Duration(i) * time.Millisecond), Actions: session.EventActions{StateDelta: map[string]any{"step": float64(i)}}}
		ev.Content = genai.NewContentFromText("turn "+ev.ID, "model")
		raw, err := json.Marshal(ev)
		if err != nil {
			tb.Fatal(err)
		}
		turn, err := adkcore.TurnOf(adkcore.Fields{ID: ev.ID, InvocationID: ev.InvocationID, Author: ev.Author, Timestamp: ev.Timestamp,
			Content: ev.Content, StateDelta: ev.Actions.StateDelta}, raw, adk.RawFormat)
		if err != nil {
			tb.Fatal(err)
		}
		if withoutIDs {
			turn.Structure.EventID = ""
		}
		ts.AppendTurn(turn)
		if (i+1)%500 == 0 || i == n-1 { // in requests of 500 events
			if err := st.Persist(ctx, ts); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := st.Tag(ctx, ts.ID, adkcore.AppTag(k.AppName)); err != nil {
		tb.Fatal(err)
	}
	return k
}

// TestForkReadsConstant: the service's Fork of a 500- and of a
// 5,000-event session, at an event and before an invocation, sends at
// most 3 requests and receives at most 20 KB, and the fork holds the
// events before the fork point and the state as of it. Before, it loaded
// the whole session (7 requests, megabytes).
func TestForkReadsConstant(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, st, ct := forkCountedService(t)
	for _, n := range []int{500, 5000} {
		k := bulkSession(t, st, "long"+strconv.Itoa(n), n, false)
		for _, tc := range []struct {
			name string
			at   adk.Point
			want int // events the fork holds
		}{
			{"at the last event", adk.AtEvent("e" + strconv.Itoa(n-1)), n},
			{"at an event", adk.AtEvent("e" + strconv.Itoa(n/2)), n/2 + 1},
			{"before an invocation", adk.BeforeInvocation("inv" + strconv.Itoa(n/8)), n / 8 * 4},
		} {
			t.Run(strconv.Itoa(n)+" "+tc.name, func(t *testing.T) {
				reqs, bytes := ct.requests.Load(), ct.bytes.Load()
				f, err := svc.Fork(ctx, k, tc.at, "why")
				if err != nil {
					t.Fatal(err)
				}
				sent, recv := ct.requests.Load()-reqs, ct.bytes.Load()-bytes
				t.Logf("%d requests, %d bytes received", sent, recv)
				if sent > 3 {
					t.Errorf("got %d requests, want at most 3", sent)
				}
				if recv > 20_000 {
					t.Errorf("got %d bytes received, want at most 20,000", recv)
				}
				if v, _ := f.State().Get("step"); v != float64(tc.want-1) {
					t.Errorf("fork's state step = %v, want %d", v, tc.want-1)
				}
				if f.Events().Len() != 0 {
					t.Errorf("the fork value holds %d events, want none (Get returns them)", f.Events().Len())
				}
				ids, _ := eventIDs(t, svc, adk.Key{AppName: k.AppName, UserID: k.UserID, SessionID: f.ID()})
				if len(ids) != tc.want || ids[len(ids)-1] != "e"+strconv.Itoa(tc.want-1) {
					t.Fatalf("the fork's Get: %d events, want e0..e%d", len(ids), tc.want-1)
				}
			})
		}
	}
}

// TestForkOldEvents: events stored before Trails kept their ids
// (trails:eventId) are still found by AtEvent, by loading the session.
func TestForkOldEvents(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, st, _ := forkCountedService(t)
	k := bulkSession(t, st, "old", 12, true)
	f, err := svc.Fork(ctx, k, adk.AtEvent("e5"), "")
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := eventIDs(t, svc, adk.Key{AppName: k.AppName, UserID: k.UserID, SessionID: f.ID()})
	sameIDs(t, "fork at e5 of old events", ids, "e0", "e1", "e2", "e3", "e4", "e5")
	if v, _ := f.State().Get("step"); v != float64(5) {
		t.Errorf("fork's state step = %v, want 5", v)
	}
	if _, err := svc.Fork(ctx, k, adk.AtEvent("nope"), ""); !errors.Is(err, adk.ErrNotFound) {
		t.Errorf("fork at an unknown event: got %v, want ErrNotFound", err)
	}
	if _, err := svc.Fork(ctx, adk.Key{AppName: "other", UserID: "u1", SessionID: "old"}, adk.AtEvent("e1"), ""); !errors.Is(err, adk.ErrNotFound) {
		t.Errorf("fork of the session under another app: got %v, want ErrNotFound", err)
	}
}
