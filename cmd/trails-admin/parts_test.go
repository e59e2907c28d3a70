package main

import (
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
)

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
