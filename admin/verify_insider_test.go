package admin_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// rechainAt edits turn i of session id's content behind the library's
// back and recomputes every digest and the head after it, as an insider
// with the store's credentials can: check finds nothing.
func rechainAt(tb testing.TB, w *signedWorld, id string, i int) {
	tb.Helper()
	l := storetest.MustLoad(tb, w.st, id)
	turns := slices.Clone(l.Turns)
	turns[i].Content = "what the agent never said"
	g := storetest.SessionRef(id)
	setValue(tb, w.c, g, storetest.TurnRef(id, i), ontology.Content, kg.String(turns[i].Content))
	prev := ""
	for _, tr := range turns {
		prev = session.TurnDigest(prev, tr)
		setValue(tb, w.c, g, storetest.TurnRef(id, tr.Index), ontology.Digest, kg.String(prev))
	}
	setValue(tb, w.c, g, g, ontology.HeadDigest, kg.String(session.HeadDigest(turns)))
}

// honestAppend is the writer, holding its key, appending one turn to what
// the store now holds: it signs the head it leaves.
func honestAppend(tb testing.TB, w *signedWorld, id string) {
	tb.Helper()
	l := storetest.MustLoad(tb, w.st, id)
	l.Append("user", "the next honest turn")
	storetest.MustPersist(tb, w.st, l)
}

// TestVerifyInsiders runs the attacks of issue 37 that passed verify
// before: each by a party holding the store's write credentials but not
// the keys (the equivocation, by a holder of the writer key), each named
// however much is written after it.
func TestVerifyInsiders(t *testing.T) {
	ctx := context.Background()

	t.Run("re-chained, then laundered by an honest append", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 3)
		rechainAt(t, w, s.ID, 1)
		honestAppend(t, w, s.ID)
		// The signed head at 2 turns named turn 1's digest, which is gone.
		wantFindings(t, w.verify(t), admin.VerifyRewritten+" "+s.ID+" 1")
	})

	t.Run("truncated, then laundered by an honest append", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 3)
		g := storetest.SessionRef(s.ID)
		rawUpdate(t, w.c, `DELETE WHERE { GRAPH $g { $t ?p ?o } }`, kg.Params{"g": g, "t": storetest.TurnRef(s.ID, 2)})
		setValue(t, w.c, g, g, ontology.OwnTurns, kg.Int(2))
		setValue(t, w.c, g, g, ontology.HeadDigest, kg.String(session.HeadDigest(s.Turns[:2])))
		honestAppend(t, w, s.ID)
		// The writer replaced the head at 2 turns twice; the head at 3
		// turns it signed first is gone.
		wantFindings(t, w.verify(t), admin.VerifyRewritten+" "+s.ID+" 2", admin.VerifyEquivocated+" "+s.ID+" -1")
	})

	t.Run("equivocation by the writer key's holder", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 2)
		l := storetest.MustLoad(t, w.st, s.ID)
		first := session.TurnDigest("", l.Turns[0])
		// A second head for the one after turn 0, signed with the key and
		// never written: shown to one auditor, say.
		forged := witness.Statement{Kind: witness.KindHead, Session: s.ID, Turns: 2, Digest: "sha256:" + strings.Repeat("ab", 32),
			Chain: "sha256:" + strings.Repeat("cd", 32), Time: time.Now(), Version: 2, Replaces: true, Prev: witness.HeadRef{Turns: 1, Chain: first}}
		entry, err := witness.Sign(forged, w.signer)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.Add(ctx, entry); err != nil {
			t.Fatal(err)
		}
		honestAppend(t, w, s.ID) // the store goes on; the latest head is honest
		wantFindings(t, w.verify(t), admin.VerifyEquivocated+" "+s.ID+" -1", admin.VerifyRewritten+" "+s.ID+" 1")
	})

	t.Run("an empty fork re-pointed", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 5)
		other := sessionWith(t, w.st, 5)
		for _, tc := range []struct {
			name string
			edit func(f *session.Session)
		}{
			{"to another fork point", func(f *session.Session) {
				g := storetest.SessionRef(f.ID)
				setValue(t, w.c, g, g, ontology.ForkedAtIndex, kg.Int(4))
			}},
			{"to another parent", func(f *session.Session) {
				g := storetest.SessionRef(f.ID)
				setValue(t, w.c, g, g, ontology.ParentSession, storetest.SessionRef(other.ID))
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f, err := w.st.Fork(ctx, s.ID, 2)
				if err != nil {
					t.Fatal(err)
				}
				tc.edit(f)
				rep, err := w.ds.Verify(ctx, admin.VerifyOptions{Witness: w.dir, Keys: w.keys, Sessions: []string{f.ID}})
				if err != nil {
					t.Fatal(err)
				}
				wantFindings(t, rep, admin.VerifyRepointed+" "+f.ID+" -1")
			})
		}
	})

	t.Run("verify of a fork names an edit of the prefix it inherits", func(t *testing.T) {
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 4)
		f := storetest.MustFork(t, s, 2)
		f.Append("assistant", "the fork's own turn")
		storetest.MustPersist(t, w.st, f)
		g := storetest.SessionRef(s.ID)
		// Turn 3 of the parent is no part of the fork's history.
		setValue(t, w.c, g, storetest.TurnRef(s.ID, 3), ontology.Content, kg.String("after the fork point"))
		one := func() *admin.VerifyReport {
			t.Helper()
			rep, err := w.ds.Verify(ctx, admin.VerifyOptions{Witness: w.dir, Keys: w.keys, Sessions: []string{f.ID}})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		wantFindings(t, one())
		setValue(t, w.c, g, storetest.TurnRef(s.ID, 0), ontology.Content, kg.String("what the agent never said"))
		wantFindings(t, one(), admin.VerifyEdited+" "+s.ID+" 0")
	})

	t.Run("a turn injected past ownTurns with a valid digest", func(t *testing.T) {
		// check's turn-count rule names it; verify runs check's rules.
		w := newSignedWorld(t)
		s := sessionWith(t, w.st, 2)
		l := storetest.MustLoad(t, w.st, s.ID)
		extra := session.Turn{Index: 2, Role: "assistant", Content: "injected", Branch: l.Branch, Created: time.Now().UTC().Truncate(time.Millisecond), ID: session.TurnID(s.ID, 2)}
		d := storetest.RawTriple(storetest.SessionRef(s.ID), storetest.TurnRef(s.ID, 2), ontology.RDFType, kg.MustIRI(ontology.Turn))
		for p, o := range map[string]string{ontology.Role: extra.Role, ontology.Content: extra.Content, ontology.Branch: extra.Branch,
			ontology.Digest: session.TurnDigest(session.TurnDigest(session.TurnDigest("", l.Turns[0]), l.Turns[1]), extra)} {
			d.Add(storetest.SessionRef(s.ID), storetest.TurnRef(s.ID, 2), kg.MustIRI(p), kg.String(o))
		}
		d.Add(storetest.SessionRef(s.ID), storetest.TurnRef(s.ID, 2), kg.MustIRI(ontology.Index), kg.Int(2))
		d.Add(storetest.SessionRef(s.ID), storetest.TurnRef(s.ID, 2), kg.MustIRI(ontology.Created), kg.DateTime(extra.Created))
		d.Add(storetest.SessionRef(s.ID), storetest.TurnRef(s.ID, 2), kg.MustIRI(ontology.TurnSession), storetest.SessionRef(s.ID))
		storetest.RawChange(t, w.c, nil, d)
		rep := w.verify(t)
		if !slices.ContainsFunc(rep.Findings, func(f admin.VerifyFinding) bool {
			return f.Kind == admin.VerifyCheck && f.Session == s.ID && strings.HasPrefix(f.Message, admin.RuleTurnCount+":")
		}) || rep.Verified == rep.Sessions {
			t.Fatalf("got %d of %d verified, findings:\n%s\nwant a %s finding of rule %s", rep.Verified, rep.Sessions, messages(rep), admin.VerifyCheck, admin.RuleTurnCount)
		}
	})
}

// TestVerifyCosigners: with Cosigners, a checkpoint no listed cosigner
// cosigned fails verify (the split view of a witness operator who shows
// two auditors two logs; witness.TestSplitViewCaughtByCosigner has the
// cosigner's side), and one it cosigned passes.
func TestVerifyCosigners(t *testing.T) {
	ctx := context.Background()
	w := newSignedWorld(t)
	sessionWith(t, w.st, 2)
	skey, vkey := keytest.Text(t, "cosigner.test")
	w.setKeys(t, w.keyText+"cosigner "+vkey+"\n")
	if _, err := w.ds.Verify(ctx, admin.VerifyOptions{Witness: w.dir, Keys: w.keys, Cosigners: 1}); !errors.Is(err, witness.ErrCosignatures) {
		t.Fatalf("a checkpoint without cosignature: got %v, want witness.ErrCosignatures", err)
	}
	cp, err := w.dir.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(cp, note.VerifierList(w.keys.Witness))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := witness.NewCosignatureSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(n, cs)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.ds.Verify(ctx, admin.VerifyOptions{Witness: shrunk{w.dir, cosigned}, Keys: w.keys, Cosigners: 1})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("a cosigned checkpoint: got %v, %v; want no finding", err, rep)
	}
}

// TestVerifyMergeResult: a merge turn's result (status, range, artifacts)
// is written beside the turn, not in its chain digest; a signing Store
// signs it in a statement of kind merge, and verify names a result
// changed by the store's credentials alone.
func TestVerifyMergeResult(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		pred string
		o    rdf.Term
	}{
		{"status completed to failed", ontology.MergeStatus, kg.String(string(session.MergeFailed))},
		{"another range", ontology.MergeLast, kg.Int(2)},
		{"an artifact replaced", ontology.ArtifactText, kg.String("forged.md")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSignedWorld(t)
			p := sessionWith(t, w.st, 3)
			c := storetest.MustFork(t, p, 3)
			c.Append("assistant", "the child's work")
			c.Append("assistant", "its result")
			storetest.MustPersist(t, w.st, c)
			mt, err := w.st.Merge(ctx, c.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "done",
				Artifacts: []session.Artifact{{Text: "notes.md"}}})
			if err != nil {
				t.Fatal(err)
			}
			wantFindings(t, w.verify(t))
			setValue(t, w.c, storetest.SessionRef(p.ID), kg.MustIRI(mt.ID), tc.pred, tc.o)
			wantFindings(t, w.verify(t), admin.VerifyMergeEdited+" "+p.ID+" 3")
		})
	}
}

// TestVerifyImportAfterDeletion: a session deleted with a signed deletion
// and imported again with signing starts a new chain of statements: no
// finding (the two heads that replace nothing are not an equivocation).
func TestVerifyImportAfterDeletion(t *testing.T) {
	ctx := context.Background()
	w := newSignedWorld(t)
	s := sessionWith(t, w.st, 2)
	var export bytes.Buffer
	if _, err := w.ds.Export(ctx, &export, admin.NQuads); err != nil {
		t.Fatal(err)
	}
	if err := w.st.Delete(ctx, s.ID, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.New(w.q, admin.WithSigning(w.signer, w.dir)).Import(ctx, bytes.NewReader(export.Bytes()), admin.NQuads, nil); err != nil {
		t.Fatal(err)
	}
	wantFindings(t, w.verify(t))
}
