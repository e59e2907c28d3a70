package fusekitest

import (
	"context"
	"errors"
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

// testImageRepo is the repository of the image the tests build from
// fuseki/Dockerfile. Its tag is the Fuseki version (testImage), so every
// test binary reuses the one image instead of adding a random tag to it
// (testcontainers' default when no repository or tag is given).
const testImageRepo = "trails-fuseki-test"

// How long each step of the Docker path may take before the tests give up
// on it and use the jar.
const (
	buildWait  = 10 * time.Minute // build the image: the first build fetches Fuseki from Maven Central
	reaperWait = time.Minute      // find the reaper's image, or pull it
	startWait  = 3 * time.Minute  // start the container and see Fuseki answer its ping
)

// errNoReaper: testcontainers needs its reaper (Ryuk) to remove containers
// after a crash, and its image is neither on the host nor pullable.
var errNoReaper = errors.New("fusekitest: the testcontainers reaper image cannot be had")

// testImage returns the repository and tag of the test image for a Fuseki
// version.
func testImage(version string) (repo, tag string) { return testImageRepo, version }

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

// startContainer builds the compose image (fuseki/Dockerfile) as
// trails-fuseki-test:VERSION and runs it with an in-memory dataset. On any
// failure the container, if one was created, is removed before it returns;
// the error is one line saying why, which Endpoint prints as it falls back
// to the jar.
func startContainer() (endpoint string, err error) {
	defer func() {
		if err != nil {
			err = oneLine{err}
		}
	}()
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	version, err := fusekiVersion(root)
	if err != nil {
		return "", err
	}
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return "", err
	}
	cfg := p.Config()
	if !cfg.RyukDisabled {
		img := cfg.Config.HubImageNamePrefix + testcontainers.ReaperDefaultImage
		has := func(ctx context.Context, img string) bool {
			_, err := p.Client().ImageInspect(ctx, img)
			return err == nil
		}
		err = ensureImage(context.Background(), img, reaperWait, has, p.PullImage)
	}
	p.Close()
	if err != nil {
		return "", err
	}

	repo, tag := testImage(version)
	bctx, cancel := context.WithTimeout(context.Background(), buildWait)
	defer cancel()
	c, err := testcontainers.GenericContainer(bctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			FromDockerfile: testcontainers.FromDockerfile{
				Context:    root,
				Dockerfile: "fuseki/Dockerfile",
				BuildArgs:  map[string]*string{"FUSEKI_VERSION": &version},
				Repo:       repo,
				Tag:        tag,
				KeepImage:  true,
			},
			ExposedPorts: []string{"3030/tcp"},
			WaitingFor:   wait.ForHTTP("/$/ping").WithPort("3030/tcp").WithStartupTimeout(startWait - 30*time.Second),
		},
		// Created here, started below under a bound of its own: starting
		// also starts the reaper.
		Started: false,
	})
	defer func() {
		if err != nil {
			terminate(c) // created, perhaps started: never left behind
		}
	}()
	if err != nil {
		return "", fmt.Errorf("build and create %s:%s: %w", repo, tag, err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), startWait)
	defer scancel()
	if err := c.Start(sctx); err != nil {
		return "", fmt.Errorf("start %s:%s: %w", repo, tag, err)
	}
	host, err := c.Host(sctx)
	if err != nil {
		return "", err
	}
	port, err := c.MappedPort(sctx, "3030/tcp")
	if err != nil {
		return "", err
	}
	onStop(func() { terminate(c) })
	return fmt.Sprintf("http://%s:%s/trails", host, port.Port()), nil
}

// terminate removes c (a nil c is nothing to do), saying so on stderr when
// it cannot.
func terminate(c testcontainers.Container) {
	if err := testcontainers.TerminateContainer(c); err != nil {
		fmt.Fprintf(os.Stderr, "fusekitest: remove the test container: %v\n", err)
	}
}

// ensureImage makes sure image is on the Docker host: has says whether it
// is, pull fetches it. Pulling may take at most bound (testcontainers
// retries a failed pull for up to 15 minutes otherwise); when it fails the
// error matches errNoReaper and says how to run without the reaper.
func ensureImage(ctx context.Context, image string, bound time.Duration,
	has func(context.Context, string) bool, pull func(context.Context, string) error) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if has(ctx, image) {
		return nil
	}
	if err := pull(ctx, image); err != nil {
		return fmt.Errorf("%w: %s is not on the Docker host and could not be pulled within %v (%v); "+
			"set TESTCONTAINERS_RYUK_DISABLED=true to run without it (see the README, Docker)",
			errNoReaper, image, bound, err)
	}
	return nil
}

// oneLine is an error printed on one line: what testcontainers and Docker
// report may span several.
type oneLine struct{ err error }

func (e oneLine) Error() string { return strings.Join(strings.Fields(e.err.Error()), " ") }
func (e oneLine) Unwrap() error { return e.err }

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
