package fusekitest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// The Docker path: small on purpose. CI and the project's own machines have
// no Docker engine, so the jar path is the one CI exercises.

// dockerAvailable reports whether a Docker engine seems reachable, cheaply:
// DOCKER_HOST is set or the default socket exists, and the engine answers.
func dockerAvailable() bool {
	if os.Getenv("TRAILS_TEST_NO_DOCKER") != "" {
		return false
	}
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			return false
		}
	}
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return false
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Health(ctx) == nil
}

// startContainer builds the compose image (fuseki/Dockerfile) and runs it
// with an in-memory dataset.
func startContainer() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	version, err := fusekiVersion(root)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			FromDockerfile: testcontainers.FromDockerfile{
				Context:    root,
				Dockerfile: "fuseki/Dockerfile",
				BuildArgs:  map[string]*string{"FUSEKI_VERSION": &version},
				KeepImage:  true,
			},
			ExposedPorts: []string{"3030/tcp"},
			WaitingFor:   wait.ForHTTP("/$/ping").WithPort("3030/tcp").WithStartupTimeout(2 * time.Minute),
		},
		Started: true,
	})
	if err != nil {
		return "", err
	}
	onStop(func() { c.Terminate(context.Background()) })
	host, err := c.Host(ctx)
	if err != nil {
		return "", err
	}
	port, err := c.MappedPort(ctx, "3030/tcp")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://%s:%s/trails", host, port.Port()), nil
}

// fusekiVersion reads FUSEKI_VERSION from the repository's .env, the one
// place it is pinned.
func fusekiVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, ".env"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "FUSEKI_VERSION="); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s: no FUSEKI_VERSION", filepath.Join(root, ".env"))
}
