package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/trails-kg/trails/internal/termsafe"
)

// The helpers of the text renderings: values cut to a line, JSON
// compacted, counts in words.

// lineWidth is the most characters of a part's or a value's line in a
// text rendering.
const lineWidth = 80

// clip returns s escaped (termsafe.String) on one line of at most width
// characters, a cut marked by "…". Only what it keeps is escaped: a
// long value costs its first characters.
func clip(s string, width int) string {
	head, n := s, 0
	for i := range s {
		if n == width {
			head = s[:i]
			break
		}
		n++
	}
	r := []rune(termsafe.String(head)) // escaping never shortens
	if len(head) == len(s) && len(r) <= width {
		return string(r)
	}
	return string(r[:min(len(r), width-1)]) + "…"
}

// compactJSON returns JSON value v without insignificant white space (v
// as it is when it is not valid JSON).
func compactJSON(v json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}

// plural returns "1 turn", "2 turns".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
