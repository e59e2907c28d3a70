// Package benchreport renders what the markdown reports of trails-bench
// and adk-bench share: the table of an issue's targets with the summary
// line generated from it ("12 of 14 targets met; missed: ..."), the
// machine's load average and description (Environment), and the writing
// of a report between two marker lines of a file such as BENCHMARKS.md
// (Markers, WriteFile). A summary is never written by hand: it is
// computed from the targets it sums up. Each bench keeps its own words
// for what it reports; this package holds only what is the same.
package benchreport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
)

// Verdict is how a target fared in one run.
type Verdict string

// The verdicts.
const (
	Meets    Verdict = "meets"
	Misses   Verdict = "misses"
	Reported Verdict = "reported" // a figure shown beside the targets, with no bar to meet
)

// Judge returns Meets when ok holds, else Misses.
func Judge(ok bool) Verdict {
	if ok {
		return Meets
	}
	return Misses
}

// Target is one target of an issue, judged in one run. Its zero value is
// not useful; the benches fill every field but Got, which is optional.
type Target struct {
	// Name is what the target asks, its bar included:
	// "wide: tree ≤ 2× floor".
	Name string `json:"name"`
	// Cells are the measured figures, one per column of the table after
	// the name (one "measured" column, or one per backend).
	Cells []string `json:"measured"`
	// Got is what the summary quotes for a missed target, "" for the
	// last cell.
	Got     string  `json:"got,omitempty"`
	Verdict Verdict `json:"verdict"`
}

// got returns the figure the summary quotes for t.
func (t Target) got() string {
	if t.Got != "" {
		return t.Got
	}
	if len(t.Cells) == 0 {
		return ""
	}
	return t.Cells[len(t.Cells)-1]
}

// Summary returns the line that sums ts up: how many of the targets with
// a bar were met and, for each missed one, its name and what was
// measured. Reported figures are counted apart.
func Summary(ts []Target) string {
	var met, judged, reported int
	var missed []string
	for _, t := range ts {
		switch t.Verdict {
		case Meets:
			met++
			judged++
		case Misses:
			judged++
			missed = append(missed, fmt.Sprintf("%s (%s)", t.Name, t.got()))
		case Reported:
			reported++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%d of %d targets met", met, judged)
	if len(missed) == 0 {
		b.WriteString(".**")
	} else {
		fmt.Fprintf(&b, "; missed:** %s.", strings.Join(missed, "; "))
	}
	if reported > 0 {
		fmt.Fprintf(&b, " %d %s reported without a bar.", reported, plural(reported, "figure", "figures"))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// WriteTargets writes ts as a markdown table whose columns are "target",
// cols (one per cell) and "result", and under it the summary line of
// Summary. It is the one place where a bench renders its targets.
func WriteTargets(w io.Writer, cols []string, ts []Target) {
	fmt.Fprintf(w, "| target | %s | result |\n", strings.Join(cols, " | "))
	fmt.Fprintf(w, "|---|%s---:|\n", strings.Repeat("---|", len(cols)))
	for _, t := range ts {
		cells := make([]string, len(cols))
		copy(cells, t.Cells)
		for i, c := range cells {
			cells[i] = escape(c)
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", escape(t.Name), strings.Join(cells, " | "), t.Verdict)
	}
	fmt.Fprintf(w, "\n%s\n\n", Summary(ts))
}

// escape keeps a cell on one line and in its column.
func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// LoadAvg returns the machine's load average over 1, 5 and 15 minutes
// (the first three fields of /proc/loadavg), which tells how much else
// ran beside a benchmark; "unknown" where the system does not say.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// LoadLine returns the sentence a report's header gives the load
// average at the start and at the end of its run.
func LoadLine(start, end string) string {
	return fmt.Sprintf("Load average (1, 5, 15 min) at the start: %s; at the end: %s", start, end)
}

// Replace returns doc with the text between the lines begin and end
// replaced by report, and whether doc has them (begin before end).
func Replace(doc []byte, begin, end string, report []byte) ([]byte, bool) {
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j <= i {
		return nil, false
	}
	var b bytes.Buffer
	b.Write(doc[:i+len(begin)])
	b.WriteString("\n")
	b.Write(report)
	b.Write(doc[j:])
	return b.Bytes(), true
}

// Markers are the two lines of a file (BENCHMARKS.md) between which a
// bench's report goes.
type Markers struct {
	Begin, End string
}

// NewMarkers returns the markers "<!-- name:begin -->" and
// "<!-- name:end -->": NewMarkers("trails-bench:wide").
func NewMarkers(name string) Markers {
	return Markers{Begin: "<!-- " + name + ":begin -->", End: "<!-- " + name + ":end -->"}
}

// In reports whether doc has m's lines, Begin before End.
func (m Markers) In(doc []byte) bool {
	i, j := bytes.Index(doc, []byte(m.Begin)), bytes.Index(doc, []byte(m.End))
	return i >= 0 && j > i
}

// WriteFile writes report into the file at path between m's lines (-o
// FILE), replacing what was between them. A file without them is
// replaced whole, unless required, which makes it an error. A file that
// does not exist is made: with wrap, of m's lines around report; else of
// report alone.
func WriteFile(path string, report []byte, m Markers, required, wrap bool) error {
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && wrap:
		old, err = []byte(m.Begin+"\n"+m.End+"\n"), nil
	case errors.Is(err, os.ErrNotExist):
		return os.WriteFile(path, report, 0o644)
	}
	if err != nil {
		return err
	}
	doc, ok := Replace(old, m.Begin, m.End, report)
	if !ok {
		if required {
			return fmt.Errorf("%s has no lines %s and %s, between which the report goes", path, m.Begin, m.End)
		}
		doc = report
	}
	return os.WriteFile(path, doc, 0o644)
}

// Env is what the benches' reports say of the machine and the software
// they ran on, each bench in its own words.
type Env struct {
	CPUs     int
	CPUModel string   // "unknown CPU" where /proc/cpuinfo does not say
	OS       string   // "Linux RELEASE ARCH", or GOOS/GOARCH
	Go       string   // runtime.Version
	Java     []string // the lines java -version printed, trimmed; none where it did not run
	Fuseki   string   // the version Fuseki's log gives, "unknown version" where it gives none
	Source   string   // git describe --always --dirty of the checkout, "" outside one
}

// Environment returns the machine's and the software's description, the
// Fuseki version read from its log at fusekiLog.
func Environment(fusekiLog string) Env {
	e := Env{CPUs: runtime.NumCPU(), Go: runtime.Version(), CPUModel: "unknown CPU", Fuseki: "unknown version",
		OS: runtime.GOOS + "/" + runtime.GOARCH}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.OS = "Linux " + strings.TrimSpace(string(b)) + " " + runtime.GOARCH
	}
	if out, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			e.Java = append(e.Java, strings.TrimSpace(l))
		}
	}
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		e.Source = strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile(fusekiLog); err == nil {
		if v := fusekiVersion.FindSubmatch(b); v != nil {
			e.Fuseki = string(v[1])
		}
	}
	return e
}

// fusekiVersion finds the version in Fuseki's start-up lines.
var fusekiVersion = regexp.MustCompile(`Fuseki[^\n]*?(\d+\.\d+\.\d+)`)

// Render returns the report of a run: v as indented JSON (-json) when
// asJSON, else the markdown that markdown writes.
func Render(asJSON bool, v any, markdown func(io.Writer)) ([]byte, error) {
	var buf bytes.Buffer
	if !asJSON {
		markdown(&buf)
		return buf.Bytes(), nil
	}
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
