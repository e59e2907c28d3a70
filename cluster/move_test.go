package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// testShardedMove: a tree of group 0 (a root, a fork, a fork of the
// fork) moved to group 1 with cluster.MoveTree while a writer appends to
// it through another Sharded that learnt its group before the move and
// is never told of it: every append is acknowledged once and loads after,
// in order; a third Sharded that only read the tree before the move reads
// it whole after (its group's appliers report the move); group 0's
// replicas keep the seals and no trails:group of the tree's sessions,
// group 1's hold the tree, each group's replicas alike, and the audit
// replica holds it once, with group 1 as its only group. A move back is refused; the move run again
// finds nothing left to do.
func testShardedMove(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	mover, writer, reader := sr.client(t), sr.client(t), sr.client(t)
	st := session.NewStore(mover, session.WithGroupCommit(false))
	var root *session.Session
	for root == nil || mover.HomeGroup(root.ID) != 0 {
		root = session.New("mover")
	}
	for i := range 3 {
		root.Append("user", fmt.Sprintf("root turn %d", i))
	}
	if err := st.Persist(ctx, root); err != nil {
		t.Fatal(err)
	}
	fork, err := root.Fork(2)
	if err != nil {
		t.Fatal(err)
	}
	fork.Append("assistant", "on the fork")
	if err := st.Persist(ctx, fork); err != nil {
		t.Fatal(err)
	}
	grand, err := fork.Fork(3)
	if err != nil {
		t.Fatal(err)
	}
	grand.Append("assistant", "on the fork of the fork")
	if err := st.Persist(ctx, grand); err != nil {
		t.Fatal(err)
	}
	ids := []string{root.ID, fork.ID, grand.ID}

	// Both other Sharded learn the tree in group 0.
	wst := session.NewStore(writer, session.WithGroupCommit(false))
	rst := session.NewStore(reader, session.WithGroupCommit(false))
	for _, id := range ids {
		if _, err := rst.Load(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := wst.Load(ctx, fork.ID)
	if err != nil {
		t.Fatal(err)
	}

	// The writer appends to the fork before, during and after the move.
	var (
		wg    sync.WaitGroup
		acked []string
		werr  error
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				if i >= 6 {
					return
				}
			default:
			}
			text := fmt.Sprintf("append %d", i)
			ws.Append("user", text)
			if err := wst.Persist(ctx, ws); err != nil {
				werr = fmt.Errorf("append %d: %w", i, err)
				return
			}
			acked = append(acked, text)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	rep, err := cluster.MoveTree(ctx, mover, root.ID, 1, t.Logf)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if werr != nil {
		t.Fatalf("the writer that was never told of the move: %v", werr)
	}
	ws.Append("user", "after the move")
	if err := wst.Persist(ctx, ws); err != nil {
		t.Fatalf("the writer that was never told of the move, after it: %v", err)
	}
	acked = append(acked, "after the move")
	if rep.From != 0 || rep.To != 1 || len(rep.Sessions) != 3 || rep.Quads == 0 || rep.Resumed {
		t.Errorf("report %+v, want from 0 to 1, 3 sessions, quads copied, not resumed", rep)
	}
	t.Logf("moved %d sessions, %d quads, %d bytes; %d appends acknowledged across the move", len(rep.Sessions), rep.Quads, rep.Bytes, len(acked))

	// The reader, which last read the tree in group 0, reads it whole.
	got, err := rst.Load(ctx, fork.ID)
	if err != nil {
		t.Fatalf("the reader that was never told of the move: load the fork: %v", err)
	}
	var texts []string
	for _, tn := range got.Turns[2:] {
		texts = append(texts, tn.Content)
	}
	want := append([]string{"on the fork"}, acked...)
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("the fork's turns after the move:\n got %q\nwant %q", texts, want)
	}
	if g, err := reader.Group(ctx, fork.ID); err != nil || g != 1 {
		t.Errorf("the reader's group of the fork: %d (%v), want 1", g, err)
	}
	fresh := session.NewStore(sr.client(t), session.WithGroupCommit(false))
	for _, id := range ids {
		if _, err := fresh.Load(ctx, id); err != nil {
			t.Errorf("a new Sharded: load %s: %v", id, err)
		}
	}
	// A new fork through the writer lands in group 1.
	nf, err := ws.Fork(4)
	if err != nil {
		t.Fatal(err)
	}
	nf.Append("user", "a fork made after the move")
	if err := wst.Persist(ctx, nf); err != nil {
		t.Fatalf("fork after the move: %v", err)
	}
	if g, err := writer.Group(ctx, nf.ID); err != nil || g != 1 {
		t.Errorf("the new fork's group: %d (%v), want 1", g, err)
	}

	pos := append(mover.Positions(), writer.Positions()...)
	for g, r := range sr.groups {
		at := max(pos[g], pos[g+2])
		r.converged(t, at)
		waitPosition(t, sr.auditA[g].srv.URL, at)
	}
	for _, id := range ids {
		iri := kg.MustIRI(ontology.SessionIRI(id))
		for i, store := range sr.groups[0].stores {
			if groupsOf(t, store, iri) != "" {
				t.Errorf("group 0 replica %d still holds a trails:group of %s: %s", i, id, groupsOf(t, store, iri))
			}
			if !sealed(t, store, sr.groups[0].topic, id) {
				t.Errorf("group 0 replica %d holds no seal of %s", i, id)
			}
		}
		for i, store := range sr.groups[1].stores {
			if !holdsGraph(t, store, iri) {
				t.Errorf("group 1 replica %d lacks the graph of %s", i, id)
			}
		}
		if !holdsGraph(t, sr.audit, iri) {
			t.Errorf("the audit replica lacks the graph of %s", id)
		}
		res, err := sr.audit.Select(ctx, "SELECT ?n WHERE { GRAPH <"+ontology.ReplicaGraph+"> { <"+iri.String()+"> <"+ontology.Group+"> ?n } }")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Solutions) != 1 || res.Solutions[0].String("n") != "1" {
			t.Errorf("the audit replica's groups of %s: %v, want 1 alone", id, res.Solutions)
		}
	}
	// The writer's appends after the seal were refused in group 0 (421,
	// naming group 1) and sent again to group 1: at least the last one.
	res, err := sr.groups[0].stores[0].Select(ctx, "SELECT ?m WHERE { GRAPH <"+ontology.ReplicaGraph+"> { ?r <"+ontology.RefusalStatus+"> 421 ; <"+ontology.RefusalMessage+"> ?m } }")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Solutions) == 0 || !strings.Contains(res.Solutions[0].String("m"), "moved to replica group 1") {
		t.Errorf("group 0's refusals of the moved tree's writes: %v, want at least one naming group 1", res.Solutions)
	}
	t.Logf("group 0 refused %d writes of the moved tree", len(res.Solutions))
	audit := session.NewStore(sr.audit)
	if got, err := audit.Load(ctx, fork.ID); err != nil || len(got.Turns) != 3+len(acked) {
		t.Errorf("the audit replica's fork: %v turns (%v), want %d", len(got.Turns), err, 3+len(acked))
	}

	// The copy the move left in group 0 is there until purged; purged,
	// group 0 holds none of the tree's graphs, the audit replica and
	// group 1 still hold the tree, and a purge again removes nothing.
	if !holdsGraph(t, sr.groups[0].stores[0], kg.MustIRI(ontology.SessionIRI(root.ID))) {
		t.Errorf("group 0 holds no copy of the moved root before the purge")
	}
	removed, err := cluster.PurgeMoved(ctx, mover)
	if err != nil || removed[0] != 3 || len(removed) != 1 {
		t.Errorf("PurgeMoved: %v (%v), want 3 sessions' graphs removed in group 0", removed, err)
	}
	pos = mover.Positions()
	sr.groups[0].converged(t, pos[0])
	waitPosition(t, sr.auditA[0].srv.URL, pos[0])
	for _, id := range ids {
		iri := kg.MustIRI(ontology.SessionIRI(id))
		for i, store := range sr.groups[0].stores {
			if holdsGraph(t, store, iri) {
				t.Errorf("after the purge, group 0 replica %d holds the graph of %s", i, id)
			}
		}
		if !holdsGraph(t, sr.audit, iri) || !holdsGraph(t, sr.groups[1].stores[0], iri) {
			t.Errorf("after the purge, the audit replica or group 1 lost the graph of %s", id)
		}
	}
	if again, err := cluster.PurgeMoved(ctx, mover); err != nil || len(again) != 0 {
		t.Errorf("PurgeMoved again: %v (%v), want nothing removed", again, err)
	}
	if _, err := cluster.MoveTree(ctx, mover, root.ID, 0, nil); err == nil || !strings.Contains(err.Error(), "never goes back") {
		t.Errorf("a move back to group 0: %v, want a refusal", err)
	}
	if again, err := cluster.MoveTree(ctx, mover, root.ID, 1, nil); err != nil || len(again.Sessions) != 0 || !again.Resumed {
		t.Errorf("the move run again: %+v, %v; want nothing left to do", again, err)
	}
	if _, err := cluster.MoveTree(ctx, mover, fork.ID, 0, nil); err == nil {
		t.Errorf("a move of a fork: no error")
	}

	// A move stopped between its seal and its copy takes no write: a
	// writer waits for the copy. Run again, the move finishes and the
	// waiting write lands in group 1, once.
	other := session.New("mover")
	for other == nil || mover.HomeGroup(other.ID) != 0 {
		other = session.New("mover")
	}
	other.Append("user", "a second tree")
	if err := st.Persist(ctx, other); err != nil {
		t.Fatal(err)
	}
	wo, err := wst.Load(ctx, other.ID)
	if err != nil {
		t.Fatal(err)
	}
	restore := cluster.DieBeforeCopy()
	_, err = cluster.MoveTree(ctx, mover, other.ID, 1, nil)
	restore()
	if err == nil {
		t.Fatal("a move stopped after its seal: no error")
	}
	if !sealed(t, sr.groups[0].stores[0], sr.groups[0].topic, other.ID) {
		t.Fatal("the stopped move left no seal in group 0")
	}
	// A Sharded that never saw the tree finds it in group 0 meanwhile.
	if g, err := sr.client(t).Group(ctx, other.ID); err != nil || g != 0 {
		t.Errorf("a new Sharded's group of a tree whose move stopped: %d (%v), want 0, which still holds it", g, err)
	}
	waited := make(chan error, 1)
	go func() {
		wo.Append("assistant", "written while the move was stopped")
		waited <- wst.Persist(ctx, wo)
	}()
	time.Sleep(time.Second)
	select {
	case err := <-waited:
		g, gerr := writer.Group(ctx, other.ID)
		t.Fatalf("a write to a sealed tree whose copy is not there returned %v before the move finished (writer's group %d %v; group 1 holds it: %v)", err, g, gerr, holdsGraph(t, sr.groups[1].stores[0], kg.MustIRI(ontology.SessionIRI(other.ID))))
	default:
	}
	rep, err = cluster.MoveTree(ctx, mover, other.ID, 1, t.Logf)
	if err != nil {
		t.Fatalf("the move run again: %v", err)
	}
	if !rep.Resumed || len(rep.Sessions) != 1 || rep.Quads == 0 {
		t.Errorf("the move run again: %+v, want it resumed, one session copied", rep)
	}
	if err := <-waited; err != nil {
		t.Fatalf("the write that waited for the copy: %v", err)
	}
	got, err = fresh.Load(ctx, other.ID)
	if err != nil || len(got.Turns) != 2 || got.Turns[1].Content != "written while the move was stopped" {
		t.Errorf("the second tree after its move: %+v (%v), want its two turns", got, err)
	}
}

// groupsOf returns the trails:group values store holds of session s,
// space-separated.
func groupsOf(t *testing.T, store *kg.Client, s interface{ String() string }) string {
	t.Helper()
	res, err := store.Select(context.Background(), "SELECT ?n WHERE { GRAPH <"+ontology.ReplicaGraph+"> { <"+s.String()+"> <"+ontology.Group+"> ?n } } ORDER BY ?n")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sol := range res.Solutions {
		out = append(out, sol.String("n"))
	}
	return strings.Join(out, " ")
}

// holdsGraph reports whether store holds graph g.
func holdsGraph(t *testing.T, store *kg.Client, g interface{ String() string }) bool {
	t.Helper()
	ok, err := store.Ask(context.Background(), "ASK { GRAPH <"+g.String()+"> { ?s ?p ?o } }")
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// sealed reports whether store holds the seal of session id in log
// topic (ontology.SealIRI).
func sealed(t *testing.T, store *kg.Client, topic, id string) bool {
	t.Helper()
	ok, err := store.Ask(context.Background(), "ASK { GRAPH <"+ontology.ReplicaGraph+"> { <"+ontology.SealIRI(topic, 0, id)+"> <"+ontology.SealedIn+"> <"+ontology.LogIRI(topic, 0)+"> ; <"+ontology.SealedSession+"> <"+ontology.SessionIRI(id)+"> } }")
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// testShardedMoveDeleted: a deleted fork moves with its tree (its PROV
// records, its deletion's among them, and its group): a new Sharded finds
// it in the new group, and a late write of its stale value, through a
// Sharded that learnt the old group and through a new one, is refused as
// a write to a deleted session (session.ErrConflict), as without a move,
// and creates nothing.
func testShardedMoveDeleted(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	sr := newShardRig(t, k, srv)
	mover, w := sr.client(t), sr.client(t)
	st := session.NewStore(mover, session.WithGroupCommit(false))
	var root *session.Session
	for root == nil || mover.HomeGroup(root.ID) != 0 {
		root = session.New("mover")
	}
	root.Append("user", "r0")
	if err := st.Persist(ctx, root); err != nil {
		t.Fatal(err)
	}
	f, err := root.Fork(1)
	if err != nil {
		t.Fatal(err)
	}
	f.Append("user", "on a fork deleted before the move")
	if err := st.Persist(ctx, f); err != nil {
		t.Fatal(err)
	}
	wst := session.NewStore(w, session.WithGroupCommit(false))
	stale, err := wst.Load(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, f.ID, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err := cluster.MoveTree(ctx, mover, root.ID, 1, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 1 || len(rep.Deleted) != 1 || rep.Deleted[0] != ontology.SessionIRI(f.ID) {
		t.Errorf("report %+v, want the root moved and the deleted fork with it", rep)
	}
	if g, err := sr.client(t).Group(ctx, f.ID); err != nil || g != 1 {
		t.Errorf("a new Sharded's group of the deleted fork: %d (%v), want 1", g, err)
	}
	for name, ws := range map[string]*session.Store{"a Sharded that learnt group 0": wst, "a new Sharded": session.NewStore(sr.client(t), session.WithGroupCommit(false))} {
		stale.Append("user", "late")
		if err := ws.Persist(ctx, stale); !errors.Is(err, session.ErrConflict) || !strings.Contains(err.Error(), "deleted") {
			t.Errorf("a late write of the deleted fork through %s: %v, want a conflict naming its deletion", name, err)
		}
	}
	for g, r := range sr.groups {
		if holdsGraph(t, r.stores[0], kg.MustIRI(ontology.SessionIRI(f.ID))) {
			t.Errorf("group %d holds a graph of the deleted fork", g)
		}
	}
	if got := groupsOf(t, sr.groups[1].stores[0], kg.MustIRI(ontology.SessionIRI(f.ID))); got != "1" {
		t.Errorf("group 1's trails:group of the deleted fork: %q, want 1", got)
	}
}
