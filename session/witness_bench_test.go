package session_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
)

// timedWitness is a Witness that times the Adds of another.
type timedWitness struct {
	next session.Witness
	took []time.Duration
}

func (w *timedWitness) Add(ctx context.Context, entry []byte) (uint64, error) {
	t := time.Now()
	i, err := w.next.Add(ctx, entry)
	w.took = append(w.took, time.Since(t))
	return i, err
}

// BenchmarkSignedAppend measures one writer's appends of one turn
// (200–2,000 characters) against the benchmarks' Fuseki on disk, by two
// Stores taking turns, so that both see the same load: one without
// signing, one WithSigning into a witness.Dir in a temporary directory
// (one fsync an append). It reports the p50 and p99 of an append of each
// (off-, on-) and the p50 of the witness's Add alone (add-p50-ms): what
// signing adds to an append, measured apart from the store's noise.
// Run it as
//
//	go test ./session -run '^$' -bench SignedAppend -benchtime 400x
func BenchmarkSignedAppend(b *testing.B) {
	ctx := context.Background()
	c := fusekitest.Client(b, kg.Config{Endpoint: diskEndpoint(b)})
	ws, _, _ := keytest.New(b, "witness.bench")
	d, err := witness.OpenDir(ctx, b.TempDir(), ws)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	ks, _, _ := keytest.New(b, "writer.bench")
	w := &timedWitness{next: d}
	stores := []*session.Store{session.NewStore(c), session.NewStore(c, session.WithSigning(ks, w))}
	rng := rand.New(rand.NewPCG(5, 6))
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = realistic(rng)
	}
	sessions := make([]*session.Session, 2)
	for k, st := range stores {
		sessions[k] = session.New("bench-sign")
		if err := st.Persist(ctx, sessions[k]); err != nil {
			b.Fatal(err)
		}
	}
	w.took = nil
	took := [2][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		for j := range 2 {
			k := (i + j) % 2 // each goes first every other time
			s := sessions[k]
			s.Append("user", texts[i%len(texts)])
			t := time.Now()
			if err := stores[k].Persist(ctx, s); err != nil {
				b.Fatal(err)
			}
			took[k] = append(took[k], time.Since(t))
		}
	}
	b.StopTimer()
	for k, name := range []string{"off", "on"} {
		slices.Sort(took[k])
		b.ReportMetric(float64(took[k][len(took[k])/2])/1e6, name+"-p50-ms")
		b.ReportMetric(float64(took[k][len(took[k])*99/100])/1e6, name+"-p99-ms")
	}
	slices.Sort(w.took)
	b.ReportMetric(float64(w.took[len(w.took)/2])/1e6, "add-p50-ms")
	b.ReportMetric(float64(w.took[len(w.took)*99/100])/1e6, "add-p99-ms")
}
