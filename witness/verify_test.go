package witness_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/witness"
	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

func TestLatestHeads(t *testing.T) {
	ctx := context.Background()
	writer, v, _ := keytest.New(t, "writer.example")
	rotated, v2, _ := keytest.New(t, "writer.example") // a later key of the same writer
	ws, wv, _ := keytest.New(t, "witness.example")
	d := openDir(t, t.TempDir(), ws)
	addRange(t, d, writer, 0, 7) // sessions 0, 1, 2, last at 6, 4, 5
	del := statement(4)
	del.Kind = witness.KindDeletion
	if _, err := d.Add(ctx, sign(t, del, rotated)); err != nil {
		t.Fatal(err)
	}
	_, cp, err := witness.Audit(ctx, d, wv, nil)
	if err != nil {
		t.Fatal(err)
	}
	addRange(t, d, writer, 8, 9) // after the checkpoint: not read
	heads, err := witness.LatestHeads(ctx, d, cp, note.VerifierList(v, v2))
	if err != nil {
		t.Fatalf("LatestHeads: %v", err)
	}
	want := map[string]struct {
		index uint64
		s     witness.Statement
		key   note.Verifier
	}{
		statement(6).Session: {6, statement(6), v},
		statement(4).Session: {7, del, v2},
		statement(5).Session: {5, statement(5), v},
	}
	if len(heads) != len(want) {
		t.Errorf("got %d sessions, want %d", len(heads), len(want))
	}
	for id, w := range want {
		h := heads[id]
		if h.Index != w.index || h.Statement != w.s || h.Signature.Hash != w.key.KeyHash() {
			t.Errorf("session %s: got %d %+v by %08x, want %d %+v by %08x", id, h.Index, h.Statement, h.Signature.Hash, w.index, w.s, w.key.KeyHash())
		}
	}
}

func TestHeadsRefuses(t *testing.T) {
	ctx := context.Background()
	writer, v, _ := keytest.New(t, "writer.example")
	stranger, _, _ := keytest.New(t, "stranger.example")
	ws, wv, _ := keytest.New(t, "witness.example")
	d := openDir(t, t.TempDir(), ws)
	addRange(t, d, writer, 0, 3)
	if _, err := d.Add(ctx, sign(t, statement(3), stranger)); err != nil {
		t.Fatal(err)
	}
	_, cp, err := witness.Audit(ctx, d, wv, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = witness.LatestHeads(ctx, d, cp, note.VerifierList(v))
	var ee *witness.EntryError
	if !errors.As(err, &ee) || ee.Index != 3 || !errors.Is(err, witness.ErrUnknownKey) {
		t.Errorf("entry by an untrusted key: got %v, want an *EntryError at 3 wrapping ErrUnknownKey", err)
	}
	if ee != nil && ee.Claimed != statement(3) {
		t.Errorf("the untrusted entry's claimed statement: got %+v, want %+v", ee.Claimed, statement(3))
	}
	// Heads goes on past it: a trusted entry after it is read.
	if _, err := d.Add(ctx, sign(t, statement(4), writer)); err != nil {
		t.Fatal(err)
	}
	if _, cp, err = witness.Audit(ctx, d, wv, nil); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for h, err := range witness.Heads(ctx, d, cp, note.VerifierList(v)) {
		if errors.As(err, &ee) {
			got = append(got, 100+ee.Index)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Index)
	}
	if want := []uint64{0, 1, 2, 103, 4}; !slices.Equal(got, want) {
		t.Errorf("Heads past an untrusted entry: got %v, want %v (100+i for an *EntryError at i)", got, want)
	}

	// A checkpoint of another log of the same size: the entries are not
	// those it commits to.
	mine := openDir(t, t.TempDir(), ws)
	addRange(t, mine, writer, 0, 4)
	other := openDir(t, t.TempDir(), ws)
	addOthers(t, other, writer, 0, 4)
	_, ocp, err := witness.Audit(ctx, other, wv, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = witness.LatestHeads(ctx, mine, ocp, note.VerifierList(v))
	if !errors.Is(err, witness.ErrInconsistent) {
		t.Errorf("another log's checkpoint: got %v, want ErrInconsistent", err)
	}
}

func TestOpenCheckpoint(t *testing.T) {
	ws, wv, _ := keytest.New(t, "witness.example")
	impostor, _, _ := keytest.New(t, "witness.example")
	_, other, _ := keytest.New(t, "other.example")
	good := checkpoint(t, openDir(t, t.TempDir(), ws))
	forged := checkpoint(t, openDir(t, t.TempDir(), impostor))
	for _, tc := range []struct {
		name   string
		signed []byte
		v      note.Verifier
		want   error
	}{
		{"another key", forged, wv, witness.ErrUnknownKey},
		{"another witness", good, other, witness.ErrUnknownKey},
		{"tampered size", bytes.Replace(good, []byte("\n0\n"), []byte("\n1\n"), 1), wv, witness.ErrBadSignature},
		{"not a note", []byte("witness.example\n0\n"), wv, witness.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := witness.OpenCheckpoint(tc.signed, tc.v); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// TestAuditFork checks that two witnesses under one key that agree on
// their first entries and then differ (a witness operator showing each
// auditor its own log) are found out by an auditor who holds a checkpoint
// of each.
func TestAuditFork(t *testing.T) {
	ctx := context.Background()
	writer, _, _ := keytest.New(t, "writer.example")
	ws, wv, _ := keytest.New(t, "witness.example")
	a := openDir(t, t.TempDir(), ws)
	addRange(t, a, writer, 0, 5)
	b := openDir(t, t.TempDir(), ws)
	addRange(t, b, writer, 0, 5)
	addRange(t, a, writer, 5, 7)
	addOthers(t, b, writer, 5, 8)
	seenA, _, err := witness.Audit(ctx, a, wv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := witness.Audit(ctx, b, wv, seenA); !errors.Is(err, witness.ErrInconsistent) {
		t.Errorf("got %v, want ErrInconsistent", err)
	}
}

// TestVerifyConsistencyMessage: the error names the two logs by size and
// root as their checkpoints write them, on one line (issue 37 found byte
// arrays in it).
func TestVerifyConsistencyMessage(t *testing.T) {
	older := log.Checkpoint{Origin: "witness.example", Size: 2, Hash: bytes.Repeat([]byte{1}, 32)}
	newer := log.Checkpoint{Origin: "witness.example", Size: 3, Hash: bytes.Repeat([]byte{2}, 32)}
	err := witness.VerifyConsistency(older, newer, [][]byte{bytes.Repeat([]byte{3}, 32)})
	if !errors.Is(err, witness.ErrInconsistent) {
		t.Fatalf("got %v, want ErrInconsistent", err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "[]\n") || strings.Contains(msg, `\n`) || !strings.Contains(msg, "AQEBAQEB") {
		t.Errorf("message %q: want one line naming the roots in base64, no byte arrays", msg)
	}
}
