package appendhint

import (
	"encoding/json"
	"fmt"
	"strings"
)

// GroupKey is the key (kg.Hint) and record header name of a group hint:
// what a Store's group commit tells a replica's applier about the
// writes its one request carries.
const GroupKey = "trails-group"

// Group describes the update of a group commit (session's batch): a
// prologue, then each member's update followed by its receipt operations
// (for a member with an ack graph), the operations that drop the
// receipt graphs Drop, and the gate operations of Gate. Its effect is
// each member's update, applied or not on its own; for each applied
// member with an ack, its receipt (Receipt trails:applied Ack) in graph
// Receipt and its ack graph dropped; the graphs Drop emptied; and nothing
// at all when Gate is fenced.
type Group struct {
	Prologue int      `json:"prologue"` // the prologue: text[:Prologue]
	Gate     string   `json:"gate"`     // the request's gate
	Receipt  string   `json:"receipt"`  // the receipt graph, "" when no member has an ack
	Drop     []string `json:"drop"`     // the receipt graphs the request drops
	Members  []Member `json:"members"`
}

// Member is a write of a Group.
type Member struct {
	Span [2]int `json:"span"` // the member's update, without the prologue and its receipt operations: text[Span[0]:Span[1]]
	Ack  string `json:"ack"`  // its ack graph, "" for none
	// Append, when not nil, describes the member as a hint does a lone
	// append, its spans into the whole text: the applier may write it as
	// a conditional patch (Ask, Patch).
	Append *Hint `json:"append,omitempty"`
}

// Encode returns g as a header value.
func (g Group) Encode() string {
	b, err := json.Marshal(g)
	if err != nil {
		panic(err) // strings and ints only
	}
	return string(b)
}

// DecodeGroup reads the header value v of a record whose text is text,
// and checks that its spans lie in text after the prologue and in order,
// and that each append's hint reads.
func DecodeGroup(v, text string) (Group, error) {
	var g Group
	if err := json.Unmarshal([]byte(v), &g); err != nil {
		return Group{}, fmt.Errorf("group hint: %w", err)
	}
	if g.Prologue < 0 || g.Prologue > len(text) || g.Gate == "" || len(g.Members) == 0 {
		return Group{}, fmt.Errorf("group hint: no gate, no members, or a prologue of %d bytes in %d", g.Prologue, len(text))
	}
	at := g.Prologue
	for i, m := range g.Members {
		if m.Span[0] < at || m.Span[0] > m.Span[1] || m.Span[1] > len(text) {
			return Group{}, fmt.Errorf("group hint: member %d's span %v outside %d..%d", i, m.Span, at, len(text))
		}
		at = m.Span[1]
		if m.Append == nil {
			continue
		}
		if m.Ack == "" || m.Append.Ack != m.Ack {
			return Group{}, fmt.Errorf("group hint: member %d is an append without its ack", i)
		}
		for _, sp := range [][2]int{m.Append.Cond, m.Append.Data} {
			if sp[0] < m.Span[0] || sp[0] > sp[1] || sp[1] > m.Span[1] {
				return Group{}, fmt.Errorf("group hint: member %d's append span %v outside its span %v", i, sp, m.Span)
			}
		}
		if _, err := Decode(m.Append.Encode(), text); err != nil {
			return Group{}, fmt.Errorf("group hint: member %d: %w", i, err)
		}
	}
	for _, iri := range append([]string{g.Gate, g.Receipt}, g.Drop...) {
		if strings.ContainsAny(iri, " \n<>") {
			return Group{}, fmt.Errorf("group hint: an IRI %q with a space or a bracket", iri)
		}
	}
	return g, nil
}

// Update returns member m's update as a request of its own: the
// group's prologue and its text.
func (g Group) Update(text string, m Member) string {
	return text[:g.Prologue] + text[m.Span[0]:m.Span[1]]
}
