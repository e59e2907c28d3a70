package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// TestExpireBatches expires more sessions than one batch holds, with
// descendants among them.
func TestExpireBatches(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	c := clustertest.Empty(t)
	st := openStore(t, c, session.WithClock(func() time.Time { return t0 }))
	st.Dataset = admin.New(querier(t, c), admin.WithClock(func() time.Time { return t0 }))
	var ids []string
	for i := range 120 {
		s := session.New("bulk")
		s.TTL = time.Duration(i+1) * time.Second
		s.Append("user", "x")
		storetest.MustPersist(t, st, s)
		ids = append(ids, s.ID)
		if i%10 == 0 {
			f := storetest.MustFork(t, s, 1)
			f.TTL = time.Duration(i+1) * time.Second
			storetest.MustPersist(t, st, f)
			ids = append(ids, f.ID)
		}
	}
	n, err := st.Expire(ctx, t0.Add(time.Hour), admin.ExpireOptions{By: "janitor"})
	if err != nil || n != len(ids) {
		t.Fatalf("got %d, %v; want %d", n, err, len(ids))
	}
	for _, id := range ids {
		if got := storetest.MustInfo(t, st, id).State; got != session.StateExpired {
			t.Fatalf("%s: got %s, want expired", id, got)
		}
	}
	if n, err := st.Expire(ctx, t0.Add(time.Hour), admin.ExpireOptions{}); n != 0 || err != nil {
		t.Fatalf("second run: got %d, %v; want 0", n, err)
	}
	res, err := prov.NewReader(c).Run(ctx, "state-changes", map[string]string{"session": ids[0]})
	if err != nil || len(res.Solutions) != 1 || res.Solutions[0].String("principal") != "janitor" {
		t.Fatalf("state changes: got %v, %v; want one by janitor", res, err)
	}
}
