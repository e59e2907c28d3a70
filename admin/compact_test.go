package admin_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// Churn of TestCompactShrinks: rounds of sessions of turns of 200–2,000
// characters, each round written and then deleted.
const (
	churnRounds   = 4
	churnSessions = 10
	churnTurns    = 20
)

// TestCompactShrinks churns a TDB2 dataset on disk (sessions written and
// deleted), compacts it, and checks that the database shrank and that
// the session kept loads as it was. It logs the figures
// docs/operations.md quotes.
func TestCompactShrinks(t *testing.T) {
	s := adminFuseki(t)
	ctx := context.Background()
	c := fusekitest.Client(t, kg.Config{Endpoint: endpointOf(s, compactDS), Store: kg.Fuseki})
	st := session.NewStore(c)
	db := filepath.Join(s.DataDir(), "databases", compactDS)
	empty, err := admin.DiskUsage(db)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(40, 3))
	kept := session.New("keeper")
	for i := 0; i < churnTurns; i++ {
		kept.Append("user", storetest.Realistic(rng))
	}
	storetest.MustPersist(t, st, kept)
	for r := 0; r < churnRounds; r++ {
		var ids []string
		for i := 0; i < churnSessions; i++ {
			x := session.New("churner")
			for j := 0; j < churnTurns; j++ {
				x.Append([]string{"user", "assistant"}[j%2], storetest.Realistic(rng))
			}
			storetest.MustPersist(t, st, x)
			ids = append(ids, x.ID)
		}
		for _, id := range ids {
			if err := st.Delete(ctx, id, session.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	stats, err := serverOf(t, s, compactDS).Compact(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	turns := churnRounds * churnSessions * churnTurns
	t.Logf("empty %d bytes; after %d turns written and deleted (%d kept) %d bytes (%s); compacted in %v: %d bytes (%s)",
		empty, turns, churnTurns, stats.Before, stats.From, stats.Task.Took(), stats.After, stats.To)
	if stats.From == stats.To {
		t.Errorf("got generation %s before and after, want a new one", stats.To)
	}
	if stats.After <= 0 || stats.After >= stats.Before/2 {
		t.Errorf("got %d bytes after compaction, want fewer than half of the %d before", stats.After, stats.Before)
	}
	storetest.SameSession(t, storetest.MustLoad(t, st, kept.ID), kept)
}

// TestCompactRefused: what cannot be compacted is refused with a typed
// error.
func TestCompactRefused(t *testing.T) {
	s := adminFuseki(t)
	ctx := context.Background()
	plain, err := admin.NewServer(admin.ServerConfig{Endpoint: fusekitest.Endpoint(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		srv  *admin.Server
		want error
	}{
		{"in memory", serverOf(t, s, memDS), admin.ErrTaskFailed},
		{"no such dataset", serverOf(t, s, "nope"), kg.ErrNotFound},
		{"plain server", plain, admin.ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.srv.Compact(ctx, "")
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// A directory that is not a TDB2 database: refused before any request.
	if _, err := serverOf(t, s, compactDS).Compact(ctx, t.TempDir()); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("compact with a directory that is no database: got %v, want ErrInvalid", err)
	}
}

// BenchmarkGrowth measures how much a TDB2 database on disk grows per
// turn stored, and what it takes after a compaction: b.N turns of 200 to
// 2,000 characters (storetest.Realistic, some 1.1 KB on average) in
// sessions of 20, appended as an agent does (a Persist after each turn:
// one TDB2 transaction each) or persisted a whole session at once. It
// reports the bytes on disk per turn after writing (disk-B/turn), after
// compaction (compacted-B/turn), and the content's (content-B/turn); the
// database starts empty but for the vocabulary. docs/operations.md quotes
// it, run as:
//
//	go test ./admin/ -run '^$' -bench Growth -benchtime 2000x
//
// The database is in $TRAILS_TEST_SCRATCH if set, else the temporary
// directory (on disk, as in production; /dev/shm would measure memory).
func BenchmarkGrowth(b *testing.B) {
	for _, perPersist := range []int{1, 20} {
		name := "append"
		if perPersist > 1 {
			name = "session"
		}
		b.Run(name, func(b *testing.B) {
			fusekitest.RequireFuseki(b, "the admin API (/$/compact)")
			fusekitest.RequireDirect(b, "it measures a Fuseki of its own on disk and compacts it with the admin API")
			data := b.TempDir()
			if d := os.Getenv(fusekitest.EnvScratch); d != "" {
				var err error
				if data, err = os.MkdirTemp(d, "trails-growth-"); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { os.RemoveAll(data) })
			}
			s, err := fusekitest.StartServer(fusekitest.Options{Admin: true, DataDir: data})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			ctx := context.Background()
			c := fusekitest.Client(b, kg.Config{Endpoint: s.Endpoint, Store: kg.Fuseki})
			if _, err := admin.New(c).Init(ctx); err != nil {
				b.Fatal(err)
			}
			st := session.NewStore(c)
			db := filepath.Join(data, "databases", "trails")
			rng := rand.New(rand.NewPCG(40, 4))
			contents := make([]string, b.N)
			var content int
			for i := range contents {
				contents[i] = storetest.Realistic(rng)
				content += len(contents[i])
			}
			start, err := admin.DiskUsage(db)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var x *session.Session
			for i := 0; i < b.N; i++ {
				if i%20 == 0 {
					x = session.New("grower")
				}
				x.Append([]string{"user", "assistant"}[i%2], contents[i])
				if (i+1)%perPersist == 0 || i == b.N-1 {
					storetest.MustPersist(b, st, x)
				}
			}
			b.StopTimer()
			stats, err := serverOf(b, s, "trails").Compact(ctx, db)
			if err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			b.ReportMetric(float64(stats.Before-start)/n, "disk-B/turn")
			b.ReportMetric(float64(stats.After-start)/n, "compacted-B/turn")
			b.ReportMetric(float64(content)/n, "content-B/turn")
			b.Logf("%d turns, %d per Persist: %d bytes on disk empty (vocabulary), %d after, %d compacted (in %v)",
				b.N, perPersist, start, stats.Before, stats.After, stats.Task.Took())
		})
	}
}
