package cluster_test

import (
	"errors"
	"testing"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/kg"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cfg, err := cluster.ConfigFromEnv(env(map[string]string{
		cluster.EnvBrokers:  "127.0.0.1:19092, 127.0.0.1:19093,",
		cluster.EnvReplicas: "http://127.0.0.1:3131/trails,http://127.0.0.1:3132/trails",
		cluster.EnvAppliers: "http://127.0.0.1:3141,http://127.0.0.1:3142",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Brokers) != 2 || cfg.Brokers[1] != "127.0.0.1:19093" || cfg.Topic != "" {
		t.Errorf("brokers %q, topic %q", cfg.Brokers, cfg.Topic)
	}
	if len(cfg.Replicas) != 2 || cfg.Replicas[1] != (cluster.Replica{Dataset: "http://127.0.0.1:3132/trails", Applier: "http://127.0.0.1:3142"}) {
		t.Errorf("replicas %+v", cfg.Replicas)
	}
	for name, m := range map[string]map[string]string{
		"no brokers":  {cluster.EnvReplicas: "http://a/trails", cluster.EnvAppliers: "http://b"},
		"no replicas": {cluster.EnvBrokers: "a:1"},
		"unpaired":    {cluster.EnvBrokers: "a:1", cluster.EnvReplicas: "http://a/trails,http://c/trails", cluster.EnvAppliers: "http://b"},
	} {
		if _, err := cluster.ConfigFromEnv(env(m)); !errors.Is(err, kg.ErrConfig) {
			t.Errorf("%s: got %v, want kg.ErrConfig", name, err)
		}
	}
}

func TestShardedConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	sc, err := cluster.ShardedConfigFromEnv(env(map[string]string{
		cluster.EnvBrokers:       "127.0.0.1:19092",
		cluster.EnvTopics:        "trails-g0,trails-g1",
		"TRAILS_REPLICAS_G0":     "http://h:3131/trails,http://h:3132/trails",
		"TRAILS_APPLIERS_G0":     "http://h:3141,http://h:3142",
		"TRAILS_REPLICAS_G1":     "http://h:3133/trails,http://h:3134/trails",
		"TRAILS_APPLIERS_G1":     "http://h:3143,http://h:3144",
		cluster.EnvAuditReplica:  "http://h:3130/trails",
		cluster.EnvAuditAppliers: "http://h:3150,http://h:3151",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Groups) != 2 || sc.Groups[1].Topic != "trails-g1" || sc.Groups[1].Replicas[0] != (cluster.Replica{Dataset: "http://h:3133/trails", Applier: "http://h:3143"}) {
		t.Errorf("groups %+v", sc.Groups)
	}
	if sc.Audit == nil || sc.Audit.Dataset != "http://h:3130/trails" || len(sc.Audit.Appliers) != 2 {
		t.Errorf("audit %+v", sc.Audit)
	}
	one, err := cluster.ShardedConfigFromEnv(env(map[string]string{
		cluster.EnvBrokers: "a:1", cluster.EnvReplicas: "http://a/trails", cluster.EnvAppliers: "http://b",
	}))
	if err != nil || len(one.Groups) != 1 || one.Audit != nil {
		t.Errorf("one group: %+v, %v", one, err)
	}
	for name, m := range map[string]map[string]string{
		"groups unpaired": {cluster.EnvBrokers: "a:1", cluster.EnvTopics: "x,y", cluster.EnvReplicas: "http://a/t", cluster.EnvAppliers: "http://b"},
		"no audit":        {cluster.EnvBrokers: "a:1", cluster.EnvTopics: "x,y", cluster.EnvReplicas: "http://a/t;http://c/t", cluster.EnvAppliers: "http://b;http://d"},
	} {
		if _, err := cluster.ShardedConfigFromEnv(env(m)); !errors.Is(err, kg.ErrConfig) {
			t.Errorf("%s: got %v, want kg.ErrConfig", name, err)
		}
	}
}
