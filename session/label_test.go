package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// shortAndSafe fails tb unless err's message is short and holds nothing a
// terminal acts on: a user's value is quoted escaped and cut.
func shortAndSafe(tb testing.TB, what string, err error) {
	tb.Helper()
	msg := err.Error()
	if len(msg) > 1024 {
		tb.Errorf("%s: got an error of %d bytes, want the value cut: %s", what, len(msg), termsafe.Cut(msg, 1024))
	}
	if s := termsafe.String(msg); s != msg {
		tb.Errorf("%s: the error holds characters a terminal acts on: %s", what, s)
	}
}

// TestLabelsRefuseTerminalControls: a tag or an anchor name holding a
// bidi control, an escape or another control character, or far too long,
// is refused with ErrInvalid before anything is sent, nothing is stored,
// and the error quotes the value escaped and cut.
func TestLabelsRefuseTerminalControls(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()
	s := persisted(t, st, "alice", 2)
	graph := ontology.SessionIRI(s.ID)
	quads := storetest.CountQuads(t, c, graph)
	tests := []struct {
		name, label string
	}{
		{"right-to-left override", "exe.\u202etxt"},
		{"left-to-right embedding", "a\u202ab"},
		{"pop directional formatting", "a\u202cb"},
		{"first strong isolate", "a\u2068b"},
		{"pop directional isolate", "a\u2069b"},
		{"left-to-right mark", "a\u200eb"},
		{"right-to-left mark", "a\u200fb"},
		{"arabic letter mark", "a\u061cb"},
		{"escape", "a\x1b[2Jb"},
		{"window title", "a\x1b]0;x\x07"},
		{"C1 CSI", "a\u009b2J"},
		{"DEL", "a\x7f"},
		{"line separator", "a\u2028b"},
		{"100 KB", strings.Repeat("x", 100<<10)},
		{"100 KB of escapes", strings.Repeat("\x1b", 100<<10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ct.requests.Load()
			for what, err := range map[string]error{
				"Tag":   st.Tag(ctx, s.ID, "fine", tt.label),
				"Untag": st.Untag(ctx, s.ID, tt.label),
				"ByTag": func() error { _, err := st.List(ctx, session.ByTag(tt.label)); return err }(),
				"Anchor": func() error {
					_, err := st.Anchor(ctx, s.ID, tt.label, nil)
					return err
				}(),
				"ForkAtAnchor": func() error { _, err := s.Fork(-1, session.ForkAtAnchor(tt.label)); return err }(),
			} {
				if !errors.Is(err, session.ErrInvalid) && !(what == "ForkAtAnchor" && errors.Is(err, session.ErrNotFound)) {
					t.Errorf("%s: got %v, want ErrInvalid", what, termsafe.Cut(errString(err), 400))
					continue
				}
				shortAndSafe(t, what, err)
			}
			if sent := ct.requests.Load() - before; sent != 0 {
				t.Errorf("got %d requests, want none", sent)
			}
		})
	}
	if got := storetest.CountQuads(t, c, graph); got != quads {
		t.Errorf("the session's graph holds %d quads after the refusals, want %d", got, quads)
	}
	if got := mustLoad(t, st, s.ID); len(got.Anchors) != 0 {
		t.Errorf("got anchors %v after refused anchors, want none", got.Anchors)
	}
	in, err := st.Info(ctx, s.ID)
	if err != nil || len(in.Tags) != 0 {
		t.Errorf("got tags %q, %v after refused tags, want none", in.Tags, err)
	}
	// A label of other scripts and symbols is fine.
	if err := st.Tag(ctx, s.ID, "عربي", "日本語", "emoji-🙂"); err != nil {
		t.Fatalf("tag: %v", err)
	}
	mustAnchor(t, st, s.ID, "שלום", nil)
}

// TestErrorsQuoteUserValuesCut: errors that echo a value a user gave (a
// principal, a role, a session id, a state) quote it escaped and cut.
func TestErrorsQuoteUserValuesCut(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	long := strings.Repeat("\x1b]0;x\x07", 20<<10)
	s := session.New(long + "\x00")
	s.Append("user", "hi")
	role := session.New("alice")
	role.Append(long+"\xff", "hi")
	_, stateErr := st.SetState(ctx, newID(), session.State(long), session.StateOptions{})
	for what, err := range map[string]error{
		"principal":  st.Persist(ctx, s),
		"role":       st.Persist(ctx, role),
		"session id": st.Tag(ctx, long, "x"),
		"state":      stateErr,
		"fork type":  func() error { _, err := s.Fork(0, session.WithForkType(session.ForkType(long))); return err }(),
	} {
		if !errors.Is(err, session.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", what, termsafe.Cut(errString(err), 400))
			continue
		}
		shortAndSafe(t, what, err)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
