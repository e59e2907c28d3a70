package render

import (
	"regexp"
	"strings"
	"testing"
)

// TestGraphLabels: a stored value cannot end a Graphviz string or a
// Mermaid label, add a line break of its own, or reach the terminal raw.
func TestGraphLabels(t *testing.T) {
	t.Parallel()
	evil := "x\"];\n  evil [label=\"\\\\n\x1b]0;t\x07\u202e<b>#1"
	t.Run("dot", func(t *testing.T) {
		got := dotString("…1234abcd", evil)
		want := `"…1234abcd\nx\"];\\n  evil [label=\"\\\\n\\x1b]0;t\\x07\\u202e<b>#1"`
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
		if n := strings.Count(got, `\n`) - strings.Count(got, `\\n`); n != 1 {
			t.Errorf("got %d Graphviz line breaks in %s, want 1", n, got)
		}
	})
	t.Run("mermaid text", func(t *testing.T) {
		got := mermaidText(evil)
		want := `x#quot;];\n  evil [label=#quot;\\n\x1b]0;t\x07\u202e#lt;b#gt;#35;1`
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	})
	t.Run("mermaid node", func(t *testing.T) {
		for _, tt := range []struct{ id, want string }{
			{"01a1fd4f-5704-7724-af0c-f93cadd564fe", "s01a1fd4f57047724af0cf93cadd564fe"},
			{"a\"]\n;é", "sa_22_5d_0a_3b_c3_a9"},
		} {
			got := mermaidNode(tt.id)
			if got != tt.want || !regexp.MustCompile(`^s[0-9A-Za-z_]+$`).MatchString(got) {
				t.Errorf("mermaidNode(%q): got %s, want %s", tt.id, got, tt.want)
			}
		}
	})
}
