package cluster_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
)

// testShardedAdmin: trails-admin with --store kafka on two groups (the
// settings scripts/cluster start --groups 2 prints): init, the demo and a
// clean check, the demo's tree in one group's replicas only, and every
// session listed through the audit replica.
func testShardedAdmin(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	sr := newShardRig(t, k, srv)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TRAILS_") })
	env = append(env, "TRAILS_STORE=kafka", cluster.EnvBrokers+"="+strings.Join(sr.groups[0].brokers, ","),
		cluster.EnvAuditReplica+"="+sr.audit.Endpoint())
	var topics, auditA []string
	for g, r := range sr.groups {
		topics = append(topics, r.topic)
		auditA = append(auditA, sr.auditA[g].srv.URL)
		var datasets, appliers []string
		for _, rp := range r.replicas() {
			datasets, appliers = append(datasets, rp.Dataset), append(appliers, rp.Applier)
		}
		suffix := "_G" + string(rune('0'+g))
		env = append(env, cluster.EnvReplicas+suffix+"="+strings.Join(datasets, ","), cluster.EnvAppliers+suffix+"="+strings.Join(appliers, ","))
	}
	env = append(env, cluster.EnvTopics+"="+strings.Join(topics, ","), cluster.EnvAuditAppliers+"="+strings.Join(auditA, ","))
	admin, _ := adminCommand(t, env)
	admin("init")
	admin("demo", "--principal", "sharded-demo")
	var sessions []struct{ ID string }
	if err := json.Unmarshal([]byte(admin("sessions", "--json", "--principal", "sharded-demo")), &sessions); err != nil {
		t.Fatal(err)
	}
	if len(sessions) < 2 {
		t.Fatalf("trails-admin sessions after the demo: %d sessions, want the demo's root and its forks", len(sessions))
	}
	admin("check")
	// The demo's tree is one group's: every session on the replicas of
	// the same group, none on the other's.
	in := map[int]int{}
	for _, s := range sessions {
		for g, r := range sr.groups {
			if holds(t, r.stores[0], s.ID) {
				in[g]++
			}
		}
	}
	if len(in) != 1 {
		t.Errorf("the demo's %d sessions lie in groups %v, want one group", len(sessions), in)
	}
}
