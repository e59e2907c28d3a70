package session_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// diskEndpoint is the endpoint of the binary's Fuseki on disk, for the
// benchmarks.
func diskEndpoint(b *testing.B) string {
	b.Helper()
	return storetest.DiskEndpoint(b)
}

// realistic returns turn content of 200–2,000 characters of mixed text with
// quotes and newlines.
func realistic(rng *rand.Rand) string { return storetest.Realistic(rng) }

// buildChain stores an effective history of total turns spread over a root
// and depth forks (each forked at the end of its parent) and returns the
// leaf.
func buildChain(b *testing.B, st *session.Store, total, depth int, rng *rand.Rand) *session.Session {
	b.Helper()
	per := total / (depth + 1)
	s := session.New("bench")
	for i := 0; i < total-per*depth; i++ {
		s.Append("user", realistic(rng))
	}
	persistBatches(b, st, s)
	for d := 0; d < depth; d++ {
		f, err := s.Fork(len(s.Turns))
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < per; i++ {
			f.Append("assistant", realistic(rng))
		}
		persistBatches(b, st, f)
		s = f
	}
	return s
}

// persistBatches persists s; big sessions go in batches of 1,000 turns.
func persistBatches(b *testing.B, st *session.Store, s *session.Session) {
	b.Helper()
	all := s.Turns
	for n := s.ForkedAt + 1000; n < len(all); n += 1000 {
		s.Turns = all[:n]
		mustPersist(b, st, s)
	}
	s.Turns = all
	mustPersist(b, st, s)
}

// BenchmarkLoad loads a 5,000-turn effective history at chain depths 1, 8
// and 32 from Fuseki on TDB2 on disk, reporting round trips and bytes
// received per load.
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 20x ./session/
func BenchmarkLoad(b *testing.B) {
	ep := diskEndpoint(b)
	ct := &counter{next: &http.Transport{}}
	c := fusekitest.Client(b, kg.Config{Endpoint: ep, HTTPClient: &http.Client{Transport: ct}})
	st := session.NewStore(querier(b, c))
	ctx := context.Background()
	for _, depth := range []int{0, 1, 8, 32} {
		b.Run(fmt.Sprintf("turns=5000/depth=%d", depth), func(b *testing.B) {
			leaf := buildChain(b, st, 5000, depth, rand.New(rand.NewPCG(uint64(depth), 1)))
			mustLoad(b, st, leaf.ID) // warm-up
			reqs, bytes := ct.requests.Load(), ct.bytes.Load()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, err := st.Load(ctx, leaf.ID)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Turns) != 5000 {
					b.Fatalf("got %d turns, want 5000", len(s.Turns))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(ct.requests.Load()-reqs)/float64(b.N), "roundtrips/op")
			b.ReportMetric(float64(ct.bytes.Load()-bytes)/float64(b.N), "bytes-received/op")
		})
	}
}
