package appendhint_test

import (
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/appendhint"
)

// TestDecodeGroup: a group hint reads only when its spans lie in the
// text, after the prologue and in order, and each append's spans lie in
// its member's; Update gives a member's text with the prologue.
func TestDecodeGroup(t *testing.T) {
	text := "PREFIX p: <urn:p>\nINSERT DATA { GRAPH <urn:g> { <urn:a> p:b 1 } }\n;\nGRAPH <urn:s> { <urn:x> p:y 2 . } WHERE-BODY"
	pro := strings.Index(text, "INSERT")
	second := strings.Index(text, "GRAPH <urn:s>")
	cond := strings.Index(text, "WHERE-BODY")
	app := &appendhint.Hint{Session: "urn:s", Ack: "urn:ack", Cond: [2]int{cond, len(text)}, Data: [2]int{second, cond - 1}, Own: 1, NewOwn: 2}
	good := appendhint.Group{Prologue: pro, Gate: "urn:gate", Receipt: "urn:r", Drop: []string{"urn:old"}, Members: []appendhint.Member{
		{Span: [2]int{pro, second - 3}},
		{Span: [2]int{second, len(text)}, Ack: "urn:ack", Append: app},
	}}
	g, err := appendhint.DecodeGroup(good.Encode(), text)
	if err != nil {
		t.Fatalf("a good group: %v", err)
	}
	if u := g.Update(text, g.Members[0]); u != "PREFIX p: <urn:p>\nINSERT DATA { GRAPH <urn:g> { <urn:a> p:b 1 } }" {
		t.Errorf("the first member's update: %q", u)
	}
	bad := func(name string, change func(*appendhint.Group)) {
		t.Helper()
		b := good
		b.Members = append([]appendhint.Member(nil), good.Members...)
		a := *app
		b.Members[1].Append = &a
		change(&b)
		if _, err := appendhint.DecodeGroup(b.Encode(), text); err == nil {
			t.Errorf("%s: read, want an error", name)
		}
	}
	bad("no gate", func(g *appendhint.Group) { g.Gate = "" })
	bad("no members", func(g *appendhint.Group) { g.Members = nil })
	bad("a member in the prologue", func(g *appendhint.Group) { g.Members[0].Span[0] = 0 })
	bad("members out of order", func(g *appendhint.Group) { g.Members[0], g.Members[1] = g.Members[1], g.Members[0] })
	bad("a member past the text", func(g *appendhint.Group) { g.Members[1].Span[1] = len(text) + 1 })
	bad("an append without its ack", func(g *appendhint.Group) { g.Members[1].Ack = "" })
	bad("an append's data outside its member", func(g *appendhint.Group) { g.Members[1].Append.Data = [2]int{pro, second} })
	bad("a gate with a bracket", func(g *appendhint.Group) { g.Gate = "urn:gate> <urn:x" })
	if _, err := appendhint.DecodeGroup("{", text); err == nil {
		t.Error("broken JSON: read, want an error")
	}
}
