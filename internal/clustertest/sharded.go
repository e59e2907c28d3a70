package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/knakk/rdf"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// EnvGroups is the variable that runs the kafka profile's stores on
// replica groups: TRAILS_TEST_GROUPS=2 makes each test's Store a
// cluster.Sharded of two groups, a topic and a replica each, with the
// test's dataset as the audit replica (an applier of each group's topic),
// so that the test's own checks read every group. Unset or 1: one log.
const EnvGroups = "TRAILS_TEST_GROUPS"

// Groups returns the replica groups of the kafka profile's stores: the
// value of TRAILS_TEST_GROUPS, 1 when unset. It panics on a value that is
// not 1 to 4 (a test binary's setting, wrong for every test).
func Groups() int {
	v := os.Getenv(EnvGroups)
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 4 {
		panic(fmt.Sprintf("clustertest: %s=%q: want 1 to 4", EnvGroups, v))
	}
	return n
}

// replicaGraphEnd ends the N-Quads lines of the replica graph: each
// replica's offsets, left out of the comparison of a sharded rig.
const replicaGraphEnd = "<" + ontology.ReplicaGraph + "> ."

// newShardedRig makes the replicated store of dataset ep on Groups()
// replica groups: topics topic-g0, topic-g1, …, each applied by a replica
// of its own (a dataset of the second Fuseki) and by ep, the audit
// replica. What ep held before goes to group 0's replica (its sessions
// are found there: a stored session's group is the one holding it).
func newShardedRig(tb testing.TB, ep, topic string) (*rig, error) {
	tb.Helper()
	n := Groups()
	r := &rig{topic: topic + "-g0", log: &logBuffer{}, sharded: true}
	audit, err := kg.New(kg.Config{Endpoint: ep, Store: kg.Fuseki, Timeout: applyTimeout})
	if err != nil {
		return nil, err
	}
	r.stores = append(r.stores, audit)
	ctx := context.Background()
	cfg := cluster.ShardedConfig{Audit: &cluster.Audit{Dataset: ep, Store: kg.Config{Timeout: applyTimeout}}}
	for g := range n {
		t := fmt.Sprintf("%s-g%d", topic, g)
		env.topics.Lock()
		env.kafka.CreateTopic(tb, t, 1)
		env.topics.Unlock()
		var second string
		select {
		case second = <-env.spare:
		case <-time.After(waitDataset):
			r.close()
			return nil, fmt.Errorf("all %d datasets of the second Fuseki stayed taken for %v", secondDatasets(), waitDataset)
		}
		st, err := kg.New(kg.Config{Endpoint: second, Store: kg.Fuseki, Timeout: applyTimeout})
		if err != nil {
			env.spare <- second
			r.close()
			return nil, err
		}
		r.stores = append(r.stores, st)
		if g == 0 {
			err = copyInto(ctx, audit, st)
		} else {
			err = st.Update(ctx, "DROP ALL", kg.Idempotent())
		}
		if err != nil {
			r.close()
			return nil, fmt.Errorf("group %d's replica (%s): %w", g, second, err)
		}
		run, err := r.startApplier(t, st, g+1)
		if err != nil {
			r.close()
			return nil, err
		}
		arun, err := r.startApplier(t, audit, 0)
		if err != nil {
			r.close()
			return nil, err
		}
		cfg.Groups = append(cfg.Groups, cluster.Config{Brokers: env.kafka.Brokers(), Topic: t,
			Replicas: []cluster.Replica{{Dataset: second, Applier: run.srv.URL}}, Timeout: writeTimeout, Store: kg.Config{Timeout: applyTimeout}})
		cfg.Audit.Appliers = append(cfg.Audit.Appliers, arun.srv.URL)
	}
	sh, err := cluster.OpenSharded(cfg)
	if err != nil {
		r.close()
		return nil, err
	}
	r.client, r.closeC = &auditWaiter{Sharded: sh, r: r}, sh.Close
	for _, gc := range cfg.Groups {
		c, err := cluster.Open(gc)
		if err != nil {
			r.close()
			return nil, err
		}
		r.groups = append(r.groups, c)
	}
	return r, nil
}

// auditWaiter is a Sharded whose writes return once the audit replica
// (the test's dataset, which its own checks read) applied them too, as a
// one-group rig's (firstWaiter).
type auditWaiter struct {
	*cluster.Sharded
	r *rig
}

// Update sends u through the Sharded, then waits for the audit replica.
func (w *auditWaiter) Update(ctx context.Context, u string, opts ...kg.UpdateOption) error {
	err := w.Sharded.Update(ctx, u, opts...)
	w.r.waitFirst(ctx, w.Positions())
	return err
}

// LoadQuads adds nq through the Sharded, then waits for the audit replica.
func (w *auditWaiter) LoadQuads(ctx context.Context, nq []byte) error {
	err := w.Sharded.LoadQuads(ctx, nq)
	w.r.waitFirst(ctx, w.Positions())
	return err
}

// PutGraph sends the graph through the Sharded, then waits for the audit
// replica.
func (w *auditWaiter) PutGraph(ctx context.Context, g rdf.IRI, mediaType string, data []byte) error {
	err := w.Sharded.PutGraph(ctx, g, mediaType, data)
	w.r.waitFirst(ctx, w.Positions())
	return err
}

// toGroups sends write, a test's own, through the Client of each group's
// log, or of group g alone when g >= 0, and then waits until every
// replica of each log it wrote to applied it: the Sharded's reads wait
// for its own writes only.
func (r *rig) toGroups(ctx context.Context, g int, write func(*cluster.Client) error) error {
	var errs []error
	pos := map[int]int64{} // group: the offset of the write in its log
	for i, c := range r.groups {
		if g >= 0 && i != g {
			continue
		}
		if err := write(c); err != nil {
			errs = append(errs, fmt.Errorf("group %d: %w", i, err))
		}
		pos[i] = c.Position()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitApplied)
	defer cancel()
	for _, a := range r.appliers {
		p, ok := pos[groupOf(a.topic)]
		for ok && a.a.Position() < p && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// groupOf returns the group number that ends topic ("-gN").
func groupOf(topic string) int {
	for i := len(topic) - 1; i >= 0; i-- {
		if topic[i] == 'g' && i > 0 && topic[i-1] == '-' {
			n, _ := strconv.Atoi(topic[i+1:])
			return n
		}
	}
	return 0
}
