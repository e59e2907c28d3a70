package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// How Load reads the state (Session.Values): from the chain query, the
// structure query and, for a tail, the values query.

// readValueChange reads a change from a row's columns key, value and
// removed, with prefix (e.g. "i": ?ikey ?ivalue ?iremoved).
func readValueChange(row kg.Solution, prefix string, pos int) (valueChange, error) {
	c := valueChange{pos: pos, key: row.String(prefix + "key")}
	if o, ok := row[prefix+"value"]; ok {
		lit, isLit := o.(rdf.Literal)
		if !isLit || lit.DataType.String() != ontology.RDFJSON {
			return c, fmt.Errorf("%w: the value of key %s is not an rdf:JSON literal", ErrCorrupt, termsafe.Quote(c.key))
		}
		c.value = json.RawMessage(lit.String())
	} else if row.String(prefix+"removed") != "true" {
		return c, fmt.Errorf("%w: key %s has neither a value nor trails:removed", ErrCorrupt, termsafe.Quote(c.key))
	}
	return c, nil
}

// chainValues gathers the state rows of chain.rq: the values each
// session starts with (?ikey ?ivalue ?iremoved, by ?s) and the shared
// values (?svkey ?svvalue).
type chainValues struct {
	initial map[string][]valueChange
	shared  map[string]json.RawMessage
}

// add reads row if it is a state row, and reports whether it was one.
func (v *chainValues) add(row kg.Solution) (bool, error) {
	if _, ok := row["svkey"]; ok {
		c, err := readValueChange(row, "sv", 0)
		if err != nil {
			return true, err
		}
		v.shared = applyDelta(v.shared, map[string]json.RawMessage{c.key: c.value})
		return true, nil
	}
	if _, ok := row["ikey"]; !ok {
		return false, nil
	}
	c, err := readValueChange(row, "i", 0) // its position is set once the session's fork point is known
	if err != nil {
		return true, fmt.Errorf("session %s: %w", ontology.SessionID(row.String("s")), err)
	}
	c.iri, c.at = row.String("ic"), -1
	_, c.copy = row["icopy"]
	if _, ok := row["iat"]; ok {
		if c.at, err = row.Int("iat"); err != nil || c.at < 0 {
			return true, fmt.Errorf("%w: session %s: trails:atIndex %s", ErrCorrupt, ontology.SessionID(row.String("s")), termsafe.Quote(row.String("iat")))
		}
	}
	if v.initial == nil {
		v.initial = make(map[string][]valueChange)
	}
	s := row.String("s")
	v.initial[s] = append(v.initial[s], c)
	return true, nil
}

// deltaRow gathers the rows of one stored change of a turn.
type deltaRow struct {
	key, value     string
	hasKey, hasVal bool
	removed        bool
}

// addChange reads a value of the state change at IRI x of the turn at
// position i: its key, value or removal mark (v.p).
func (r *structureRows) addChange(i int, x string, v stored) error {
	c := entry(&r.changes, i, x)
	var err error
	switch v.p {
	case ontology.Key:
		c.key, err = v.text(ontology.XSDString)
		c.hasKey = true
	case ontology.Value:
		c.value, err = v.text(ontology.RDFJSON)
		c.hasVal = true
	case ontology.Removed:
		var s string
		s, err = v.text(ontology.XSDBoolean)
		c.removed = s == "true" || s == "1"
	}
	return err
}

// doneChanges puts the changes read on their turns' Delta.
func (r *structureRows) doneChanges() error {
	for i, byIRI := range r.changes {
		t := &r.turns[i]
		for x, c := range byIRI {
			if !c.hasKey || c.hasVal == c.removed {
				return fmt.Errorf("%w: turn %d (%s): state change %s needs a key and either a value or trails:removed", ErrCorrupt, t.Index, t.ID, termsafe.Quote(x))
			}
			if structure(t).Delta == nil {
				t.Structure.Delta = make(map[string]json.RawMessage)
			}
			if _, dup := t.Structure.Delta[c.key]; dup {
				return fmt.Errorf("%w: turn %d (%s): key %s changed twice", ErrCorrupt, t.Index, t.ID, termsafe.Quote(c.key))
			}
			var v json.RawMessage
			if c.hasVal {
				v = json.RawMessage(c.value)
			}
			t.Structure.Delta[c.key] = v
		}
	}
	return nil
}

// qValues reads, for a tail, the last change of each key before it.
var qValues = query("values.rq")

// readValues returns the last change of each session-scope key among the
// turns of spans.
func (st *Store) readValues(ctx context.Context, spans []span) ([]valueChange, error) {
	if len(spans) == 0 {
		return nil, nil
	}
	q, err := kg.BindTables(qValues, nil, map[string]kg.Table{"ranges": rangeTable(spans)})
	if err != nil {
		return nil, err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]valueChange, 0, len(res.Solutions))
	for _, row := range res.Solutions {
		if err := staleRow(row); err != nil {
			return nil, err
		}
		i, err := row.Int("i")
		if err != nil || i < 0 {
			return nil, fmt.Errorf("%w: state change of turn %s", ErrCorrupt, termsafe.Quote(row.String("i")))
		}
		c, err := readValueChange(row, "", 2*i+1)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// spansBelow returns spans cut to the indices below n.
func spansBelow(spans []span, n int) []span {
	var out []span
	for _, sp := range spans {
		if sp.hi < 0 || sp.hi > n {
			sp.hi = n
		}
		if sp.lo < sp.hi {
			out = append(out, sp)
		}
	}
	return out
}
