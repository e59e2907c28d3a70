// Package storeflags holds the connection flags and environment
// variables with which every Trails command reaches a store (--endpoint,
// --store, the three URLs, --user, --password, --timeout,
// --max-children and their $TRAILS_... variables), so that trails-admin
// and trails-mcp read them alike.
//
// It owns the settings only: it opens no connection (Config says what
// to open) and must not grow a command's own flags.
package storeflags

import (
	"flag"
	"os"
	"time"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// DefaultEndpoint is the dataset of a local Fuseki started by
// scripts/fuseki on its default port.
const DefaultEndpoint = "http://127.0.0.1:3030/trails"

// Flags are the connection settings and the store's limits. Not safe for
// concurrent use while flags are parsed into it.
type Flags struct {
	Endpoint, User, Password string
	Store                    string // kg.Store (fuseki, oxigraph or generic), or a command's own (trails-admin's kafka)
	QueryURL, UpdateURL      string // kg.Config's overrides of the store's endpoints
	GraphStoreURL            string
	Timeout                  time.Duration
	MaxChildren              int // session.WithMaxChildren
}

// FromEnv returns the settings of the environment: $TRAILS_ENDPOINT
// (default DefaultEndpoint), $TRAILS_USER, $TRAILS_PASSWORD,
// $TRAILS_STORE (default fuseki), $TRAILS_QUERY_URL, $TRAILS_UPDATE_URL,
// $TRAILS_GRAPH_STORE_URL; a timeout of 30 s and
// session.DefaultMaxChildren.
func FromEnv() Flags {
	return Flags{
		Endpoint: EnvOr("TRAILS_ENDPOINT", DefaultEndpoint),
		User:     os.Getenv("TRAILS_USER"),
		Password: os.Getenv("TRAILS_PASSWORD"),
		Timeout:  30 * time.Second,

		Store:         EnvOr("TRAILS_STORE", string(kg.Fuseki)),
		QueryURL:      os.Getenv("TRAILS_QUERY_URL"),
		UpdateURL:     os.Getenv("TRAILS_UPDATE_URL"),
		GraphStoreURL: os.Getenv("TRAILS_GRAPH_STORE_URL"),

		MaxChildren: session.DefaultMaxChildren,
	}
}

// EnvOr returns the environment variable k, or def when it is unset or
// empty.
func EnvOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Register adds the connection flags to fs, with f's values as defaults.
// storeHelp and passwordHelp are the help of --store and --password,
// which say what the command adds (a profile of its own, a warning).
func (f *Flags) Register(fs *flag.FlagSet, storeHelp, passwordHelp string) {
	fs.StringVar(&f.Endpoint, "endpoint", f.Endpoint, "dataset URL: Fuseki's dataset, Oxigraph's server ($TRAILS_ENDPOINT)")
	fs.StringVar(&f.Store, "store", f.Store, storeHelp)
	fs.StringVar(&f.QueryURL, "query-url", f.QueryURL, "SPARQL query URL, instead of the profile's ($TRAILS_QUERY_URL)")
	fs.StringVar(&f.UpdateURL, "update-url", f.UpdateURL, "SPARQL update URL, instead of the profile's ($TRAILS_UPDATE_URL)")
	fs.StringVar(&f.GraphStoreURL, "graph-store-url", f.GraphStoreURL, "Graph Store Protocol URL, instead of the profile's ($TRAILS_GRAPH_STORE_URL)")
	fs.StringVar(&f.User, "user", f.User, "user name for HTTP basic auth ($TRAILS_USER)")
	fs.StringVar(&f.Password, "password", f.Password, passwordHelp)
	fs.DurationVar(&f.Timeout, "timeout", f.Timeout, "time limit of each request to the store")
	fs.IntVar(&f.MaxChildren, "max-children", f.MaxChildren, "the most forks a session may have; a fork beyond is refused (0: no limit)")
}

// Config returns the kg.Config of f's store. A generic store is its
// three URLs: it gets no endpoint while --endpoint is the default
// (Fuseki's).
func (f Flags) Config() kg.Config {
	endpoint := f.Endpoint
	if f.Store == string(kg.Generic) && endpoint == DefaultEndpoint {
		endpoint = "" // a generic store is its three URLs, not Fuseki's default
	}
	return kg.Config{
		Endpoint: endpoint, Username: f.User, Password: f.Password, Timeout: f.Timeout,
		Store: kg.Store(f.Store), QueryURL: f.QueryURL, UpdateURL: f.UpdateURL, GraphStoreURL: f.GraphStoreURL,
	}
}
