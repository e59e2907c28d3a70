package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// TestStoreUnavailable checks that a store error comes back wrapped, with
// the kg sentinel.
func TestStoreUnavailable(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.RequireDirect(t, "its store is an address where nothing listens, not a replicated store")
	c := fusekitest.Client(t, kg.Config{Endpoint: "http://127.0.0.1:1/trails", MaxAttempts: 1})
	st := session.NewStore(c)
	if _, err := st.Load(context.Background(), newID()); !errors.Is(err, kg.ErrUnavailable) {
		t.Fatalf("got %v, want kg.ErrUnavailable", err)
	}
	s := session.New("x")
	s.Append("user", "hi")
	if err := st.Persist(context.Background(), s); !errors.Is(err, kg.ErrUnavailable) {
		t.Fatalf("got %v, want kg.ErrUnavailable", err)
	}
}
