package fusekitest

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The Docker path cannot run here (no engine, no registry): these tests
// cover what needs none.

// TestTestImage: the test image has one fixed name per Fuseki version, so
// test binaries reuse it instead of tagging it anew each time.
func TestTestImage(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	version, err := fusekiVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	repo, tag := testImage(version)
	if repo != "trails-fuseki-test" || tag != version {
		t.Errorf("got %s:%s, want trails-fuseki-test:%s", repo, tag, version)
	}
	if r2, t2 := testImage(version); r2 != repo || t2 != tag {
		t.Errorf("got %s:%s the second time, want %s:%s", r2, t2, repo, tag)
	}
	// Docker's grammar for a repository path component and a tag.
	if !regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`).MatchString(repo) {
		t.Errorf("repository %q is not a valid Docker name", repo)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`).MatchString(tag) {
		t.Errorf("tag %q is not a valid Docker tag", tag)
	}
}

// TestEnsureImage: the reaper's image is used when present, pulled when
// not, and when it cannot be pulled the wait is bounded and the error is
// one line that says how to go on without it.
func TestEnsureImage(t *testing.T) {
	const img = "testcontainers/ryuk:0.14.0"
	const bound = 200 * time.Millisecond
	hang := func(ctx context.Context, _ string) error { // an unreachable registry
		<-ctx.Done()
		return ctx.Err()
	}
	tests := []struct {
		name    string
		has     bool
		pull    func(context.Context, string) error
		pulled  bool
		wantErr bool
	}{
		{name: "present", has: true, pull: hang},
		{name: "pulled", pull: func(context.Context, string) error { return nil }, pulled: true},
		{name: "refused", pull: func(context.Context, string) error { return errors.New("denied") }, pulled: true, wantErr: true},
		{name: "registry unreachable", pull: hang, pulled: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pulled := false
			has := func(_ context.Context, got string) bool {
				if got != img {
					t.Errorf("has(%s), want has(%s)", got, img)
				}
				return tt.has
			}
			pull := func(ctx context.Context, got string) error {
				pulled = true
				return tt.pull(ctx, got)
			}
			start := time.Now()
			err := ensureImage(context.Background(), img, bound, has, pull)
			if took := time.Since(start); took > bound+2*time.Second {
				t.Errorf("took %v, want at most about %v", took, bound)
			}
			if pulled != tt.pulled {
				t.Errorf("pulled %v, want %v", pulled, tt.pulled)
			}
			if !tt.wantErr {
				if err != nil {
					t.Errorf("got %v, want no error", err)
				}
				return
			}
			if !errors.Is(err, errNoReaper) {
				t.Fatalf("got %v, want errNoReaper", err)
			}
			msg := oneLine{err}.Error()
			for _, want := range []string{img, "TESTCONTAINERS_RYUK_DISABLED=true"} {
				if !strings.Contains(msg, want) {
					t.Errorf("got %q, want it to name %s", msg, want)
				}
			}
		})
	}
}

// TestOneLine: what the tests print as they fall back to the jar is one
// line, whatever Docker's error looked like, and still matches its cause.
func TestOneLine(t *testing.T) {
	cause := errors.New("build image:\nstep 1/9:\n  pull eclipse-temurin: no route to host\n")
	err := error(oneLine{cause})
	if got, want := err.Error(), "build image: step 1/9: pull eclipse-temurin: no route to host"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(err, cause) {
		t.Error("got an error that does not match its cause")
	}
}
