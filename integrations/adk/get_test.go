package adk_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/internal/fusekitest"
)

// TestGetRoundTrips: Get reads a session's events from their raw copies
// in two requests, whole or its last events, and the session it returns
// appends its next event in one; a turn another client of Trails wrote
// (no raw copy) costs Get one request more, for its fields. With the
// service's cache (the default), a Get of a session read before reads
// only the chain, and one that grew only the new events besides.
func TestGetRoundTrips(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	cachedSvc, st, ct := countedService(t)
	svc := adk.NewSessionService(st, adk.WithCache(nil))
	want := appendAll(t, ctx, svc, manyEvents(12))
	count := func(name string, want int64, f func()) {
		t.Helper()
		before := ct.requests.Load()
		f()
		if got := ct.requests.Load() - before; got != want {
			t.Errorf("%s: got %d requests, want %d", name, got, want)
		}
	}
	get := func(n int) session.Session {
		t.Helper()
		r, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u1", SessionID: "s1", NumRecentEvents: n})
		if err != nil {
			t.Fatal(err)
		}
		return r.Session
	}
	var whole, tail session.Session
	count("Get", 2, func() { whole = get(0) })
	count("Get with NumRecentEvents", 2, func() { tail = get(5) })
	if whole.Events().Len() != 12 || tail.Events().Len() != 5 {
		t.Fatalf("got %d and %d events, want 12 and 5", whole.Events().Len(), tail.Events().Len())
	}
	var got []*session.Event
	for ev := range tail.Events().All() {
		got = append(got, ev)
	}
	if diff := cmp.Diff(want.Events[7:], got, cmp.AllowUnexported(session.Event{})); diff != "" {
		t.Errorf("the last 5 events differ from the whole session's (-want +got):\n%s", diff)
	}
	count("AppendEvent after Get", 1, func() {
		if err := svc.AppendEvent(ctx, whole, manyEvents(13)[12]); err != nil {
			t.Fatal(err)
		}
	})

	// A turn without a raw copy, written through Trails itself.
	ts, err := st.Load(ctx, want.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	ts.Append("user", "plain")
	if err := st.Persist(ctx, ts); err != nil {
		t.Fatal(err)
	}
	var again session.Session
	count("Get with a turn without its raw copy", 3, func() { again = get(0) })
	if n := again.Events().Len(); n != 14 || again.Events().At(13).Content.Parts[0].Text != "plain" {
		t.Fatalf("got %d events, the last %+v", n, again.Events().At(n-1))
	}

	// The cache: the first Get reads as without it, the next reads the
	// chain only, and after an append the new event besides.
	cr, err := cachedSvc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u2", SessionID: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range manyEvents(12) {
		if err := cachedSvc.AppendEvent(ctx, cr.Session, ev); err != nil {
			t.Fatal(err)
		}
	}
	cget := func(n int) session.Session {
		t.Helper()
		r, err := cachedSvc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u2", SessionID: "s2", NumRecentEvents: n})
		if err != nil {
			t.Fatal(err)
		}
		return r.Session
	}
	var first, second session.Session
	count("first Get, cached service", 2, func() { first = cget(0) })
	count("second Get, cached service", 1, func() { second = cget(0) })
	count("Get of the last 5, cached service", 1, func() { tail = cget(5) })
	if diff := cmp.Diff(events(first), events(second), cmp.AllowUnexported(session.Event{})); diff != "" {
		t.Errorf("the cached Get differs from the first (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(events(first)[7:], events(tail), cmp.AllowUnexported(session.Event{})); diff != "" {
		t.Errorf("the cached tail differs (-want +got):\n%s", diff)
	}
	count("AppendEvent, cached service", 1, func() {
		if err := cachedSvc.AppendEvent(ctx, second, manyEvents(13)[12]); err != nil {
			t.Fatal(err)
		}
	})
	var third session.Session
	count("Get after an append, cached service", 2, func() { third = cget(0) })
	plain, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u2", SessionID: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(events(plain.Session), events(third), cmp.AllowUnexported(session.Event{})); diff != "" {
		t.Errorf("the cached Get after an append differs from an uncached one (-want +got):\n%s", diff)
	}
	if third.Events().Len() != 13 {
		t.Errorf("got %d events, want 13", third.Events().Len())
	}
}

// events returns the events of s.
func events(s session.Session) []*session.Event {
	var out []*session.Event
	for ev := range s.Events().All() {
		out = append(out, ev)
	}
	return out
}
