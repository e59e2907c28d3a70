package admin_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
)

// TestVerifySpooled: a writer whose statements go through a witness.Spool
// to the witness as a server of its own (the writer holds its key only)
// leaves a history that verifies clean once the spool is flushed, with
// forks, a merge and a rewind; and an insider who rewrites it after the
// writes were acknowledged is named, laundering append and all.
func TestVerifySpooled(t *testing.T) {
	ctx := context.Background()
	w := newSignedWorld(t)
	srv, err := witness.NewServer(w.dir, witness.ServerConfig{Keys: w.keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	client, err := witness.NewClient(hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := witness.OpenSpool(t.TempDir(), client, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	w.st = session.NewStore(w.q, session.WithSigning(w.signer, sp))
	flushed := func() *admin.VerifyReport {
		t.Helper()
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := sp.Flush(fctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		return w.verify(t)
	}

	s := sessionWith(t, w.st, 3)
	f, err := w.st.Fork(ctx, s.ID, 1, session.WithReason("try another way"))
	if err != nil {
		t.Fatal(err)
	}
	f.Append("assistant", "another way")
	if err := w.st.Persist(ctx, f); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.Merge(ctx, f.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "took the other way"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.st.Rewind(ctx, s.ID, 2, session.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	wantFindings(t, flushed())
	if st := sp.Stats(); st.Forwarded == 0 || st.Pending != 0 || st.Refused != 0 {
		t.Errorf("spool stats: got %+v, want every statement forwarded", st)
	}

	other := sessionWith(t, w.st, 3)
	rechainAt(t, w, other.ID, 1)
	honestAppend(t, w, other.ID)
	wantFindings(t, flushed(), admin.VerifyRewritten+" "+other.ID+" 1")
}
