package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCoreDependencies holds the README's list of the modules a program
// importing the core packages compiles in (section "A Go program": every
// module path written as code there, up to the words "go mod tidy")
// against what go list -deps says.
func TestCoreDependencies(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## A Go program\n")
	if !ok {
		t.Fatal(`README.md has no section "## A Go program"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, prose, ok := strings.Cut(section, "compiles\n")
	if !ok {
		_, prose, ok = strings.Cut(section, "compiles ")
	}
	if !ok {
		t.Fatal(`README.md, "A Go program": no sentence saying what a core program compiles`)
	}
	prose, _, _ = strings.Cut(prose, "`go mod tidy`") // the list ends where go.mod's and go.sum's story starts
	var said []string
	for _, m := range regexp.MustCompile("`((?:github\\.com|golang\\.org|go\\.opentelemetry\\.io|google\\.golang\\.org|gopkg\\.in)/[^`]+)`").FindAllStringSubmatch(prose, -1) {
		said = append(said, m[1])
	}
	slices.Sort(said)

	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{with .Module}}{{.Path}}{{end}}{{end}}",
		"./session", "./kg", "./admin", "./prov")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var got []string
	for _, m := range strings.Fields(string(out)) {
		if m != "github.com/trails-kg/trails" && !slices.Contains(got, m) {
			got = append(got, m)
		}
	}
	slices.Sort(got)
	if !slices.Equal(said, got) {
		t.Errorf("README.md, \"A Go program\", names the modules a core program compiles as\n  %v\nbut go list -deps ./session ./kg ./admin ./prov gives\n  %v\nsay what is true there (the names, in backquotes, before the words `go mod tidy`)", said, got)
	}
}
