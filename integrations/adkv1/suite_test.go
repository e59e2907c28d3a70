package adkv1_test

import (
	"testing"

	"google.golang.org/adk/session"
	"google.golang.org/adk/session/sessiontestsuite"

	"github.com/trails-kg/trails/internal/fusekitest"
)

// TestServiceSuite runs ADK v1's own conformance suite for session
// services, unchanged, against Fuseki: each of its tests gets a wiped
// dataset.
func TestServiceSuite(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.Endpoint(t) // the dataset of the whole suite, wiped by each setup
	sessiontestsuite.RunServiceTests(t, sessiontestsuite.SuiteOptions{SupportsUserProvidedSessionID: true},
		func(t *testing.T) session.Service {
			s, _ := newService(t)
			return s
		})
}
