package main_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/internal/tdbjournal"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// The operator's commands that go through Fuseki's admin API (compact,
// backup) and restore, on a Fuseki that serves it, as scripts/fuseki
// starts it; and the import errors a newcomer met (issue 40).

// adminServer starts a Fuseki with the admin API for tb, with the
// default configuration (/trails, TDB2 on disk), stopped when tb ends.
func adminServer(tb testing.TB) *fusekitest.Server {
	tb.Helper()
	fusekitest.RequireFuseki(tb, "the admin API (/$/compact, /$/backup)")
	s, err := fusekitest.StartServer(fusekitest.Options{Admin: true})
	if err != nil {
		tb.Fatalf("start a Fuseki with the admin API: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// What varies in the output of compact and backup besides what normalize
// replaces: sizes, durations and the time in a backup's name.
var (
	sizeRE     = regexp.MustCompile(`\d+(\.\d)? [KMGTP]iB \(\d+ bytes\)( +)?|\b\d+ bytes\b`)
	secondsRE  = regexp.MustCompile(`\b\d+\.\d s\b`)
	backupTime = regexp.MustCompile(`_\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}\.nq\.gz`)
)

// stable replaces in res's arguments and output what varies between runs:
// each old of the pairs old, new of repl by its new, sizes by <SIZE>,
// seconds by <S> s, the time of a backup's name by _<DATE>.
var restoredRE = regexp.MustCompile(`restored \d+ quads`)

func stable(res result, repl ...string) result {
	r := strings.NewReplacer(repl...)
	fix := func(s string) string {
		s = r.Replace(s)
		s = sizeRE.ReplaceAllStringFunc(s, func(m string) string {
			if strings.HasSuffix(m, " ") {
				return "<SIZE>  "
			}
			return "<SIZE>"
		})
		s = secondsRE.ReplaceAllString(s, "<S> s")
		// The vocabulary is in the dataset: its quads count with every term
		// added to the ontology (the export's equality is the test).
		s = restoredRE.ReplaceAllString(s, "restored <N> quads")
		return backupTime.ReplaceAllString(s, "_<DATE>.nq.gz")
	}
	res.args = slices.Clone(res.args)
	for i, a := range res.args {
		res.args[i] = fix(a)
	}
	res.stdout, res.stderr = fix(res.stdout), fix(res.stderr)
	return res
}

// TestCompact churns the dataset (sessions written and deleted) and
// compacts it: the database shrinks, and what was kept loads as it was.
func TestCompact(t *testing.T) {
	fusekitest.Parallel(t)
	s := adminServer(t)
	ctx := context.Background()
	st := session.NewStore(fusekitest.Client(t, kg.Config{Endpoint: s.Endpoint}))
	kept := storetest.Persisted(t, st, "keeper", 4)
	for i := 0; i < 20; i++ {
		x := session.New("churner")
		storetest.AppendN(x, 30, strings.Repeat("churn ", 100))
		storetest.MustPersist(t, st, x)
		if err := st.Delete(ctx, x.ID, session.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(s.DataDir(), "databases", "trails")
	r := runner{endpoint: s.Endpoint}
	js := decode[map[string]any](t, r.mustRun(t, 0, "compact", "--db", db, "--json"))
	hasFields(t, "compact --json", js, "dataset", "task", "seconds", "db", "bytes_before", "bytes_after", "generation_before", "generation_after")
	before, after := js["bytes_before"].(float64), js["bytes_after"].(float64)
	if after <= 0 || after >= before {
		t.Errorf("compact: got %v bytes before and %v after, want fewer after", before, after)
	}
	text := r.mustRun(t, 0, "compact", "--db", db)
	blind := r.mustRun(t, 0, "compact")
	storetest.SameSession(t, storetest.MustLoad(t, st, kept.ID), kept)
	golden(t, "compact", []string{s.Endpoint}, "a Fuseki with the admin API; sizes and durations replaced",
		stable(text, db, "<DB>"), stable(blind))
}

// TestBackupRestore backs the dataset up, damages it, restores the backup
// and finds check clean and every session as before.
func TestBackupRestore(t *testing.T) {
	fusekitest.Parallel(t)
	s := adminServer(t)
	r := runner{endpoint: s.Endpoint}
	dir := t.TempDir()
	r.mustRun(t, 0, "demo")
	before, after := filepath.Join(dir, "before.nq"), filepath.Join(dir, "after.nq")
	r.mustRun(t, 0, "export", "-o", before)

	js := decode[map[string]any](t, r.mustRun(t, 0, "backup", "--fuseki-base", s.Base, "--json"))
	hasFields(t, "backup --json", js, "dataset", "task", "seconds", "file", "path", "bytes")
	file, _ := js["path"].(string)
	if file == "" || !strings.HasPrefix(file, filepath.Join(s.Base, "backups")+"/") {
		t.Fatalf("backup --json: got path %q, want one in %s/backups", file, s.Base)
	}
	backup := r.mustRun(t, 0, "backup", "--fuseki-base", s.Base)
	file = strings.TrimSpace(backup.stdout)

	ids := decode[[]map[string]any](t, r.mustRun(t, 0, "sessions", "--json"))
	root := ""
	for _, info := range ids {
		if info["parent"] == nil || info["parent"] == "" {
			root, _ = info["id"].(string)
		}
	}
	if root == "" {
		t.Fatal("the demo stored no root session")
	}
	damage := r.mustRun(t, 0, "delete", root, "--cascade")
	refused := r.mustRun(t, 1, "restore", file)
	restored := r.mustRun(t, 0, "restore", file, "--replace")
	check := r.mustRun(t, 0, "check")
	r.mustRun(t, 0, "export", "-o", after)
	want, err := os.ReadFile(before)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(after)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("export after backup, damage and restore differs from the one before:\n%s", lineDiff(string(want), string(got)))
	}
	golden(t, "backup-restore", []string{s.Endpoint}, "a Fuseki with the admin API, after trails-admin demo; sizes and durations replaced",
		stable(backup, s.Base, "<BASE>"), damage, stable(refused, s.Base, "<BASE>"), stable(restored, s.Base, "<BASE>"), check)
}

// TestOperationsRefused: compact and backup on stores without the admin
// API, and on a dataset the server does not have.
func TestOperationsRefused(t *testing.T) {
	fusekitest.Parallel(t)
	s := adminServer(t)
	plain := fusekitest.Endpoint(t) // the binary's Fuseki: the plain server
	nope := strings.TrimSuffix(s.Endpoint, "/trails") + "/nope"
	// The plain server's dataset is the test's own, /t1 … /t8.
	name := "/$/compact/" + filepath.Base(plain) + "?"
	runs := []result{
		stable(runner{endpoint: plain}.mustRun(t, 1, "compact"), name, "/$/compact/<DATASET>?"),
		runner{endpoint: plain}.mustRun(t, 1, "backup"),
		runner{endpoint: plain}.mustRun(t, 1, "compact", "--store", "oxigraph"),
		runner{endpoint: nope}.mustRun(t, 3, "compact"),
		runner{endpoint: s.Endpoint}.mustRun(t, 2, "restore"),
	}
	golden(t, "operations-refused", []string{plain, s.Endpoint, nope}, "the plain Fuseki of the tests, and one with the admin API", runs...)
}

// TestImportErrors: the import errors of issue 40. Turtle with an
// unterminated string names the string's line, not the default graph; a
// dataset URL the server answers 404 exits 3, as an unreachable store.
func TestImportErrors(t *testing.T) {
	fusekitest.Parallel(t)
	ep := fusekitest.Endpoint(t)
	nope := strings.TrimSuffix(ep, "/"+filepath.Base(ep)) + "/nope"
	file := filepath.Join("..", "..", "testdata", "export", "invalid", "turtle-unterminated-string.trig")
	runs := []result{
		runner{endpoint: ep}.mustRun(t, 1, "import", file),
		runner{endpoint: nope}.mustRun(t, 3, "import", file),
		runner{endpoint: nope}.mustRun(t, 3, "sessions"),
	}
	golden(t, "import-errors", []string{ep, nope}, "the Turtle file's string is left open on line 7; /nope is no dataset of the server", runs...)
}

// TestMoveTreeRefused: move-tree needs a cluster of several replica
// groups, a root and a group to move to: each missing is a usage error
// (exit 2) naming the command.
func TestMoveTreeRefused(t *testing.T) {
	fusekitest.Parallel(t)
	ep := fusekitest.Endpoint(t)
	r := runner{endpoint: ep}
	for _, args := range [][]string{
		{"move-tree", "019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d", "--to", "1"},
		{"move-tree", "019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d"},
		{"move-tree", "--to", "1"},
		{"move-tree", "--purge", "019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d"},
		{"move-tree", "--purge"},
	} {
		res := r.mustRun(t, 2, args...)
		if !strings.Contains(res.stderr, "move-tree") {
			t.Errorf("trails-admin %s: stderr %q, want a usage error naming move-tree", strings.Join(args, " "), res.stderr)
		}
	}
}

// TestJournalCommand: trails-admin journal on the TDB2 database of a
// Fuseki killed while it committed (a torn last journal entry, on which
// Fuseki does not start): it refuses to touch the journal of a running
// server, reports the torn entry (exit 1) without --mend, cuts it off with
// --mend, and the server starts on the mended database with what was
// committed.
func TestJournalCommand(t *testing.T) {
	fusekitest.RequireFuseki(t, "a TDB2 journal")
	data := t.TempDir()
	s, err := fusekitest.StartServer(fusekitest.Options{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r := runner{endpoint: s.Endpoint}
	st := journalStore(t, s.Endpoint)
	sess := session.New("agent")
	sess.Append("user", "committed before the crash")
	if err := st.Persist(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(data, "databases", "trails")
	if res := r.mustRun(t, 1, "journal", "--mend", db); !strings.Contains(res.stderr, "in use") {
		t.Errorf("journal --mend of a running server's database: %q, want it refused as in use", res.stderr)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	journals, err := filepath.Glob(filepath.Join(db, "Data-*", "journal.jrnl"))
	if err != nil || len(journals) != 1 {
		t.Fatalf("journals: %v, %v", journals, err)
	}
	redo := tdbjournal.Entry(1, []byte("0123456789abcdef"))
	before, _ := os.ReadFile(journals[0])
	torn := append(append(before, redo...), redo[:30]...)
	if err := os.WriteFile(journals[0], torn, 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.mustRun(t, 1, "journal", db)
	if !strings.Contains(res.stdout, "torn last entry of 30 bytes") || !strings.Contains(res.stderr, "--mend") {
		t.Errorf("journal of a torn journal:\nstdout: %s\nstderr: %s", res.stdout, res.stderr)
	}
	if got, _ := os.ReadFile(journals[0]); len(got) != len(torn) {
		t.Errorf("journal without --mend changed the journal: %d bytes, want %d", len(got), len(torn))
	}
	res = r.mustRun(t, 0, "journal", "--mend", "--json", db)
	out := decode[[]struct {
		Entries   int   `json:"entries"`
		Pending   int   `json:"not_committed"`
		TornBytes int64 `json:"torn_bytes"`
		Mended    bool  `json:"mended"`
	}](t, res)
	if len(out) != 1 || !out[0].Mended || out[0].TornBytes != 30 || out[0].Pending != 1 {
		t.Errorf("journal --mend --json: %+v", out)
	}
	if rep, err := tdbjournal.Check(journals[0]); err != nil || !rep.Clean() || rep.Size != int64(len(before)+len(redo)) {
		t.Errorf("after --mend: %+v, %v", rep, err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Fuseki on the mended database: %v", err)
	}
	got, err := journalStore(t, s.Endpoint).Load(context.Background(), sess.ID)
	if err != nil || len(got.Turns) != 1 || got.Turns[0].Content != "committed before the crash" {
		t.Errorf("the session after the crash and --mend: %v, %v", got, err)
	}
}

// journalStore returns a Store on the dataset at endpoint.
func journalStore(tb testing.TB, endpoint string) *session.Store {
	tb.Helper()
	return session.NewStore(fusekitest.Client(tb, kg.Config{Endpoint: endpoint}))
}
