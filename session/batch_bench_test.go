package session_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// updateCounter is a transport that counts update requests.
type updateCounter struct {
	next    http.RoundTripper
	updates atomic.Int64
}

func (u *updateCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if isWrite(r) {
		u.updates.Add(1)
	}
	return u.next.RoundTrip(r)
}

// BenchmarkGroupCommit measures appends of one turn (200–2,000
// characters) by concurrent writers, each on a session of its own, with
// group commit on and off, against the benchmarks' Fuseki on disk (b.N
// appends in all). It reports appends per second, update requests per
// append and the p50 and p99 of one append; "raw" is one INSERT DATA of a
// turn's triples per operation, the floor of a lone append. Run it as
//
//	go test ./session -run '^$' -bench GroupCommit -benchtime 1600x
func BenchmarkGroupCommit(b *testing.B) {
	b.Run("raw", benchRawInsert)
	for _, writers := range []int{1, 8, 64} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("writers=%d/group=%v", writers, on), func(b *testing.B) { benchAppends(b, writers, on) })
		}
	}
}

// benchAppends runs b.N appends shared among writers.
func benchAppends(b *testing.B, writers int, on bool) {
	uc := &updateCounter{next: &http.Transport{MaxIdleConnsPerHost: 128}}
	c := fusekitest.Client(b, kg.Config{Endpoint: diskEndpoint(b), HTTPClient: &http.Client{Transport: uc}})
	st := session.NewStore(querier(b, c), session.WithGroupCommit(on))
	rng := rand.New(rand.NewPCG(1, 2))
	sessions := make([]*session.Session, writers)
	for i := range sessions {
		sessions[i] = persisted(b, st, "bench-group", 1)
	}
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = realistic(rng)
	}
	ctx := context.Background()
	var mu sync.Mutex
	var took []time.Duration
	var next atomic.Int64
	base := uc.updates.Load()
	b.ResetTimer()
	t0 := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := sessions[w]
			var mine []time.Duration
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				s.Append("user", texts[i%int64(len(texts))])
				t := time.Now()
				if err := st.Persist(ctx, s); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			took = append(took, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	b.StopTimer()
	reportLatency(b, took)
	b.ReportMetric(float64(len(took))/wall.Seconds(), "appends/s")
	b.ReportMetric(float64(uc.updates.Load()-base)/float64(max(len(took), 1)), "updates/append")
}

// benchRawInsert runs b.N INSERT DATA requests of one turn's triples, one
// after another: the floor of a lone append.
func benchRawInsert(b *testing.B) {
	c := fusekitest.Client(b, kg.Config{Endpoint: diskEndpoint(b)})
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	base := fmt.Sprintf("https://example.org/raw/%d/", time.Now().UnixNano())
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		g, t := kg.MustIRI(base+"g"), kg.MustIRI(fmt.Sprintf("%st%d", base, i))
		var d kg.Data
		d.Add(g, t, kg.MustIRI("https://w3id.org/trails/ns#content"), kg.String(realistic(rng)))
		for k := range 8 {
			d.Add(g, t, kg.MustIRI(fmt.Sprintf("https://example.org/p%d", k)), kg.Int(i))
		}
		u, err := kg.BindData("INSERT DATA {\n#DATA\n}", &d, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := c.Update(ctx, u); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, took)
}

// reportLatency reports the p50 and p99 of took, in milliseconds.
func reportLatency(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100])/1e6, "p99-ms")
}
