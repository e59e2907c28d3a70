package main

import "testing"

// TestSelfCommand checks that the demo's "Next:" line names commands that
// work as printed: the program as it was run, with the endpoint when it is
// not the default one.
func TestSelfCommand(t *testing.T) {
	const other = "http://127.0.0.1:3031/trails"
	tests := []struct {
		name, arg0, endpoint, want string
	}{
		{name: "on PATH", arg0: "trails-admin", endpoint: defaultEndpoint, want: "trails-admin"},
		{name: "on PATH, other port", arg0: "trails-admin", endpoint: other, want: "TRAILS_ENDPOINT=" + other + " trails-admin"},
		{name: "built by scripts/demo", arg0: "/root/.cache/trails/bin/trails-admin", endpoint: defaultEndpoint, want: "/root/.cache/trails/bin/trails-admin"},
		{name: "a path with a space", arg0: "/home/a b/trails-admin", endpoint: defaultEndpoint, want: "'/home/a b/trails-admin'"},
		{name: "go run", arg0: "/tmp/go-build1234/b001/exe/trails-admin", endpoint: other, want: "TRAILS_ENDPOINT=" + other + " go run ./cmd/trails-admin"},
		{name: "an endpoint with a quote", arg0: "trails-admin", endpoint: "http://h/it's", want: `TRAILS_ENDPOINT='http://h/it'\''s' trails-admin`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := selfCommand(tt.arg0, tt.endpoint); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
