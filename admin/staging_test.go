package admin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// bigContent returns size bytes of valid UTF-8 made of what a SPARQL or
// N-Triples string must escape, and non-ASCII.
func bigContent(tag string, size int) string {
	piece := tag + ` "quoted" """long""" line\ with } and # and $x` + "\n\r\t\x00 café 🎉 — "
	c := strings.Repeat(piece, size/len(piece)+1)[:size]
	for !strings.HasSuffix(c, " ") {
		c = c[:len(c)-1]
	}
	return c
}

// TestExportImportBigTurn exports a root holding a 16 MiB turn and a fork
// of it holding a 5 MiB turn, imports them into an empty store in each
// format, and loads them back byte for byte.
func TestExportImportBigTurn(t *testing.T) {
	fusekitest.Parallel(t)
	st, _ := newStore(t)
	s := session.New("big")
	s.Append("user", "read the file")
	s.Append("tool", bigContent("file", session.MaxTurnBytes))
	s.Append("assistant", "done")
	storetest.MustPersist(t, st, s)
	f := storetest.MustFork(t, s, 2)
	f.Append("tool", bigContent("fork", 5<<20))
	storetest.MustPersist(t, st, f)
	exports := make(map[admin.Format][]byte)
	for _, format := range []admin.Format{admin.NQuads, admin.TriG} {
		exports[format], _ = mustExport(t, st, format, s.ID, f.ID)
	}
	for _, format := range []admin.Format{admin.NQuads, admin.TriG} {
		t.Run(string(format), func(t *testing.T) {
			data := exports[format]
			c := clustertest.Empty(t)
			into := openStore(t, c)
			t0 := time.Now()
			stats := mustImport(t, into, data, format)
			t.Logf("import of %.1f MB of %s: %v, %+v", float64(len(data))/1e6, format, time.Since(t0).Round(time.Millisecond), stats)
			storetest.SameSession(t, storetest.MustLoad(t, into, s.ID), s)
			storetest.SameSession(t, storetest.MustLoad(t, into, f.ID), f)
			if fs, err := into.Check(context.Background()); err != nil || len(fs) != 0 {
				t.Fatalf("check: got %v %s, want no findings", err, storetest.FindingsText(fs))
			}
			if again := mustImport(t, into, data, format); again != (admin.ImportStats{Unchanged: 2}) {
				t.Fatalf("again: got %+v, want %+v", again, admin.ImportStats{Unchanged: 2})
			}
		})
	}
}

// stagingIRI returns a staging graph IRI made at made.
func stagingIRI(tb testing.TB, made time.Time) string {
	tb.Helper()
	u, err := uuid.NewV7FromReader(strings.NewReader(strings.Repeat("r", 64)))
	if err != nil {
		tb.Fatal(err)
	}
	ms := made.UnixMilli()
	for i := range 6 { // the first 48 bits of a version 7 uuid are its time in milliseconds
		u[i] = byte(ms >> (40 - 8*i))
	}
	return ontology.StagingBase + u.String()
}

// TestSweepReceipts: the receipt graphs of group commit requests that a
// writer left (it stopped writing, or died, before the next request that
// drops them) are no session data: no export holds them, List and Check
// ignore them (a writer keeps its last one until its next write, however
// long), and SweepStaging removes those older than its age.
func TestSweepReceipts(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := newStore(t)
	ctx := context.Background()
	s := storetest.Persisted(t, st, "p", 2)
	receipt := func(made time.Time) {
		g := stagingIRI(t, made)
		nt := fmt.Sprintf("<%s> <%s> <%s%s> .\n", g, ontology.Applied, ontology.StagingBase, uuid.NewString()) // {receipt} trails:applied {ack}
		if err := clustertest.PutGraph(ctx, t, c, kg.MustIRI(g), kg.NTriples, []byte(nt)); err != nil {
			t.Fatal(err)
		}
	}
	receipt(time.Now().Add(-2 * admin.StagingGrace))
	receipt(time.Now())
	for _, f := range []admin.Format{admin.NQuads, admin.TriG, admin.JSONL} {
		if data, _ := mustExport(t, st, f); strings.Contains(string(data), "staging") || strings.Contains(string(data), "applied") {
			t.Fatalf("export %s holds the receipt graphs:\n%s", f, data)
		}
	}
	if in, err := st.List(ctx); err != nil || len(in) != 1 || in[0].ID != s.ID {
		t.Fatalf("list: got %v, %v, want the one session", in, err)
	}
	if fs, err := st.Check(ctx); err != nil || len(fs) != 0 {
		t.Fatalf("check: got %v %s, want no findings", err, storetest.FindingsText(fs))
	}
	if n, err := st.SweepStaging(ctx, admin.StagingGrace); err != nil || n != 1 {
		t.Fatalf("sweep: got %d, %v, want 1, nil", n, err)
	}
	if n, err := st.SweepStaging(ctx, 0); err != nil || n != 1 {
		t.Fatalf("sweep of all: got %d, %v, want 1, nil", n, err)
	}
}

// TestSweepStaging: a staging graph a writer left (it stopped between
// sending it and its update) is reported by Check once older than
// StagingGrace and removed by SweepStaging; a younger one (a write in
// flight) is neither.
func TestSweepStaging(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := newStore(t)
	ctx := context.Background()
	storetest.Persisted(t, st, "p", 2)
	staged := func(made time.Time) string {
		g := stagingIRI(t, made)
		nt := fmt.Sprintf("<%s/0/0> <%s> \"left over\" .\n", g, ontology.StagedContent)
		if err := clustertest.PutGraph(ctx, t, c, kg.MustIRI(g), kg.NTriples, []byte(nt)); err != nil {
			t.Fatal(err)
		}
		return g
	}
	old := staged(time.Now().Add(-2 * admin.StagingGrace))
	staged(time.Now()) // in flight
	// Staging graphs are no session data: no export holds them.
	for _, f := range []admin.Format{admin.NQuads, admin.TriG, admin.JSONL} {
		if data, _ := mustExport(t, st, f); strings.Contains(string(data), "staging") || strings.Contains(string(data), "left over") {
			t.Fatalf("export %s holds the staging graphs:\n%s", f, data)
		}
	}
	fs, err := st.Check(ctx)
	if err != nil || len(fs) != 1 || fs[0].Rule != admin.RuleStaging || fs[0].Resource != old {
		t.Fatalf("check: got %v %s, want one %s finding for %s", err, storetest.FindingsText(fs), admin.RuleStaging, old)
	}
	n, err := st.SweepStaging(ctx, admin.StagingGrace)
	if err != nil || n != 1 {
		t.Fatalf("sweep: got %d, %v, want 1, nil", n, err)
	}
	if fs, err := st.Check(ctx); err != nil || len(fs) != 0 {
		t.Fatalf("check after the sweep: got %v %s, want no findings", err, storetest.FindingsText(fs))
	}
	if n, err := st.SweepStaging(ctx, 0); err != nil || n != 1 {
		t.Fatalf("sweep of all: got %d, %v, want 1, nil", n, err)
	}
}
