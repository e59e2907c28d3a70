package doccheck

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestLinks fails on a relative link or #anchor in README.md or
// docs/*.md that does not resolve: a file or directory that is not in the
// checkout, a path that leaves it, or an anchor that no heading of the
// target page gives (GitHub's rules: see slug).
func TestLinks(t *testing.T) {
	root := repoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	anchors := map[string]map[string]bool{} // page → its anchors, read once
	anchorsOf := func(page string) (map[string]bool, error) {
		if a, ok := anchors[page]; ok {
			return a, nil
		}
		a, err := pageAnchors(page)
		anchors[page] = a
		return a, err
	}
	checked := 0
	for _, page := range pages {
		rel, _ := filepath.Rel(root, page)
		links, err := pageLinks(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			target, frag, local := splitTarget(l.target)
			if !local {
				continue
			}
			checked++
			dest := page
			if target != "" {
				dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
				if r, err := filepath.Rel(root, dest); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
					t.Errorf("%s:%d: %s leaves the repository", rel, l.line, l.target)
					continue
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: %s: no such file or directory", rel, l.line, l.target)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				continue // an anchor into a file that is not Markdown (a line of code): not ours to check
			}
			a, err := anchorsOf(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !a[frag] {
				t.Errorf("%s:%d: %s: no heading gives the anchor #%s", rel, l.line, l.target, frag)
			}
		}
	}
	if checked == 0 {
		t.Errorf("no relative link found in %d pages: the check reads nothing", len(pages))
	}
}

// repoRoot is the directory holding the core module's go.mod.
func repoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/trails-kg/trails\n") {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			tb.Fatal("doccheck: no go.mod of github.com/trails-kg/trails above the test's directory")
		}
		dir = up
	}
}

type link struct {
	line   int
	target string
}

var (
	// inline matches [text](target) and ![alt](target), target up to a
	// space (a title follows) or the closing parenthesis.
	inline = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// reference matches a link reference definition: [label]: target.
	reference = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s+<?([^\s>]+)>?`)
	codeSpan  = regexp.MustCompile("`+[^`]*`+")
)

// pageLinks returns the links of a Markdown page outside code: fenced
// blocks and code spans are skipped.
func pageLinks(path string) ([]link, error) {
	var links []link
	err := eachProseLine(path, func(n int, line string) {
		if m := reference.FindStringSubmatch(line); m != nil {
			links = append(links, link{n, m[1]})
		}
		for _, m := range inline.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			links = append(links, link{n, m[1]})
		}
	})
	return links, err
}

// pageAnchors returns the anchors GitHub gives a page's headings (and the
// ids of HTML anchors written in it).
func pageAnchors(path string) (map[string]bool, error) {
	anchors := map[string]bool{}
	seen := map[string]int{}
	htmlID := regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	err := eachProseLine(path, func(_ int, line string) {
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		text, ok := heading(line)
		if !ok {
			return
		}
		s := slug(text)
		if k := seen[s]; k > 0 {
			anchors[fmt.Sprintf("%s-%d", s, k)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	})
	return anchors, err
}

// eachProseLine calls fn with each line of the file outside fenced code
// blocks, numbered from 1.
func eachProseLine(path string, fn func(n int, line string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			for strings.HasPrefix(trimmed[len(fence):], fence[:1]) {
				fence += fence[:1]
			}
			continue
		}
		fn(n, line)
	}
	return sc.Err()
}

// heading returns the text of an ATX heading line ("## Text").
func heading(line string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return "", false
	}
	level := len(t) - len(strings.TrimLeft(t, "#"))
	if level < 1 || level > 6 || (len(t) > level && t[level] != ' ') {
		return "", false
	}
	text := strings.TrimSpace(t[level:])
	text = strings.TrimSpace(strings.TrimRight(text, "#")) // a closing sequence
	return text, true
}

var mdLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// slug is the anchor GitHub gives a heading: its text as rendered (code
// spans' backticks, emphasis marks and link targets gone), lowercased,
// each space a '-', every character but letters, digits, marks, '-' and
// '_' dropped.
func slug(text string) string {
	text = mdLink.ReplaceAllString(text, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// splitTarget splits a link target into its path and fragment; local is
// false for a URL with a scheme (https:, mailto:) or a host.
func splitTarget(target string) (path, frag string, local bool) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "", "", false
	}
	frag = u.Fragment
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	return u.Path, frag, true
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ name, heading, want string }{
		{"words", "Two commands", "two-commands"},
		{"code span", "The `kg` client", "the-kg-client"},
		{"punctuation", "Structured turns: tool calls, models and usage as data", "structured-turns-tool-calls-models-and-usage-as-data"},
		{"slash and parens", "ADK v1/v2 (sessions)", "adk-v1v2-sessions"},
		{"link", "Use [ADK](https://google.github.io/adk-docs/) Go", "use-adk-go"},
		{"dash and underscore", "Store_Fork - what it does", "store_fork---what-it-does"},
		{"non-ASCII letters", "Belém à pé", "belém-à-pé"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := slug(tc.heading); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAnchorsNumberRepeats(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "p.md")
	text := "# A\n## Usage\n```\n## Not a heading\n```\n### Usage\n## Usage #\n"
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := pageAnchors(page)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range a {
		got = append(got, k)
	}
	slices.Sort(got)
	want := []string{"a", "usage", "usage-1", "usage-2"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestPageLinksSkipCode(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "p.md")
	text := "See [a](a.md#x) and `[b](b.md)`.\n```\n[c](c.md)\n```\n![pic](img.png \"title\")\n[ref]: ref.md\n[web](https://example.org/x#y)\n"
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	links, err := pageLinks(page)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range links {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	want := []string{"1:a.md#x", "5:img.png", "6:ref.md", "7:https://example.org/x#y"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
