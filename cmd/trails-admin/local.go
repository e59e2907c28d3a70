package main

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
)

// The places where scripts/fuseki keeps a local server's files, which
// compact and backup look at when the endpoint is on this machine:
// Fuseki's admin API says neither how big a dataset is nor where its
// backups go.

// localPort returns the port of endpoint when its host is this machine's
// loopback address ("" otherwise).
func localPort(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	switch h := u.Hostname(); {
	case h == "localhost", net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback():
	default:
		return ""
	}
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// localDatabase returns the TDB2 directory of dataset name that
// scripts/fuseki start gives a local server, if the endpoint is local and
// the directory exists: $TRAILS_DATA/databases/NAME, by default under
// ~/.local/share/trails/fuseki.
func localDatabase(endpoint, name string) string {
	if localPort(endpoint) == "" {
		return ""
	}
	data := os.Getenv("TRAILS_DATA")
	if data == "" {
		data = filepath.Join(xdg("XDG_DATA_HOME", ".local/share"), "trails", "fuseki")
	}
	dir := filepath.Join(data, "databases", name)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// localBase returns Fuseki's own area (FUSEKI_BASE, which holds backups/)
// that scripts/fuseki start gives a local server on the endpoint's port,
// if the endpoint is local and the directory exists.
func localBase(endpoint string) string {
	port := localPort(endpoint)
	if port == "" {
		return ""
	}
	run := os.Getenv("TRAILS_RUN_DIR")
	if run == "" {
		run = filepath.Join(xdg("XDG_CACHE_HOME", ".cache"), "trails", "run")
	}
	dir := filepath.Join(run, "fuseki-"+port+"-base")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// xdg returns $env, or rel under the home directory.
func xdg(env, rel string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, rel)
}
