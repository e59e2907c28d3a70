package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

var (
	_ session.Querier = (*cluster.Sharded)(nil)
	_ admin.Querier   = (*cluster.Sharded)(nil)
)

// shardRig is two replica groups, each a topic with two replicas, and an
// audit replica that applies both topics into one dataset.
type shardRig struct {
	groups []*rig // each group's topic, replicas and appliers
	audit  *kg.Client
	auditA []*applierRun // the audit replica's applier of each group's topic
}

// newShardRig makes two groups on srv's datasets 1 to 4 and the audit
// replica on dataset 5.
func newShardRig(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) *shardRig {
	t.Helper()
	sr := &shardRig{}
	for g := range 2 {
		r := &rig{brokers: k.Brokers(), topic: fmt.Sprintf("t%s-g%d", strings.ReplaceAll(t.Name(), "/", "-"), g)}
		k.CreateTopic(t, r.topic, 1)
		for _, ds := range srv.Datasets[1+2*g : 3+2*g] {
			c := fusekitest.Client(t, kg.Config{Endpoint: ds, Store: kg.Fuseki})
			if err := c.Update(context.Background(), "DROP ALL", kg.Idempotent()); err != nil {
				t.Fatal(err)
			}
			r.stores = append(r.stores, c)
			r.appliers = append(r.appliers, r.start(t, c, nil))
		}
		sr.groups = append(sr.groups, r)
	}
	sr.audit = fusekitest.Client(t, kg.Config{Endpoint: srv.Datasets[5], Store: kg.Fuseki})
	if err := sr.audit.Update(context.Background(), "DROP ALL", kg.Idempotent()); err != nil {
		t.Fatal(err)
	}
	for _, r := range sr.groups {
		// Two appliers, of two topics, on one dataset: each moves the
		// offset of its own topic (ontology.LogIRI).
		sr.auditA = append(sr.auditA, r.start(t, sr.audit, nil))
	}
	t.Cleanup(func() {
		for _, r := range sr.groups {
			for _, a := range r.appliers {
				a.stop(t)
				a.srv.Close()
			}
		}
		for _, a := range sr.auditA {
			a.stop(t)
			a.srv.Close()
		}
	})
	return sr
}

// client returns a Sharded on the rig, closed when t ends.
func (sr *shardRig) client(t *testing.T) *cluster.Sharded {
	t.Helper()
	return sr.clientWithin(t, 20*time.Second)
}

// clientWithin is client with each group Client's Timeout.
func (sr *shardRig) clientWithin(t *testing.T, timeout time.Duration) *cluster.Sharded {
	t.Helper()
	cfg := cluster.ShardedConfig{Audit: &cluster.Audit{Dataset: sr.audit.Endpoint()}}
	for i, r := range sr.groups {
		cfg.Groups = append(cfg.Groups, cluster.Config{Brokers: r.brokers, Topic: r.topic, Replicas: r.replicas(), Timeout: timeout})
		cfg.Audit.Appliers = append(cfg.Audit.Appliers, sr.auditA[i].srv.URL)
	}
	c, err := cluster.OpenSharded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// holds reports whether store holds anything about session id.
func holds(t *testing.T, store *kg.Client, id string) bool {
	t.Helper()
	q := "ASK { GRAPH ?g { <" + ontology.SessionIRI(id) + "> ?p ?o } }"
	ok, err := store.Ask(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// testSharded: session trees routed to two replica groups (issue 38):
// each tree lands on its group's replicas only, with its group recorded
// as trails:group; a fork lands in its parent's group; the audit replica,
// which applies both groups' logs, holds every tree, answers a read
// across groups and checks clean; a write that would need both groups'
// logs is refused with ErrCrossGroup.
func testSharded(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	sh := sr.client(t)
	if n, err := admin.New(sh).Init(ctx); err != nil {
		t.Fatalf("init (the ontology to every group): %v (%d)", err, n)
	}
	st := session.NewStore(sh, session.WithGroupCommit(false))

	// Roots until each group has two.
	byGroup := map[int][]*session.Session{}
	for len(byGroup[0]) < 2 || len(byGroup[1]) < 2 {
		s := session.New("sharded")
		s.Append("user", "hello from "+s.ID)
		s.Append("assistant", "hi")
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		g := sh.HomeGroup(s.ID)
		byGroup[g] = append(byGroup[g], s)
	}
	// A fork in each group, and a turn on it.
	forks := map[int]*session.Session{}
	for g := range 2 {
		parent := byGroup[g][0]
		f, err := st.Fork(ctx, parent.ID, 1)
		if err != nil {
			t.Fatalf("fork of %s (group %d): %v", parent.ID, g, err)
		}
		f.Append("assistant", "a fork's answer")
		if err := st.Persist(ctx, f); err != nil {
			t.Fatal(err)
		}
		forks[g] = f
		if got, err := sh.Group(ctx, f.ID); err != nil || got != g {
			t.Errorf("fork of a group %d root: group %d (%v), want %d", g, got, err, g)
		}
	}

	// Each group's replicas converge and hold their group's trees only.
	pos := sh.Positions()
	for g, r := range sr.groups {
		r.convergedBut(t, pos[g], func(l string) bool {
			return strings.HasSuffix(l, "<"+ontology.OntologyGraph+"> .") && strings.Contains(l, "_:")
		})
		other := sr.groups[1-g]
		for _, s := range append(byGroup[g], forks[g]) {
			for i, store := range r.stores {
				if !holds(t, store, s.ID) {
					t.Errorf("group %d, replica %d: session %s of the group missing", g, i, s.ID)
				}
			}
			for i, store := range other.stores {
				if holds(t, store, s.ID) {
					t.Errorf("group %d, replica %d: holds session %s of group %d", 1-g, i, s.ID, g)
				}
			}
		}
		// The group recorded on each session the group created.
		for _, s := range append(byGroup[g], forks[g]) {
			q := fmt.Sprintf("ASK { GRAPH <%s> { <%s> <%s> \"%d\"^^<http://www.w3.org/2001/XMLSchema#nonNegativeInteger> } }", ontology.ReplicaGraph, ontology.SessionIRI(s.ID), ontology.Group, g)
			if ok, err := r.stores[0].Ask(ctx, q); err != nil || !ok {
				t.Errorf("group %d: session %s: trails:group %d recorded: %v (%v)", g, s.ID, g, ok, err)
			}
		}
	}

	// Loads through the Sharded go to each tree's group.
	for g := range 2 {
		got, err := st.Load(ctx, forks[g].ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Turns) != 2 || got.Turns[1].Content != "a fork's answer" {
			t.Errorf("group %d fork loaded: %d turns", g, len(got.Turns))
		}
	}

	// A read across groups: the audit replica, at or past both groups'
	// writes of this client.
	a, b := byGroup[0][0].ID, byGroup[1][0].ID
	q := fmt.Sprintf("SELECT ?s WHERE { VALUES ?s { <%s> <%s> } GRAPH ?s { ?s a <%s> } }", ontology.SessionIRI(a), ontology.SessionIRI(b), ontology.Session)
	res, err := sh.Select(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Solutions) != 2 {
		t.Errorf("a read across groups found %d of the 2 sessions", len(res.Solutions))
	}
	// The audit replica holds every session, one offset per group, and
	// checks clean.
	for g, s := range byGroup {
		for _, x := range append(s, forks[g]) {
			if !holds(t, sr.audit, x.ID) {
				t.Errorf("audit replica: session %s of group %d missing", x.ID, g)
			}
		}
	}
	list, err := st.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < 6 {
		t.Errorf("sessions listed through the audit replica: %d, want at least 6", len(list))
	}
	findings, err := admin.New(sh).Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 0 {
		t.Errorf("check of the audit replica: %d findings, first %+v", len(findings), findings[0])
	}
	// Every applier, the groups' and the audit replica's (one per
	// group's log, on one dataset), applied appends as data.
	for g, gr := range sr.groups {
		for i, a := range append(slices.Clone(gr.appliers), sr.auditA[g]) {
			if cluster.Decided(a.a) == 0 {
				t.Errorf("group %d: applier %d (2: the audit replica's) applied no append as data", g, i)
			}
		}
	}

	// A turn long enough to be staged (a Graph Store PUT ahead of its
	// update) in a group 1 tree: the PUT goes to group 1 with it.
	long := byGroup[1][0]
	long.Append("assistant", strings.Repeat("staged through group 1. ", 8000))
	if err := st.Persist(ctx, long); err != nil {
		t.Fatalf("a staged turn in group 1: %v", err)
	}
	if got, err := st.Load(ctx, long.ID); err != nil || len(got.Turns) != 3 || len(got.Turns[2].Content) != len(long.Turns[2].Content) {
		t.Errorf("the staged turn loaded: %v", err)
	}
	// A cascade delete of a group 1 root and its fork stays in group 1.
	if err := st.Delete(ctx, byGroup[1][0].ID, session.DeleteOptions{Cascade: true}); err != nil {
		t.Fatalf("cascade delete in group 1: %v", err)
	}
	if _, err := st.Load(ctx, forks[1].ID); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("load of a fork deleted with its root: got %v, want ErrNotFound", err)
	}
	pos = sh.Positions()
	sr.groups[1].convergedBut(t, pos[1], func(l string) bool {
		return strings.HasSuffix(l, "<"+ontology.OntologyGraph+"> .") && strings.Contains(l, "_:")
	})
	// The audit replica holds one offset per group's log, each the
	// group's own.
	for g, r := range sr.groups {
		waitPosition(t, sr.auditA[g].srv.URL, pos[g])
		q := fmt.Sprintf("ASK { GRAPH <%s> { <%s> <%s> ?o } }", ontology.ReplicaGraph, ontology.LogIRI(r.topic, 0), ontology.AppliedOffset)
		if ok, err := sr.audit.Ask(ctx, q); err != nil || !ok {
			t.Errorf("audit replica: no offset of group %d's log (%v)", g, err)
		}
	}

	// Shared values: a root created with them goes to the shared group
	// (0); a tree of group 1 sets one through both logs, in order
	// (sharedvalues.go), and every tree of the principal sees it.
	v := session.New("sharded")
	v.Initial = map[string]json.RawMessage{"user:tier": json.RawMessage(`"gold"`)}
	v.Append("user", "with a shared value")
	if err := st.Persist(ctx, v); err != nil {
		t.Fatal(err)
	}
	if g, err := sh.Group(ctx, v.ID); err != nil || g != 0 {
		t.Errorf("a root with shared values: group %d (%v), want the shared group 0", g, err)
	}
	s1 := byGroup[1][1]
	s1.AppendTurn(session.Turn{Role: "assistant", Content: "sets a shared value", Structure: &session.Structure{Delta: map[string]json.RawMessage{"user:tier": json.RawMessage(`"silver"`)}}})
	if err := st.Persist(ctx, s1); err != nil {
		t.Fatalf("a shared value set from a group 1 tree: %v", err)
	}
	sharedValueIs(t, st, "user:tier", `"silver"`, v.ID, s1.ID)
	outboxEmpty(t, sr, sh)
}

// sharedValueIs checks that each session of ids loads with key at want
// (JSON), through st.
func sharedValueIs(t *testing.T, st *session.Store, key, want string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		got, err := st.Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Values[key]) != want {
			t.Errorf("session %s: %s = %s, want %s", id, key, got.Values[key], want)
		}
	}
}

// outboxEntries returns the outbox entries (ontology.PendingShare) of
// store.
func outboxEntries(t *testing.T, store *kg.Client) int {
	t.Helper()
	res, err := store.Select(context.Background(), fmt.Sprintf("SELECT ?c WHERE { GRAPH <%s> { ?c <%s> ?op } }", ontology.ReplicaGraph, ontology.PendingShare))
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Solutions)
}

// outboxEmpty checks that no replica of sr holds an outbox entry once it
// applied each log up to the last write of the clients.
func outboxEmpty(t *testing.T, sr *shardRig, clients ...*cluster.Sharded) {
	t.Helper()
	for g, r := range sr.groups {
		end := int64(-1)
		for _, c := range clients {
			end = max(end, c.Positions()[g])
		}
		for i, a := range r.appliers {
			waitPosition(t, a.srv.URL, end)
			if n := outboxEntries(t, r.stores[i]); n != 0 {
				t.Errorf("group %d, replica %d: %d outbox entries left, want none", g, i, n)
			}
		}
		waitPosition(t, sr.auditA[g].srv.URL, end)
	}
	if n := outboxEntries(t, sr.audit); n != 0 {
		t.Errorf("audit replica: %d outbox entries left, want none", n)
	}
}

// testShardedValues: shared values set from trees outside the shared
// group (issue 38). A fork of a group 1 tree that starts with a shared
// value sets it; a write whose values' record cannot apply in time (the
// shared group's appliers stopped) is acknowledged with its value in
// group 1's outbox, and the value arrives once the group is back; a
// writer that dies between its records leaves its values in the outbox,
// and their replay by Reshare sets them, but never undoes a newer value.
func testShardedValues(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	sh := sr.client(t)
	st := session.NewStore(sh, session.WithGroupCommit(false))
	var root *session.Session
	for root == nil || sh.HomeGroup(root.ID) != 1 {
		root = session.New("values")
	}
	root.Append("user", "a tree of group 1")
	if err := st.Persist(ctx, root); err != nil {
		t.Fatal(err)
	}
	f, err := root.Fork(1)
	if err != nil {
		t.Fatal(err)
	}
	f.AppendTurn(session.Turn{Role: "assistant", Content: "a fork's first turn sets a shared value", Structure: &session.Structure{Delta: map[string]json.RawMessage{"user:mode": json.RawMessage(`"fast"`)}}})
	if err := st.Persist(ctx, f); err != nil {
		t.Fatalf("a fork of a group 1 tree setting a shared value: %v", err)
	}
	if g, err := sh.Group(ctx, f.ID); err != nil || g != 1 {
		t.Errorf("the fork: group %d (%v), want its parent's, 1", g, err)
	}
	sharedValueIs(t, st, "user:mode", `"fast"`, root.ID, f.ID)

	// A write whose values' record times out: the shared group's
	// appliers stopped, a writer with a 3 s timeout.
	late := sr.clientWithin(t, 3*time.Second)
	lst := session.NewStore(late, session.WithGroupCommit(false))
	ls, err := lst.Load(ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Each writer runs Reshare before its first write of shared values
	// across groups, not after: neither replays the outbox on its own
	// below.
	g0 := sr.groups[0]
	for _, a := range g0.appliers {
		a.stop(t)
	}
	ls.AppendTurn(session.Turn{Role: "assistant", Content: "sets a shared value while group 0 is down", Structure: &session.Structure{Delta: map[string]json.RawMessage{"user:mode": json.RawMessage(`"slow"`)}}})
	if err := lst.Persist(ctx, ls); err != nil {
		t.Fatalf("a shared value set while the shared group's appliers are stopped: %v, want it acknowledged (its value waits in the outbox)", err)
	}
	for i, store := range sr.groups[1].stores {
		waitPosition(t, sr.groups[1].appliers[i].srv.URL, late.Positions()[1])
		if n := outboxEntries(t, store); n != 1 {
			t.Errorf("group 1, replica %d: %d outbox entries, want 1 (the value not yet shared)", i, n)
		}
	}
	for i := range g0.appliers {
		g0.appliers[i] = g0.start(t, g0.stores[i], g0.appliers[i].srv)
	}
	// The values' record was in group 0's log: it applies once the
	// appliers run again.
	sharedValueIs(t, st, "user:mode", `"slow"`, root.ID, f.ID)

	// A writer that dies between its write and its values' record: its
	// entries stay in the outbox. Then a newer value of one key; the
	// outbox replayed sets the other key and leaves the newer value.
	restore := cluster.DieBeforeShare()
	ls.AppendTurn(session.Turn{Role: "assistant", Content: "its writer dies before the values' record", Structure: &session.Structure{Delta: map[string]json.RawMessage{
		"user:mode": json.RawMessage(`"stale"`), "user:lang": json.RawMessage(`"pt"`)}}})
	err = lst.Persist(ctx, ls)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	sharedValueIs(t, st, "user:mode", `"slow"`, root.ID)
	sharedValueIs(t, st, "user:lang", ``, root.ID)
	f.AppendTurn(session.Turn{Role: "assistant", Content: "a newer value", Structure: &session.Structure{Delta: map[string]json.RawMessage{"user:mode": json.RawMessage(`"newest"`)}}})
	if err := st.Persist(ctx, f); err != nil {
		t.Fatal(err)
	}
	n, err := late.Reshare(ctx)
	if err != nil || n != 2 {
		t.Errorf("Reshare: %d entries completed (%v), want 2", n, err)
	}
	sharedValueIs(t, st, "user:mode", `"newest"`, root.ID, f.ID)
	sharedValueIs(t, st, "user:lang", `"pt"`, root.ID, f.ID)
	outboxEmpty(t, sr, sh, late)
	if n, err := late.Reshare(ctx); err != nil || n != 0 {
		t.Errorf("Reshare again: %d entries (%v), want 0", n, err)
	}
}

// convergedBut is converged, with the lines skip says are a replica's own
// (the shapes' blank-node labels) left out of the comparison.
func (r *rig) convergedBut(t *testing.T, at int64, skip func(string) bool) {
	t.Helper()
	var dumps []string
	for i, a := range r.appliers {
		waitPosition(t, a.srv.URL, at)
		dumps = append(dumps, strings.Join(slices.DeleteFunc(strings.Split(dump(t, r.stores[i]), "\n"), skip), "\n"))
	}
	for i := 1; i < len(dumps); i++ {
		if dumps[i] != dumps[0] {
			t.Fatalf("replica %d holds other quads than replica 0:\n%s", i, diffLines(dumps[0], dumps[i]))
		}
	}
}

// testShardedFence: a write whose outcome is lost in group 1 (its
// appliers stopped, so no replica answers within the Client's Timeout) is
// fenced, and the fence, which names only the write's gate graph, goes to
// group 1's log, behind the write: once the appliers run again the write
// applied and the gate is fenced there, and group 0 holds no fence.
// Meanwhile a group 0 tree keeps writing: its appends are acknowledged,
// and load after.
func testShardedFence(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	sh := sr.clientWithin(t, 3*time.Second)
	st := session.NewStore(sh, session.WithGroupCommit(false))
	var s *session.Session
	for s == nil || sh.HomeGroup(s.ID) != 1 {
		s = session.New("fenced")
	}
	s.Append("user", "one")
	if err := st.Persist(ctx, s); err != nil {
		t.Fatal(err)
	}
	var other *session.Session // a tree of group 0
	for other == nil || sh.HomeGroup(other.ID) != 0 {
		other = session.New("fenced")
	}
	other.Append("user", "group 0, before")
	if err := st.Persist(ctx, other); err != nil {
		t.Fatal(err)
	}
	g1 := sr.groups[1]
	for _, a := range g1.appliers {
		a.stop(t)
	}
	// Group 0 keeps writing while group 1 has no applier.
	for i := range 3 {
		other.Append("assistant", fmt.Sprintf("group 0 while group 1 is stopped, %d", i))
		if err := st.Persist(ctx, other); err != nil {
			t.Fatalf("a group 0 write while group 1's appliers are stopped: %v", err)
		}
	}
	s.Append("assistant", "two, its answer lost")
	err := st.Persist(ctx, s)
	if err == nil {
		t.Fatal("persist with group 1's appliers stopped: got nil, want an unknown outcome")
	}
	t.Logf("persist with group 1's appliers stopped: %v", err)
	for i := range g1.appliers {
		g1.appliers[i] = g1.start(t, g1.stores[i], g1.appliers[i].srv)
	}
	fenced := func(store *kg.Client) int {
		t.Helper()
		res, err := store.Select(ctx, fmt.Sprintf("SELECT ?gate WHERE { GRAPH <%s> { ?gate <%s> ?at } }", ontology.FencesGraph, ontology.FencedAt))
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Solutions)
	}
	pos := sh.Positions()
	for g, r := range sr.groups {
		for _, a := range r.appliers {
			waitPosition(t, a.srv.URL, pos[g])
		}
	}
	// The fence's outcome was lost too (3 s): its record is in the log
	// after the write's, which this client's position does not count.
	for i, store := range g1.stores {
		deadline := time.Now().Add(20 * time.Second)
		for fenced(store) == 0 && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if n := fenced(store); n == 0 {
			t.Errorf("group 1, replica %d: no fence, want the lost write's gate fenced", i)
		}
	}
	for i, store := range sr.groups[0].stores {
		if n := fenced(store); n != 0 {
			t.Errorf("group 0, replica %d: %d fences, want none (the fence belongs to group 1's log)", i, n)
		}
	}
	got, err := session.NewStore(sr.client(t), session.WithGroupCommit(false)).Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 2 {
		t.Errorf("after the appliers restarted: %d turns, want 2 (the write was in the log before its fence)", len(got.Turns))
	}
	if got, err := session.NewStore(sr.client(t), session.WithGroupCommit(false)).Load(ctx, other.ID); err != nil || len(got.Turns) != 4 {
		t.Errorf("the group 0 tree written while group 1 was stopped: %v, want 4 turns", err)
	}
}

// testShardedWriters: eight writers share one Sharded, each appending to a
// tree of its own (trees of both groups), with a fork each: every
// acknowledged append loads, each group's replicas hold the same quads,
// and the audit replica lists every tree.
func testShardedWriters(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	sh := sr.client(t)
	st := session.NewStore(sh, session.WithGroupCommit(false))
	const writers, appends = 8, 5
	var wg sync.WaitGroup
	ids := make([]string, writers)
	forks := make([]string, writers)
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := session.New(fmt.Sprintf("writer-%d", w))
			ids[w] = s.ID
			for i := range appends {
				s.Append("user", fmt.Sprintf("writer %d, turn %d", w, i))
				if err := st.Persist(ctx, s); err != nil {
					errs <- fmt.Errorf("writer %d, turn %d: %w", w, i, err)
					return
				}
			}
			f, err := st.Fork(ctx, s.ID, 2)
			if err == nil {
				f.Append("assistant", "forked")
				err = st.Persist(ctx, f)
				forks[w] = f.ID
			}
			if err != nil {
				errs <- fmt.Errorf("writer %d, fork: %w", w, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	groups := map[int]int{}
	for w, id := range ids {
		got, err := st.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Turns) != appends {
			t.Errorf("writer %d: %d turns, want %d", w, len(got.Turns), appends)
		}
		g, err := sh.Group(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if fg, err := sh.Group(ctx, forks[w]); err != nil || fg != g {
			t.Errorf("writer %d: fork in group %d (%v), its root in %d", w, fg, err, g)
		}
		groups[g]++
	}
	pos := sh.Positions()
	for g, r := range sr.groups {
		r.convergedBut(t, pos[g], func(string) bool { return false })
	}
	list, err := st.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2*writers {
		t.Errorf("listed through the audit replica: %d sessions, want %d", len(list), 2*writers)
	}
	t.Logf("trees per group: %v; positions %v", groups, pos)
}

// testShardedImport: an import of several trees (made on a store of
// their own and exported) through a Sharded puts each tree in its home
// group, a fork with its root, and records their groups; check through
// the audit replica finds nothing.
func testShardedImport(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	direct := fusekitest.Client(t, kg.Config{Endpoint: srv.Datasets[6], Store: kg.Fuseki})
	if err := direct.Update(ctx, "DROP ALL", kg.Idempotent()); err != nil {
		t.Fatal(err)
	}
	dst := session.NewStore(direct)
	sr := newShardRig(t, k, srv)
	sh := sr.client(t)
	if _, err := admin.New(sh).Init(ctx); err != nil {
		t.Fatal(err)
	}
	type tree struct{ root, fork string }
	var trees []tree
	home := map[int]int{}
	for home[0] < 2 || home[1] < 2 {
		s := session.New("imported")
		s.Append("user", "made elsewhere")
		s.Append("assistant", "and imported")
		if err := dst.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		f, err := dst.Fork(ctx, s.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		f.Append("assistant", "a fork, imported with its root")
		if err := dst.Persist(ctx, f); err != nil {
			t.Fatal(err)
		}
		trees = append(trees, tree{s.ID, f.ID})
		home[sh.HomeGroup(s.ID)]++
	}
	var nq bytes.Buffer
	if _, err := admin.New(direct).Export(ctx, &nq, admin.NQuads); err != nil {
		t.Fatal(err)
	}
	stats, err := admin.New(sh).Import(ctx, &nq, admin.NQuads, nil)
	if err != nil {
		t.Fatalf("import through the Sharded: %v", err)
	}
	t.Logf("imported %d sessions in %d batches; trees by home group %v", stats.Sessions, stats.Batches, home)
	pos := sh.Positions()
	for g, r := range sr.groups {
		r.convergedBut(t, pos[g], func(l string) bool {
			return strings.HasSuffix(l, "<"+ontology.OntologyGraph+"> .") && strings.Contains(l, "_:")
		})
	}
	for _, tr := range trees {
		g := sh.HomeGroup(tr.root)
		for _, id := range []string{tr.root, tr.fork} {
			if !holds(t, sr.groups[g].stores[0], id) || holds(t, sr.groups[1-g].stores[0], id) {
				t.Errorf("session %s of a tree whose home is group %d: in group 0 %v, in group 1 %v", id, g, holds(t, sr.groups[0].stores[0], id), holds(t, sr.groups[1].stores[0], id))
			}
			q := fmt.Sprintf("ASK { GRAPH <%s> { <%s> <%s> \"%d\"^^<http://www.w3.org/2001/XMLSchema#nonNegativeInteger> } }", ontology.ReplicaGraph, ontology.SessionIRI(id), ontology.Group, g)
			if ok, err := sr.groups[g].stores[0].Ask(ctx, q); err != nil || !ok {
				t.Errorf("session %s: trails:group %d not recorded (%v)", id, g, err)
			}
		}
		got, err := session.NewStore(sh, session.WithGroupCommit(false)).Load(ctx, tr.fork)
		if err != nil || len(got.Turns) != 2 {
			t.Errorf("imported fork %s loaded through the Sharded: %v", tr.fork, err)
		}
	}
	findings, err := admin.New(sh).Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 0 {
		t.Errorf("check after the import: %d findings, first %+v", len(findings), findings[0])
	}
}

// testShardedGroupAdded: a group added to a running cluster. Writers with
// one group (group 0 alone) create trees; writers configured with both
// groups then find those trees in group 0 (their recorded group, not
// their hash over two groups), append and fork there, and spread new
// trees over both groups.
func testShardedGroupAdded(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	g0 := sr.groups[0]
	one, err := cluster.OpenSharded(cluster.ShardedConfig{Groups: []cluster.Config{{Brokers: g0.brokers, Topic: g0.topic, Replicas: g0.replicas(), Timeout: 20 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.Close)
	st1 := session.NewStore(one, session.WithGroupCommit(false))
	var old []*session.Session
	for range 4 {
		s := session.New("before")
		s.Append("user", "written with one group")
		if err := st1.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		old = append(old, s)
	}
	two := sr.client(t) // both groups: the one added and the old
	st2 := session.NewStore(two, session.WithGroupCommit(false))
	moved := 0
	for _, s := range old {
		if two.HomeGroup(s.ID) != 0 {
			moved++ // its hash over two groups says 1: it must stay in 0
		}
		got, err := st2.Load(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		got.Append("assistant", "appended once there were two groups")
		if err := st2.Persist(ctx, got); err != nil {
			t.Fatalf("append to a tree of the first group: %v", err)
		}
		f, err := st2.Fork(ctx, s.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := st2.Persist(ctx, f); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{s.ID, f.ID} {
			if g, err := two.Group(ctx, id); err != nil || g != 0 {
				t.Errorf("session %s of a tree made with one group: group %d (%v), want 0", id, g, err)
			}
			if holds(t, sr.groups[1].stores[0], id) {
				t.Errorf("session %s of a tree made with one group is in the group added", id)
			}
		}
	}
	spread := map[int]int{}
	for spread[1] == 0 {
		s := session.New("after")
		s.Append("user", "written with two groups")
		if err := st2.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
		g, err := two.Group(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		spread[g]++
	}
	t.Logf("old trees whose hash over two groups is 1: %d of %d; new trees by group: %v", moved, len(old), spread)
}

// testShardedSweep: a writer that died between its staging graph and its
// update left the staging graph in its tree's group (group 1, not the
// shared group); a new writer's sweep through a Sharded, which never
// sent that graph, removes it from every replica of group 1 and from the
// audit replica. Before, the sweep's removal went to the shared group's
// log alone: the audit replica lost the graph, group 1 kept it.
func testShardedSweep(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	dead := sr.groups[1].client(t) // the dead writer's request, as it reached group 1's log
	g := kg.MustIRI(ontology.StagingBase + uuid.Must(uuid.NewV7()).String())
	if err := dead.PutGraph(ctx, g, kg.NTriples, []byte("<urn:x:s> <"+ontology.NS+"stagedContent> \"the long content of a write that never came\" .\n")); err != nil {
		t.Fatal(err)
	}
	staged := func(store *kg.Client) int {
		t.Helper()
		ok, err := store.Ask(ctx, "ASK { GRAPH <"+g.String()+"> { ?s ?p ?o } }")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return 1
		}
		return 0
	}
	wait := func(pos []int64) {
		t.Helper()
		for i, r := range sr.groups {
			for _, a := range r.appliers {
				waitPosition(t, a.srv.URL, pos[i])
			}
			waitPosition(t, sr.auditA[i].srv.URL, pos[i])
		}
	}
	wait([]int64{-1, dead.Position()})
	for i, store := range sr.groups[1].stores {
		if staged(store) != 1 {
			t.Fatalf("group 1, replica %d: the staging graph is not there", i)
		}
	}
	sh := sr.client(t)
	n, err := admin.New(sh).SweepStaging(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("sweep: removed %d, want 1", n)
	}
	wait(sh.Positions())
	for gi, r := range sr.groups {
		for i, store := range r.stores {
			if staged(store) != 0 {
				t.Errorf("group %d, replica %d: the staging graph is still there after the sweep", gi, i)
			}
		}
	}
	if staged(sr.audit) != 0 {
		t.Errorf("audit replica: the staging graph is still there after the sweep")
	}
}

// testShardedBranches: a branch label is unique within a replica group.
// Forks labelled alike of a group 0 tree and of a group 1 tree (a label
// is "fork-" and 8 random hex digits: of some 77,000 forks, two more
// likely than not share one) both keep the label, and the audit replica,
// which holds both groups, applies both (before, its create-fork
// condition saw the other group's fork and refused the second: the audit
// replica lacked a session its group held). A second fork with that label
// in one group is relabelled, as on one store.
func testShardedBranches(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	sh := sr.client(t)
	st := session.NewStore(sh, session.WithGroupCommit(false))
	const label = "fork-e0e0e0e0"
	var forks []*session.Session
	for g := range 2 {
		var root *session.Session
		for root == nil || sh.HomeGroup(root.ID) != g {
			root = session.New("brancher")
		}
		root.Append("user", fmt.Sprintf("a tree of group %d", g))
		if err := st.Persist(ctx, root); err != nil {
			t.Fatal(err)
		}
		f, err := root.Fork(1)
		if err != nil {
			t.Fatal(err)
		}
		f.Branch = label
		f.Append("assistant", "on the experiment branch")
		if err := st.Persist(ctx, f); err != nil {
			t.Fatalf("group %d: persist the fork: %v", g, err)
		}
		if f.Branch != label {
			t.Errorf("group %d: the fork's label became %q, want %s (no other fork of its group has it)", g, f.Branch, label)
		}
		forks = append(forks, f)
		if g == 0 {
			again, err := root.Fork(1)
			if err != nil {
				t.Fatal(err)
			}
			again.Branch = label
			if err := st.Persist(ctx, again); err != nil {
				t.Fatal(err)
			}
			if again.Branch == label {
				t.Errorf("a second fork with that label in group 0 kept the label, want a new one")
			}
			forks = append(forks, again)
		}
	}
	pos := sh.Positions()
	for g := range sr.groups {
		waitPosition(t, sr.auditA[g].srv.URL, pos[g])
	}
	audit := session.NewStore(sr.audit)
	for _, f := range forks {
		got, err := audit.Load(ctx, f.ID)
		if err != nil {
			t.Errorf("audit replica: fork %s (%s): %v", f.ID, f.Branch, err)
			continue
		}
		if got.Branch != f.Branch {
			t.Errorf("audit replica: fork %s: label %q, want %q", f.ID, got.Branch, f.Branch)
		}
	}
	res, err := sr.audit.Select(ctx, "SELECT ?o WHERE { GRAPH ?g { ?r <"+ontology.RefusedOffset+"> ?o } }")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Solutions) != 0 {
		t.Errorf("audit replica: %d records refused, want none (the groups applied every record)", len(res.Solutions))
	}
}

// testShardedReplicaAdded: a replica of group 1 made from a copy of one
// of that group's replicas (cluster.Seed with the group's topic, as
// trails-replica -from does) while trees of both groups are written:
// it applies group 1's log from the copy's offset and ends with the same
// quads as the group's other replicas, offsets too, and none of group 0's
// trees.
func testShardedReplicaAdded(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	sh := sr.client(t)
	st := session.NewStore(sh, session.WithGroupCommit(false))
	trees := map[int]*session.Session{}
	for len(trees) < 2 {
		s := session.New("copied")
		trees[sh.HomeGroup(s.ID)] = s
	}
	write := func(round int) {
		t.Helper()
		for g := range 2 {
			trees[g].Append("user", fmt.Sprintf("group %d, round %d", g, round))
			if err := st.Persist(ctx, trees[g]); err != nil {
				t.Fatalf("group %d, round %d: %v", g, round, err)
			}
		}
	}
	for round := range 3 {
		write(round)
	}
	g1 := sr.groups[1]
	fresh := fusekitest.Client(t, kg.Config{Endpoint: srv.Datasets[6], Store: kg.Fuseki})
	if err := fresh.Update(ctx, "DROP ALL", kg.Idempotent()); err != nil {
		t.Fatal(err)
	}
	off, err := cluster.Seed(ctx, g1.stores[0], fresh, g1.topic)
	if err != nil {
		t.Fatalf("seed a group 1 replica from a copy: %v", err)
	}
	g1.stores = append(g1.stores, fresh)
	g1.appliers = append(g1.appliers, g1.start(t, fresh, nil)) // stopped with the rig's
	t.Logf("group 1's third replica copied at offset %d", off)
	for round := 3; round < 6; round++ {
		write(round)
	}
	g1.converged(t, sh.Positions()[1])
	if holds(t, fresh, trees[0].ID) {
		t.Errorf("the copied group 1 replica holds group 0's tree %s", trees[0].ID)
	}
	got, err := session.NewStore(fresh).Load(ctx, trees[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 6 {
		t.Errorf("the copied replica: %d turns of group 1's tree, want 6", len(got.Turns))
	}
}
