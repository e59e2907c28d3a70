package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// diffCmd is "diff": two sessions' histories compared, the shared turns
// once, then the two tails side by side.
type diffCmd struct {
	blocks bool
	json   bool
}

func (*diffCmd) name() string  { return "diff" }
func (*diffCmd) usage() string { return "A B [--blocks] [--json]" }
func (*diffCmd) synopsis() string {
	return "compare two sessions: common ancestor, divergence, shared turns, then the two tails side by side, the parts that differ marked"
}
func (*diffCmd) example() string {
	return "trails-admin diff 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d 019aa4c5-7a02-7d4e-8c1f-2b3a4c5d6e7f"
}
func (c *diffCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.blocks, "blocks", false, "print the two tails one after the other, not in two columns (for narrow terminals)")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// diffJSON is the JSON form of a comparison (stable names).
type diffJSON struct {
	A          string        `json:"a"`
	B          string        `json:"b"`
	Common     string        `json:"common"`
	Divergence int           `json:"divergence"`
	Copied     int           `json:"copied"`
	Shared     []render.Turn `json:"shared"`
	ATail      []render.Turn `json:"a_tail"`
	BTail      []render.Turn `json:"b_tail"`
}

func (c *diffCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 2 {
		return usageErrorf("diff needs two session ids; try: trails-admin diff -h")
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	cmp, err := st.Compare(ctx, args[0], args[1])
	if err != nil {
		return err
	}
	if c.json {
		return a.json(diffJSON{A: args[0], B: args[1], Common: cmp.Common, Divergence: cmp.Divergence, Copied: cmp.Copied,
			Shared: render.NewTurns(cmp.Shared), ATail: render.NewTurns(cmp.A), BTail: render.NewTurns(cmp.B)})
	}
	writeDiff(a.stdout, termsafe.String(args[0]), termsafe.String(args[1]), cmp, c.blocks)
	return nil
}

// The text layout of diff: fixed widths, whatever the terminal, so that
// the output is the same on a screen, in a pipe and in a golden file. A
// column is a 3-character marker ("<  ") and up to colText characters of
// text; two columns and the bar between them make 80.
const (
	colText   = 35
	colWidth  = 3 + colText
	colBar    = "  │ "
	fullText  = 2*colWidth + 4 - 3 // text width of a line across both columns
	diffLabel = "%-11s %s\n"
)

// writeDiff prints cmp: a header, the shared turns marked "=", then the two
// tails, side by side in two columns marked "<" (a) and ">" (b), or, with
// blocks, one after the other. A turn is a line "[index] role branch", its
// content, wrapped, and its parts (diffItemLines); a part that differs
// from the same part of the other side's turn at the same index is marked
// "*", its value shown where it differs.
func writeDiff(w io.Writer, a, b string, cmp *session.Comparison, blocks bool) {
	la, lb := cmp.Divergence+len(cmp.A), cmp.Divergence+len(cmp.B)
	fmt.Fprintf(w, diffLabel, "a", a+"  "+render.Plural(la, "turn"))
	fmt.Fprintf(w, diffLabel, "b", b+"  "+render.Plural(lb, "turn"))
	common := termsafe.String(cmp.Common)
	switch {
	case common == "" && cmp.Copied > 0:
		common = "none: different roots since a detach"
	case common == "":
		common = "none: different roots"
	case common == a && common == b:
		common += " (a and b)"
	case common == a:
		common += " (a)"
	case common == b:
		common += " (b)"
	}
	fmt.Fprintf(w, diffLabel, "common", common)
	var div string
	switch {
	case len(cmp.A) == 0 && len(cmp.B) == 0:
		div = fmt.Sprintf("none: the same %s", render.Plural(la, "turn"))
	default:
		div = fmt.Sprintf("at turn %d: %s shared, then %d only in a and %d only in b",
			cmp.Divergence, render.Plural(cmp.Divergence, "turn"), len(cmp.A), len(cmp.B))
	}
	fmt.Fprintf(w, diffLabel, "divergence", div)
	if cmp.Copied > 0 {
		what := "shared turn is a detach copy (trails:copiedFrom), the same turn as its original"
		if cmp.Copied > 1 {
			what = "shared turns are detach copies (trails:copiedFrom), the same turns as their originals"
		}
		fmt.Fprintf(w, diffLabel, "copied", fmt.Sprintf("%d %s", cmp.Copied, what))
	}

	fmt.Fprintf(w, "\n= shared: %s\n", turnRange(cmp.Shared, cmp.Divergence))
	for _, g := range cells("=", cmp.Shared, nil, fullText) {
		for _, l := range g {
			writeLine(w, l)
		}
	}
	if len(cmp.A) == 0 && len(cmp.B) == 0 {
		return
	}
	titleA, titleB := "< a: "+turnRange(cmp.A, cmp.Divergence), "> b: "+turnRange(cmp.B, cmp.Divergence)
	fmt.Fprintln(w)
	defer func() {
		if marked(cmp.A, cmp.B) {
			fmt.Fprintf(w, "\n* marks a part that differs from the turn of the same index on the other side\n")
		}
	}()
	if blocks {
		for k, side := range []struct {
			title         string
			marker        string
			turns, others []session.Turn
		}{{titleA, "<", cmp.A, cmp.B}, {titleB, ">", cmp.B, cmp.A}} {
			if k > 0 {
				fmt.Fprintln(w)
			}
			writeLine(w, side.title)
			for _, g := range cells(side.marker, side.turns, side.others, fullText) {
				for _, l := range g {
					writeLine(w, l)
				}
			}
		}
		return
	}
	// Side by side: both tails start at the divergence index, so the k-th
	// turn of each starts on one row, a row of turns of one index; the
	// shorter turn is padded with empty lines.
	writeLine(w, pad(titleA, colWidth)+colBar+titleB)
	left, right := cells("<", cmp.A, cmp.B, colText), cells(">", cmp.B, cmp.A, colText)
	for k := 0; k < max(len(left), len(right)); k++ {
		var l, r []string
		if k < len(left) {
			l = left[k]
		}
		if k < len(right) {
			r = right[k]
		}
		for i := 0; i < max(len(l), len(r)); i++ {
			var cl, cr string
			if i < len(l) {
				cl = l[i]
			}
			if i < len(r) {
				cr = r[i]
			}
			writeLine(w, pad(cl, colWidth)+colBar+cr)
		}
	}
}

// turnRange describes the indices of turns, which start at from.
func turnRange(turns []session.Turn, from int) string {
	switch len(turns) {
	case 0:
		if from == 0 {
			return "no turns"
		}
		return fmt.Sprintf("no turns from %d", from)
	case 1:
		return fmt.Sprintf("turn %d", turns[0].Index)
	}
	return fmt.Sprintf("turns %d-%d", turns[0].Index, turns[len(turns)-1].Index)
}

// turnLines is a turn as lines of at most width characters: a heading
// "[index] role branch", then its content, wrapped (left out when empty
// in a structured turn); every field escaped. The lines of its parts
// follow (diffItemLines).
func turnLines(t session.Turn, width int) []string {
	head := []string{fmt.Sprintf("[%d] %s %s", t.Index, termsafe.String(t.Role), termsafe.String(t.Branch))}
	if t.Content == "" && t.Structured() {
		return head
	}
	return append(head, wrap(t.Content, width)...)
}

// cells returns the lines of each turn (turnLines, then its parts), each
// prefixed with side ("<", ">" or "=") and a mark: "*" on the lines of a
// part that differs from the same part of the turn at the same position
// in others (the other side's tail; nil for the shared turns), else a
// space, then a space.
func cells(side string, turns, others []session.Turn, width int) [][]string {
	out := make([][]string, len(turns))
	for k, t := range turns {
		for _, l := range turnLines(t, width) {
			out[k] = append(out[k], side+"  "+l)
		}
		var other *session.Turn
		if k < len(others) {
			other = &others[k]
		}
		lines, marks := diffItemLines(t, other, width)
		for i, l := range lines {
			out[k] = append(out[k], side+marks[i]+" "+l)
		}
	}
	return out
}

// marked reports whether cells marks a part of a or b: whether a turn of
// one, structured, has a part that differs from the turn at the same
// position in the other.
func marked(a, b []session.Turn) bool {
	for k := range min(len(a), len(b)) {
		for _, pair := range [][2]session.Turn{{a[k], b[k]}, {b[k], a[k]}} {
			if _, marks := diffItemLines(pair[0], &pair[1], colText); slices.Contains(marks, "*") {
				return true
			}
		}
	}
	return false
}

// wrap breaks s into lines of at most width characters, at spaces where it
// can; line breaks in s are kept, tabs become spaces, and the other
// control and bidi characters are escaped (termsafe.Lines) before the
// lines are measured. Width counts runes, so wide (East Asian) characters
// make a line look longer than it is.
func wrap(s string, width int) []string {
	var out []string
	for _, para := range termsafe.Lines(strings.ReplaceAll(s, "\t", "    ")) {
		var line []rune
		for k, word := range strings.Split(para, " ") {
			w := []rune(word)
			if k > 0 {
				if len(line)+1+len(w) <= width {
					line = append(append(line, ' '), w...)
					continue
				}
				out = append(out, string(line))
			}
			for len(w) > width { // a word longer than a line: cut it
				out = append(out, string(w[:width]))
				w = w[width:]
			}
			line = slices.Clone(w)
		}
		out = append(out, string(line))
	}
	return out
}

// pad widens s with spaces to width runes.
func pad(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// writeLine writes l without trailing spaces.
func writeLine(w io.Writer, l string) {
	fmt.Fprintln(w, strings.TrimRight(l, " "))
}
