package cluster

import (
	"fmt"
	"strconv"
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

	// With several replica groups (ShardedConfigFromEnv): the groups'
	// topics, and for group G its replicas and appliers in
	// EnvReplicas+"_G"+G and EnvAppliers+"_G"+G (TRAILS_REPLICAS_G0, …).
	EnvTopics        = "TRAILS_KAFKA_TOPICS"   // one topic per group, comma-separated
	EnvAuditReplica  = "TRAILS_AUDIT_REPLICA"  // the audit replica's dataset URL
	EnvAuditAppliers = "TRAILS_AUDIT_APPLIERS" // its appliers' base URLs, one per group in order
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

// ShardedConfigFromEnv returns the ShardedConfig that the environment
// gives through getenv, as scripts/cluster start --groups N prints it:
// the brokers, a topic per group ($TRAILS_KAFKA_TOPICS), group G's
// replicas and appliers ($TRAILS_REPLICAS_GG and $TRAILS_APPLIERS_GG, as
// ConfigFromEnv reads them for one group), and the audit replica.
// Without $TRAILS_KAFKA_TOPICS it is the one group of ConfigFromEnv. It
// returns an error matching kg.ErrConfig naming what is missing or
// unpaired.
func ShardedConfigFromEnv(getenv func(string) string) (ShardedConfig, error) {
	topics := list(getenv(EnvTopics))
	if len(topics) == 0 {
		cfg, err := ConfigFromEnv(getenv)
		if err != nil {
			return ShardedConfig{}, err
		}
		return ShardedConfig{Groups: []Config{cfg}}, nil
	}
	var sc ShardedConfig
	for i, topic := range topics {
		suffix := "_G" + strconv.Itoa(i)
		cfg, err := ConfigFromEnv(func(k string) string {
			switch k {
			case EnvTopic:
				return topic
			case EnvReplicas, EnvAppliers:
				return getenv(k + suffix)
			}
			return getenv(k)
		})
		if err != nil {
			return ShardedConfig{}, fmt.Errorf("group %d ($%s%s, $%s%s): %w", i, EnvReplicas, suffix, EnvAppliers, suffix, err)
		}
		sc.Groups = append(sc.Groups, cfg)
	}
	if a := getenv(EnvAuditReplica); a != "" {
		sc.Audit = &Audit{Dataset: a, Appliers: list(getenv(EnvAuditAppliers))}
	}
	if len(topics) > 1 && (sc.Audit == nil || len(sc.Audit.Appliers) != len(topics)) {
		return ShardedConfig{}, fmt.Errorf("%w: cluster: %d groups want $%s and one applier per group in $%s", kg.ErrConfig, len(topics), EnvAuditReplica, EnvAuditAppliers)
	}
	return sc, nil
}
