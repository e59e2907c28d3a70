package session_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// Rewind without loss (design note 004).

func mustRewind(tb testing.TB, st *session.Store, id string, to int, opts ...session.RewindOptions) (*session.Session, session.RewindResult) {
	tb.Helper()
	return storetest.MustRewind(tb, st, id, to, opts...)
}

// rwTurnCount counts the trails:Turn resources of c's dataset.
func rwTurnCount(tb testing.TB, c *kg.Client) int {
	tb.Helper()
	return queryInt(tb, c, `PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (COUNT(DISTINCT ?t) AS ?n) WHERE { ?t a trails:Turn }`, nil)
}

// rwResolves fails tb unless each turn's ID names exactly one stored turn,
// of session owner (by id), in owner's graph, with the turn's index, role,
// content, branch and creation time.
func rwResolves(tb testing.TB, c *kg.Client, owner string, turns []session.Turn) {
	tb.Helper()
	for _, t := range turns {
		q, err := kg.Bind(`PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?s ?i ?role ?content ?branch ?created WHERE {
  GRAPH ?g { $t trails:session ?s ; trails:index ?i ; trails:role ?role ; trails:content ?content ; trails:branch ?branch ; trails:created ?created }
}`, kg.Params{"t": kg.MustIRI(t.ID)})
		if err != nil {
			tb.Fatal(err)
		}
		res, err := c.Select(context.Background(), q)
		if err != nil {
			tb.Fatal(err)
		}
		if len(res.Solutions) != 1 {
			tb.Fatalf("turn %s: got %d descriptions, want 1", t.ID, len(res.Solutions))
		}
		row := res.Solutions[0]
		i, _ := row.Int("i")
		created, _ := row.Time("created")
		want := ontology.SessionIRI(owner)
		if row.String("g") != want || row.String("s") != want || i != t.Index || row.String("role") != t.Role ||
			row.String("content") != t.Content || row.String("branch") != t.Branch || !created.Equal(t.Created) {
			tb.Fatalf("turn %s: got %v, want %+v in the graph of %s", t.ID, row, t, owner)
		}
	}
}

// rwFamily is a root of 6 turns with anchors at 2 and 6, a fork at 2 (kept
// by a rewind to 3) and a fork at 5 with a fork of its own (both re-parented
// by it).
type rwFamily struct {
	root, early, late, lateChild *session.Session
	history                      []session.Turn // the root's, before the rewind
}

func rwSeed(tb testing.TB, st *session.Store, principal string) rwFamily {
	tb.Helper()
	var fx rwFamily
	fx.root = persisted(tb, st, principal, 2)
	mustAnchor(tb, st, fx.root.ID, "early", nil)
	appendN(fx.root, 4, "root")
	mustPersist(tb, st, fx.root)
	mustAnchor(tb, st, fx.root.ID, "late", map[string]string{"k": "v"})
	fx.early = mustFork(tb, fx.root, 2)
	appendN(fx.early, 2, "early")
	mustPersist(tb, st, fx.early)
	fx.late = mustFork(tb, fx.root, 5)
	appendN(fx.late, 2, "late")
	mustPersist(tb, st, fx.late)
	fx.lateChild = mustFork(tb, fx.late, 6)
	appendN(fx.lateChild, 1, "late child")
	mustPersist(tb, st, fx.lateChild)
	fx.history = mustLoad(tb, st, fx.root.ID).Turns
	return fx
}

func TestRewind(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	fx := rwSeed(t, st, "rewinder")
	lateBefore := mustLoad(t, st, fx.late.ID).Turns
	childBefore := mustLoad(t, st, fx.lateChild.ID).Turns
	earlyBefore := mustLoad(t, st, fx.early.ID).Turns
	turns := rwTurnCount(t, c)

	s, r := mustRewind(t, st, fx.root.ID, 3, session.RewindOptions{Reason: "wrong turn at 3"})
	if r.To != 3 || r.Moved != 3 || r.Archive == "" || !slices.Equal(r.Reparented, []string{fx.late.ID}) || !slices.Equal(r.Anchors, []string{"late"}) {
		t.Fatalf("got %+v, want 3 turns moved, %s re-parented, anchor late moved", r, fx.late.ID)
	}

	t.Run("the session", func(t *testing.T) {
		for _, got := range []*session.Session{s, mustLoad(t, st, fx.root.ID)} {
			sameHistory(t, got.Turns, fx.history[:3])
			sameIDs(t, got.Turns, fx.history[:3])
			anchorAt(t, got, "early", 2, fx.root.ID)
			noAnchor(t, got, "late")
		}
	})
	t.Run("nothing deleted", func(t *testing.T) {
		if got := rwTurnCount(t, c); got != turns {
			t.Fatalf("got %d turns in the store, want %d", got, turns)
		}
		rwResolves(t, c, fx.root.ID, fx.history[:3])
		rwResolves(t, c, r.Archive, fx.history[3:])
	})
	t.Run("the archive", func(t *testing.T) {
		a := mustLoad(t, st, r.Archive)
		if a.ParentID != fx.root.ID || a.ForkedAt != 3 || a.Principal != "rewinder" || !strings.HasPrefix(a.Branch, "fork-") || a.Kind != session.KindBranch {
			t.Fatalf("got archive {%s %d %s %s %s}, want a fork of %s at 3", a.ParentID, a.ForkedAt, a.Principal, a.Branch, a.Kind, fx.root.ID)
		}
		replayed, err := st.Replay(ctx, r.Archive)
		if err != nil {
			t.Fatal(err)
		}
		sameHistory(t, replayed, fx.history)
		sameIDs(t, replayed, fx.history)
		anchorAt(t, a, "late", 6, r.Archive)
		anchorAt(t, a, "early", 2, fx.root.ID)
		if st := a.Anchors["late"].State; st["k"] != "v" {
			t.Fatalf("moved anchor: got state %v, want k=v", st)
		}
		if _, err := a.Fork(-1, session.ForkAtAnchor("late")); err != nil {
			t.Fatalf("fork the archive at its anchor: %v", err)
		}
	})
	t.Run("forks", func(t *testing.T) {
		late := mustLoad(t, st, fx.late.ID)
		if late.ParentID != r.Archive || late.ForkedAt != 5 {
			t.Fatalf("got parent %s at %d, want the archive %s at 5", late.ParentID, late.ForkedAt, r.Archive)
		}
		sameHistory(t, late.Turns, lateBefore)
		sameIDs(t, late.Turns, lateBefore)
		child := mustLoad(t, st, fx.lateChild.ID)
		sameHistory(t, child.Turns, childBefore)
		sameIDs(t, child.Turns, childBefore)
		early := mustLoad(t, st, fx.early.ID)
		if early.ParentID != fx.root.ID {
			t.Fatalf("fork at 2: got parent %s, want %s", early.ParentID, fx.root.ID)
		}
		sameHistory(t, early.Turns, earlyBefore)
	})
	t.Run("PROV", func(t *testing.T) {
		q, err := kg.Bind(`PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX dcterms: <http://purl.org/dc/terms/>
ASK { GRAPH <https://w3id.org/trails/graph/prov> {
  ?act a prov:Activity , trails:Rewind ; prov:used $s ; prov:generated $a ; trails:rewoundTo 3 ;
       trails:reparented $late ; trails:reason "wrong turn at 3" ; prov:startedAtTime ?t ;
       prov:wasAssociatedWith ?agent .
  ?agent dcterms:identifier "rewinder" .
  $a prov:wasGeneratedBy ?fork . ?fork a trails:Fork ; prov:used $s ; trails:forkPoint 3 .
} GRAPH $a { $a trails:rewoundFrom $s } GRAPH $s { $s trails:rewinds 1 } }`,
			kg.Params{"s": kg.MustIRI(ontology.SessionIRI(fx.root.ID)), "a": kg.MustIRI(ontology.SessionIRI(r.Archive)), "late": kg.MustIRI(ontology.SessionIRI(fx.late.ID))})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := c.Ask(ctx, q); err != nil || !ok {
			t.Fatalf("got %v, %v, want the Rewind activity, the archive's Fork and the rewind count", ok, err)
		}
	})

	// The session continues: its new turns take IRIs of generation 1.
	appendN(s, 2, "after")
	mustPersist(t, st, s)
	got := mustLoad(t, st, fx.root.ID)
	sameHistory(t, got.Turns, s.Turns)
	sameIDs(t, got.Turns, s.Turns)
	if len(got.Turns) != 5 {
		t.Fatalf("got %d turns, want 5", len(got.Turns))
	}
	for _, tn := range got.Turns[3:] {
		if want := session.TurnID(fx.root.ID, tn.Index) + "/r1"; tn.ID != want {
			t.Fatalf("turn %d: got ID %s, want %s", tn.Index, tn.ID, want)
		}
	}
	rwResolves(t, c, fx.root.ID, got.Turns)
	rwResolves(t, c, r.Archive, fx.history[3:])
	if n := rwTurnCount(t, c); n != turns+2 {
		t.Fatalf("got %d turns, want %d", n, turns+2)
	}

	// A second rewind: generation 2.
	s2, r2 := mustRewind(t, st, fx.root.ID, 4)
	appendN(s2, 1, "gen 2")
	mustPersist(t, st, s2)
	got = mustLoad(t, st, fx.root.ID)
	if want := session.TurnID(fx.root.ID, 4) + "/r2"; got.Turns[4].ID != want || got.Turns[3].ID != session.TurnID(fx.root.ID, 3)+"/r1" {
		t.Fatalf("got IDs %s, %s, want .../3/r1 and %s", got.Turns[3].ID, got.Turns[4].ID, want)
	}
	a2 := mustLoad(t, st, r2.Archive)
	sameHistory(t, a2.Turns, s.Turns)
	sameIDs(t, a2.Turns, s.Turns)
	rwResolves(t, c, fx.root.ID, got.Turns)
	rwResolves(t, c, r2.Archive, s.Turns[4:])

	recs, err := st.Rewinds(ctx, fx.root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Archive != r.Archive || recs[0].To != 3 || recs[0].Reason != "wrong turn at 3" ||
		!slices.Equal(recs[0].Reparented, []string{fx.late.ID}) || recs[0].Principal != "rewinder" ||
		recs[1].Archive != r2.Archive || recs[1].To != 4 || recs[1].Reason != "" || len(recs[1].Reparented) != 0 || recs[1].Time.IsZero() {
		t.Fatalf("got %+v, want the two rewinds", recs)
	}
	if recs, err := st.Rewinds(ctx, fx.early.ID); err != nil || len(recs) != 0 {
		t.Fatalf("rewinds of a session never rewound: got %v, %v, want none", recs, err)
	}
}

// TestRewindFork rewinds forks: at their fork point (every own turn moves)
// and inside their own turns; into the inherited prefix is refused.
func TestRewindFork(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "forker", 3)
	f := mustFork(t, root, 2)
	appendN(f, 3, "fork")
	mustPersist(t, st, f)
	before := mustLoad(t, st, f.ID).Turns
	quads := storetest.CountQuads(t, c, "")

	if _, _, err := st.Rewind(ctx, f.ID, 1, session.RewindOptions{}); !errors.Is(err, session.ErrInvalid) || !strings.Contains(err.Error(), "fork that session at 1") {
		t.Fatalf("rewind into the prefix: got %v, want ErrInvalid saying to fork the parent", err)
	}
	if n := storetest.CountQuads(t, c, ""); n != quads {
		t.Fatalf("refused rewind: got %d quads, want %d", n, quads)
	}

	s, r := mustRewind(t, st, f.ID, 3)
	sameHistory(t, s.Turns, before[:3])
	sameHistory(t, mustLoad(t, st, f.ID).Turns, before[:3])
	sameHistory(t, mustLoad(t, st, r.Archive).Turns, before)
	sameIDs(t, mustLoad(t, st, r.Archive).Turns, before)

	s, r = mustRewind(t, st, f.ID, 2) // its fork point: no own turn left
	if len(s.Turns) != 2 || s.ForkedAt != 2 || s.ParentID != root.ID {
		t.Fatalf("got %d turns forked at %d of %s, want 2 at 2 of %s", len(s.Turns), s.ForkedAt, s.ParentID, root.ID)
	}
	sameHistory(t, mustLoad(t, st, r.Archive).Turns, before[:3])
	appendN(s, 1, "again")
	mustPersist(t, st, s)
	got := mustLoad(t, st, f.ID)
	if len(got.Turns) != 3 || got.Turns[2].ID != session.TurnID(f.ID, 2)+"/r2" || got.Turns[2].Branch != f.Branch {
		t.Fatalf("got %+v, want 3 turns, the last of generation 2 on %s", got.Turns, f.Branch)
	}
}

// TestRewindRefused: bad input and forbidden rewinds write nothing.
func TestRewindRefused(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	fx := rwSeed(t, st, "refused")
	worker, err := fx.root.Fork(6, session.AsWorker())
	if err != nil {
		t.Fatal(err)
	}
	appendN(worker, 2, "worker")
	mustPersist(t, st, worker)
	done := persisted(t, st, "refused", 3)
	if _, err := st.SetState(ctx, done.ID, session.StateCompleted, session.StateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := mustFork(t, fx.root, 6)
	other.Principal = "someone-else"
	appendN(other, 1, "other")
	mustPersist(t, st, other)
	quads := storetest.CountQuads(t, c, "")

	for _, tc := range []struct {
		name string
		st   *session.Store
		id   string
		to   int
		want error
	}{
		{"negative", st, fx.root.ID, -1, session.ErrInvalid},
		{"beyond the end", st, fx.root.ID, 7, session.ErrInvalid},
		{"at the end", st, fx.root.ID, 6, session.ErrInvalid},
		{"into the prefix", st, fx.late.ID, 4, session.ErrInvalid},
		{"bad id", st, "not-a-uuid", 1, session.ErrInvalid},
		{"unknown", st, newID(), 1, session.ErrNotFound},
		{"another principal's", session.NewStore(querier(t, c), session.ForPrincipal("someone-else")), fx.root.ID, 1, session.ErrNotFound},
		{"would re-parent another principal's fork", session.NewStore(querier(t, c), session.ForPrincipal("refused")), fx.root.ID, 5, session.ErrForbidden},
		{"too deep", session.NewStore(querier(t, c), session.WithMaxDepth(2)), fx.root.ID, 3, session.ErrForkDepth},
		{"a worker", st, worker.ID, 7, session.ErrNotForkable},
		{"completed", st, done.ID, 1, session.ErrState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.st.Rewind(ctx, tc.id, tc.to, session.RewindOptions{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if n := storetest.CountQuads(t, c, ""); n != quads {
				t.Fatalf("got %d quads, want %d: something was written", n, quads)
			}
		})
	}
	// The same depth limit lets through a rewind whose re-parented forks
	// have no forks of their own: late (forked at 5) stays where it is.
	if _, _, err := session.NewStore(querier(t, c), session.WithMaxDepth(2)).Rewind(ctx, fx.root.ID, 5, session.RewindOptions{}); err != nil {
		t.Fatalf("rewind to 5 re-parents the worker and the other principal's fork only: got %v, want nil", err)
	}
}

// TestRewindStaleValue: a Session value loaded before a rewind cannot be
// persisted after it, so the abandoned turns cannot come back.
func TestRewindStaleValue(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	root := persisted(t, st, "stale", 4)
	old := mustLoad(t, st, root.ID)
	mustRewind(t, st, root.ID, 2)
	turns := rwTurnCount(t, c)
	for _, v := range []*session.Session{old, root} { // loaded, and persisted by this value (its fast path)
		appendN(v, 1, "stale")
		if err := st.Persist(context.Background(), v); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("persist a value from before the rewind: got %v, want ErrConflict", err)
		}
	}
	if n := rwTurnCount(t, c); n != turns {
		t.Fatalf("got %d turns, want %d", n, turns)
	}
	if got := mustLoad(t, st, root.ID); len(got.Turns) != 2 {
		t.Fatalf("got %d turns, want 2", len(got.Turns))
	}
}

// rwHook is a transport that, before sending the first update whose text
// holds match, calls fn.
type rwHook struct {
	match string
	fn    func()
	once  sync.Once
	next  http.RoundTripper
}

func (h *rwHook) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && isWrite(r) {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		if strings.Contains(string(body), h.match) {
			h.once.Do(h.fn)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	return h.next.RoundTrip(r)
}

func rwHookedStore(tb testing.TB, match string, fn func()) *session.Store {
	tb.Helper()
	fusekitest.RequireDirect(tb, "it runs another writer inside its store's HTTP requests")
	tr := &http.Transport{}
	tb.Cleanup(tr.CloseIdleConnections)
	h := &rwHook{match: match, fn: fn, next: tr}
	// NoUpdateLock: fn writes from inside this client's request.
	c := fusekitest.Client(tb, kg.Config{Endpoint: fusekitest.Endpoint(tb), HTTPClient: &http.Client{Transport: h}, NoUpdateLock: true})
	return session.NewStore(c)
}

// TestRewindConcurrentAppend races a rewind and an append on one session,
// each way round: the one that lands second gets ErrConflict and writes
// nothing.
func TestRewindConcurrentAppend(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()

	t.Run("append lands first", func(t *testing.T) {
		root := persisted(t, st, "racer", 4)
		writer := mustLoad(t, st, root.ID)
		appendN(writer, 1, "racing")
		var appendErr error
		hooked := rwHookedStore(t, "trails:rewoundFrom", func() { appendErr = st.Persist(ctx, writer) })
		turns := rwTurnCount(t, c)
		_, _, err := hooked.Rewind(ctx, root.ID, 2, session.RewindOptions{})
		if appendErr != nil || !errors.Is(err, session.ErrConflict) {
			t.Fatalf("got append %v, rewind %v, want nil and ErrConflict", appendErr, err)
		}
		if n := rwTurnCount(t, c); n != turns+1 {
			t.Fatalf("got %d turns, want %d", n, turns+1)
		}
		got := mustLoad(t, st, root.ID)
		sameHistory(t, got.Turns, writer.Turns)
		if recs, err := st.Rewinds(ctx, root.ID); err != nil || len(recs) != 0 {
			t.Fatalf("got rewinds %v, %v, want none", recs, err)
		}
		if bs, err := st.Branches(ctx, root.ID); err != nil || len(bs) != 0 {
			t.Fatalf("got forks %v, %v, want no archive", bs, err)
		}
	})
	t.Run("rewind lands first", func(t *testing.T) {
		root := persisted(t, st, "racer", 4)
		writer := mustLoad(t, st, root.ID)
		appendN(writer, 1, "racing")
		var r session.RewindResult
		var rewindErr error
		hooked := rwHookedStore(t, "trails:ownTurns", func() { _, r, rewindErr = st.Rewind(ctx, root.ID, 2, session.RewindOptions{}) })
		err := hooked.Persist(ctx, writer)
		if rewindErr != nil || !errors.Is(err, session.ErrConflict) {
			t.Fatalf("got rewind %v, append %v, want nil and ErrConflict", rewindErr, err)
		}
		if got := mustLoad(t, st, root.ID); len(got.Turns) != 2 {
			t.Fatalf("got %d turns, want 2", len(got.Turns))
		}
		sameHistory(t, mustLoad(t, st, r.Archive).Turns, root.Turns)
	})
	t.Run("free for all", func(t *testing.T) {
		for round := range 6 {
			root := persisted(t, st, "racer", 4)
			writer := mustLoad(t, st, root.ID)
			appendN(writer, 1, "racing")
			turns := rwTurnCount(t, c)
			var wg sync.WaitGroup
			var appendErr, rewindErr error
			var r session.RewindResult
			wg.Go(func() { appendErr = st.Persist(ctx, writer) })
			wg.Go(func() { _, r, rewindErr = st.Rewind(ctx, root.ID, 2, session.RewindOptions{}) })
			wg.Wait()
			for _, err := range []error{appendErr, rewindErr} {
				if err != nil && !errors.Is(err, session.ErrConflict) {
					t.Fatalf("round %d: got %v, want nil or ErrConflict", round, err)
				}
			}
			if appendErr != nil && rewindErr != nil {
				t.Fatalf("round %d: both failed: %v; %v", round, appendErr, rewindErr)
			}
			want := turns
			if appendErr == nil {
				want++
			}
			if n := rwTurnCount(t, c); n != want {
				t.Fatalf("round %d: got %d turns, want %d", round, n, want)
			}
			got := mustLoad(t, st, root.ID)
			switch {
			case rewindErr != nil:
				sameHistory(t, got.Turns, writer.Turns)
			case appendErr == nil: // the rewind read the appended turn: the archive holds it
				sameHistory(t, got.Turns, writer.Turns[:2])
				sameHistory(t, mustLoad(t, st, r.Archive).Turns, writer.Turns)
			default:
				sameHistory(t, got.Turns, writer.Turns[:2])
				sameHistory(t, mustLoad(t, st, r.Archive).Turns, writer.Turns[:4])
			}
		}
	})
}

// TestArchiveAppends: the archive of a rewind is an ordinary fork whose
// abandoned history can be continued: a value loaded from it appends
// (issue 22, anomaly A7: Persist refused it with ErrInvalid because the
// moved turns keep the rewound session's branch label).
func TestArchiveAppends(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	for _, to := range []int{0, 1} {
		r := persisted(t, st, "agent", 3)
		_, res, err := st.Rewind(ctx, r.ID, to, session.RewindOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a := mustLoad(t, st, res.Archive)
		a.Append("user", "the abandoned path goes on")
		if err := st.Persist(ctx, a); err != nil {
			t.Fatalf("rewind to %d: persist of the archive: %v", to, err)
		}
		got := mustLoad(t, st, res.Archive)
		if n := len(got.Turns); n != 4 || got.Turns[3].Content != "the abandoned path goes on" || got.Turns[3].Branch != got.Branch {
			t.Errorf("rewind to %d: archive holds %d turns, last %+v", to, n, got.Turns[n-1])
		}
	}
}
