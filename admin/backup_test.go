package admin_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// TestBackupRestore backs a dataset up with Fuseki's /$/backup, damages
// it (a session deleted, a turn's content changed), restores the backup
// in place of the data, and finds the check clean and every session, PROV
// record and quad as before.
func TestBackupRestore(t *testing.T) {
	s := adminFuseki(t)
	ctx := context.Background()
	c := fusekitest.Client(t, kg.Config{Endpoint: endpointOf(s, backupDS), Store: kg.Fuseki})
	st := openStore(t, c)
	if _, err := st.Init(ctx); err != nil {
		t.Fatal(err)
	}
	v := buildVaried(t, st)
	want := snapshot(t, st)
	wantQuads := storetest.CountQuads(t, c, "")

	b, err := serverOf(t, s, backupDS).Backup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.File, backupDS+"_") || !strings.HasSuffix(b.File, ".nq.gz") {
		t.Fatalf("got backup file %q, want %s_DATE.nq.gz", b.File, backupDS)
	}
	data, err := os.ReadFile(filepath.Join(s.Base, "backups", b.File))
	if err != nil {
		t.Fatal(err)
	}

	if err := st.Delete(ctx, v.c, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	storetest.Tamper(t, c, storetest.TurnRef(v.a, 1).String(), ontology.Content, kg.String("damaged"))
	if got := snapshot(t, st); slices.Equal(got, want) {
		t.Fatal("the damage changed nothing")
	}

	if _, err := st.Restore(ctx, bytes.NewReader(data), false, nil); !errors.Is(err, admin.ErrNotEmpty) {
		t.Fatalf("restore into a dataset holding data: got %v, want ErrNotEmpty", err)
	}
	admin.SetRestoreBatchQuads(t, 500) // several batches, the one of blank nodes last
	var calls int
	rs, err := st.Restore(ctx, bytes.NewReader(data), true, func(done, total int) {
		if calls++; total != wantQuads || done > total {
			t.Errorf("progress: got %d of %d, want at most %d of %d", done, total, wantQuads, wantQuads)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rs.Dropped || rs.Quads != wantQuads || rs.Batches != rs.Planned || rs.Batches < 3 || calls != rs.Batches {
		t.Errorf("got %+v and %d progress calls, want the data dropped and %d quads loaded in every planned batch (3 or more)", rs, calls, wantQuads)
	}
	sameAsBefore(t, st, c, want, wantQuads)
}

// sameAsBefore fails tb unless the store restored over c checks clean
// and holds snapshot want in wantQuads quads.
func sameAsBefore(tb testing.TB, st *store, c *kg.Client, want []string, wantQuads int) {
	tb.Helper()
	if findings, err := st.Check(context.Background()); err != nil || len(findings) > 0 {
		tb.Fatalf("check after restore: %v\n%s", err, storetest.FindingsText(findings))
	}
	if got := snapshot(tb, st); !slices.Equal(got, want) {
		tb.Fatalf("after restore:\n%s", firstDiff(got, want))
	}
	if got := storetest.CountQuads(tb, c, ""); got != wantQuads {
		tb.Errorf("got %d quads after restore, want %d", got, wantQuads)
	}
}

// TestRestoreRefuses: a backup that does not parse is refused with its
// line before anything is written, on any store (on replica groups every
// backup is refused, ErrUnsupported).
func TestRestoreRefuses(t *testing.T) {
	ctx := context.Background()
	st, c := newStore(t)
	good := "<https://e.org/s> <https://e.org/p> \"o\" <https://e.org/g> .\n"
	for _, tc := range []struct {
		name string
		in   string
		line int
	}{
		{"garbage", good + "not RDF\n", 2},
		{"unterminated string", good + good + "<https://e.org/s> <https://e.org/p> \"o <https://e.org/g> .\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := st.Restore(ctx, strings.NewReader(tc.in), true, nil)
			if fusekitest.OnCluster() && clustertest.Groups() > 1 {
				// Restore refuses every backup on replica groups.
				if !errors.Is(err, admin.ErrUnsupported) {
					t.Fatalf("got %v, want ErrUnsupported on replica groups", err)
				}
				return
			}
			var ie *admin.ImportError
			if !errors.As(err, &ie) || !errors.Is(err, session.ErrInvalid) || ie.Line != tc.line || ie.Rule != admin.RuleSyntax {
				t.Fatalf("got %v, want a syntax ImportError at line %d", err, tc.line)
			}
			if n := storetest.CountQuads(t, c, ""); n != 0 {
				t.Fatalf("got %d quads, want none written", n)
			}
		})
	}
}

// TestRestoreReplace restores a dump of the whole dataset (as a backup
// holds it) in place of damaged data, on any store: through the log
// (TRAILS_TEST_STORE=kafka) the dump holds replica 0's own records (its
// applier's offsets), and the store must go on applying writes after the
// restore. Before the fix, the restore's DROP ALL dropped every replica's
// offsets and every applier stopped; and a dataset holding nothing but a
// replica's records was refused as not empty.
func TestRestoreReplace(t *testing.T) {
	ctx := context.Background()
	st, c := newStore(t)
	if _, err := st.Init(ctx); err != nil {
		t.Fatal(err)
	}
	v := buildVaried(t, st)
	want := snapshot(t, st)
	wantQuads := storetest.CountQuads(t, c, "")
	var dump bytes.Buffer
	if err := c.Dump(ctx, &dump); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, v.c, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	damaged := snapshot(t, st)
	if slices.Equal(damaged, want) {
		t.Fatal("the damage changed nothing")
	}
	if fusekitest.OnCluster() && clustertest.Groups() > 1 {
		// Through replica groups: refused, nothing written.
		if _, err := st.Restore(ctx, bytes.NewReader(dump.Bytes()), true, nil); !errors.Is(err, admin.ErrUnsupported) {
			t.Fatalf("restore on a sharded store: got %v, want ErrUnsupported", err)
		}
		if got := snapshot(t, st); !slices.Equal(got, damaged) {
			t.Fatalf("a refused restore changed the data:\n%s", firstDiff(got, damaged))
		}
		return
	}
	if _, err := st.Restore(ctx, bytes.NewReader(dump.Bytes()), false, nil); !errors.Is(err, admin.ErrNotEmpty) {
		t.Fatalf("restore into a dataset holding data: got %v, want ErrNotEmpty", err)
	}
	rs, err := st.Restore(ctx, bytes.NewReader(dump.Bytes()), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rs.Dropped || rs.Quads != wantQuads {
		t.Errorf("got %+v, want the data dropped and %d quads loaded", rs, wantQuads)
	}
	if onLog := fusekitest.OnCluster(); onLog != (rs.Replica > 0) {
		t.Errorf("got %d replica quads left out of the dump, want some on a replicated store only (replicated: %v)", rs.Replica, onLog)
	}
	sameAsBefore(t, st, c, want, wantQuads)
	// The store goes on: a write after the restore is applied and read.
	s := session.New("after the restore")
	s.Append("user", "still here?")
	storetest.MustPersist(t, st, s)
	got, err := st.Load(ctx, s.ID)
	if err != nil || len(got.Turns) != 1 {
		t.Fatalf("a session written after the restore: %v, %v", got, err)
	}

	// A dataset emptied of its data (a replica keeps its own records)
	// takes a restore without replace.
	if rs, err := st.Restore(ctx, strings.NewReader(""), true, nil); err != nil || !rs.Dropped || rs.Quads != 0 {
		t.Fatalf("restore of nothing in place of the data: got %+v, %v", rs, err)
	}
	if got := storetest.CountQuads(t, c, ""); got != 0 {
		t.Fatalf("got %d quads after the data was dropped, want 0", got)
	}
	if rs, err := st.Restore(ctx, bytes.NewReader(dump.Bytes()), false, nil); err != nil || rs.Dropped || rs.Quads != wantQuads {
		t.Fatalf("restore into an emptied dataset: got %+v, %v; want %d quads, nothing dropped", rs, err, wantQuads)
	}
	if got := snapshot(t, st); !slices.Equal(got, want) {
		t.Fatalf("after the second restore:\n%s", firstDiff(got, want))
	}
}
