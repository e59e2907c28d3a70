package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

// TestClip: a value is escaped and cut to its width, the cut marked,
// escapes counted in the width.
func TestClip(t *testing.T) {
	fusekitest.Parallel(t)
	tests := []struct {
		name, in string
		width    int
		want     string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdef", 5, "abcd…"},
		{"escaped fits", "a\x1b", 5, `a\x1b`},
		{"escape cut", "ab\x1bcdef", 5, `ab\x…`},
		{"line break", "a\nb", 10, `a\nb`},
		{"invalid UTF-8", "a\xffb", 10, `a\xffb`},
		{"runes", "ééééé", 4, "ééé…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clip(tt.in, tt.width); got != tt.want {
				t.Errorf("clip(%q, %d): got %q, want %q", tt.in, tt.width, got, tt.want)
			}
		})
	}
}

// TestBodyLines: a body is cut into lines of the width, at most the
// number given; a longer one is cut, and shown from a little before its
// first difference when that would not be shown.
func TestBodyLines(t *testing.T) {
	fusekitest.Parallel(t)
	long := strings.Repeat("a", 40) + "XYZ"
	tests := []struct {
		name    string
		s       string
		d       int
		want    []string
		maxLine int
	}{
		{"fits", "abcdefghij", -1, []string{"abcdefgh", "ij"}, 2},
		{"cut", strings.Repeat("a", 20), -1, []string{"aaaaaaaa", "aaaaaaa…"}, 2},
		{"difference shown", long, 3, []string{"aaaaaaaa", "aaaaaaa…"}, 2},
		{"difference far", long, 40, []string{"…aaaaaaa", "aXYZ"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bodyLines(tt.s, 8, tt.maxLine, tt.d)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestItems: each kind of structured field gives its item line; a plain
// turn none.
func TestItems(t *testing.T) {
	fusekitest.Parallel(t)
	if got := items(session.Turn{Role: "user", Content: "hi"}); got != nil {
		t.Errorf("plain turn: got %v, want none", got)
	}
	turn := session.Turn{Structure: &session.Structure{
		Model: "m", FinishReason: "stop", Usage: &session.Usage{Input: 3, Output: 2, Total: 5}, Author: "ag",
		Parts: []session.Part{
			{Kind: session.PartToolCall, CallID: "c1", ToolName: "f", Arguments: json.RawMessage("{ \"a\" : [1, 2] }")},
			{Kind: session.PartToolResult, Result: json.RawMessage(`1`), IsError: true},
			{Kind: session.PartData, MIMEType: "image/png", Data: []byte{1}},
		},
		Delta: map[string]json.RawMessage{"k": json.RawMessage(`true`), "gone": nil},
	}}
	var got []string
	for _, it := range items(turn) {
		got = append(got, it.label+": "+it.line())
	}
	want := []string{
		"model: m finish stop",
		"tokens: 3 in, 2 out, 5 total",
		"author: ag",
		`call: → f [c1] {"a":[1,2]}`,
		"result: ← error 1",
		"data: image/png 1 byte",
		"state: gone removed",
		"state: k = true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFirstDiff: the index, in characters, of the first character that
// differs, a character of several bytes counted once.
func TestFirstDiff(t *testing.T) {
	fusekitest.Parallel(t)
	tests := []struct {
		a, b string
		want int
	}{
		{"abc", "abc", 3},
		{"abc", "abd", 2},
		{"ab", "abc", 2},
		{"éa", "éb", 1},
		{"é", "è", 0}, // the same first byte
		{"", "x", 0},
	}
	for _, tt := range tests {
		if got := firstDiff(tt.a, tt.b); got != tt.want {
			t.Errorf("firstDiff(%q, %q): got %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
