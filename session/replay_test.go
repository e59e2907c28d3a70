package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/session"
)

func TestReplay(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "alice", 6)
	f := mustFork(t, root, 4)
	appendN(f, 3, "f")
	mustPersist(t, st, f)

	triples := func() int {
		res, err := c.Select(ctx, "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := res.Solutions[0].Int("n")
		return n
	}
	before := triples()
	for _, tc := range []struct {
		name string
		opts []session.ReplayOption
		want []session.Turn
	}{
		{"all", nil, f.Turns},
		{"up to 0", []session.ReplayOption{session.UpTo(0)}, nil},
		{"up to 2 (inherited only)", []session.ReplayOption{session.UpTo(2)}, f.Turns[:2]},
		{"up to 5 (across the fork point)", []session.ReplayOption{session.UpTo(5)}, f.Turns[:5]},
		{"beyond the end", []session.ReplayOption{session.UpTo(99)}, f.Turns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs := ct.requests.Load()
			got, err := st.Replay(ctx, f.ID, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			sameHistory(t, got, tc.want)
			if n := ct.requests.Load() - reqs; n > 2 {
				t.Fatalf("got %d requests, want at most 2 (queries only)", n)
			}
		})
	}
	if after := triples(); after != before {
		t.Fatalf("replay changed the store: %d triples before, %d after", before, after)
	}
	if _, err := st.Replay(ctx, f.ID, session.UpTo(-1)); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("UpTo(-1): got %v, want ErrInvalid", err)
	}
	loaded := mustLoad(t, st, f.ID)
	replayed, err := st.Replay(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameHistory(t, replayed, loaded.Turns)
}
