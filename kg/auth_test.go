package kg_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

func TestBasicAuth(t *testing.T) {
	fusekitest.RequireFuseki(t, "HTTP basic authentication")
	fusekitest.Parallel(t)
	srv, err := fusekitest.StartServer(fusekitest.Options{Users: map[string]string{"trails": "s3cret pass:word"}})
	if err != nil {
		t.Fatalf("start Fuseki with a password file: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()
	for _, tc := range []struct {
		name, user, pass string
		want             error
	}{
		{"right", "trails", "s3cret pass:word", nil},
		{"wrong password", "trails", "guess", kg.ErrUnauthorized},
		{"unknown user", "mallory", "s3cret pass:word", kg.ErrUnauthorized},
		{"none", "", "", kg.ErrUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fusekitest.Client(t, kg.Config{Endpoint: srv.Endpoint, Username: tc.user, Password: tc.pass})
			err := c.Ping(ctx)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("ping: got %v, want %v", err, tc.want)
			}
			err = c.Update(ctx, `INSERT DATA { GRAPH <urn:auth> { <urn:a> <urn:b> "c" } }`)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("update: got %v, want %v", err, tc.want)
			}
			var kerr *kg.Error
			if tc.want != nil && (!errors.As(err, &kerr) || kerr.Status != http.StatusUnauthorized) {
				t.Fatalf("got %#v, want status 401", err)
			}
		})
	}
}
