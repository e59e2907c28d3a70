package adkv1_test

import (
	"testing"

	"github.com/trails-kg/trails/integrations/adkv1"
	"github.com/trails-kg/trails/internal/fusekitest"
	trails "github.com/trails-kg/trails/session"
)

func TestMain(m *testing.M) { fusekitest.Main(m) }

// newService returns a service over tb's dataset, wiped, and its store.
func newService(tb testing.TB) (*adkv1.SessionService, *trails.Store) {
	tb.Helper()
	st := trails.NewStore(fusekitest.Empty(tb))
	return adkv1.NewSessionService(st), st
}
