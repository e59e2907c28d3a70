package admin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// signedWorld is a dataset written by a signing Store, its witness, and
// the auditor's key list.
type signedWorld struct {
	c       *kg.Client     // the test's dataset: its reads, and an insider's writes (rawUpdate)
	q       admin.Querier  // what the world's writers and operators write through (querier)
	st      *session.Store // signs with the writer key
	ds      *admin.Dataset
	dir     *witness.Dir
	keys    *witness.KeyList
	keyText string      // the key list's text
	wv      string      // the witness key (verifier text)
	signer  note.Signer // the writer key
	opts    []session.StoreOption
}

// newSignedWorld wipes the dataset and returns a world whose Store (with
// opts) signs with a fresh writer key into a fresh local witness, and whose
// key list trusts the witness key and the writer key with no window.
func newSignedWorld(tb testing.TB, opts ...session.StoreOption) *signedWorld {
	tb.Helper()
	ws, _, wv := keytest.New(tb, "witness.test")
	dir, err := witness.OpenDir(context.Background(), tb.TempDir(), ws)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { dir.Close() })
	signer, _, vk := keytest.New(tb, "writer.test")
	w := &signedWorld{dir: dir, wv: wv, signer: signer, opts: opts}
	w.wipe(tb)
	w.setKeys(tb, "witness "+wv+"\nwriter "+vk+"\n")
	return w
}

// wipe drops the whole dataset, as before a restore, and opens the
// world's Store and Dataset on it again (clustertest.Empty).
func (w *signedWorld) wipe(tb testing.TB) {
	tb.Helper()
	w.c = clustertest.Empty(tb)
	w.q = querier(tb, w.c)
	w.ds = admin.New(w.q)
	w.st = session.NewStore(w.q, append([]session.StoreOption{session.WithSigning(w.signer, w.dir)}, w.opts...)...)
}

// setKeys sets the auditor's key list.
func (w *signedWorld) setKeys(tb testing.TB, text string) {
	tb.Helper()
	l, err := witness.ParseKeyList([]byte(text))
	if err != nil {
		tb.Fatal(err)
	}
	w.keys, w.keyText = l, text
}

// verify runs Verify over the whole dataset.
func (w *signedWorld) verify(tb testing.TB) *admin.VerifyReport {
	tb.Helper()
	rep, err := w.ds.Verify(context.Background(), admin.VerifyOptions{Witness: w.dir, Keys: w.keys})
	if err != nil {
		tb.Fatalf("Verify: %v", err)
	}
	return rep
}

// kinds returns the report's findings as "kind session turn" lines.
func kinds(rep *admin.VerifyReport) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, fmt.Sprintf("%s %s %d", f.Kind, f.Session, f.Turn))
	}
	return out
}

// wantFindings fails tb unless the report's findings are want ("kind
// session turn"), in order.
//
// Check's findings (admin.VerifyCheck), which depend on the store's SHACL
// support, are compared only when want names one.
func wantFindings(tb testing.TB, rep *admin.VerifyReport, want ...string) {
	tb.Helper()
	got := kinds(rep)
	if !slices.ContainsFunc(want, func(w string) bool { return strings.HasPrefix(w, admin.VerifyCheck+" ") }) {
		got = slices.DeleteFunc(got, func(g string) bool { return strings.HasPrefix(g, admin.VerifyCheck+" ") })
	}
	if !slices.Equal(got, want) {
		tb.Errorf("findings:\n got %q\nwant %q\n%s", got, want, messages(rep))
	}
}

func messages(rep *admin.VerifyReport) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "  %s: %s\n", f.Kind, f.Message)
	}
	return b.String()
}

// rawUpdate runs a SPARQL update behind the library's back: the attacker
// holds the store's credentials (on the kafka profile, those of every
// replica: clustertest.Update).
func rawUpdate(tb testing.TB, c *kg.Client, q string, p kg.Params) {
	tb.Helper()
	u, err := kg.Bind(q, p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := clustertest.Update(context.Background(), tb, c, u); err != nil {
		tb.Fatalf("raw update: %v", err)
	}
}

// setValue replaces the value of pred on subject s in graph g.
func setValue(tb testing.TB, c *kg.Client, g, s rdf.IRI, pred string, v rdf.Term) {
	tb.Helper()
	rawUpdate(tb, c, `DELETE { GRAPH $g { $s $p ?o } } INSERT { GRAPH $g { $s $p $v } } WHERE { OPTIONAL { GRAPH $g { $s $p ?o } } }`,
		kg.Params{"g": g, "s": s, "p": kg.MustIRI(pred), "v": v})
}

// sessionWith persists a root of n turns through st, appending one turn
// at a time so that every count has a signed head.
func sessionWith(tb testing.TB, st *session.Store, n int) *session.Session {
	tb.Helper()
	s := session.New("verifier")
	for i := range n {
		s.Append("user", fmt.Sprintf("turn %d of the audited session", i))
		storetest.MustPersist(tb, st, s)
	}
	return s
}

// TestVerifyAttacks runs each attack of issue 24 by a writer that holds
// the store's credentials but not the writer key, and checks that Verify
// names it; clean data verifies with no finding.
func TestVerifyAttacks(t *testing.T) {
	ctx := context.Background()

	t.Run("clean", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 3)
		f := storetest.MustFork(t, s, 2)
		f.Append("assistant", "a fork's turn")
		storetest.MustPersist(t, w.st, f)
		empty := storetest.MustFork(t, s, 1) // no turns of its own
		storetest.MustPersist(t, w.st, empty)
		if _, err := w.st.Merge(ctx, f.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "merged"}); err != nil {
			t.Fatal(err)
		}
		storetest.MustRewind(t, w.st, s.ID, 2)
		d := storetest.MustFork(t, s, 1)
		storetest.MustPersist(t, w.st, d)
		if err := w.st.Detach(ctx, d.ID, session.DetachOptions{}); err != nil {
			t.Fatal(err)
		}
		gone := sessionWith(t, w.st, 1)
		if err := w.st.Delete(ctx, gone.ID, session.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rep := w.verify(t)
		wantFindings(t, rep)
		if rep.Verified != rep.Sessions || rep.Sessions < 5 || rep.Deleted != 1 {
			t.Errorf("verified %d of %d sessions, %d deleted; want all, and 1 deleted", rep.Verified, rep.Sessions, rep.Deleted)
		}
		one, err := w.ds.Verify(ctx, admin.VerifyOptions{Witness: w.dir, Keys: w.keys, Sessions: []string{f.ID}})
		// The fork, and the parent whose prefix it inherits.
		if err != nil || one.Sessions != 2 || one.Verified != 2 || len(one.Findings) != 0 {
			t.Errorf("verify of one session: got %d sessions, %d verified, findings %v, %v; want 2 verified (the fork and its parent) and none", one.Sessions, one.Verified, kinds(one), err)
		}
		if _, err := w.ds.Verify(ctx, admin.VerifyOptions{Witness: w.dir, Keys: w.keys, Sessions: []string{storetest.NewID()}}); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("verify of a session never stored nor signed: got %v, want ErrNotFound", err)
		}
		if len(rep.Checkpoint) == 0 || rep.Size == 0 {
			t.Errorf("no checkpoint in the report: %d entries", rep.Size)
		}
	})

	t.Run("edit", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 3)
		setValue(t, w.c, storetest.SessionRef(s.ID), storetest.TurnRef(s.ID, 1), ontology.Content, kg.String("what the agent never said"))
		wantFindings(t, w.verify(t), admin.VerifyEdited+" "+s.ID+" 1")
	})

	t.Run("truncation", func(t *testing.T) {
		// The attack: no computation at all. Point the head at
		// the previous one, decrement the count, drop the last turn.
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 3)
		g := storetest.SessionRef(s.ID)
		rawUpdate(t, w.c, `DELETE WHERE { GRAPH $g { $t ?p ?o } }`, kg.Params{"g": g, "t": storetest.TurnRef(s.ID, 2)})
		setValue(t, w.c, g, g, ontology.OwnTurns, kg.Int(2))
		setValue(t, w.c, g, g, ontology.HeadDigest, kg.String(session.HeadDigest(s.Turns[:2])))
		wantFindings(t, w.verify(t), admin.VerifyTruncated+" "+s.ID+" 2")
	})

	t.Run("reorder", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 3)
		g := storetest.SessionRef(s.ID)
		rawUpdate(t, w.c, `PREFIX trails: <https://w3id.org/trails/ns#> DELETE { GRAPH $g { $a trails:index 0 . $b trails:index 1 } } INSERT { GRAPH $g { $a trails:index 1 . $b trails:index 0 } } WHERE {}`,
			kg.Params{"g": g, "a": storetest.TurnRef(s.ID, 0), "b": storetest.TurnRef(s.ID, 1)})
		wantFindings(t, w.verify(t), admin.VerifyReordered+" "+s.ID+" 0")
	})

	t.Run("rollback", func(t *testing.T) {
		// An old copy of the session's graph, from before a rewind,
		// restored over it.
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 3)
		g := storetest.SessionRef(s.ID)
		old, err := w.c.GetGraph(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := storetest.MustRewind(t, w.st, s.ID, 1)
		r.Append("user", "another path")
		r.Append("assistant", "taken after the rewind")
		storetest.MustPersist(t, w.st, r)
		if err := clustertest.PutGraph(ctx, t, w.c, g, "application/n-triples", old); err != nil {
			t.Fatal(err)
		}
		wantFindings(t, w.verify(t), admin.VerifyRollback+" "+s.ID+" -1")
	})

	t.Run("rechain", func(t *testing.T) {
		// Edit a turn, then recompute every digest after it and the
		// head: check finds nothing, verify names the turn.
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 3)
		l := storetest.MustLoad(t, w.st, s.ID)
		turns := slices.Clone(l.Turns)
		turns[1].Content = "what the agent never said"
		g := storetest.SessionRef(s.ID)
		setValue(t, w.c, g, storetest.TurnRef(s.ID, 1), ontology.Content, kg.String(turns[1].Content))
		prev := ""
		for _, tr := range turns {
			prev = session.TurnDigest(prev, tr)
			setValue(t, w.c, g, storetest.TurnRef(s.ID, tr.Index), ontology.Digest, kg.String(prev))
		}
		setValue(t, w.c, g, g, ontology.HeadDigest, kg.String(session.HeadDigest(turns)))
		fs, err := storetest.Check(ctx, w.ds)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.Rule == admin.RuleChain {
				t.Errorf("check found the re-chained session (the attack is meant to pass it): %s", f.Message)
			}
		}
		wantFindings(t, w.verify(t), admin.VerifyRechained+" "+s.ID+" 1")
	})

	t.Run("deletion", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 2)
		signedGone := sessionWith(t, w.st, 1)
		if err := w.st.Delete(ctx, signedGone.ID, session.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rawUpdate(t, w.c, `DROP GRAPH $g`, kg.Params{"g": storetest.SessionRef(s.ID)})
		wantFindings(t, w.verify(t), admin.VerifyDeleted+" "+s.ID+" -1")
	})

	t.Run("resurrected", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 2)
		g := storetest.SessionRef(s.ID)
		old, err := w.c.GetGraph(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.st.Delete(ctx, s.ID, session.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := clustertest.PutGraph(ctx, t, w.c, g, "application/n-triples", old); err != nil {
			t.Fatal(err)
		}
		wantFindings(t, w.verify(t), admin.VerifyResurrected+" "+s.ID+" -1")
	})

	t.Run("forged import", func(t *testing.T) {
		// A session imported (written without the writer key), with a
		// statement the attacker signed with a key of its own, under the
		// writer key's name, and added to the witness.
		w := newSignedWorld(t)
		sessionWith(t, w.st, 1)
		forged := sessionWith(t, session.NewStore(w.q), 2)
		var exported bytes.Buffer
		if _, err := w.ds.Export(ctx, &exported, admin.NQuads, forged.ID); err != nil {
			t.Fatal(err)
		}
		rawUpdate(t, w.c, `DROP GRAPH $g ; DELETE { GRAPH $prov { ?s ?p ?o } } WHERE { GRAPH $prov { ?s ?p ?o FILTER(?s = $g || ?o = $g) } }`,
			kg.Params{"g": storetest.SessionRef(forged.ID), "prov": kg.MustIRI(ontology.ProvGraph)})
		if _, err := w.ds.Import(ctx, &exported, admin.NQuads, nil); err != nil {
			t.Fatalf("import: %v", err)
		}
		own, _, _ := keytest.New(t, "writer.test") // the writer's name, not its key
		in, err := w.st.Info(ctx, forged.ID)
		if err != nil {
			t.Fatal(err)
		}
		entry, err := witness.Sign(witness.Statement{Kind: witness.KindHead, Session: forged.ID, Turns: uint64(in.OwnTurns),
			Digest: session.HeadDigest(forged.Turns), Time: time.Now()}, own)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.Add(ctx, entry); err != nil {
			t.Fatal(err)
		}
		rep := w.verify(t)
		wantFindings(t, rep, admin.VerifyForged+" "+forged.ID+" -1", admin.VerifyUnwitnessed+" "+forged.ID+" -1")
	})

	t.Run("unsigned append", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 2)
		l := storetest.MustLoad(t, session.NewStore(w.q), s.ID)
		l.Append("assistant", "added without the key")
		storetest.MustPersist(t, session.NewStore(w.q), l)
		wantFindings(t, w.verify(t), admin.VerifyAhead+" "+s.ID+" 2")
	})

	t.Run("unsigned append after detach", func(t *testing.T) {
		// A detached fork's own turns count its copied prefix: what was
		// signed before the detach is numbered otherwise.
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 3)
		f := storetest.MustFork(t, s, 2)
		f.Append("assistant", "the fork's own turn")
		storetest.MustPersist(t, w.st, f)
		if err := w.st.Detach(ctx, f.ID, session.DetachOptions{}); err != nil {
			t.Fatal(err)
		}
		wantFindings(t, w.verify(t))
		l := storetest.MustLoad(t, session.NewStore(w.q), f.ID)
		l.Append("assistant", "added without the key")
		storetest.MustPersist(t, session.NewStore(w.q), l)
		wantFindings(t, w.verify(t), admin.VerifyAhead+" "+f.ID+" 3")
	})

	t.Run("witness rolled back", func(t *testing.T) {
		// The auditor kept a checkpoint; the witness now shows an older
		// one (restored from an older copy of its directory).
		w := newSignedWorld(t)
		sessionWith(t, w.st, 2)
		older := w.verify(t).Checkpoint
		sessionWith(t, w.st, 1)
		newer := w.verify(t).Checkpoint
		_, err := w.ds.Verify(ctx, admin.VerifyOptions{Witness: shrunk{w.dir, older}, Keys: w.keys, Trusted: newer})
		if !errors.Is(err, witness.ErrRollback) {
			t.Errorf("a witness behind the trusted checkpoint: got %v, want ErrRollback", err)
		}
	})
}

// shrunk is a witness that shows an older checkpoint of its log.
type shrunk struct {
	*witness.Dir
	cp []byte
}

func (s shrunk) Checkpoint(context.Context) ([]byte, error) { return s.cp, nil }

// TestVerifyKeyRotation: two writers with keys of their own write one
// dataset; the first key is retired at a rotation time and the second
// trusted from then. Statements signed before stay valid; one signed with
// the retired key after it is named.
func TestVerifyKeyRotation(t *testing.T) {
	rotation := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	w := newSignedWorld(t, session.WithClock(func() time.Time { return rotation.Add(-time.Hour) }))
	a := sessionWith(t, w.st, 2)
	oldKey := strings.Fields(strings.Split(w.keyText, "\n")[1])[1]
	newSigner, _, newKey := keytest.New(t, "writer-2.test")
	second := session.NewStore(w.q, session.WithSigning(newSigner, w.dir), session.WithClock(func() time.Time { return rotation.Add(time.Hour) }))
	b := sessionWith(t, second, 1)
	l := storetest.MustLoad(t, second, a.ID)
	l.Append("assistant", "after the rotation")
	storetest.MustPersist(t, second, l)

	w.setKeys(t, "witness "+w.wv+"\nwriter "+oldKey+" until "+rotation.Format(time.RFC3339)+"\nwriter "+newKey+" since "+rotation.Format(time.RFC3339)+"\n")
	rep := w.verify(t)
	wantFindings(t, rep)
	if rep.Verified != 2 {
		t.Errorf("verified %d sessions, want 2 (%s, %s)", rep.Verified, a.ID, b.ID)
	}

	// The retired key signs after its window: the statement is not taken,
	// and the session it was about is then ahead of what was signed.
	late := session.NewStore(w.q, w.stOptions(rotation.Add(2*time.Hour))...)
	l = storetest.MustLoad(t, late, b.ID)
	l.Append("assistant", "signed with the retired key")
	storetest.MustPersist(t, late, l)
	wantFindings(t, w.verify(t), admin.VerifyKeyWindow+" "+b.ID+" -1", admin.VerifyAhead+" "+b.ID+" 1")
}

// stOptions returns the options of a Store that signs with the world's
// first writer key, at time at. Only TestVerifyKeyRotation needs it: the
// world keeps its signer in its Store.
func (w *signedWorld) stOptions(at time.Time) []session.StoreOption {
	return []session.StoreOption{session.WithSigning(w.signer, w.dir), session.WithClock(func() time.Time { return at })}
}

// TestVerifyMark: verify --mark writes each verified session's head in the
// verified graph, and the audit query unverified lists the sessions whose
// head moved since, or that were never verified.
func TestVerifyMark(t *testing.T) {
	ctx := context.Background()
	w := newSignedWorld(t)
	a := sessionWith(t, w.st, 2)
	b := sessionWith(t, w.st, 1)
	rep, err := w.ds.Verify(ctx, admin.VerifyOptions{Witness: w.dir, Keys: w.keys, Mark: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Marked != 2 {
		t.Fatalf("marked %d, want 2", rep.Marked)
	}
	unverified := func() []string {
		res, err := prov.NewReader(w.c).Run(ctx, "unverified", nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range res.Solutions {
			ids = append(ids, ontology.SessionID(r.String("session")))
		}
		return ids
	}
	if got := unverified(); len(got) != 0 {
		t.Fatalf("unverified after verify --mark: got %v, want none", got)
	}
	l := storetest.MustLoad(t, session.NewStore(w.q), a.ID)
	l.Append("assistant", "added without the key")
	storetest.MustPersist(t, session.NewStore(w.q), l)
	c := sessionWith(t, w.st, 1)
	want := []string{a.ID, c.ID}
	slices.Sort(want)
	if got := unverified(); !slices.Equal(got, want) {
		t.Fatalf("unverified: got %v, want %v (b, %s, is unchanged)", got, want, b.ID)
	}
	// A second run marks again, and does not mark a session that fails.
	rep, err = w.ds.Verify(ctx, admin.VerifyOptions{Witness: w.dir, Keys: w.keys, Mark: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Marked != 2 {
		t.Errorf("second run marked %d, want 2 (b and c)", rep.Marked)
	}
	if got := unverified(); !slices.Equal(got, []string{a.ID}) {
		t.Errorf("unverified after the second run: got %v, want [%s]", got, a.ID)
	}
}
