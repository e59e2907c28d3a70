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
	st := openStore(c)
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
	if findings, err := st.Check(ctx); err != nil || len(findings) > 0 {
		t.Fatalf("check after restore: %v\n%s", err, storetest.FindingsText(findings))
	}
	if got := snapshot(t, st); !slices.Equal(got, want) {
		t.Fatalf("after restore:\n%s", firstDiff(got, want))
	}
	if got := storetest.CountQuads(t, c, ""); got != wantQuads {
		t.Errorf("got %d quads after restore, want %d", got, wantQuads)
	}
}

// TestRestoreRefuses: a backup that does not parse is refused with its
// line before anything is written, on any store.
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
