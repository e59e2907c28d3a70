package session_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// digests and branches match the digests and fork labels in quads.
var (
	digests  = regexp.MustCompile(`sha256:[0-9a-f]{64}`)
	branches = regexp.MustCompile(`fork-[0-9a-f]{8}`)
)

// pathCounter counts a client's requests by path: conditional patches
// and SPARQL Updates.
type pathCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (p *pathCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.n[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]++
	p.mu.Unlock()
	return p.next.RoundTrip(r)
}

// TestConditionalPatchSameQuads: the same writes (a create, lone appends
// of one turn and of two, a batch of appends one of which is stale, an
// append to a fork, an append after a rewind), made once with appends
// as conditional patches (the default on Fuseki with Trails' module) and
// once as SPARQL Updates, store the same quads in every session graph,
// IRIs of the sessions aside, and give each write the same outcome.
func TestConditionalPatchSameQuads(t *testing.T) {
	fusekitest.RequireFuseki(t, "Trails' module for Fuseki (conditional-patch)")
	fusekitest.RequireDirect(t, "it counts the requests a Store sends to Fuseki")
	fusekitest.Parallel(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	run := func(patch bool) (graphs []string, outcomes []string, paths map[string]int) {
		pc := &pathCounter{next: &http.Transport{MaxIdleConnsPerHost: 16}, n: map[string]int{}}
		c := fusekitest.Client(t, kg.Config{Endpoint: fusekitest.Endpoint(t), HTTPClient: &http.Client{Transport: pc}})
		st := session.NewStore(c, session.WithConditionalPatch(patch), session.WithClock(func() time.Time { return at }))
		add := func(s *session.Session, role, text string) {
			s.AppendTurn(session.Turn{Role: role, Content: text, Created: at})
		}
		outcome := func(what string, err error) {
			outcomes = append(outcomes, fmt.Sprintf("%s: %v", what, err))
		}
		root := session.New("same-quads")
		add(root, "user", "one")
		add(root, "assistant", "two")
		outcome("create", st.Persist(ctx, root))
		add(root, "user", "three")
		outcome("lone append", st.Persist(ctx, root))
		add(root, "assistant", "four")
		add(root, "user", "five")
		outcome("append of two", st.Persist(ctx, root))
		others := make([]*session.Session, 4)
		for i := range others {
			others[i] = session.New("same-quads")
			add(others[i], "user", "other")
			outcome("create", st.Persist(ctx, others[i]))
		}
		moved := mustLoad(t, st, others[1].ID)
		add(moved, "user", "moved on")
		outcome("append", st.Persist(ctx, moved))
		var wg sync.WaitGroup
		errs := make([]error, len(others))
		for i, s := range others {
			add(s, "assistant", fmt.Sprintf("batched %d", i))
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = st.Persist(ctx, s) }()
		}
		wg.Wait()
		for i, err := range errs {
			outcome(fmt.Sprintf("concurrent append %d", i), err)
		}
		for i := range outcomes { // the errors name sessions
			outcomes[i] = strings.ReplaceAll(outcomes[i], others[1].ID, "session-3")
		}
		fork, err := st.Fork(ctx, root.ID, 3)
		outcome("fork", err)
		add(fork, "user", "forked")
		outcome("append to the fork", st.Persist(ctx, fork))
		rewound, rr, err := st.Rewind(ctx, root.ID, 2, session.RewindOptions{Reason: "again"})
		outcome("rewind", err)
		add(rewound, "user", "after the rewind")
		outcome("append after the rewind", st.Persist(ctx, rewound))

		ids := []string{root.ID, fork.ID, rr.Archive}
		for _, s := range others {
			ids = append(ids, s.ID)
		}
		for _, id := range ids {
			res, err := c.Select(ctx, "SELECT ?s ?p ?o WHERE { GRAPH <"+ontology.SessionIRI(id)+"> { ?s ?p ?o } }")
			if err != nil {
				t.Fatal(err)
			}
			var quads []string
			for _, row := range res.Solutions {
				q := fmt.Sprintf("%v %v %v", row["s"], row["p"], row["o"])
				for i, other := range ids {
					q = strings.ReplaceAll(q, other, fmt.Sprintf("session-%d", i))
				}
				q = branches.ReplaceAllString(q, "fork-label") // a fork's label is random
				if id == fork.ID {                             // and its own turns' digests cover it
					q = digests.ReplaceAllString(q, "sha256:…")
				}
				quads = append(quads, q)
			}
			slices.Sort(quads)
			graphs = append(graphs, strings.Join(quads, "\n"))
		}
		return graphs, outcomes, pc.n
	}
	patched, patchedOut, patchPaths := run(true)
	updated, updatedOut, updatePaths := run(false)
	if patchPaths["conditional-patch"] < 6 || updatePaths["conditional-patch"] != 0 {
		t.Fatalf("conditional patches: %d with the path on (want 6 or more), %d off (want 0)", patchPaths["conditional-patch"], updatePaths["conditional-patch"])
	}
	if !slices.Equal(patchedOut, updatedOut) {
		t.Errorf("outcomes differ:\npatches: %v\nupdates: %v", patchedOut, updatedOut)
	}
	for i := range patched {
		if patched[i] != updated[i] {
			t.Errorf("session %d's graph differs:\npatches:\n%s\nupdates:\n%s", i, patched[i], updated[i])
		}
	}
}
