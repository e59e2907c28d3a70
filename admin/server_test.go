package admin_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// The datasets of the binary's admin-API server (adminFuseki): copies of
// fuseki/trails.ttl's /trails, each test on one of its own, and one in
// memory.
const (
	compactDS = "trails" // TDB2 on disk, churned and compacted
	backupDS  = "backup" // TDB2 on disk, backed up, damaged and restored
	memDS     = "mem"    // TDB2 in memory, which Fuseki cannot compact
)

var (
	adminOnce sync.Once
	adminSrv  *fusekitest.Server
	adminErr  error
)

// adminFuseki returns the test binary's Fuseki with the admin API (the
// server scripts/fuseki starts), started on the first call, with the
// datasets above. It fails tb when there is none; it skips tb when the
// tests run on another store than Fuseki, and on the kafka profile, whose
// replicas no admin API reaches through the log.
func adminFuseki(tb testing.TB) *fusekitest.Server {
	tb.Helper()
	fusekitest.RequireFuseki(tb, "the admin API (/$/compact, /$/backup)")
	fusekitest.RequireDirect(tb, "it calls Fuseki's admin API (/$/backup, /$/compact) on a server of its own, which is no replica of a log")
	adminOnce.Do(func() {
		root, err := fusekitest.RepoRoot()
		if err != nil {
			adminErr = err
			return
		}
		conf, err := os.ReadFile(filepath.Join(root, "fuseki", "trails.ttl"))
		if err != nil {
			adminErr = err
			return
		}
		text := string(conf)
		only := strings.Replace(text, "[] rdf:type fuseki:Server .", "", 1)
		for _, ds := range []struct{ name, loc string }{{backupDS, `"databases/backup"`}, {memDS, `"--mem--"`}} {
			text += "\n" + strings.NewReplacer(
				"<#service>", "<#service-"+ds.name+">",
				"<#dataset>", "<#dataset-"+ds.name+">",
				`fuseki:name "trails"`, `fuseki:name "`+ds.name+`"`,
				`"databases/trails"`, ds.loc,
			).Replace(only)
		}
		dir, err := os.MkdirTemp(fusekitest.ScratchDir(), "trails-fuseki-admin-")
		if err != nil {
			adminErr = err
			return
		}
		fusekitest.OnStop(func() { os.RemoveAll(dir) })
		config := filepath.Join(dir, "config.ttl")
		if adminErr = os.WriteFile(config, []byte(text), 0o644); adminErr != nil {
			return
		}
		adminSrv, adminErr = fusekitest.StartServer(fusekitest.Options{Config: config, Admin: true})
		if adminErr == nil {
			fusekitest.OnStop(func() { adminSrv.Close() })
		}
	})
	if adminErr != nil {
		tb.Fatalf("start a Fuseki with the admin API: %v", adminErr)
	}
	return adminSrv
}

// endpointOf returns the URL of dataset name on s.
func endpointOf(s *fusekitest.Server, name string) string {
	return strings.TrimSuffix(s.Endpoint, "/trails") + "/" + name
}

// serverOf returns the admin API of dataset name on s.
func serverOf(tb testing.TB, s *fusekitest.Server, name string) *admin.Server {
	tb.Helper()
	srv, err := admin.NewServer(admin.ServerConfig{Endpoint: endpointOf(s, name), Store: kg.Fuseki})
	if err != nil {
		tb.Fatal(err)
	}
	return srv
}

// TestNewServer refuses what has no admin API, or names no dataset,
// without sending anything.
func TestNewServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  admin.ServerConfig
		want error
	}{
		{"oxigraph", admin.ServerConfig{Endpoint: "http://127.0.0.1:7878", Store: kg.Oxigraph}, admin.ErrUnsupported},
		{"generic", admin.ServerConfig{Endpoint: "http://127.0.0.1:9/sparql", Store: kg.Generic}, admin.ErrUnsupported},
		{"no dataset", admin.ServerConfig{Endpoint: "http://127.0.0.1:3030/"}, session.ErrInvalid},
		{"no scheme", admin.ServerConfig{Endpoint: "127.0.0.1:3030/trails"}, session.ErrInvalid},
		{"fuseki", admin.ServerConfig{Endpoint: "http://127.0.0.1:3030/trails/", HTTPClient: http.DefaultClient}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := admin.NewServer(tc.cfg)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err == nil && s.Dataset() != "trails" {
				t.Errorf("got dataset %q, want trails", s.Dataset())
			}
		})
	}
}
