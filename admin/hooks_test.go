package admin

import "testing"

// This file lends the black-box tests (package admin_test) a few
// internals.

// SetImportBatchQuads makes Import's batches close at n quads until the
// test ends.
func SetImportBatchQuads(tb testing.TB, n int) {
	old := importBatchQuads
	importBatchQuads = n
	tb.Cleanup(func() { importBatchQuads = old })
}

// SetRestoreBatchQuads makes Restore's batches close at n quads until the
// test ends.
func SetRestoreBatchQuads(tb testing.TB, n int) {
	old := restoreBatchQuads
	restoreBatchQuads = n
	tb.Cleanup(func() { restoreBatchQuads = old })
}
