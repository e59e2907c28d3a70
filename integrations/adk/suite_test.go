package adk_test

import (
	"testing"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/session/sessiontestsuite"

	"github.com/trails-kg/trails/internal/fusekitest"
)

// TestServiceSuite runs ADK's own conformance suite for session services,
// unchanged, against Fuseki: each of its tests gets a wiped dataset.
func TestServiceSuite(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.Endpoint(t) // the dataset of the whole suite, wiped by each setup
	sessiontestsuite.RunServiceTests(t, sessiontestsuite.SuiteOptions{SupportsUserProvidedSessionID: true},
		func(t *testing.T) session.Service {
			s, _ := newService(t)
			return s
		})
}
