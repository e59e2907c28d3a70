package storeflags_test

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/storeflags"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// TestFromEnv: the environment's settings, the defaults where it has
// none, and flags over both.
func TestFromEnv(t *testing.T) {
	for _, k := range []string{"TRAILS_ENDPOINT", "TRAILS_USER", "TRAILS_PASSWORD", "TRAILS_QUERY_URL", "TRAILS_UPDATE_URL", "TRAILS_GRAPH_STORE_URL"} {
		t.Setenv(k, "")
	}
	t.Setenv("TRAILS_STORE", "oxigraph")
	t.Setenv("TRAILS_USER", "auditor")
	f := storeflags.FromEnv()
	want := storeflags.Flags{Endpoint: storeflags.DefaultEndpoint, User: "auditor", Store: "oxigraph", Timeout: 30 * time.Second, MaxChildren: session.DefaultMaxChildren}
	if f != want {
		t.Fatalf("got %+v, want %+v", f, want)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs, "store help", "password help")
	if err := fs.Parse([]string{"--endpoint", "http://h/ds", "--timeout", "5s", "--max-children", "3", "--password", "p"}); err != nil {
		t.Fatal(err)
	}
	want.Endpoint, want.Timeout, want.MaxChildren, want.Password = "http://h/ds", 5*time.Second, 3, "p"
	if f != want {
		t.Errorf("got %+v, want %+v", f, want)
	}
	if got := fs.Lookup("store").Usage; got != "store help" {
		t.Errorf("--store's help: got %q, want %q", got, "store help")
	}
}

// TestConfig: a generic store gets no endpoint while --endpoint is the
// default; any other keeps it.
func TestConfig(t *testing.T) {
	tests := []struct {
		name  string
		f     storeflags.Flags
		wantE string
	}{
		{"fuseki", storeflags.Flags{Endpoint: storeflags.DefaultEndpoint, Store: "fuseki"}, storeflags.DefaultEndpoint},
		{"generic default", storeflags.Flags{Endpoint: storeflags.DefaultEndpoint, Store: "generic", QueryURL: "http://q"}, ""},
		{"generic given", storeflags.Flags{Endpoint: "http://h/ds", Store: "generic"}, "http://h/ds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.f.Config()
			if c.Endpoint != tt.wantE || c.Store != kg.Store(tt.f.Store) || c.QueryURL != tt.f.QueryURL {
				t.Errorf("got %+v, want endpoint %q", c, tt.wantE)
			}
		})
	}
}
