package session_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// mustSetState is SetState, failing tb on an error.
func mustSetState(tb testing.TB, st *session.Store, id string, to session.State, opts ...session.StateOptions) session.Transition {
	tb.Helper()
	var o session.StateOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	tr, err := st.SetState(context.Background(), id, to, o)
	if err != nil {
		tb.Fatalf("set state %s to %s: %v", id, to, err)
	}
	return tr
}

// mustInfo is Info, failing tb on an error.
func mustInfo(tb testing.TB, st *session.Store, id string) session.Info {
	tb.Helper()
	in, err := st.Info(context.Background(), id)
	if err != nil {
		tb.Fatalf("info %s: %v", id, err)
	}
	return in
}

// TestSetStateTable runs every pair of states through SetState: the moves
// State.CanBecome allows apply (with a PROV record), a move to the state
// the session is in changes nothing, every other is ErrState with nothing
// written.
func TestSetStateTable(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	allowed := map[[2]session.State]bool{}
	for _, to := range []session.State{session.StateSuspended, session.StateCompleted, session.StateFailed, session.StateExpired} {
		allowed[[2]session.State{session.StateActive, to}] = true
	}
	for _, to := range []session.State{session.StateActive, session.StateCompleted, session.StateFailed, session.StateExpired} {
		allowed[[2]session.State{session.StateSuspended, to}] = true
	}
	for _, from := range session.States() {
		for _, to := range session.States() {
			t.Run(fmt.Sprintf("%s to %s", from, to), func(t *testing.T) {
				if got, want := from.CanBecome(to), allowed[[2]session.State{from, to}]; got != want {
					t.Fatalf("CanBecome: got %v, want %v", got, want)
				}
				s := persisted(t, st, "lifecycle", 1)
				if in := mustInfo(t, st, s.ID); in.State != session.StateActive {
					t.Fatalf("a new session: got state %q, want active", in.State)
				}
				if from != session.StateActive {
					mustSetState(t, st, s.ID, from)
				}
				before := storetest.CountQuads(t, c, "")
				tr, err := st.SetState(ctx, s.ID, to, session.StateOptions{Reason: "table test"})
				after := storetest.CountQuads(t, c, "")
				switch {
				case from == to:
					if err != nil || tr.Changed || tr.Activity != "" {
						t.Fatalf("got %+v, %v; want no change and no error", tr, err)
					}
					if after != before {
						t.Fatalf("wrote %d quads, want none", after-before)
					}
				case allowed[[2]session.State{from, to}]:
					if err != nil || !tr.Changed || tr.From != from || tr.To != to || tr.Activity == "" || len(tr.Flagged) != 0 {
						t.Fatalf("got %+v, %v; want a change from %s to %s", tr, err, from, to)
					}
					if got := mustInfo(t, st, s.ID).State; got != to {
						t.Fatalf("stored state: got %s, want %s", got, to)
					}
				default:
					if !errors.Is(err, session.ErrState) {
						t.Fatalf("got %+v, %v; want ErrState", tr, err)
					}
					if after != before {
						t.Fatalf("a refused move wrote %d quads, want none", after-before)
					}
					if got := mustInfo(t, st, s.ID).State; got != from {
						t.Fatalf("stored state: got %s, want %s", got, from)
					}
				}
			})
		}
	}

	t.Run("bad input", func(t *testing.T) {
		s := persisted(t, st, "lifecycle", 1)
		for name, call := range map[string]func() error{
			"unknown state": func() error { _, err := st.SetState(ctx, s.ID, "done", session.StateOptions{}); return err },
			"bad id": func() error {
				_, err := st.SetState(ctx, "nope", session.StateCompleted, session.StateOptions{})
				return err
			},
			"bad reason": func() error {
				_, err := st.SetState(ctx, s.ID, session.StateCompleted, session.StateOptions{Reason: "\xff"})
				return err
			},
		} {
			if err := call(); !errors.Is(err, session.ErrInvalid) {
				t.Errorf("%s: got %v, want ErrInvalid", name, err)
			}
		}
		if _, err := st.SetState(ctx, newID(), session.StateCompleted, session.StateOptions{}); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("unknown session: got %v, want ErrNotFound", err)
		}
		if _, err := session.ParseState("done"); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("ParseState(done): got %v, want ErrInvalid", err)
		}
		if got, err := session.ParseState("suspended"); got != session.StateSuspended || err != nil {
			t.Errorf("ParseState(suspended): got %q, %v", got, err)
		}
	})
}

// TestSetStateConcurrent races SetStates on one session: exactly one
// applies; the others see its state and either find nothing to do (same
// state) or are refused (ErrState); one PROV record is written.
func TestSetStateConcurrent(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	for round := range 3 {
		s := persisted(t, st, "racer", 1)
		const n = 8
		var wg sync.WaitGroup
		trs := make([]session.Transition, n)
		errs := make([]error, n)
		for i := range n {
			to := session.StateCompleted
			if i%2 == 1 {
				to = session.StateFailed
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				trs[i], errs[i] = st.SetState(ctx, s.ID, to, session.StateOptions{})
			}()
		}
		wg.Wait()
		var winner session.State
		changed := 0
		for i := range n {
			switch {
			case errs[i] == nil && trs[i].Changed:
				changed++
				winner = trs[i].To
			case errs[i] == nil, errors.Is(errs[i], session.ErrState):
			default:
				t.Fatalf("round %d, writer %d: got %v, want nil or ErrState", round, i, errs[i])
			}
		}
		if changed != 1 {
			t.Fatalf("round %d: %d writers changed the state, want 1", round, changed)
		}
		for i := range n {
			if errs[i] == nil && !trs[i].Changed && trs[i].To != winner {
				t.Fatalf("round %d: writer %d wanted %s and got no error, but the state is %s", round, i, trs[i].To, winner)
			}
		}
		if got := mustInfo(t, st, s.ID).State; got != winner {
			t.Fatalf("round %d: stored %s, want the winner's %s", round, got, winner)
		}
		res, err := prov.NewReader(c).Run(ctx, "state-changes", map[string]string{"session": s.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Solutions) != 1 || res.Solutions[0].String("to") != string(winner) {
			t.Fatalf("round %d: got state changes %v, want one to %s", round, res.Solutions, winner)
		}
	}
}

// TestCancelFlags: a session that completes, fails or expires flags its
// active and suspended descendants, not those that ended already, and the
// flags read back through Load, Info, List(CancelPending()) and the audit
// queries.
func TestCancelFlags(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	r := prov.NewReader(c)
	for _, end := range []session.State{session.StateCompleted, session.StateFailed, session.StateExpired} {
		t.Run(string(end), func(t *testing.T) {
			root := persisted(t, st, "parent-agent", 2)
			a := mustFork(t, root, 1) // active
			mustPersist(t, st, a)
			b := mustFork(t, a, 1) // suspended, a grandchild
			b.Principal = "worker-agent"
			mustPersist(t, st, b)
			mustSetState(t, st, b.ID, session.StateSuspended)
			done := mustFork(t, root, 2) // completed before the root ends
			mustPersist(t, st, done)
			mustSetState(t, st, done.ID, session.StateCompleted)
			other := persisted(t, st, "parent-agent", 1) // not a descendant

			if tr := mustSetState(t, st, root.ID, session.StateSuspended); len(tr.Flagged) != 0 {
				t.Fatalf("suspending flagged %v, want none", tr.Flagged)
			}
			tr := mustSetState(t, st, root.ID, end, session.StateOptions{Reason: "the task is over"})
			want := []string{a.ID, b.ID}
			slices.Sort(want)
			if !slices.Equal(tr.Flagged, want) {
				t.Fatalf("flagged %v, want %v", tr.Flagged, want)
			}
			for _, id := range []string{a.ID, b.ID} {
				if s := mustLoad(t, st, id); !s.CancelRequested {
					t.Errorf("load %s: CancelRequested false, want true", id)
				}
				if in := mustInfo(t, st, id); !in.CancelRequested {
					t.Errorf("info %s: CancelRequested false, want true", id)
				}
			}
			for _, id := range []string{root.ID, done.ID, other.ID} {
				if in := mustInfo(t, st, id); in.CancelRequested {
					t.Errorf("info %s (%s): CancelRequested true, want false", id, in.State)
				}
			}
			if s := mustLoad(t, st, root.ID); s.State != end {
				t.Errorf("load of the root: state %s, want %s", s.State, end)
			}

			pending := func() []string {
				infos, err := st.List(ctx, session.CancelPending())
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, in := range infos {
					if in.ID == a.ID || in.ID == b.ID || in.ID == root.ID || in.ID == done.ID {
						ids = append(ids, in.ID)
					}
				}
				slices.Sort(ids)
				return ids
			}
			if got := pending(); !slices.Equal(got, want) {
				t.Fatalf("List(CancelPending()): got %v, want %v", got, want)
			}

			// The audit queries.
			res, err := r.Run(ctx, "state-changes", map[string]string{"session": root.ID})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Solutions) != 2 {
				t.Fatalf("state-changes: got %d rows, want 2 (suspend, then %s)", len(res.Solutions), end)
			}
			last := res.Solutions[1]
			if last.String("from") != "suspended" || last.String("to") != string(end) || last.String("reason") != "the task is over" ||
				last.String("principal") != "parent-agent" || last.String("flagged") != "2" || last.String("activity") != tr.Activity {
				t.Fatalf("state-changes: got %v", last)
			}
			res, err = r.Run(ctx, "cancel-requested", nil)
			if err != nil {
				t.Fatal(err)
			}
			var flagged []string
			for _, row := range res.Solutions {
				if row.String("activity") != tr.Activity {
					continue
				}
				flagged = append(flagged, row.String("session"))
				if row.String("ancestor") != storetest.SessionRef(root.ID).String() || row.String("ancestorState") != string(end) {
					t.Errorf("cancel-requested: got %v", row)
				}
				if id := row.String("session"); id == storetest.SessionRef(b.ID).String() && (row.String("state") != "suspended" || row.String("principal") != "worker-agent") {
					t.Errorf("cancel-requested row of b: got %v", row)
				}
			}
			slices.Sort(flagged)
			if wantIRIs := []string{storetest.SessionRef(want[0]).String(), storetest.SessionRef(want[1]).String()}; !slices.Equal(flagged, wantIRIs) {
				t.Fatalf("cancel-requested: got %v, want %v", flagged, wantIRIs)
			}

			// Once a flagged session ends, it is no longer pending; its flag stays.
			mustSetState(t, st, a.ID, session.StateCompleted)
			if got := pending(); !slices.Equal(got, []string{b.ID}) {
				t.Fatalf("List(CancelPending()) after a completed: got %v, want [%s]", got, b.ID)
			}
			if in := mustInfo(t, st, a.ID); !in.CancelRequested {
				t.Errorf("a lost its flag when it completed")
			}

			// The PROV record names the flagged sessions after they are
			// deleted: SetState reads them back from it, and a Delete
			// racing SetState took the fork first once (issue 22, seed
			// 924439699001: Flagged came back empty).
			if err := st.Delete(ctx, b.ID, session.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			applied, err := session.StateChanges(ctx, clustertest.Querier(t, c), []rdf.IRI{kg.MustIRI(tr.Activity)})
			if err != nil {
				t.Fatal(err)
			}
			if got := applied[tr.Activity]; !slices.Equal(got, want) {
				t.Fatalf("StateChanges after %s was deleted: got %v, want %v", b.ID, got, want)
			}
			res, err = prov.NewReader(clustertest.Querier(t, c)).Run(ctx, "state-changes", map[string]string{"session": root.ID})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Solutions[len(res.Solutions)-1].String("flagged"); got != "2" {
				t.Fatalf("state-changes after a flagged session was deleted: flagged %s, want 2", got)
			}
		})
	}
}

// TestPersistTerminal: no turn is appended to a session that ended, by
// the value that stored it or by a fresh one; an unchanged persist is
// fine; a fork of it may be made and starts active.
func TestPersistTerminal(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	for _, end := range []session.State{session.StateCompleted, session.StateFailed, session.StateExpired} {
		t.Run(string(end), func(t *testing.T) {
			s := persisted(t, st, "ender", 2)
			mustSetState(t, st, s.ID, end)
			if err := st.Persist(ctx, s); err != nil {
				t.Fatalf("persist unchanged: got %v, want nil", err)
			}
			loaded := mustLoad(t, st, s.ID)
			for name, v := range map[string]*session.Session{"the value that stored it": s, "a loaded value": loaded} {
				v.Append("assistant", "one more")
				if err := st.Persist(ctx, v); !errors.Is(err, session.ErrState) {
					t.Fatalf("%s: got %v, want ErrState", name, err)
				}
			}
			if got := len(mustLoad(t, st, s.ID).Turns); got != 2 {
				t.Fatalf("got %d turns, want 2", got)
			}
			if in := mustInfo(t, st, s.ID); in.OwnTurns != 2 || in.State != end {
				t.Fatalf("got %d own turns, state %s; want 2, %s", in.OwnTurns, in.State, end)
			}

			f := mustFork(t, mustLoad(t, st, s.ID), 2)
			f.Append("user", "let us try again")
			mustPersist(t, st, f)
			got := mustLoad(t, st, f.ID)
			if got.State != session.StateActive || got.CancelRequested || len(got.Turns) != 3 {
				t.Fatalf("fork: state %s, cancel %v, %d turns; want active, false, 3", got.State, got.CancelRequested, len(got.Turns))
			}
		})
	}
}

// TestTTL: a TTL is stored with a new session and read back; SetExpiry
// moves or clears it; Expire marks due sessions expired, once.
func TestTTL(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	c := fusekitest.Empty(t) // Expire scans the whole dataset
	q := querier(t, c)
	st := session.NewStore(q, session.WithClock(func() time.Time { return t0 }))
	aq, ok := q.(admin.Querier)
	if !ok {
		t.Fatalf("the tests' Querier %T is not an admin.Querier", q)
	}
	ds := admin.New(aq, admin.WithClock(func() time.Time { return t0 })) // through the log too, on the kafka profile

	s := session.New("ttl-agent")
	s.TTL = time.Hour
	s.Append("user", "hello")
	mustPersist(t, st, s)
	if !s.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after persist: ExpiresAt %v, want %v", s.ExpiresAt, t0.Add(time.Hour))
	}
	if got := mustLoad(t, st, s.ID).ExpiresAt; !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("load: ExpiresAt %v, want %v", got, t0.Add(time.Hour))
	}
	if got := mustInfo(t, st, s.ID).ExpiresAt; !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("info: ExpiresAt %v, want %v", got, t0.Add(time.Hour))
	}
	neg := session.New("ttl-agent")
	neg.TTL = -time.Second
	if err := st.Persist(ctx, neg); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("negative TTL: got %v, want ErrInvalid", err)
	}

	// A fork does not inherit the TTL.
	f := mustFork(t, s, 1)
	mustPersist(t, st, f)
	if got := mustInfo(t, st, f.ID).ExpiresAt; !got.IsZero() {
		t.Fatalf("fork: ExpiresAt %v, want none", got)
	}

	// SetExpiry moves and clears.
	later := persisted(t, st, "ttl-agent", 1)
	if err := st.SetExpiry(ctx, later.ID, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := mustInfo(t, st, later.ID).ExpiresAt; !got.Equal(t0.Add(3 * time.Hour)) {
		t.Fatalf("SetExpiry: got %v, want %v", got, t0.Add(3*time.Hour))
	}
	never := persisted(t, st, "ttl-agent", 1)
	if err := st.SetExpiry(ctx, never.ID, t0); err != nil {
		t.Fatal(err)
	}
	if err := st.SetExpiry(ctx, never.ID, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := mustInfo(t, st, never.ID).ExpiresAt; !got.IsZero() {
		t.Fatalf("SetExpiry(zero): got %v, want none", got)
	}
	ended := persisted(t, st, "ttl-agent", 1)
	mustSetState(t, st, ended.ID, session.StateCompleted)
	if err := st.SetExpiry(ctx, ended.ID, t0); !errors.Is(err, session.ErrState) {
		t.Fatalf("SetExpiry of a completed session: got %v, want ErrState", err)
	}
	if err := st.SetExpiry(ctx, newID(), t0); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("SetExpiry of an unknown session: got %v, want ErrNotFound", err)
	}

	// A suspended one, due at the same time, and one that ended before its expiry.
	paused := persisted(t, st, "ttl-agent", 1)
	if err := st.SetExpiry(ctx, paused.ID, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	mustSetState(t, st, paused.ID, session.StateSuspended)
	finished := persisted(t, st, "ttl-agent", 1)
	if err := st.SetExpiry(ctx, finished.ID, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	mustSetState(t, st, finished.ID, session.StateFailed)

	expire := func(now time.Time) (int, []string) {
		t.Helper()
		var seen []string
		n, err := ds.Expire(ctx, now, admin.ExpireOptions{Progress: func(done, total int, s session.Step) {
			if s.Action != "expire" || done != len(seen)+1 || total < done {
				t.Errorf("progress: got %d/%d %+v", done, total, s)
			}
			seen = append(seen, s.Session)
		}})
		if err != nil {
			t.Fatalf("expire at %v: %v", now, err)
		}
		return n, seen
	}
	if n, _ := expire(t0.Add(59 * time.Minute)); n != 0 {
		t.Fatalf("expire before any expiry: got %d, want 0", n)
	}
	plan, err := ds.PlanExpire(ctx, t0.Add(time.Hour))
	if err != nil || len(plan) != 2 {
		t.Fatalf("PlanExpire: got %v, %v; want s and paused", plan, err)
	}
	n, seen := expire(t0.Add(time.Hour)) // inclusive
	slices.Sort(seen)
	want := []string{s.ID, paused.ID}
	slices.Sort(want)
	if n != 2 || !slices.Equal(seen, want) {
		t.Fatalf("expire at the expiry: got %d, progress %v; want 2, %v", n, seen, want)
	}
	for _, id := range want {
		if got := mustInfo(t, st, id).State; got != session.StateExpired {
			t.Errorf("%s: got %s, want expired", id, got)
		}
	}
	if got := mustInfo(t, st, f.ID); !got.CancelRequested || got.State != session.StateActive {
		t.Errorf("fork of an expired session: got %s, cancel %v; want active, flagged", got.State, got.CancelRequested)
	}
	if got := mustInfo(t, st, finished.ID).State; got != session.StateFailed {
		t.Errorf("a failed session past its expiry: got %s, want failed", got)
	}
	if n, _ := expire(t0.Add(time.Hour)); n != 0 {
		t.Fatalf("second run: got %d, want 0", n)
	}
	if n, _ := expire(t0.Add(4 * time.Hour)); n != 1 {
		t.Fatalf("expire later: got %d, want 1 (the session with SetExpiry)", n)
	}
	res, err := prov.NewReader(c).Run(ctx, "state-changes", map[string]string{"session": paused.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Solutions) != 2 || res.Solutions[1].String("to") != "expired" || res.Solutions[1].String("reason") != "TTL ended at 2026-05-01T13:00:00Z" {
		t.Fatalf("state changes of the suspended session: got %v", res.Solutions)
	}
	// What the lifecycle wrote passes trails-admin check, SHACL shapes included.
	if _, err := ds.Init(ctx); err != nil {
		t.Fatal(err)
	}
	findings, err := storetest.Check(ctx, ds)
	if err != nil || len(findings) != 0 {
		t.Fatalf("check: got %v, %v; want no findings", findings, err)
	}
}

// TestSetExpiryReplaced: another SetExpiry landing between a SetExpiry's
// update and its read-back wins (the last write), and the first answers
// ErrConflict, as its documentation says (known anomaly A9 of
// docs/reliability.md was that it did not).
func TestSetExpiryReplaced(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	s := persisted(t, st, "alice", 1)
	mine, theirs := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	hooked := session.NewStore(&afterUpdate{Querier: querier(t, c), match: ontology.ExpiresAt, after: func() {
		if err := st.SetExpiry(ctx, s.ID, theirs); err != nil {
			t.Errorf("the other SetExpiry: %v", err)
		}
	}})
	if err := hooked.SetExpiry(ctx, s.ID, mine); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	in, err := st.Info(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !in.ExpiresAt.Equal(theirs) {
		t.Fatalf("expiry: got %v, want the other writer's %v", in.ExpiresAt, theirs)
	}
}

// afterUpdate is a Querier that runs after, once, behind the first update
// containing match that succeeded: another writer between a call's write
// and its read-back.
type afterUpdate struct {
	session.Querier
	match string
	after func()
	once  sync.Once
}

func (q *afterUpdate) Replicated() bool { return isReplicated(q.Querier) }

func (q *afterUpdate) Update(ctx context.Context, u string, opts ...kg.UpdateOption) error {
	err := q.Querier.Update(ctx, u, opts...)
	if err == nil && strings.Contains(u, q.match) {
		q.once.Do(q.after)
	}
	return err
}

// TestStateScoped: a Store scoped to a principal changes the state of its
// own sessions only (Expire is not a Store method at all: package admin).
func TestStateScoped(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	alice, bob := "alice-"+newID(), "bob-"+newID()
	aliceRoot := persisted(t, st, alice, 1)
	bobRoot := persisted(t, st, bob, 1)
	asAlice := session.NewStore(querier(t, c), session.ForPrincipal(alice))
	if _, err := asAlice.SetState(ctx, bobRoot.ID, session.StateCompleted, session.StateOptions{}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("SetState of bob's session: got %v, want ErrNotFound", err)
	}
	if err := asAlice.SetExpiry(ctx, bobRoot.ID, time.Now()); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("SetExpiry of bob's session: got %v, want ErrNotFound", err)
	}
	if got := mustInfo(t, st, bobRoot.ID).State; got != session.StateActive {
		t.Fatalf("bob's session: got %s, want active", got)
	}
	tr, err := asAlice.SetState(ctx, aliceRoot.ID, session.StateSuspended, session.StateOptions{})
	if err != nil || !tr.Changed {
		t.Fatalf("SetState of alice's session: got %+v, %v", tr, err)
	}
	res, err := prov.NewReader(c).Run(ctx, "state-changes", map[string]string{"session": aliceRoot.ID})
	if err != nil || len(res.Solutions) != 1 || res.Solutions[0].String("principal") != alice {
		t.Fatalf("state changes: got %v, %v; want one by %s", res, err, alice)
	}
}
