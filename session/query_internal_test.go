package session

import "testing"

func TestShortHeader(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"# a: one\n# two\n# three\nPREFIX x: <y>\n# inside\nSELECT", "# a: one\nPREFIX x: <y>\n# inside\nSELECT"},
		{"# a: only\nSELECT", "# a: only\nSELECT"},
		{"SELECT\n# not a header", "SELECT\n# not a header"},
		{"# a: no body", "# a: no body"},
		{"# a\n# b", "# a\n"},
	} {
		if got := shortHeader(tc.in); got != tc.want {
			t.Errorf("shortHeader(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
