package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// adminCommand builds trails-admin from the checkout and returns a
// function that runs it with env and returns its standard output,
// failing t when it exits other than 0, and the binary's path.
func adminCommand(t *testing.T, env []string) (func(args ...string) string, string) {
	t.Helper()
	root, err := fusekitest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "trails-admin")
	build := exec.Command("go", "build", "-o", bin, "./cmd/trails-admin")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/trails-admin: %v\n%s", err, out)
	}
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("trails-admin %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}, bin
}

// testAdmin: trails-admin with --store kafka (TRAILS_STORE=kafka and the
// settings scripts/cluster prints) writes through the log and reads a
// replica: the demo's sessions, the ontology of init, and a clean check,
// with both replicas the same.
func testAdmin(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	r := newRig(t, k, srv, 3)
	var datasets, appliers []string
	for _, rp := range r.replicas() {
		datasets, appliers = append(datasets, rp.Dataset), append(appliers, rp.Applier)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TRAILS_") })
	env = append(env, "TRAILS_STORE=kafka",
		cluster.EnvBrokers+"="+strings.Join(r.brokers, ","), cluster.EnvTopic+"="+r.topic,
		cluster.EnvReplicas+"="+strings.Join(datasets, ","), cluster.EnvAppliers+"="+strings.Join(appliers, ","))
	admin, bin := adminCommand(t, env)
	admin("init")
	admin("demo", "--principal", "cluster-demo")
	var sessions []struct{ ID string }
	if err := json.Unmarshal([]byte(admin("sessions", "--json", "--principal", "cluster-demo")), &sessions); err != nil {
		t.Fatal(err)
	}
	if len(sessions) < 2 {
		t.Errorf("trails-admin sessions after the demo: %d sessions, want the demo's root and its forks", len(sessions))
	}

	// An import through the log: a session with shared values, written to
	// a store of its own (dataset 5) and exported from there. Its shared
	// values' update must carry this writer's time, not the store's NOW()
	// (before, cluster.Client refused it; before that, each replica
	// stamped its own time and the replicas differed).
	direct := fusekitest.Client(t, kg.Config{Endpoint: srv.Datasets[5], Store: kg.Fuseki})
	if err := direct.Update(context.Background(), "DROP ALL", kg.Idempotent()); err != nil {
		t.Fatal(err)
	}
	s := session.New("cluster-import")
	s.App = "shop"
	s.Initial = map[string]json.RawMessage{"user:tier": json.RawMessage(`"gold"`), "app:quota": json.RawMessage(`3`)}
	s.Append("user", "hello")
	if err := session.NewStore(direct).Persist(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "export.nq")
	exp := exec.Command(bin, "export", s.ID, "-o", file)
	exp.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TRAILS_") }),
		"TRAILS_STORE=fuseki", "TRAILS_ENDPOINT="+srv.Datasets[5])
	if out, err := exp.CombinedOutput(); err != nil {
		t.Fatalf("trails-admin export from the direct store: %v\n%s", err, out)
	}
	admin("import", file)
	admin("check")
	got, err := session.NewStore(r.client(t)).Load(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Values["user:tier"]) != `"gold"` || string(got.Values["app:quota"]) != `3` {
		t.Errorf("the imported session's shared values through the log: %v, want user:tier \"gold\" and app:quota 3", got.Values)
	}

	// The same quads on both replicas, but the ontology graph's blank
	// nodes (the shapes'), which each replica labels its own way.
	var at int64
	for _, a := range r.appliers {
		at = max(at, a.a.Position())
	}
	var dumps []string
	for i := range r.stores {
		if got := r.appliers[i].a.Position(); got < at {
			waitPosition(t, r.appliers[i].srv.URL, at)
		}
		dumps = append(dumps, strings.Join(slices.DeleteFunc(strings.Split(dump(t, r.stores[i]), "\n"), func(l string) bool {
			return strings.HasSuffix(l, "<"+ontology.OntologyGraph+"> .") && strings.Contains(l, "_:")
		}), "\n"))
	}
	if dumps[0] != dumps[1] {
		t.Errorf("the replicas differ after trails-admin's writes:\n%s", diffLines(dumps[0], dumps[1]))
	}
}

// waitPosition waits until the applier at base has applied offset at.
func waitPosition(t *testing.T, base string, at int64) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/position?atLeast=%d&wait=20s", base, at))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ Position int64 }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.Position < at {
		t.Fatalf("%s: position %d (%v), want at least %d", base, p.Position, err, at)
	}
}
