// Package appendhint is what a Trails writer tells a replica's applier
// about an append, beside the append's SPARQL Update: a hint (kg.Hint)
// that a *cluster.Client sends as a header of the update's record. With
// it the applier can decide the append's condition by reading, for a
// whole batch of records at once, and apply the append's data as data
// (INSERT DATA), which Fuseki takes several times faster than the
// conditional update (cluster's decided path). The update's text stays
// what every other store runs; an applier that cannot use a hint runs
// the text.
//
// The spans (Cond, Data) are byte offsets into the record's text, so
// that the hint does not carry the data twice: a router may append
// operations to the text (cluster.Sharded does), never change what the
// spans cover.
package appendhint

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trails-kg/trails/kg"
)

// Key is the hint's key (kg.Hint) and its record header's name.
const Key = "trails-append"

// Hint describes an append: append.ru (session/queries) bound for
// session Session, followed by the operations of its ack graph Ack
// (session's acked and gateOps), with no staged contents, no shared
// values and no receipt drops. When the update's condition holds, its
// whole effect is: the quads ownTurns Own and headDigest Head of the
// session are removed from its graph and the text's data (Data) is added;
// the ack graph is made and dropped within the request. Otherwise the
// request fails.
type Hint struct {
	Session string `json:"s"`    // the session's IRI, also its graph
	Ack     string `json:"ack"`  // the ack graph's IRI, also the write's gate
	Cond    [2]int `json:"cond"` // the update's WHERE clause body: text[Cond[0]:Cond[1]]
	Data    [2]int `json:"data"` // the quads the update adds, as quad pattern text (GRAPH <g> { ... } ...), the ack's quad left out: text[Data[0]:Data[1]]

	Own     int    `json:"own"`     // turns of its own the session holds before the append
	Head    string `json:"head"`    // their head digest
	Prev    string `json:"prev"`    // the chain digest the update expects of the last of them ("" when Own is 0)
	Gen     int    `json:"gen"`     // the rewinds the session has had
	ForkOf  string `json:"forkOf"`  // the parent's IRI, "" for a root
	ForkAt  int    `json:"forkAt"`  // the fork point, 0 for a root
	NewOwn  int    `json:"newOwn"`  // turns of its own after the append (more than Own)
	NewHead string `json:"newHead"` // their head digest
	Last    string `json:"last"`    // the chain digest of the last turn the append adds
}

// Encode returns h as a header value.
func (h Hint) Encode() string {
	b, err := json.Marshal(h)
	if err != nil {
		panic(err) // strings and ints only
	}
	return string(b)
}

// Decode reads the header value v of a record whose text is text, and
// checks that its spans lie in text, its data is quad pattern text and
// its counts can describe an append.
func Decode(v, text string) (Hint, error) {
	var h Hint
	if err := json.Unmarshal([]byte(v), &h); err != nil {
		return Hint{}, fmt.Errorf("append hint: %w", err)
	}
	for _, sp := range [][2]int{h.Cond, h.Data} {
		if sp[0] < 0 || sp[0] > sp[1] || sp[1] > len(text) {
			return Hint{}, fmt.Errorf("append hint: span %v outside a text of %d bytes", sp, len(text))
		}
	}
	if !strings.HasPrefix(text[h.Data[0]:h.Data[1]], "GRAPH ") || h.Cond[0] == h.Cond[1] {
		return Hint{}, fmt.Errorf("append hint: no data or no condition")
	}
	if h.Session == "" || h.Ack == "" || h.Own < 0 || h.NewOwn <= h.Own || h.ForkAt < 0 || h.Gen < 0 {
		return Hint{}, fmt.Errorf("append hint: not an append (%d turns to %d)", h.Own, h.NewOwn)
	}
	return h, nil
}

// Span returns text[sp[0]:sp[1]].
func Span(text string, sp [2]int) string { return text[sp[0]:sp[1]] }

// Where is the body of append.ru's WHERE clause, its parameters unbound
// ($s, $own, ...): what a hint's Cond span holds once bound by Params
// (session's tests check it against append.ru). An applier that finds
// the span so can send the condition as this template and its values.
const Where = `
  GRAPH $s { $s trails:ownTurns ?n ; trails:headDigest ?h }
  FILTER(?n = $own && ?h = $head)
  FILTER NOT EXISTS { GRAPH $s { ?pt trails:index $pi ; trails:digest ?pd } FILTER(?pd != $prev) }
  OPTIONAL { GRAPH $s { $s trails:rewinds ?k } }
  FILTER(COALESCE(?k, 0) = $gen)
  FILTER NOT EXISTS { GRAPH $s { $s trails:state ?st } FILTER(?st IN ("completed", "failed", "expired")) }
  OPTIONAL { GRAPH $s { $s trails:parentSession ?up } }
  OPTIONAL { GRAPH $s { $s trails:forkedAtIndex ?upAt } }
  FILTER(COALESCE(STR(?up), "") = $forkOf && COALESCE(?upAt, 0) = $forkAt)
  #STAGED
`

// Params returns the values that bind Where for the append h describes,
// as session binds append.ru. Of an append to a session holding no turn
// of its own the chain digest is not in the hint (Prev is ""): its
// binding may differ from the writer's ($pi is -1 then, and the
// condition does not read $prev), so a caller compares the bound text
// with the span.
func Params(h Hint) kg.Params {
	pi := -1
	if h.Own > 0 {
		pi = h.ForkAt + h.Own - 1
	}
	return kg.Params{"s": kg.MustIRI(h.Session), "own": kg.Int(h.Own), "head": kg.String(h.Head), "gen": kg.Int(h.Gen),
		"pi": kg.Int(pi), "prev": kg.String(h.Prev), "forkOf": kg.String(h.ForkOf), "forkAt": kg.Int(h.ForkAt)}
}
