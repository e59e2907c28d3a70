package cluster

import (
	"fmt"
	"strings"

	"github.com/trails-kg/trails/kg"
)

// The environment variables ConfigFromEnv reads: what scripts/cluster
// start prints.
const (
	EnvBrokers  = "TRAILS_KAFKA_BROKERS" // host:port,host:port,…
	EnvTopic    = "TRAILS_KAFKA_TOPIC"   // the log topic; unset: DefaultTopic
	EnvReplicas = "TRAILS_REPLICAS"      // the replicas' dataset URLs, comma-separated
	EnvAppliers = "TRAILS_APPLIERS"      // their appliers' base URLs, in the same order
)

// ConfigFromEnv returns the Config that the environment gives through
// getenv (os.Getenv in a program): the brokers, the topic, and the
// replicas paired with their appliers in order. It returns an error
// matching kg.ErrConfig naming what is missing or unpaired.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{Brokers: list(getenv(EnvBrokers)), Topic: getenv(EnvTopic)}
	datasets, appliers := list(getenv(EnvReplicas)), list(getenv(EnvAppliers))
	switch {
	case len(cfg.Brokers) == 0:
		return Config{}, fmt.Errorf("%w: cluster: $%s is not set (the Kafka brokers, host:port,…; scripts/cluster start prints it)", kg.ErrConfig, EnvBrokers)
	case len(datasets) == 0:
		return Config{}, fmt.Errorf("%w: cluster: $%s is not set (the replicas' dataset URLs; scripts/cluster start prints it)", kg.ErrConfig, EnvReplicas)
	case len(appliers) != len(datasets):
		return Config{}, fmt.Errorf("%w: cluster: $%s names %d appliers for the %d replicas of $%s: want one per replica, in the same order", kg.ErrConfig, EnvAppliers, len(appliers), len(datasets), EnvReplicas)
	}
	for i, ds := range datasets {
		cfg.Replicas = append(cfg.Replicas, Replica{Dataset: ds, Applier: appliers[i]})
	}
	return cfg, nil
}

// list splits a comma-separated value, dropping blanks.
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
