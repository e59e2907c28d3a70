package benchreport_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/benchreport"
)

func TestSummary(t *testing.T) {
	tests := []struct {
		name string
		ts   []benchreport.Target
		want string
	}{
		{name: "all met", ts: []benchreport.Target{
			{Name: "a ≤ 2×", Cells: []string{"1.5×"}, Verdict: benchreport.Meets},
			{Name: "b ≥ 80%", Cells: []string{"91%"}, Verdict: benchreport.Meets},
		}, want: "**2 of 2 targets met.**"},
		{name: "misses quote what was measured", ts: []benchreport.Target{
			{Name: "a ≤ 1.3×", Cells: []string{"Load / floor: 1.34×"}, Verdict: benchreport.Misses},
			{Name: "b ≤ 2×", Cells: []string{"10 ms", "25 ms (2.50×)"}, Got: "2.50×", Verdict: benchreport.Misses},
			{Name: "c", Cells: []string{"3"}, Verdict: benchreport.Meets},
		}, want: "**1 of 3 targets met; missed:** a ≤ 1.3× (Load / floor: 1.34×); b ≤ 2× (2.50×)."},
		{name: "reported figures are counted apart", ts: []benchreport.Target{
			{Name: "a", Cells: []string{"1"}, Verdict: benchreport.Meets},
			{Name: "p50", Cells: []string{"12 ms"}, Verdict: benchreport.Reported},
			{Name: "p99", Cells: []string{"40 ms"}, Verdict: benchreport.Reported},
		}, want: "**1 of 1 targets met.** 2 figures reported without a bar."},
		{name: "none", want: "**0 of 0 targets met.**"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := benchreport.Summary(tt.ts); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWriteTargets(t *testing.T) {
	var b bytes.Buffer
	benchreport.WriteTargets(&b, []string{"SQLite", "Trails"}, []benchreport.Target{
		{Name: "Get ≤ 1.0×", Cells: []string{"23 ms", "a|b\nc"}, Got: "8.6×", Verdict: benchreport.Misses},
		{Name: "append", Cells: []string{"2 ms"}, Verdict: benchreport.Reported},
	})
	want := `| target | SQLite | Trails | result |
|---|---|---|---:|
| Get ≤ 1.0× | 23 ms | a\|b c | misses |
| append | 2 ms |  | reported |

**0 of 1 targets met; missed:** Get ≤ 1.0× (8.6×). 1 figure reported without a bar.

`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestReplace(t *testing.T) {
	doc := []byte("notes\n<!-- b -->\nold\n<!-- e -->\nmore\n")
	got, ok := benchreport.Replace(doc, "<!-- b -->", "<!-- e -->", []byte("new\n"))
	if want := "notes\n<!-- b -->\nnew\n<!-- e -->\nmore\n"; !ok || string(got) != want {
		t.Errorf("got %q, %v, want %q, true", got, ok, want)
	}
	for _, d := range []string{"no markers", "<!-- e -->\n<!-- b -->\n"} {
		if _, ok := benchreport.Replace([]byte(d), "<!-- b -->", "<!-- e -->", nil); ok {
			t.Errorf("Replace(%q): got ok, want no markers found", d)
		}
	}
	if !strings.Contains(benchreport.LoadLine("1.0 2.0 3.0", "0.5 1.5 2.5"), "at the start: 1.0 2.0 3.0; at the end: 0.5 1.5 2.5") {
		t.Errorf("LoadLine: got %q", benchreport.LoadLine("1.0 2.0 3.0", "0.5 1.5 2.5"))
	}
}

// TestWriteFile: a report goes between the markers; a file without them
// is replaced or refused (required); a missing one is made, wrapped in
// the markers or not.
func TestWriteFile(t *testing.T) {
	t.Parallel()
	m := benchreport.NewMarkers("b")
	tests := []struct {
		name           string
		old            *string
		required, wrap bool
		want           string
		wantErr        bool
	}{
		{name: "between", old: ptr("x\n<!-- b:begin -->\nold\n<!-- b:end -->\ny\n"), want: "x\n<!-- b:begin -->\nnew\n<!-- b:end -->\ny\n"},
		{name: "no markers", old: ptr("notes\n"), want: "new\n"},
		{name: "no markers, required", old: ptr("notes\n"), required: true, wantErr: true},
		{name: "missing", want: "new\n"},
		{name: "missing, wrapped", wrap: true, want: "<!-- b:begin -->\nnew\n<!-- b:end -->\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
			if tt.old != nil {
				if err := os.WriteFile(path, []byte(*tt.old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := benchreport.WriteFile(path, []byte("new\n"), m, tt.required, tt.wrap)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want an error: %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got, _ := os.ReadFile(path); string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if !m.In([]byte(m.Begin+"\n"+m.End)) || m.In([]byte(m.End+"\n"+m.Begin)) {
		t.Errorf("In: want the markers found only in order")
	}
}

func ptr(s string) *string { return &s }

// TestRender: -json gives the value indented; otherwise the markdown.
func TestRender(t *testing.T) {
	t.Parallel()
	md := func(w io.Writer) { io.WriteString(w, "# report\n") }
	for _, tt := range []struct {
		name   string
		asJSON bool
		want   string
	}{
		{"markdown", false, "# report\n"},
		{"json", true, "{\n  \"a\": 1\n}\n"},
	} {
		got, err := benchreport.Render(tt.asJSON, map[string]int{"a": 1}, md)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %q, %v, want %q", tt.name, got, err, tt.want)
		}
	}
}
