// Package benchreport renders what the markdown reports of trails-bench
// and adk-bench share: the table of an issue's targets with the summary
// line generated from it ("12 of 14 targets met; missed: ..."), the
// machine's load average, and the replacing of a report between two
// marker lines of a file such as BENCHMARKS.md. A summary is never
// written by hand: it is computed from the targets it sums up.
package benchreport

import (
	"bytes"
	"fmt"
	"io"
	"os"
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
