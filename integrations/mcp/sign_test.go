package mcp_test

import (
	"context"
	"testing"

	"github.com/trails-kg/trails/admin"
	trailsmcp "github.com/trails-kg/trails/integrations/mcp"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
)

// TestSigning: a server built WithSigning signs what fork_session and
// rewind_session write, so that the history verifies with no finding;
// the same tools on a server without it leave an unwitnessed fork.
func TestSigning(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	c := fusekitest.Empty(t)
	ws, _, wv := keytest.New(t, "witness.test")
	signer, _, vk := keytest.New(t, "writer.test")
	dir, err := witness.OpenDir(ctx, t.TempDir(), ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	keys, err := witness.ParseKeyList([]byte("witness " + wv + "\nwriter " + vk + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	verify := func() *admin.VerifyReport {
		t.Helper()
		rep, err := admin.New(c).Verify(ctx, admin.VerifyOptions{Witness: dir, Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	root := storetest.Persisted(t, session.NewStore(c, session.WithSigning(signer, dir)), "signer", 4)
	cs := connectServer(t, trailsmcp.NewServer(c, trailsmcp.WithSigning(signer, dir)))
	result[trailsmcp.ForkOutput](t, cs, trailsmcp.ToolFork, map[string]any{"id": root.ID, "at": 2})
	result[trailsmcp.RewindOutput](t, cs, trailsmcp.ToolRewind, map[string]any{"id": root.ID, "to": 3})
	if rep := verify(); len(rep.Findings) != 0 || rep.Verified != rep.Sessions || rep.Sessions != 3 {
		t.Fatalf("signed: got %d verified of %d, findings %+v; want the root, its fork and the archive verified", rep.Verified, rep.Sessions, rep.Findings)
	}

	plain := connectServer(t, trailsmcp.NewServer(c))
	f, _ := result[trailsmcp.ForkOutput](t, plain, trailsmcp.ToolFork, map[string]any{"id": root.ID, "at": 1})
	rep := verify()
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != admin.VerifyUnwitnessed || rep.Findings[0].Session != f.ID {
		t.Errorf("unsigned fork: got findings %+v, want %s unwitnessed", rep.Findings, f.ID)
	}
}
