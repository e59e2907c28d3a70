package render_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/knakk/rdf"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/session"
)

// mcpForm is trails-mcp's form: every variant set.
var mcpForm = render.Form{TrimTurns: true, Words: true, TagsColumn: true, PlainCells: true, Brief: true}

// TestFormTurns: the zero Form is Turns; Words joins an item's words,
// leaving out the empty ones, and shows an unknown part's text; TrimTurns
// trims a plain turn's first line too.
func TestFormTurns(t *testing.T) {
	t.Parallel()
	turns := []session.Turn{
		{Index: 0, Branch: "main", Role: "user"},
		{Index: 1, Branch: "main", Role: "model", Structure: &session.Structure{
			Parts: []session.Part{
				{Kind: session.PartToolCall, CallID: "c1", Arguments: json.RawMessage(`{}`)},
				{Kind: session.PartToolResult, ToolName: "f ", CallID: "c1", Result: json.RawMessage(`1`)},
				{Kind: "future", Text: "t"},
			},
			Delta: map[string]json.RawMessage{"": json.RawMessage(`1`)},
		}},
	}
	tests := []struct {
		name string
		form render.Form
		want string
	}{
		{"admin", render.Form{}, "" +
			"   0  main           user       \n" +
			"   1  main           model\n" +
			"                     call       →  [c1] {}\n" +
			"                     result     ← f [c1] 1\n" +
			"                     future     \n" +
			"                     state       = 1\n"},
		{"mcp", mcpForm, "" +
			"   0  main           user\n" +
			"   1  main           model\n" +
			"                     call       → [c1] {}\n" +
			"                     result     ← f  [c1] 1\n" +
			"                     future     t\n" +
			"                     state      = 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.form.Turns(&b, turns); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
	var b, z bytes.Buffer
	render.Turns(&b, turns)
	render.Form{}.Turns(&z, turns)
	if b.String() != z.String() {
		t.Errorf("Turns: got %q, want the zero Form's %q", b.String(), z.String())
	}
}

// TestFormSessions: TagsColumn gives an untagged listing its TAGS column.
func TestFormSessions(t *testing.T) {
	t.Parallel()
	infos := []session.Info{{ID: "a", Principal: "p", Branch: "main", Kind: session.KindMain, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	for _, tt := range []struct {
		name string
		form render.Form
		tags bool
	}{{"admin", render.Form{}, false}, {"mcp", mcpForm, true}} {
		var b bytes.Buffer
		tt.form.Sessions(&b, infos)
		head, _, _ := strings.Cut(b.String(), "\n")
		if got := strings.HasSuffix(head, "TAGS"); got != tt.tags {
			t.Errorf("%s: header %q: got TAGS %v, want %v", tt.name, head, got, tt.tags)
		}
	}
}

// TestFormCell: PlainCells keeps a time as stored and cuts an IRI as any
// value.
func TestFormCell(t *testing.T) {
	t.Parallel()
	dt, _ := rdf.NewIRI("http://www.w3.org/2001/XMLSchema#dateTime")
	long, _ := rdf.NewIRI("http://example.org/" + strings.Repeat("y", 60))
	when := rdf.NewTypedLiteral("2026-01-02T03:04:05.1Z", dt)
	for _, tt := range []struct {
		name string
		form render.Form
		term rdf.Term
		want string
	}{
		{"admin time", render.Form{}, when, "2026-01-02T03:04:05.100Z"},
		{"mcp time", mcpForm, when, "2026-01-02T03:04:05.1Z"},
		{"admin IRI", render.Form{}, long, long.String()},
		{"mcp IRI", mcpForm, long, "http://example.org/" + strings.Repeat("y", 40) + "…"},
	} {
		if got := tt.form.Cell(tt.term); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestFormShow: a shown session's header in either form, then its turns.
func TestFormShow(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	shown := render.Shown{
		Info: session.Info{ID: "s", Principal: "p", ParentID: "r", ForkedAt: 1, Branch: "b", Kind: session.KindBranch, Turns: 2, OwnTurns: 1,
			Created: created, Tags: []string{"x"}},
		Session: &session.Session{ID: "s", ParentID: "r", From: 1, Turns: []session.Turn{{Index: 1, Branch: "b", Role: "user", Content: "hi"}},
			Anchors: map[string]session.Anchor{"a": {Name: "a", Index: 1, Session: "s"}}},
		Fork:   &render.ForkRecord{Type: "explicit", CreatedBy: "user", Reason: "why"},
		Merges: []session.MergeRecord{{Index: 1, Child: "c", Status: "success", First: 1, Last: 1}},
		Tail:   true,
	}
	tests := []struct {
		name string
		form render.Form
		want string
	}{
		{"admin", render.Form{}, "" +
			"session   s\n" +
			"principal p\n" +
			"branch    b\n" +
			"kind      branch\n" +
			"parent    r (forked at 1, 0 ancestors)\n" +
			"fork      explicit, created by user\n" +
			"reason    why\n" +
			"turns     2 (1 own)\n" +
			"created   2026-01-02T03:04:05Z\n" +
			"tags      x (not signed)\n" +
			"anchor    a at 1 (not signed)\n" +
			"merge     turn 1: success, fork c turns 1-1\n" +
			"tail      the last 1 turn, from turn 1\n" +
			"\n" +
			"   1  b              user       hi\n"},
		{"mcp", mcpForm, "" +
			"session   s\n" +
			"principal p\n" +
			"branch    b\n" +
			"kind      branch\n" +
			"parent    r (forked at 1, 0 ancestors)\n" +
			"fork      explicit, created by user\n" +
			"reason    why\n" +
			"turns     2 (1 own)\n" +
			"created   2026-01-02T03:04:05Z\n" +
			"tags      x\n" +
			"anchor    a at 1\n" +
			"merge     turn 1: c success, its turns 1-1\n" +
			"tail      the last 1 turn, from turn 1\n" +
			"\n" +
			"   1  b              user       hi\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.form.Show(&b, shown); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
