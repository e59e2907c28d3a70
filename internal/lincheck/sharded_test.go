package lincheck

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
)

// TestHistoriesSharded runs histories on the kafka profile
// (TRAILS_TEST_STORE=kafka) through a cluster.Sharded of two replica
// groups (issue 38): each group a topic of its own applied by one replica,
// and an audit replica applying both topics into one dataset, which the
// whole-dataset calls (List, Cascade's plan) read. Each history's tree
// lands in its root's home group, so the histories use both groups, and
// reads that span groups go through the audit replica. The turns change
// the session's own key only: a shared (app: or user:) value set from a
// tree outside the shared group is refused by design (cluster.ErrCrossGroup),
// which the model does not know.
func TestHistoriesSharded(t *testing.T) {
	if !fusekitest.OnCluster() {
		t.Skip("the kafka profile runs it: TRAILS_TEST_STORE=kafka")
	}
	t.Parallel()
	n := histories(t, 20, 12, 0.1)
	sh, _, datasets := shardedCluster(t)
	total := runAll(t, sh, config{clients: 4, ops: opsPerClient(), ownKeysOnly: true}, n, nil)

	// Both groups held histories.
	for g := range 2 {
		c := fusekitest.Client(t, kg.Config{Endpoint: datasets[g], Store: kg.Fuseki})
		ok, err := c.Ask(context.Background(), "ASK { GRAPH ?g { ?s a <https://w3id.org/trails/ns#Session> } }")
		if err != nil {
			t.Fatal(err)
		}
		if !ok && total.histories >= 8 {
			t.Errorf("group %d's replica holds no session after %d histories: the trees did not spread over the groups", g, total.histories)
		}
	}
}

// TestHistoriesShardedMove runs histories as TestHistoriesSharded does
// while another Sharded moves each history's tree to the other group
// (cluster.MoveTree) at a random time: the clients' Sharded is never told
// of the moves but by its writes' refusals and its appliers' seal counts,
// and the model, which knows nothing of groups, must still hold.
func TestHistoriesShardedMove(t *testing.T) {
	if !fusekitest.OnCluster() {
		t.Skip("the kafka profile runs it: TRAILS_TEST_STORE=kafka")
	}
	t.Parallel()
	n := histories(t, 20, 12, 0.1)
	sh, mover, _ := shardedCluster(t)
	var moved, refused atomic.Int64
	total := runAll(t, sh, config{clients: 4, ops: opsPerClient(), ownKeysOnly: true, move: func(seed uint64, root string) {
		time.Sleep(time.Duration(50+rand.New(rand.NewPCG(seed, 11)).IntN(400)) * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		g, err := mover.Group(ctx, root)
		if err == nil && g >= 0 {
			_, err = cluster.MoveTree(ctx, mover, root, 1-g, nil)
		}
		if err != nil {
			refused.Add(1)
			t.Logf("seed %d: move of the tree of %s: %v", seed, root, err)
			return
		}
		moved.Add(1)
	}}, n, nil)
	t.Logf("%d trees moved during their histories, %d moves refused or failed", moved.Load(), refused.Load())
	if moved.Load() == 0 && total.histories > 0 {
		t.Errorf("no tree moved in %d histories", total.histories)
	}
}

// shardedCluster starts two replica groups on one Kafka, each a topic
// applied by one replica, and an audit replica applying both, and returns
// two Sharded on them (the histories' and a mover's) and the groups'
// datasets.
func shardedCluster(t *testing.T) (sh, other *cluster.Sharded, datasets []string) {
	t.Helper()
	k := kafkatest.Start(t)
	srv, err := fusekitest.StartServer(fusekitest.Options{Datasets: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	audit := srv.Datasets[2]
	cfg := cluster.ShardedConfig{Audit: &cluster.Audit{Dataset: audit}}
	for g := range 2 {
		topic := fmt.Sprintf("lincheck-%s-g%d", invalidTopic.ReplaceAllString(t.Name(), "_"), g)
		k.CreateTopic(t, topic, 1)
		own := newReplica(t, k.Brokers(), topic, srv.Datasets[g])
		all := newReplica(t, k.Brokers(), topic, audit)
		cfg.Groups = append(cfg.Groups, cluster.Config{Brokers: k.Brokers(), Topic: topic, Timeout: 20 * time.Second,
			Replicas: []cluster.Replica{{Dataset: srv.Datasets[g], Applier: own.srv.URL}}})
		cfg.Audit.Appliers = append(cfg.Audit.Appliers, all.srv.URL)
	}
	for range 2 {
		c, err := cluster.OpenSharded(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		if sh == nil {
			sh = c
		} else {
			other = c
		}
	}
	return sh, other, srv.Datasets[:2]
}
