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
