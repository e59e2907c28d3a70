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

// TestClip: a value is escaped and cut to its width, the cut marked,
// escapes counted in the width.
func TestClip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		width    int
		want     string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdef", 5, "abcd…"},
		{"escaped fits", "a\x1b", 5, `a\x1b`},
		{"escape cut", "ab\x1bcdef", 5, `ab\x…`},
		{"line break", "a\nb", 10, `a\nb`},
		{"invalid UTF-8", "a\xffb", 10, `a\xffb`},
		{"runes", "ééééé", 4, "ééé…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render.Clip(tt.in, tt.width); got != tt.want {
				t.Errorf("Clip(%q, %d): got %q, want %q", tt.in, tt.width, got, tt.want)
			}
		})
	}
}

// TestItems: each kind of structured field gives its item line; a plain
// turn none.
func TestItems(t *testing.T) {
	t.Parallel()
	if got := render.Items(session.Turn{Role: "user", Content: "hi"}); got != nil {
		t.Errorf("plain turn: got %v, want none", got)
	}
	var got []string
	for _, it := range render.Items(structured()) {
		got = append(got, it.Label+": "+it.Line())
	}
	want := []string{
		"model: m finish stop",
		"tokens: 3 in, 2 out, 5 total",
		"author: ag",
		`call: → f [c1] {"a":[1,2]}`,
		"result: ← error 1",
		"data: image/png 1 byte",
		"state: gone removed",
		"state: k = true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// structured returns a structured turn with one field of each kind.
func structured() session.Turn {
	return session.Turn{Index: 1, Branch: "main", Role: "assistant", Structure: &session.Structure{
		Model: "m", FinishReason: "stop", Usage: &session.Usage{Input: 3, Output: 2, Total: 5}, Author: "ag",
		Parts: []session.Part{
			{Kind: session.PartToolCall, CallID: "c1", ToolName: "f", Arguments: json.RawMessage("{ \"a\" : [1, 2] }")},
			{Kind: session.PartToolResult, Result: json.RawMessage(`1`), IsError: true},
			{Kind: session.PartData, MIMEType: "image/png", Data: []byte{1}},
		},
		Delta: map[string]json.RawMessage{"k": json.RawMessage(`true`), "gone": nil},
	}}
}

// TestTurns: a turn a line, the content's further lines under its first,
// a structured turn's items in the role column; stored text escaped, so
// that it cannot start a line of its own.
func TestTurns(t *testing.T) {
	t.Parallel()
	turns := []session.Turn{
		{Index: 0, Branch: "main", Role: "user", Content: "hello\n   7  main  user  forged\x1b[2J"},
		structured(),
	}
	var b bytes.Buffer
	if err := render.Turns(&b, turns); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"   0  main           user       hello\n" +
		"                                   7  main  user  forged\\x1b[2J\n" +
		"   1  main           assistant\n" +
		"                     model      m finish stop\n" +
		"                     tokens     3 in, 2 out, 5 total\n" +
		"                     author     ag\n" +
		"                     call       → f [c1] {\"a\":[1,2]}\n" +
		"                     result     ← error 1\n" +
		"                     data       image/png 1 byte\n" +
		"                     state      gone removed\n" +
		"                     state      k = true\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestTreeText: roots with principal and turns, forks with fork point
// and own turns under their parent, the notes of a worker, an orphan and
// a cycle (the hint only on a tree's top line), every value escaped.
func TestTreeText(t *testing.T) {
	t.Parallel()
	root := &session.Node{Info: session.Info{ID: "r", Principal: "p\x1b", Branch: "main", Turns: 3, OwnTurns: 3}}
	a := &session.Node{Info: session.Info{ID: "a", ParentID: "r", ForkedAt: 2, Branch: "fork-1", Turns: 3, OwnTurns: 1, Kind: session.KindWorker}}
	b := &session.Node{Info: session.Info{ID: "b", ParentID: "r", ForkedAt: 1, Branch: "fork-2", Turns: 1, OwnTurns: 0}}
	c := &session.Node{Info: session.Info{ID: "c", ParentID: "a", ForkedAt: 3, Branch: "fork-3", Turns: 3}}
	root.Children, a.Children = []*session.Node{a, b}, []*session.Node{c}
	orphan := &session.Node{Info: session.Info{ID: "o", ParentID: "gone", Branch: "x", Turns: 1, Cycle: true}, ParentMissing: true}
	var out bytes.Buffer
	hint := func(n *session.Node) string { return ": hint for " + n.ID }
	if err := render.TreeText(&out, []*session.Node{root, orphan}, hint); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"r  main  p\\x1b  3 turns\n" +
		"├── a  fork-1  @2  +1 turn (3 in all)  worker\n" +
		"│   └── c  fork-3  @3  +0 turns (3 in all)\n" +
		"└── b  fork-2  @1  +0 turns (1 in all)\n" +
		"o  x    1 turn  ORPHAN: parent gone is missing  CYCLE: hint for o\n"
	if got := out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	j, err := json.Marshal(render.NewNode(b))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(j), `{"id":"b","principal":"","parent":"r","forked_at":1,"branch":"fork-2","kind":"","own_turns":0,"turns":1,"created":"0001-01-01T00:00:00Z","tags":[],"children":[]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestSessions: a TAGS column only when a session listed has tags; a
// root's parent and fork point "-".
func TestSessions(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)
	infos := []session.Info{
		{ID: "f", Principal: "p", ParentID: "r", ForkedAt: 2, Branch: "fork-1", Kind: session.KindBranch, OwnTurns: 1, Turns: 3, Created: at},
		{ID: "r", Principal: "p", Branch: "main", Kind: session.KindMain, OwnTurns: 2, Turns: 2, Created: at},
	}
	var b bytes.Buffer
	if err := render.Sessions(&b, infos); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID  PRINCIPAL  PARENT  FORK  BRANCH  KIND    OWN  TOTAL  CREATED\n" +
		"f   p          r       2     fork-1  branch  1    3      2026-11-28T01:02:03Z\n" +
		"r   p          -       -     main    main    2    2      2026-11-28T01:02:03Z\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	infos[1].Tags = []string{"a", "b\x07"}
	b.Reset()
	if err := render.Sessions(&b, infos); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(b.String(), "\n"); !strings.HasSuffix(lines[0], "TAGS") || !strings.HasSuffix(lines[1], " -") || !strings.HasSuffix(lines[2], ` a,b\x07`) {
		t.Errorf("got\n%s\nwant a TAGS column, - for no tags", b.String())
	}
}

// TestTerms: audit cells and JSON values of RDF terms.
func TestTerms(t *testing.T) {
	t.Parallel()
	n, _ := rdf.NewLiteral(42)
	yes, _ := rdf.NewLiteral(true)
	when, _ := rdf.NewLiteral(time.Date(2026, 11, 28, 1, 2, 3, 500, time.UTC))
	long, _ := rdf.NewLiteral(strings.Repeat("x", 70) + "\n")
	iri, _ := rdf.NewIRI("https://w3id.org/trails/id/activity/deletion/1")
	tests := []struct {
		name string
		term rdf.Term
		cell string
		json any
	}{
		{"integer", n, "42", 42},
		{"boolean", yes, "true", true},
		{"time", when, "2026-11-28T01:02:03.000Z", when.String()},
		{"long", long, strings.Repeat("x", 59) + "…", long.String()},
		{"own IRI", iri, "activity/deletion/1", iri.String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render.Cell(tt.term); got != tt.cell {
				t.Errorf("Cell: got %q, want %q", got, tt.cell)
			}
			if got := render.TermJSON(tt.term); got != tt.json {
				t.Errorf("TermJSON: got %#v, want %#v", got, tt.json)
			}
		})
	}
	if got := render.Cell(nil); got != "-" {
		t.Errorf("Cell(nil): got %q, want -", got)
	}
}

// TestHeader: the labelled lines of a shown session's fork record, tags,
// anchors, merges and values; a default fork record prints nothing.
func TestHeader(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	render.ForkRecordText(&b, &render.ForkRecord{Type: "explicit", CreatedBy: "user"})
	render.ForkRecordText(&b, nil)
	render.ForkRecordText(&b, &render.ForkRecord{Type: "retry", CreatedBy: "agent", Turn: "t1", Reason: "two\nlines"})
	s := &session.Session{ID: "s", Anchors: map[string]session.Anchor{"plan": {Name: "plan", Index: 2, Session: "p", State: map[string]string{"k": "v"}}}}
	render.TagsAndAnchors(&b, session.Info{Tags: []string{"x", "y"}}, s)
	render.Merges(&b, []session.MergeRecord{{Index: 4, Child: "c", Status: "success", First: 3, Last: 3,
		Artifacts: []session.Artifact{{IRI: "urn:a"}, {Text: "t\x1b"}}}})
	render.Values(&b, map[string]json.RawMessage{"b": json.RawMessage(`{ "x": 1 }`), "a": json.RawMessage(`"z"`)})
	want := "" +
		"fork      retry, created by agent, before turn t1\n" +
		"reason    two\n" +
		"          lines\n" +
		"tags      x, y (not signed)\n" +
		"anchor    plan at 2, named by p {\"k\":\"v\"} (not signed)\n" +
		"merge     turn 4: success, fork c turns 3-3, <urn:a>, \"t\\x1b\"\n" +
		"values    a = \"z\"\n" +
		"values    b = {\"x\":1}\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
