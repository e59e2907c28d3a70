package adk_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk"
	trails "github.com/trails-kg/trails/session"
)

// manyEvents returns n events cycling through richEvents, each with an id
// and a timestamp of its own.
func manyEvents(n int) []*session.Event {
	base := richEvents()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	out := make([]*session.Event, n)
	for i := range out {
		ev := *base[i%len(base)]
		ev.ID = fmt.Sprintf("e%05d", i)
		ev.InvocationID = fmt.Sprintf("inv%04d", i/len(base))
		ev.Timestamp = t0.Add(time.Duration(i) * time.Second)
		out[i] = &ev
	}
	return out
}

// BenchmarkGet gets a session of 1,000 events whole and its last 50
// events, as ADK's runner and a caller with NumRecentEvents do, and
// reports the round trips and bytes received of each Get; and loads it
// through Trails in full (what Get read before session.RawOnly) and with
// RawOnly (what it reads now), for comparison in the same run.
//
//	go test -run '^$' -bench BenchmarkGet -benchtime 20x ./integrations/adk/
func BenchmarkGet(b *testing.B) {
	svc, st, ct := countedService(b)
	ctx := context.Background()
	cr, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1", State: map[string]any{"k": "v"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, ev := range manyEvents(1000) {
		if err := svc.AppendEvent(ctx, cr.Session, ev); err != nil {
			b.Fatal(err)
		}
	}
	// The Trails loads beneath: what Get read before RawOnly (a full load)
	// and what it reads now.
	id := cr.Session.(*adk.Session).TrailsID()
	for _, lean := range []bool{false, true} {
		var opts []trails.LoadOption
		if lean {
			opts = append(opts, trails.RawOnly())
		}
		b.Run(fmt.Sprintf("events=1000/load/rawonly=%v", lean), func(b *testing.B) {
			reqs, bytes := ct.requests.Load(), ct.bytes.Load()
			for range b.N {
				if _, err := st.Load(ctx, id, opts...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(ct.requests.Load()-reqs)/float64(b.N), "roundtrips/op")
			b.ReportMetric(float64(ct.bytes.Load()-bytes)/float64(b.N), "bytes-received/op")
		})
	}
	for _, n := range []int{0, 50} {
		b.Run(fmt.Sprintf("events=1000/recent=%d", n), func(b *testing.B) {
			req := &session.GetRequest{AppName: "app", UserID: "u1", SessionID: cr.Session.ID(), NumRecentEvents: n}
			if _, err := svc.Get(ctx, req); err != nil { // warm-up
				b.Fatal(err)
			}
			reqs, bytes := ct.requests.Load(), ct.bytes.Load()
			b.ResetTimer()
			for range b.N {
				if _, err := svc.Get(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(ct.requests.Load()-reqs)/float64(b.N), "roundtrips/op")
			b.ReportMetric(float64(ct.bytes.Load()-bytes)/float64(b.N), "bytes-received/op")
		})
	}
}
