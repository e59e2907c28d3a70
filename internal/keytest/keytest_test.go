package keytest_test

import (
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/trails-kg/trails/internal/keytest"
)

// TestNew: a note signed with the signer opens with the verifier and with
// one made from the verifier's text; two calls give two keys.
func TestNew(t *testing.T) {
	t.Parallel()
	s, v, vkey := keytest.New(t, "writer.test")
	msg, err := note.Sign(&note.Note{Text: "hello\n"}, s)
	if err != nil {
		t.Fatal(err)
	}
	fromText, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	for _, ver := range []note.Verifier{v, fromText} {
		if _, err := note.Open(msg, note.VerifierList(ver)); err != nil {
			t.Errorf("open with %s: got %v, want the note", ver.Name(), err)
		}
	}
	if _, _, other := keytest.New(t, "writer.test"); other == vkey {
		t.Errorf("got the same key twice, want a fresh one each call")
	}
}
