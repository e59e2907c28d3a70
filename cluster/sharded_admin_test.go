package cluster_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// testShardedAdmin: trails-admin with --store kafka on two groups (the
// settings scripts/cluster start --groups 2 prints): init, the demo and a
// clean check, the demo's tree in one group's replicas only, and every
// session listed through the audit replica. Then move-tree moves the
// demo's tree to the other group: every session there, none left in the
// old group's groups,
// still listed, check clean, and run again it has nothing left to do.
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
	var sessions []struct{ ID, Parent string }
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
		t.Fatalf("the demo's %d sessions lie in groups %v, want one group", len(sessions), in)
	}
	var root string
	for _, s := range sessions {
		if s.Parent == "" {
			root = s.ID
		}
	}
	to := 1
	if in[1] > 0 {
		to = 0
	}
	var moved struct {
		From, To int
		Sessions []string
		Resumed  bool
	}
	if err := json.Unmarshal([]byte(admin("move-tree", root, "--to", fmt.Sprint(to), "--json")), &moved); err != nil {
		t.Fatal(err)
	}
	if moved.To != to || moved.From != 1-to || len(moved.Sessions) != len(sessions) || moved.Resumed {
		t.Errorf("move-tree --json: %+v, want the %d sessions moved from group %d to %d", moved, len(sessions), 1-to, to)
	}
	for _, s := range sessions {
		if !holds(t, sr.groups[to].stores[0], s.ID) {
			t.Errorf("after move-tree: group %d lacks %s", to, s.ID)
		}
		if g := groupsOf(t, sr.groups[1-to].stores[0], kg.MustIRI(ontology.SessionIRI(s.ID))); g != "" {
			t.Errorf("after move-tree: group %d still holds a trails:group of %s: %s", 1-to, s.ID, g)
		}
	}
	var after []struct{ ID string }
	if err := json.Unmarshal([]byte(admin("sessions", "--json", "--principal", "sharded-demo")), &after); err != nil || len(after) != len(sessions) {
		t.Errorf("trails-admin sessions after move-tree: %d sessions (%v), want %d", len(after), err, len(sessions))
	}
	admin("check")
	if out := admin("move-tree", root, "--to", fmt.Sprint(to)); !strings.Contains(out, "nothing left to move") {
		t.Errorf("move-tree run again: %q, want nothing left to move", out)
	}
	if out := admin("move-tree", "--purge"); !strings.Contains(out, fmt.Sprintf("group %d: removed the graphs of %d sessions", 1-to, len(sessions))) {
		t.Errorf("move-tree --purge: %q, want the %d sessions' graphs removed in group %d", out, len(sessions), 1-to)
	}
}
