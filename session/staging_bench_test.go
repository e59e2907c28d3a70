package session_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/staged"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// BenchmarkBigTurn persists a turn of 16 MiB (persist) against its floor,
// a Graph Store POST of the same content as one N-Quad (gsp-post), on
// Fuseki on TDB2 on disk; every iteration writes a content of its own (the
// store keeps a literal once). Issue 13's target: persist within 1.5x of
// gsp-post.
//
//	go test -run '^$' -bench BenchmarkBigTurn -benchtime 5x ./session/
func BenchmarkBigTurn(b *testing.B) {
	c := fusekitest.Client(b, kg.Config{Endpoint: diskEndpoint(b)})
	st := session.NewStore(querier(b, c))
	ctx := context.Background()
	const size = session.MaxTurnBytes
	contents := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strconv.Itoa(i) + bigContent(uuid.NewString(), size-64)
		}
		return out
	}
	b.Run("persist", func(b *testing.B) {
		cs := contents(b.N)
		b.SetBytes(size)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			s := session.New("bench")
			s.Append("tool", cs[i])
			if err := st.Persist(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gsp-post", func(b *testing.B) {
		cs := contents(b.N)
		b.SetBytes(size)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			g := ontology.SessionIRI(uuid.NewString())
			lit, err := kg.Term(kg.String(cs[i]))
			if err != nil {
				b.Fatal(err)
			}
			nq := "<" + ontology.TurnIRI(g, 0) + "> <" + ontology.Content + "> " + lit + " <" + g + "> .\n"
			if err := c.LoadQuads(ctx, []byte(nq)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStageThreshold writes one literal of each size into a new
// graph, inline in a SPARQL Update (inline) and staged (staged: a Graph
// Store PUT, then an update copying it in and dropping the staging
// graph), on Fuseki on TDB2 on disk: where staging starts to pay is
// where staged.Above belongs.
//
//	go test -run '^$' -bench BenchmarkStageThreshold -benchtime 20x ./session/
func BenchmarkStageThreshold(b *testing.B) {
	c := fusekitest.Client(b, kg.Config{Endpoint: diskEndpoint(b)})
	ctx := context.Background()
	p := kg.MustIRI(ontology.Content)
	for _, size := range []int{16 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20} {
		for _, how := range []string{"inline", "staged"} {
			b.Run(fmt.Sprintf("%s/%dKiB", how, size>>10), func(b *testing.B) {
				cs := make([]string, b.N)
				for i := range cs {
					cs[i] = strconv.Itoa(i) + bigContent(uuid.NewString(), size-64)
				}
				b.SetBytes(int64(size))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					g := kg.MustIRI(ontology.SessionIRI(uuid.NewString()))
					if how == "inline" {
						var d kg.Data
						d.Add(g, g, p, kg.String(cs[i]))
						u, err := d.InsertData()
						if err != nil {
							b.Fatal(err)
						}
						if err := c.Update(ctx, u); err != nil {
							b.Fatal(err)
						}
						continue
					}
					var set staged.Set
					set.Add(g, g, p, kg.String(cs[i]))
					tmpl, err := set.Bind("INSERT {\n#DATA\n}\nWHERE {\n#STAGED\n}")
					if err != nil {
						b.Fatal(err)
					}
					var d kg.Data
					u, err := kg.BindData(tmpl, &d, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := set.Send(ctx, c); err != nil {
						b.Fatal(err)
					}
					if err := c.Update(ctx, u+set.Drop()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
