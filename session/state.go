package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// State is the lifecycle state of a session (design note 002). A session starts
// active; it may be suspended and resumed, and it ends completed, failed or
// expired, which are terminal: the state no longer changes and Persist
// appends no turn (a fork of an ended session is allowed, and starts
// active). The store keeps it as trails:state in the session's graph; a
// session stored without one is active.
type State string

// The states of a session.
const (
	// StateActive: the session is being worked on. The default.
	StateActive State = "active"
	// StateSuspended: paused; it may become active again.
	StateSuspended State = "suspended"
	// StateCompleted: its work is done. Terminal.
	StateCompleted State = "completed"
	// StateFailed: its work failed. Terminal.
	StateFailed State = "failed"
	// StateExpired: its time to live ended before it did (the operators'
	// Expire, package admin). Terminal.
	StateExpired State = "expired"
)

// States returns every state, in lifecycle order, in a new slice on each
// call.
func States() []State {
	return []State{StateActive, StateSuspended, StateCompleted, StateFailed, StateExpired}
}

// Terminal reports whether s is a state a session never leaves: completed,
// failed or expired.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateExpired
}

// valid reports whether s is one of States().
func (s State) valid() bool { return slices.Contains(States(), s) }

// CanBecome reports whether a session in state s may move to state to:
// active to suspended, completed, failed or expired; suspended to active,
// completed, failed or expired; nothing out of a terminal state. A state
// does not "become" itself (SetState treats that as no change).
func (s State) CanBecome(to State) bool {
	switch s {
	case StateActive:
		return to == StateSuspended || to.Terminal()
	case StateSuspended:
		return to == StateActive || to.Terminal()
	}
	return false
}

// Transition is what a SetState did.
type Transition struct {
	Session  string
	From, To State
	// Changed is false when the session was in state To already: nothing
	// was written.
	Changed bool
	// Activity is the IRI of the trails:StateChange PROV record of the
	// change ("" when nothing changed), Time its start.
	Activity string
	Time     time.Time
	// Flagged holds the ids of the descendants this change flagged for
	// cancellation (trails:cancelRequested), sorted: those active or
	// suspended when the session became completed, failed or expired.
	Flagged []string
}

// StateOptions qualify a SetState. The zero value records no reason and
// the default principal.
type StateOptions struct {
	// Reason says why the state changes, in words, on the PROV record
	// (trails:reason).
	Reason string
	// By names the principal who changes the state, for the PROV record
	// (default: the principal of a Store scoped with ForPrincipal, else
	// the session's own).
	By string
}

// The queries of the lifecycle, read once.
var (
	uSetState     = query("set-state.ru")
	uSetExpiry    = query("set-expiry.ru")
	qStateApplied = query("state-applied.rq")
)

// SetState moves stored session id to state to, in one SPARQL Update that
// also writes the change's PROV record (a trails:StateChange activity: the
// session, the states left and entered, who, when, and the reason
// opts give). The update is a compare and swap on the state SetState
// read: of two concurrent SetStates one applies, and the other reads the
// state again and decides anew (no change when the winner set the same
// state, ErrState when the winner's state does not allow its own).
//
// When to is completed, failed or expired, the same update flags every
// descendant of the session (forks, their forks, ...; whatever their
// principal) that is active or suspended for cancellation: it sets their
// trails:cancelRequested, which Load and Info read (CancelRequested) and
// List(CancelPending()) lists. Ending their work is the agent runtime's
// job. Setting the state the session is in already changes nothing and is
// not an error (Transition.Changed is false), so a retried SetState is
// harmless.
//
// It returns ErrInvalid for a bad id, an unknown state or a reason or
// principal that is not UTF-8 (nothing is sent); ErrNotFound when the
// session is not stored (or not visible to a Store scoped to a principal);
// ErrState, naming both states, when the session's state cannot become to
// (see State.CanBecome; nothing is written); ErrConflict when the state
// kept changing under it; or a store error wrapping the kg error. After a
// store error the state may have changed all the same (Info tells) only
// when an update's answer was lost and the store could not be reached to
// fence it, or the context ended while the update waited in a batch: a
// lost answer is otherwise followed by a fence (the request can no longer
// apply) and a read of what was stored.
func (st *Store) SetState(ctx context.Context, id string, to State, opts StateOptions) (_ Transition, err error) {
	ctx, call := telemetry.Start(ctx, "session.SetState", id)
	defer func() { call.End(err) }()
	tr, err := st.setState(ctx, id, to, opts)
	if err != nil {
		return Transition{}, fmt.Errorf("set state %s to %s: %w", shownID(id), termsafe.Cut(string(to), termsafe.MaxQuoted), err)
	}
	return tr, nil
}

func (st *Store) setState(ctx context.Context, id string, to State, opts StateOptions) (Transition, error) {
	if err := checkID(id); err != nil {
		return Transition{}, err
	}
	if !to.valid() {
		return Transition{}, fmt.Errorf("%w: unknown state %s (want one of %s)", ErrInvalid, termsafe.Quote(string(to)), stateList())
	}
	if !utf8.ValidString(opts.Reason) || !utf8.ValidString(opts.By) {
		return Transition{}, fmt.Errorf("%w: reason or principal is not valid UTF-8", ErrInvalid)
	}
	g := sessionIRI(id)
	for range maxPersistRounds {
		in, err := st.Info(ctx, id)
		if err != nil {
			return Transition{}, err
		}
		tr := Transition{Session: id, From: in.State, To: to}
		if in.State == to {
			return tr, nil
		}
		if !in.State.CanBecome(to) {
			return Transition{}, stateError(in.State, to)
		}
		principal := opts.By
		if principal == "" {
			principal = firstOf(st.scope, in.Principal)
		}
		tr.Time = st.now()
		act := prov.NewStateChangeActivity()
		var d kg.Data
		d.Add(g, g, iri(ontology.State), kg.String(string(to)))
		prov.AddStateChange(&d, act, prov.StateChange{Session: id, From: string(in.State), To: string(to),
			Principal: principal, Time: tr.Time, Reason: opts.Reason})
		u, err := withData("set-state", uSetState, &d, kg.Params{
			"s": g, "from": kg.String(string(in.State)), "to": kg.String(string(to)), "act": act,
		})
		if err != nil {
			return Transition{}, err
		}
		if _, err := st.commit(ctx, write{update: u}); err != nil { // the query below tells whether it applied
			return Transition{}, err
		}
		applied, err := st.stateApplied(ctx, []rdf.IRI{act})
		if err != nil {
			return Transition{}, err
		}
		if flagged, ok := applied[act.String()]; ok {
			tr.Changed, tr.Activity, tr.Flagged = true, act.String(), flagged
			return tr, nil
		}
		// Another writer changed the state first: read it again.
	}
	return Transition{}, fmt.Errorf("%w: the state kept changing under this writer", ErrConflict)
}

// firstOf returns the first of its arguments that is not "".
func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// stateError is ErrState for a move from one state to another.
func stateError(from, to State) error {
	if from.Terminal() {
		return fmt.Errorf("%w: the session is %s, a terminal state; it cannot become %s", ErrState, from, to)
	}
	return fmt.Errorf("%w: a %s session cannot become %s", ErrState, from, to)
}

// stateList returns the states as text, for messages.
func stateList() string {
	states := States()
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// ParseState returns the State named s. It returns ErrInvalid for a name
// that is not one of States().
func ParseState(s string) (State, error) {
	if st := State(s); st.valid() {
		return st, nil
	}
	return "", fmt.Errorf("%w: unknown state %s (want one of %s)", ErrInvalid, termsafe.Quote(s), stateList())
}

// StateChanges returns which of the trails:StateChange activities acts
// (IRIs) are stored, each with the ids of the sessions it flagged for
// cancellation (sorted), in one query, whatever their principal: how a
// writer of conditional state changes (the operators' Expire, package
// admin) learns which applied. It takes the client, not a Store. It
// returns a store error wrapping the kg error.
func StateChanges(ctx context.Context, c Querier, acts []rdf.IRI) (_ map[string][]string, err error) {
	ctx, call := telemetry.Start(ctx, "session.StateChanges", "")
	defer func() { call.End(err) }()
	return NewStore(c).stateApplied(ctx, acts)
}

// stateApplied returns which of the StateChange activities acts are
// stored, each with the ids of the sessions it flagged (sorted).
func (st *Store) stateApplied(ctx context.Context, acts []rdf.IRI) (map[string][]string, error) {
	rows := make([][]rdf.Term, len(acts))
	for i, a := range acts {
		rows[i] = []rdf.Term{a}
	}
	q, err := kg.BindTables(qStateApplied, nil, map[string]kg.Table{"acts": {Vars: []string{"act"}, Rows: rows}})
	if err != nil {
		return nil, fmt.Errorf("state-applied: %w", err)
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	applied := make(map[string][]string, len(res.Solutions))
	for _, row := range res.Solutions {
		a := row.String("act")
		flagged := applied[a]
		if d := row.String("d"); d != "" {
			flagged = append(flagged, ontology.SessionID(d))
		}
		applied[a] = flagged
	}
	for a, f := range applied {
		slices.Sort(f)
		applied[a] = slices.Compact(f)
	}
	return applied, nil
}

// SetExpiry sets when stored session id expires (trails:expiresAt), or
// clears it when t is zero: Expire marks the session expired once t has
// passed. Only an active or suspended session's expiry changes.
//
// On Fuseki and Oxigraph the update fails when the session is not active
// or suspended, so that its answer says whether it applied; when the
// answer is lost, SetExpiry fences the request (it can no longer apply)
// before reading the session back. Another writer may change the expiry
// right after it: the last one stands.
//
// It returns ErrInvalid for a bad id or a time outside years 0000 to 9999
// (kg.CheckTime; nothing is sent); ErrNotFound when
// the session is not stored (or not visible to a Store scoped to a
// principal); ErrState when the session is completed, failed or expired
// (the expiry did not change); ErrConflict when the session changed while
// its expiry was being set, or when another writer (a SetExpiry racing
// it) replaced the expiry before SetExpiry read it back (the expiry is
// then that writer's: read it again with Info); or a store error wrapping the kg error, after
// which the expiry did not change, unless the store could not be reached
// to fence the request: Info tells.
func (st *Store) SetExpiry(ctx context.Context, id string, t time.Time) (err error) {
	ctx, call := telemetry.Start(ctx, "session.SetExpiry", id)
	defer func() { call.End(err) }()
	if err := st.setExpiry(ctx, id, t); err != nil {
		return fmt.Errorf("set expiry %s: %w", shownID(id), err)
	}
	return nil
}

func (st *Store) setExpiry(ctx context.Context, id string, t time.Time) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := kg.CheckTime(t); err != nil && !t.IsZero() {
		return fmt.Errorf("%w: expiry: %w", ErrInvalid, err)
	}
	in, err := st.Info(ctx, id)
	if err != nil {
		return err
	}
	if in.State.Terminal() {
		return fmt.Errorf("%w: the session is %s; its expiry no longer matters", ErrState, in.State)
	}
	g := sessionIRI(id)
	var d kg.Data
	t = t.UTC().Truncate(time.Millisecond)
	if !t.IsZero() {
		d.Add(g, g, iri(ontology.ExpiresAt), kg.DateTime(t))
	}
	ack, acks := st.ackGraph()
	if acks {
		d.Add(ack, ack, ack, ack) // written only if the session is stored, active or suspended
	}
	u, err := withData("set-expiry", uSetExpiry, &d, kg.Params{"s": g})
	if err != nil {
		return err
	}
	if !acks {
		return st.setExpiryAsked(ctx, id, u, t)
	}
	// Sent once, failing when its condition does not hold (acked), so
	// that its answer says whether it applied; its ack graph is its gate.
	err = st.c.Update(ctx, u+acked(ack)+gateOps(ack))
	switch {
	case err == nil:
		return nil
	case unsettled(err, false):
		if ok, serr := st.settle(ctx, ack, write{}, err); !ok {
			return serr // not fenced: it may have applied, or may still
		}
		after, ierr := st.Info(ctx, id)
		if ierr != nil {
			return ierr
		}
		if after.ExpiresAt.Equal(t) {
			return nil
		}
		return err // fenced: it did not apply (or was overwritten since), and never will
	}
	var ke *kg.Error
	if !errors.As(err, &ke) || ke.Status < 500 {
		return err // the store refused the request itself (credentials, ...)
	}
	// Refused and rolled back: the session ended, or is gone.
	after, err := st.Info(ctx, id)
	if err != nil {
		return err
	}
	if after.State.Terminal() {
		return fmt.Errorf("%w: the session became %s meanwhile", ErrState, after.State)
	}
	return fmt.Errorf("%w: the session changed while its expiry was being set; retry", ErrConflict)
}

// setExpiryAsked is setExpiry on a store without ack graphs: it sends
// update u and reads the session back.
func (st *Store) setExpiryAsked(ctx context.Context, id, u string, t time.Time) error {
	if err := st.c.Update(ctx, u, kg.Idempotent()); err != nil {
		return err
	}
	after, err := st.Info(ctx, id)
	if err != nil {
		return err
	}
	if after.State.Terminal() {
		return fmt.Errorf("%w: the session became %s meanwhile", ErrState, after.State)
	}
	if !after.ExpiresAt.Equal(t) {
		return fmt.Errorf("%w: another writer set the expiry meanwhile", ErrConflict)
	}
	return nil
}

// cancelPending keeps the infos of CancelPending.
func cancelPending(infos []Info) []Info {
	return slices.DeleteFunc(infos, func(in Info) bool { return !in.CancelRequested || in.State.Terminal() })
}

// addExpiry adds to d the expiry of new session s created at t, when it
// has a TTL, and sets s.ExpiresAt.
func addExpiry(d *kg.Data, s *Session, t time.Time) {
	if s.TTL <= 0 {
		return
	}
	s.ExpiresAt = t.Add(s.TTL).UTC().Truncate(time.Millisecond)
	g := sessionIRI(s.ID)
	d.Add(g, g, iri(ontology.ExpiresAt), kg.DateTime(s.ExpiresAt))
}

// appendable returns ErrState when the state row of Persist (state.rq)
// says the session is in a terminal state: no turn may be appended.
func appendable(row kg.Solution) error {
	if s := State(row.String("state")); s.Terminal() {
		return fmt.Errorf("%w: the session is %s; no turn may be appended (fork it to go on)", ErrState, s)
	}
	return nil
}
