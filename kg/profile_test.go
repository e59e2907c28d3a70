package kg_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
)

// TestStoreLayout checks where each profile sends updates, Graph Store
// requests and SHACL validation, against a stand-in server that records
// the paths.
func TestStoreLayout(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	g, err := rdf.NewIRI("urn:g")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		cfg     kg.Config
		want    []string
		noSHACL bool
	}{
		{"fuseki", kg.Config{Endpoint: srv.URL + "/trails"},
			[]string{"POST /trails/update?", "PUT /trails/data?graph=urn%3Ag", "POST /trails/shacl?graph=union"}, false},
		{"oxigraph", kg.Config{Endpoint: srv.URL, Store: kg.Oxigraph},
			[]string{"POST /update?", "PUT /store?graph=urn%3Ag"}, true},
		{"generic", kg.Config{Store: kg.Generic, QueryURL: srv.URL + "/sparql", UpdateURL: srv.URL + "/sparql/up",
			GraphStoreURL: srv.URL + "/gsp?repo=x"},
			[]string{"POST /sparql/up?", "PUT /gsp?repo=x&graph=urn%3Ag"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			paths = nil
			mu.Unlock()
			c, err := kg.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := c.Update(ctx, "CLEAR DEFAULT"); err != nil {
				t.Fatal(err)
			}
			if err := c.PutGraph(ctx, g, kg.NTriples, nil); err != nil {
				t.Fatal(err)
			}
			_, err = c.Validate(ctx, []byte(""), kg.UnionGraph)
			if got := errors.Is(err, kg.ErrUnsupported); got != tc.noSHACL {
				t.Fatalf("validate: got %v, want ErrUnsupported %v", err, tc.noSHACL)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(paths) != len(tc.want) {
				t.Fatalf("got %q, want %q", paths, tc.want)
			}
			for i := range paths {
				if paths[i] != tc.want[i] {
					t.Fatalf("request %d: got %q, want %q", i, paths[i], tc.want[i])
				}
			}
		})
	}
}

func TestStoreConfigErrors(t *testing.T) {
	for _, cfg := range []kg.Config{
		{Endpoint: "http://127.0.0.1:1", Store: "virtuoso"},
		{Store: kg.Generic, QueryURL: "http://127.0.0.1:1/q"},
		{Endpoint: "http://127.0.0.1:1", Store: kg.Oxigraph, GraphStoreURL: "ftp://h/store"},
	} {
		if _, err := kg.New(cfg); !errors.Is(err, kg.ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", cfg, err)
		}
	}
}

// TestSerialUpdates: on a store whose updates are not serializable, the
// updates of every client of the process to one store go one at a time;
// on Fuseki, and with NoUpdateLock, they overlap.
func TestSerialUpdates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     kg.Config
		overlap bool
	}{
		{"fuseki", kg.Config{}, true},
		{"oxigraph", kg.Config{Store: kg.Oxigraph}, false},
		{"oxigraph without the lock", kg.Config{Store: kg.Oxigraph, NoUpdateLock: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in, most atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := in.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(100 * time.Millisecond)
				in.Add(-1)
				w.WriteHeader(http.StatusNoContent)
			}))
			t.Cleanup(srv.Close)
			var wg sync.WaitGroup
			for range 6 {
				cfg := tc.cfg
				cfg.Endpoint = srv.URL + "/trails"
				c, err := kg.New(cfg) // a client each: the lock is the process's
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					if err := c.Update(context.Background(), "CLEAR DEFAULT"); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if got := most.Load() > 1; got != tc.overlap {
				t.Fatalf("got %d updates at once at most, want overlap %v", most.Load(), tc.overlap)
			}
		})
	}
}
