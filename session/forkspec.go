package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// The fork's planning: what its options asked for (forkSpec) and the
// fork point they name, in memory (position) or read from the store
// (forkPoint).

// forkSpec is what the options of a Fork asked for: a position other than
// an index, and the metadata Persist records with the fork.
type forkSpec struct {
	anchor, turn       string // ForkAtAnchor, ForkAtTurn
	hasAnchor, hasTurn bool
	inv, event         string // ForkBeforeInvocation, ForkAfterEvent
	hasInv, hasEvent   bool
	typ                ForkType
	creator            Creator
	reason             string
	nextSteps, summary string
	err                error                                           // the first option value that cannot be used
	parentOK           func(principal, app string, tags []string) bool // ForkIf

	// Set by position: the IRIs of the anchor or turn forked at.
	anchorIRI, turnIRI string
}

// spec returns the forkSpec of new fork s, made on first use.
func (s *Session) spec() *forkSpec {
	if s.fork == nil {
		s.fork = &forkSpec{}
	}
	return s.fork
}

// fail keeps the first error of an option.
func (f *forkSpec) fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

// position returns the fork point of a fork of parent asked for with index
// at and the options in f (nil: no options). A position option needs at to
// be -1.
func (f *forkSpec) position(parent *Session, at int) (int, error) {
	if f == nil {
		return at, nil
	}
	if f.err != nil {
		return 0, f.err
	}
	if err := f.check(at); err != nil {
		return 0, err
	}
	switch {
	case f.hasAnchor:
		a, ok := parent.Anchors[f.anchor]
		if !ok {
			return 0, fmt.Errorf("%w: no anchor named %s in the session's history", ErrNotFound, termsafe.Quote(f.anchor))
		}
		owner := a.Session
		if owner == "" {
			owner = parent.ID
		}
		f.anchorIRI = ontology.AnchorIRI(ontology.SessionIRI(owner), a.Name)
		return a.Index, nil
	case f.hasTurn, f.hasInv, f.hasEvent:
		for k, t := range parent.Turns {
			if !f.matches(t) {
				continue
			}
			if f.hasEvent {
				if k+1 < len(parent.Turns) {
					f.turnIRI = parent.Turns[k+1].ID
				}
				return t.Index + 1, nil
			}
			if _, err := kg.IRI(t.ID); err != nil {
				return 0, fmt.Errorf("%w: turn id %s: %v", ErrInvalid, termsafe.Quote(t.ID), err)
			}
			f.turnIRI = t.ID
			return t.Index, nil
		}
		return 0, f.notFound()
	}
	return at, nil
}

// check returns ErrInvalid for options that cannot go together: two
// positions, or a position beside an index other than -1.
func (f *forkSpec) check(at int) error {
	if f.err != nil {
		return f.err
	}
	n := 0
	for _, has := range []bool{f.hasAnchor, f.hasTurn, f.hasInv, f.hasEvent} {
		if has {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("%w: more than one of ForkAtAnchor, ForkAtTurn, ForkBeforeInvocation and ForkAfterEvent given", ErrInvalid)
	case n == 1 && at != -1:
		return fmt.Errorf("%w: index %d given beside a position option (ForkAtAnchor, ForkAtTurn, ...); give -1", ErrInvalid, at)
	}
	return nil
}

// matches reports whether turn t is the one a ForkAtTurn,
// ForkBeforeInvocation or ForkAfterEvent of f names.
func (f *forkSpec) matches(t Turn) bool {
	switch {
	case f.hasTurn:
		return t.ID == f.turn && t.ID != ""
	case f.hasInv:
		return t.Structure != nil && t.Structure.InvocationID == f.inv
	case f.hasEvent:
		return t.Structure != nil && t.Structure.EventID == f.event
	}
	return false
}

// notFound is the error of a position option that names no turn of the
// history.
func (f *forkSpec) notFound() error {
	switch {
	case f.hasInv:
		return fmt.Errorf("%w: no turn of invocation %s in the session's history", ErrNotFound, termsafe.Quote(f.inv))
	case f.hasEvent:
		return fmt.Errorf("%w: no turn with event id %s in the session's history", ErrNotFound, termsafe.Quote(f.event))
	}
	return fmt.Errorf("%w: no turn with id %s in the session's history", ErrNotFound, termsafe.Quote(f.turn))
}

// describe adds what f asked to record to the PROV record of the fork.
func (f *forkSpec) describe(r *prov.Fork) {
	if f == nil {
		return
	}
	r.Type, r.CreatedBy = string(f.typ), string(f.creator)
	r.Reason, r.NextSteps, r.ContextSummary = f.reason, f.nextSteps, f.summary
	r.Anchor, r.Turn = f.anchorIRI, f.turnIRI
}

// The queries of Store.Fork, read once.
var (
	qForkPoint        = query("fork-point.rq")
	qForkAtTurn       = query("fork-at-turn.rq")
	qForkAtInvocation = query("fork-at-invocation.rq")
	qForkAtEvent      = query("fork-at-event.rq")
)

// positioned reports whether f (nil: no options) names the fork point by
// an option instead of an index.
func (f *forkSpec) positioned() bool {
	return f != nil && (f.hasAnchor || f.hasTurn || f.hasInv || f.hasEvent)
}

// point is what fork-point.rq found: the fork point, the IRI of the
// turn at it ("" at the history's end), the chain digest of the turn
// before it ("" at 0, or stored before the hash chain), and the last
// change of each state key below it.
type point struct {
	at     int
	next   string
	digest string
	values []valueChange
}

// forkPoint reads, for a fork of the history spans at index at or at
// the position f names, what the fork needs of it (fork-point.rq).
func (st *Store) forkPoint(ctx context.Context, spans []span, f *forkSpec, at int) (point, error) {
	pos, params := "BIND($at AS ?at)", kg.Params{"at": kg.Int(at)}
	switch {
	case f == nil || f.hasAnchor:
	case f.hasTurn:
		t, err := kg.IRI(f.turn)
		if err != nil {
			return point{}, fmt.Errorf("%w: turn id %s: %v", ErrInvalid, termsafe.Quote(f.turn), err)
		}
		pos, params = qForkAtTurn, kg.Params{"turn": t}
	case f.hasInv:
		pos, params = qForkAtInvocation, kg.Params{"inv": kg.String(f.inv)}
	case f.hasEvent:
		pos, params = qForkAtEvent, kg.Params{"event": kg.String(f.event)}
	}
	rows := make([][]rdf.Term, len(spans))
	for k, sp := range spans {
		rows[k] = []rdf.Term{kg.MustIRI(sp.l.iri), kg.Int(sp.lo), kg.Int(sp.hi)}
	}
	q, err := kg.BindTables(strings.ReplaceAll(qForkPoint, "#POSITION", pos), params,
		map[string]kg.Table{"ranges": {Vars: []string{"s", "lo", "hi"}, Rows: rows}})
	if err != nil {
		return point{}, fmt.Errorf("fork-point: %w", err)
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return point{}, err
	}
	pt, found, base := point{}, false, false
	for _, row := range res.Solutions {
		switch {
		case row["key"] != nil:
			i, err := row.Int("i")
			if err != nil || i < 0 {
				return point{}, fmt.Errorf("%w: state change of turn %s", ErrCorrupt, termsafe.Quote(row.String("i")))
			}
			c, err := readValueChange(row, "", 2*i+1)
			if err != nil {
				return point{}, err
			}
			pt.values = append(pt.values, c)
		case row["base"] != nil:
			base, pt.digest = true, row.String("digest")
		case row["next"] != nil:
			pt.next = row.String("next")
		case row["at"] != nil:
			if pt.at, err = row.Int("at"); err != nil {
				return point{}, fmt.Errorf("%w: fork point %s", ErrCorrupt, termsafe.Quote(row.String("at")))
			}
			found = true
		}
	}
	switch {
	case !found && f.positioned():
		return point{}, f.notFound()
	case !found:
		return point{}, fmt.Errorf("%w: no fork point found", ErrCorrupt)
	case pt.at > 0 && !base:
		return point{}, fmt.Errorf("%w: the parent's history has no turn %d (rewound meanwhile?)", ErrConflict, pt.at-1)
	}
	return pt, nil
}
