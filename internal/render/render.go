// Package render holds the JSON and text forms in which Trails' front
// ends print what the store holds: sessions, turns and their parts, fork
// trees, a session's header and audit rows. Every stored value is
// escaped (termsafe) before it reaches a writer, so that no stored text
// can act on a terminal or forge a line of another kind.
//
// It owns layout only: it reads nothing from a store, parses no flags
// and writes only to the io.Writer it is given. trails-admin and the
// tools of package integrations/mcp (trails-mcp) keep their wiring and
// print through it; where their forms differ in small ways, a Form
// says which (its zero value is trails-admin's). The library packages
// (session, prov, kg, admin) must not import it.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/trails-kg/trails/internal/termsafe"
)

// Plural returns n and noun, with an "s" unless n is 1: "1 turn",
// "2 turns".
func Plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// CompactJSON returns the JSON value v without insignificant white space
// (v as it is if it is not valid JSON).
func CompactJSON(v json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}

// Clip returns s escaped (termsafe.String) on one line of at most width
// characters, the cut marked by "…". Only what it keeps is escaped.
func Clip(s string, width int) string {
	head := PrefixRunes(s, width) // escaping never shortens: width characters are enough
	e := []rune(termsafe.String(head))
	if len(head) == len(s) && len(e) <= width {
		return string(e)
	}
	return string(e[:min(len(e), width-1)]) + "…"
}

// PrefixRunes returns the first n characters of s (at most).
func PrefixRunes(s string, n int) string {
	k := 0
	for i := range s {
		if k == n {
			return s[:i]
		}
		k++
	}
	return s
}
