package adk_test

import (
	"errors"
	"testing"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/internal/fusekitest"
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
