package adk_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/internal/fusekitest"
	trails "github.com/trails-kg/trails/session"
)

// TestAppendStale appends through two values of one session: the second,
// stale, is refused with Trails' conflict, and its value is left without
// the refused event or its state change; after a Get it appends.
func TestAppendStale(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, _ := newService(t)
	c, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	get := func() session.Session {
		t.Helper()
		g, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u1", SessionID: c.Session.ID()})
		if err != nil {
			t.Fatal(err)
		}
		return g.Session
	}
	a, b := get(), get()
	if err := svc.AppendEvent(ctx, a, &session.Event{ID: "a1", Author: "user", InvocationID: "inv1"}); err != nil {
		t.Fatal(err)
	}
	err = svc.AppendEvent(ctx, b, &session.Event{ID: "b1", Author: "user", InvocationID: "inv2",
		Actions: session.EventActions{StateDelta: map[string]any{"k": "b"}}})
	if !errors.Is(err, trails.ErrConflict) {
		t.Fatalf("got %v, want session.ErrConflict", err)
	}
	if n := b.Events().Len(); n != 0 {
		t.Errorf("the refused value holds %d events, want 0", n)
	}
	if _, err := b.State().Get("k"); !errors.Is(err, session.ErrStateKeyNotExist) {
		t.Errorf("the refused value's state has k: %v", err)
	}
	// The refused value still appends nothing: its history is stale.
	if err := svc.AppendEvent(ctx, b, &session.Event{ID: "b2", Author: "user"}); !errors.Is(err, trails.ErrConflict) {
		t.Errorf("second append of the stale value: got %v, want session.ErrConflict", err)
	}
	fresh := get()
	if err := svc.AppendEvent(ctx, fresh, &session.Event{ID: "b1", Author: "user", InvocationID: "inv2"}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for ev := range get().Events().All() {
		ids = append(ids, ev.ID)
	}
	if len(ids) != 2 || ids[0] != "a1" || ids[1] != "b1" {
		t.Errorf("got events %v, want [a1 b1]", ids)
	}
}

// TestSessionIDs: ADK session ids that are not UUIDs (two users' "s1", an
// id with spaces, one of 89 bytes) are kept and listed as given; a longer
// one is refused; a UUID is the Trails id itself.
func TestSessionIDs(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, st := newService(t)
	long := strings.Repeat("é", 44) + "x" // 89 bytes, not printable ASCII: the base64 tag
	ids := []struct{ user, id string }{{"u1", "s1"}, {"u2", "s1"}, {"u1", "a session\twith spaces"}, {"u1", long},
		{"u1", "0195a3c2-7b7e-7c1e-8f4e-2d9b6a0c1e55"}}
	for _, k := range ids {
		c, err := svc.Create(ctx, &session.CreateRequest{AppName: "my app", UserID: k.user, SessionID: k.id})
		if err != nil {
			t.Fatalf("create %q: %v", k.id, err)
		}
		if c.Session.ID() != k.id {
			t.Errorf("got id %q, want %q", c.Session.ID(), k.id)
		}
		if _, err := st.Info(ctx, c.Session.(*adk.Session).TrailsID()); err != nil {
			t.Errorf("Trails session of %q: %v", k.id, err)
		}
	}
	if got := ids[4].id; mustTrailsID(t, svc, "u1", got) != got {
		t.Errorf("a UUID session id is not the Trails id")
	}
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "my app", UserID: "u1", SessionID: long + "x"}); !errors.Is(err, adk.ErrInvalid) {
		t.Errorf("create with a 90-byte id: got %v, want ErrInvalid", err)
	}
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "my app", UserID: "u2", SessionID: "s1"}); !errors.Is(err, adk.ErrExists) {
		t.Errorf("second create of u2's s1: got %v, want ErrExists", err)
	}
	l, err := svc.List(ctx, &session.ListRequest{AppName: "my app", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range l.Sessions {
		got[s.ID()] = true
	}
	for _, k := range ids {
		if k.user == "u1" && !got[k.id] {
			t.Errorf("List of u1 lacks %q (got %v)", k.id, got)
		}
	}
	if len(got) != 4 {
		t.Errorf("List of u1: %d sessions, want 4", len(got))
	}
	if l, err := svc.List(ctx, &session.ListRequest{AppName: "other app"}); err != nil || len(l.Sessions) != 0 {
		t.Errorf("List of another app: %d sessions, %v", len(l.Sessions), err)
	}
}

// mustTrailsID returns the Trails id of u's session id in "my app".
func mustTrailsID(tb testing.TB, svc *adk.SessionService, user, id string) string {
	tb.Helper()
	g, err := svc.Get(tb.(*testing.T).Context(), &session.GetRequest{AppName: "my app", UserID: user, SessionID: id})
	if err != nil {
		tb.Fatal(err)
	}
	return g.Session.(*adk.Session).TrailsID()
}

// TestAppendRefusedLeavesNothing: an event the store refuses (a state key
// over 1 KiB) leaves the caller's value as it was, so that the next event
// appends alone.
func TestAppendRefusedLeavesNothing(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, _ := newService(t)
	c, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	bad := &session.Event{ID: "bad", Author: "user", Actions: session.EventActions{StateDelta: map[string]any{strings.Repeat("k", 1025): 1}}}
	if err := svc.AppendEvent(ctx, c.Session, bad); !errors.Is(err, trails.ErrInvalid) {
		t.Fatalf("got %v, want session.ErrInvalid", err)
	}
	if err := svc.AppendEvent(ctx, c.Session, &session.Event{ID: "good", Author: "user"}); err != nil {
		t.Fatalf("append after a refused event: %v", err)
	}
	g, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u1", SessionID: c.Session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if n := g.Session.Events().Len(); n != 1 || g.Session.Events().At(0).ID != "good" {
		t.Errorf("got %d events, want the good one only", n)
	}
	if n := c.Session.Events().Len(); n != 1 {
		t.Errorf("the caller's value holds %d events, want 1", n)
	}
}

// TestCreateRace: of Creates racing on one session id, each with its own
// initial state, exactly one succeeds and the others get ErrExists; the
// stored state is the winner's. Before, each Create checked the id and
// then stored: several succeeded, and all but one had their state
// silently dropped.
func TestCreateRace(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, _ := newService(t)
	const n = 6
	errs := make(chan error, n)
	winner := make(chan string, n)
	for i := range n {
		go func() {
			who := strings.Repeat("w", i+1)
			_, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1", SessionID: "race",
				State: map[string]any{"by": who}})
			if err == nil {
				winner <- who
			}
			errs <- err
		}()
	}
	created := 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			created++
		case errors.Is(err, adk.ErrExists):
		default:
			t.Errorf("racing create: got %v, want nil or ErrExists", err)
		}
	}
	if created != 1 {
		t.Fatalf("racing creates: %d succeeded, want 1", created)
	}
	g, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u1", SessionID: "race"})
	if err != nil {
		t.Fatal(err)
	}
	if by, err := g.Session.State().Get("by"); err != nil || by != <-winner {
		t.Errorf("stored state: by=%v (%v), want the winner's", by, err)
	}
}

// TestAppendDeleted: an append to a session deleted since its value was
// loaded is ErrNotFound (Trails refuses it as a conflict), and stores
// nothing.
func TestAppendDeleted(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, st := newService(t)
	c, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEvent(ctx, c.Session, &session.Event{ID: "e1", Author: "user"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u1", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	err = svc.AppendEvent(ctx, c.Session, &session.Event{ID: "e2", Author: "user"})
	if !errors.Is(err, adk.ErrNotFound) || !errors.Is(err, trails.ErrConflict) {
		t.Errorf("got %v, want ErrNotFound (and Trails' conflict)", err)
	}
	if infos, err := st.List(ctx); err != nil || len(infos) != 0 {
		t.Errorf("stored after the refused append: %v, %v", infos, err)
	}
}

// TestAppendTimestampOutOfRange: an event whose Timestamp Trails could
// not read back (milliseconds taken for seconds: year 57868) is refused
// with ErrInvalid naming the field, before anything is sent; the session
// keeps its events and takes the next one (issue 36: the event was
// acknowledged and the session could no longer be read).
func TestAppendTimestampOutOfRange(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, _ := newService(t)
	c, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := svc.AppendEvent(ctx, c.Session, &session.Event{ID: "e1", Author: "user", Timestamp: now}); err != nil {
		t.Fatal(err)
	}
	err = svc.AppendEvent(ctx, c.Session, &session.Event{ID: "e2", Author: "user", Timestamp: time.Unix(now.UnixMilli(), 0)})
	if !errors.Is(err, adk.ErrInvalid) || !strings.Contains(err.Error(), "Timestamp") {
		t.Fatalf("got %v, want adk.ErrInvalid naming the Timestamp", err)
	}
	if err := svc.AppendEvent(ctx, c.Session, &session.Event{ID: "e3", Author: "user", Timestamp: now.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	g, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u1", SessionID: c.Session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for ev := range g.Session.Events().All() {
		ids = append(ids, ev.ID)
	}
	if strings.Join(ids, " ") != "e1 e3" {
		t.Fatalf("got events %v, want [e1 e3]", ids)
	}
}
