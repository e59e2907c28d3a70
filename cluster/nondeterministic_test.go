package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/trails-kg/trails/kg"
)

// TestUpdateNondeterministic: a Client refuses, before the log, an update
// that each replica would evaluate its own way. The Client here has no
// broker: the refusal must come before any write.
func TestUpdateNondeterministic(t *testing.T) {
	c := &Client{}
	err := c.Update(context.Background(), `INSERT { <urn:a> <urn:t> ?now } WHERE { BIND(NOW() AS ?now) }`)
	if !errors.Is(err, ErrNondeterministic) || !errors.Is(err, kg.ErrBadRequest) {
		t.Fatalf("Update with NOW(): %v, want ErrNondeterministic and kg.ErrBadRequest", err)
	}
}
