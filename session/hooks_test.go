package session

import "testing"

// This file lends the black-box tests (package session_test) a few
// internals.

// ChainDigest is chainDigest: the trails:digest of turn t after a turn
// with digest prev.
func ChainDigest(prev string, t Turn) string { return chainDigest(prev, t) }

// HeadDigest is the trails:headDigest of turns.
func HeadDigest(turns []Turn) string { return digest(turns) }

// SetImportBatchQuads makes Import's batches close at n quads until the
// test ends.
func SetImportBatchQuads(tb testing.TB, n int) {
	old := importBatchQuads
	importBatchQuads = n
	tb.Cleanup(func() { importBatchQuads = old })
}
