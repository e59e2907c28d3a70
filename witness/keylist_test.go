package witness_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/keytest"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// TestKeyListRotation: a rotated writer key keeps the statements it
// signed in its window valid, and is not trusted for later ones; the new
// key is trusted from the rotation on.
func TestKeyListRotation(t *testing.T) {
	oldS, oldV := keytest.Text(t, "agent-a")
	newS, newV := keytest.Text(t, "agent-a-2")
	_, witV := keytest.Text(t, "witness.example")
	text := "# the auditors' keys\n\n" +
		"witness " + witV + "\n" +
		"writer " + oldV + " until 2026-11-20T00:00:00Z\n" +
		"writer " + newV + " since 2026-11-20T00:00:00Z\n"
	l, err := witness.ParseKeyList([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if l.Witness == nil || l.Witness.Name() != "witness.example" || len(l.Writers) != 2 {
		t.Fatalf("got witness %v and %d writers", l.Witness, len(l.Writers))
	}
	before := time.Date(2026, 11, 19, 23, 59, 59, 0, time.UTC)
	after := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		skey string
		at   time.Time
		want bool
	}{
		{oldS, before, true},
		{oldS, after, false},
		{newS, before, false},
		{newS, after, true},
	} {
		signer, err := note.NewSigner(tc.skey)
		if err != nil {
			t.Fatal(err)
		}
		s := statement(1)
		s.Time = tc.at
		_, sig, err := witness.Open(sign(t, s, signer), l.Verifiers())
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if got := l.Trusts(sig, tc.at); got != tc.want {
			t.Errorf("key %s at %s: Trusts %v, want %v", signer.Name(), tc.at.Format(time.RFC3339), got, tc.want)
		}
	}
	stranger, _, _ := keytest.New(t, "agent-a")
	if _, _, err := witness.Open(sign(t, statement(1), stranger), l.Verifiers()); !errors.Is(err, witness.ErrUnknownKey) {
		t.Errorf("a key not listed, named as a listed one: got %v, want ErrUnknownKey", err)
	}
}

func TestKeyListRefuses(t *testing.T) {
	_, v := keytest.Text(t, "agent-a")
	_, w := keytest.Text(t, "witness.example")
	_, w2 := keytest.Text(t, "witness.other")
	for _, tc := range []struct{ name, text, line string }{
		{"unknown word", "reader " + v, "line 1"},
		{"no key", "writer", "line 1"},
		{"not a key", "writer agent-a+00000000+AAAA", "line 1"},
		{"a private key", "writer PRIVATE+KEY+agent-a+00000000+AAAA", "line 1"},
		{"bad time", "writer " + v + " since yesterday", "line 1"},
		{"until before since", "writer " + v + " since 2026-11-20T00:00:00Z until 2026-11-19T00:00:00Z", "line 1"},
		{"until then since", "writer " + v + " until 2026-11-20T00:00:00Z since 2026-11-19T00:00:00Z", "line 1"},
		{"twice", "writer " + v + "\n\nwriter " + v, "line 3"},
		{"two witnesses", "witness " + w + "\nwitness " + w2, "line 2"},
		{"witness window", "witness " + w + " since 2026-11-20T00:00:00Z", "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := witness.ParseKeyList([]byte(tc.text))
			if !errors.Is(err, witness.ErrMalformed) || !strings.Contains(err.Error(), tc.line) {
				t.Errorf("got %v, want ErrMalformed naming %s", err, tc.line)
			}
		})
	}
}
