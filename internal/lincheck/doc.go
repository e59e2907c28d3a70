// Package lincheck holds Trails' linearizability checker: its tests run
// random concurrent histories of session.Store calls (appends, forks,
// merges, rewinds, detaches, deletes, state, expiry, tags and shared
// app:/user: values) against a real Fuseki, some of them through a TCP
// proxy that delays, cuts or drops the store's answers or across a kill -9
// of the store, and ask github.com/anishathalye/porcupine whether some
// order of the calls, each taking effect at one instant between its call
// and its return, explains every answer by a sequential model of the
// documented semantics.
//
// The package has no code besides its tests. See docs/reliability.md for
// what the model covers, what it leaves out, the figures of the recorded
// runs and how to replay a failing seed (go test ./internal/lincheck
// -run TestHistories -lincheck.seed=N).
package lincheck
