package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
	"github.com/transparency-dev/formats/log"
)

// The kinds of finding Verify reports (VerifyFinding.Kind).
const (
	// VerifyEdited: a turn's stored fields no longer give its stored
	// trails:digest: edited after it was written, digests not recomputed.
	VerifyEdited = "edited"
	// VerifyReordered: a turn is at another index than the one its IRI
	// (and its digest) name: turns were moved.
	VerifyReordered = "reordered"
	// VerifyTruncated: the store's head is an older signed head of the
	// session's current history: its last turns are gone.
	VerifyTruncated = "truncated"
	// VerifyRollback: the store's head is a signed head the session had
	// before a later rewind: it was restored to an older state.
	VerifyRollback = "rollback"
	// VerifyRechained: the store's head is none the writer signed and its
	// turns' digests follow from their fields: edited, then re-chained.
	VerifyRechained = "rechained"
	// VerifyAhead: the store holds more turns than the last signed head,
	// which its history extends: turns written without a signature (by
	// someone without the key, or a write whose statement was lost).
	VerifyAhead = "unsigned-turns"
	// VerifyDeleted: a session the witness has heads for is not stored,
	// and no signed deletion follows its last head.
	VerifyDeleted = "deleted-unsigned"
	// VerifyResurrected: a session stored although its last signed
	// statement is its deletion.
	VerifyResurrected = "resurrected"
	// VerifyUnwitnessed: a stored session the witness has no trusted head
	// of.
	VerifyUnwitnessed = "unwitnessed"
	// VerifyForged: a witness entry no trusted key signed, or whose
	// signature does not verify.
	VerifyForged = "forged-entry"
	// VerifyKeyWindow: a witness entry signed by a trusted key for a time
	// outside the key's window (a retired key, or one not yet valid).
	VerifyKeyWindow = "key-outside-window"
)

// VerifyOptions say what Verify compares the store with.
type VerifyOptions struct {
	// Witness is the log of signed statements (witness.OpenDirReadOnly
	// for a local directory).
	Witness witness.Witness
	// Keys are the trusted keys: the witness's, for its checkpoints, and
	// the writers', each in its window.
	Keys *witness.KeyList
	// Trusted is a checkpoint of the witness seen before (nil: none, the
	// current one is trusted on first use); the witness must extend it.
	Trusted []byte
	// Sessions limits the findings to these sessions (nil: every session
	// stored or witnessed). The store is read whole all the same.
	Sessions []string
	// Mark writes, for each session in scope whose stored head is its
	// latest signed head, a mark in ontology.VerifiedGraph (its verified
	// turn count, head and chain digests, the entry and the time): what
	// the audit query "unverified" compares the store with.
	Mark bool
}

// VerifyFinding is one thing the store and the witness disagree on.
type VerifyFinding struct {
	Kind    string // VerifyEdited, VerifyTruncated, ...
	Session string // the session's id; "" when unknown (a forged entry with no statement)
	// Turn is the index of the turn concerned in the session's effective
	// history, -1 when none.
	Turn int
	// Entry is the index of the witness entry concerned, -1 when none.
	Entry int64
	// Message says what differs, in one sentence naming the session, the
	// turns and the signed head.
	Message string
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	// Checkpoint is the witness checkpoint verified against, signed by the
	// witness key: keep it, and pass it as VerifyOptions.Trusted next time.
	Checkpoint []byte
	// Size is the number of witness entries it covers.
	Size uint64
	// Sessions is the number of sessions in scope (stored, or named by a
	// trusted statement) but those deleted with a signed deletion, which
	// Deleted counts; Verified is the number whose stored head is their
	// latest signed head.
	Sessions, Verified, Deleted int
	// Findings, by session: first its witness entries that were not
	// taken, then what the comparison with the store found.
	Findings []VerifyFinding
	// Marked is the number of marks written (VerifyOptions.Mark).
	Marked int
}

// signedHead is a trusted statement about a session, where it is in the
// witness.
type signedHead struct {
	witness.Statement
	index uint64
}

// storedHeadOf is what the store holds of a session's head.
type storedHeadOf struct {
	own    int // -1 when the session has no trails:ownTurns
	head   string
	chain  string // the trails:digest of the turn at forkedAt+own-1
	at     int    // its fork point (0 for a root)
	hasOwn bool
}

var (
	qVerifySessions = query("verify-sessions.rq")
	qVerifyTurns    = query("verify-turns.rq")
	uVerifyMark     = query("verify-mark.ru")
)

// Verify compares the store with the signed statements of opts.Witness
// (issue 24, docs/verify.md): it audits the witness's checkpoint against
// opts.Trusted, reads every statement a trusted writer key signed in its
// window, and compares each session's stored head (turn count, head
// digest, and the chain digest of its last own turn) with its latest
// signed head (latest by the statement's time, then by its place in the
// log), after recomputing every stored turn's chain digest from its fields
// as Check does. It names, per session, an edited turn, a reorder, a
// truncation, a rollback to a head it had before a rewind, a re-chained
// session, turns added without a signature, a session deleted without a
// signed deletion, a deleted session stored again, and a session the
// witness never saw; and per witness entry, one no trusted key signed or
// one signed outside its key's window. With opts.Sessions, a session that
// is neither stored nor named by a trusted statement is session.ErrNotFound.
//
// It reads the whole dataset (every session's head and turns), then, for
// the sessions whose head is not their latest signed head, their turns'
// stored digests. It returns the errors of witness.Audit (the witness does
// not extend opts.Trusted: witness.ErrRollback, witness.ErrInconsistent;
// a checkpoint the witness key did not sign: witness.ErrUnknownKey), the
// witness's and the store's errors, and session.ErrInvalid when
// opts.Keys names no witness key or opts.Witness is nil.
func (ds *Dataset) Verify(ctx context.Context, opts VerifyOptions) (*VerifyReport, error) {
	if opts.Witness == nil || opts.Keys == nil || opts.Keys.Witness == nil {
		return nil, fmt.Errorf("verify: %w: a witness and a key list naming the witness key are needed", session.ErrInvalid)
	}
	signed, cp, err := witness.Audit(ctx, opts.Witness, opts.Keys.Witness, opts.Trusted)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	rep := &VerifyReport{Checkpoint: signed, Size: cp.Size}
	heads, entryFindings, err := readSigned(ctx, opts, cp)
	if err != nil {
		return nil, err
	}
	stored, err := ds.storedHeads(ctx)
	if err != nil {
		return nil, err
	}
	_, faults, err := ds.chainScan(ctx)
	if err != nil {
		return nil, err
	}
	edited := map[string][]ChainFault{}
	for _, f := range faults {
		edited[f.Session] = append(edited[f.Session], f)
	}

	scope := map[string]bool{}
	if opts.Sessions != nil {
		for _, id := range opts.Sessions {
			if _, ok := stored[id]; !ok && len(heads[id]) == 0 {
				return nil, fmt.Errorf("verify: %w: session %s is neither stored nor named by a trusted statement of the witness", session.ErrNotFound, id)
			}
			scope[id] = true
		}
	} else {
		for id := range stored {
			scope[id] = true
		}
		for id := range heads {
			scope[id] = true
		}
	}
	for _, f := range entryFindings {
		if opts.Sessions == nil || scope[f.Session] {
			rep.Findings = append(rep.Findings, f)
		}
	}
	// The sessions to look at more closely: their stored turns' digests.
	var closer []string
	for id := range scope {
		s, ok := stored[id]
		hs := heads[id]
		if !ok || len(hs) == 0 {
			continue
		}
		l := hs[len(hs)-1]
		if len(edited[id]) > 0 || l.Kind != witness.KindHead || !s.matches(l.Statement) {
			closer = append(closer, id)
		}
	}
	digests, err := ds.turnDigests(ctx, closer)
	if err != nil {
		return nil, err
	}
	var marks []signedHead
	for _, id := range slices.Sorted(maps.Keys(scope)) {
		s, ok := stored[id]
		fs, verified := judge(id, s, ok, heads[id], edited[id], digests[id])
		rep.Findings = append(rep.Findings, fs...)
		if hs := heads[id]; !ok && len(fs) == 0 && len(hs) > 0 && hs[len(hs)-1].Kind == witness.KindDeletion {
			rep.Deleted++ // deleted, as its writer signed
			continue
		}
		rep.Sessions++
		if verified {
			rep.Verified++
			hs := heads[id]
			marks = append(marks, hs[len(hs)-1])
		}
	}
	// By session; a session's witness entries not taken first, by entry,
	// then what the comparison with the store found.
	entryLevel := func(f VerifyFinding) int {
		if f.Kind == VerifyForged || f.Kind == VerifyKeyWindow {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(rep.Findings, func(a, b VerifyFinding) int {
		return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(entryLevel(a), entryLevel(b)), cmp.Compare(a.Entry, b.Entry))
	})
	if opts.Mark && len(marks) > 0 {
		if err := ds.mark(ctx, marks, cp); err != nil {
			return rep, err
		}
		rep.Marked = len(marks)
	}
	return rep, nil
}

// readSigned reads the first cp.Size entries of opts.Witness: the trusted
// heads per session, ordered by time then index, and the findings of the
// entries that are not trusted statements.
func readSigned(ctx context.Context, opts VerifyOptions, cp log.Checkpoint) (map[string][]signedHead, []VerifyFinding, error) {
	heads := map[string][]signedHead{}
	var out []VerifyFinding
	for h, err := range witness.Heads(ctx, opts.Witness, cp, opts.Keys.Verifiers()) {
		var ee *witness.EntryError
		switch {
		case errors.As(err, &ee):
			why := "no trusted key signed it"
			if errors.Is(err, witness.ErrBadSignature) {
				why = "its signature does not verify: the text was changed after signing"
			} else if !errors.Is(err, witness.ErrUnknownKey) {
				why = "it is no statement this version reads"
			}
			what := "it holds no statement"
			if ee.Claimed.Session != "" {
				what = fmt.Sprintf("it claims %s of %s at %d turns", ee.Claimed.Kind, ee.Claimed.Session, ee.Claimed.Turns)
			}
			out = append(out, VerifyFinding{Kind: VerifyForged, Session: ee.Claimed.Session, Turn: -1, Entry: int64(ee.Index),
				Message: fmt.Sprintf("witness entry %d is not taken: %s (%s)", ee.Index, why, what)})
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("verify: %w", err)
		}
		if !opts.Keys.Trusts(h.Signature, h.Time) {
			out = append(out, VerifyFinding{Kind: VerifyKeyWindow, Session: h.Session, Turn: -1, Entry: int64(h.Index),
				Message: fmt.Sprintf("witness entry %d (%s of %s at %d turns) is signed by key %s for %s, outside the window the key list trusts it for",
					h.Index, h.Kind, h.Session, h.Turns, h.Signature.Name, h.Time.Format(time.RFC3339Nano))})
			continue
		}
		heads[h.Session] = append(heads[h.Session], signedHead{Statement: h.Statement, index: h.Index})
	}
	for _, hs := range heads {
		slices.SortStableFunc(hs, func(a, b signedHead) int {
			return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.index, b.index))
		})
	}
	return heads, out, nil
}

// matches reports whether the stored head is the statement's.
func (s storedHeadOf) matches(st witness.Statement) bool {
	return s.hasOwn && uint64(s.own) == st.Turns && s.head == st.Digest && s.chain == st.Chain
}

// storedHeads reads every stored session's head.
func (ds *Dataset) storedHeads(ctx context.Context) (map[string]storedHeadOf, error) {
	out := map[string]storedHeadOf{}
	err := eachRow(ctx, ds.c, qVerifySessions, func(r kg.Solution) error {
		id := ontology.SessionID(r.String("s"))
		s := storedHeadOf{own: -1, head: r.String("head"), chain: r.String("chain")}
		if n, err := r.Int("own"); err == nil {
			s.own, s.hasOwn = n, true
		}
		if n, err := r.Int("at"); err == nil {
			s.at = n
		}
		out[id] = s
		return nil
	})
	return out, err
}

// storedTurn is a turn in a session's own graph as verify reads it.
type storedTurn struct {
	index  int    // its trails:index
	named  int    // the index its IRI names (ontology.TurnIRIGen); -1 when it names none
	digest string // its trails:digest; "" when none
}

// turnDigests reads the turns in the own graphs of sessions ids, by
// session, in index order.
func (ds *Dataset) turnDigests(ctx context.Context, ids []string) (map[string][]storedTurn, error) {
	out := map[string][]storedTurn{}
	if len(ids) == 0 {
		return out, nil
	}
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
	}
	err := ds.selectTable(ctx, "verify-turns", qVerifyTurns, "sessions", sessionRows(set), nil, func(r kg.Solution) error {
		id := ontology.SessionID(r.String("s"))
		i, err := r.Int("i")
		if err != nil {
			return nil // not an integer: check reports it
		}
		out[id] = append(out[id], storedTurn{index: i, named: namedIndex(r.String("t")), digest: r.String("digest")})
		return nil
	})
	for _, ts := range out {
		slices.SortFunc(ts, func(a, b storedTurn) int { return cmp.Compare(a.index, b.index) })
	}
	return out, err
}

// namedIndex returns the index turn IRI t names (ontology.TurnIRIGen:
// ".../turn/{i}" or ".../turn/{i}/r{gen}"), -1 when it names none.
func namedIndex(t string) int {
	_, rest, ok := strings.Cut(t, ontology.TurnPath)
	if !ok {
		return -1
	}
	rest, _, _ = strings.Cut(rest, ontology.RewindSuffix)
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// judge compares session id's stored head s (ok: it is stored) with its
// trusted signed heads hs (ordered, the latest last), given the chain
// faults of its graph and its stored turns in index order (read only when
// its head is not the latest signed one). It returns the findings and
// whether the session verified: stored, with its latest signed head.
func judge(id string, s storedHeadOf, ok bool, hs []signedHead, faults []ChainFault, turns []storedTurn) ([]VerifyFinding, bool) {
	find := func(kind string, turn int, entry int64, format string, args ...any) []VerifyFinding {
		return []VerifyFinding{{Kind: kind, Session: id, Turn: turn, Entry: entry, Message: fmt.Sprintf(format, args...)}}
	}
	if len(hs) == 0 {
		if !ok {
			return nil, false
		}
		return find(VerifyUnwitnessed, -1, -1, "session %s is stored and the witness holds no trusted statement about it", id), false
	}
	l := hs[len(hs)-1]
	at := func(h signedHead) string {
		return fmt.Sprintf("entry %d, %s", h.index, h.Time.Format(time.RFC3339Nano))
	}
	if !ok {
		if l.Kind == witness.KindDeletion {
			return nil, false
		}
		return find(VerifyDeleted, -1, int64(l.index), "session %s is not stored; its last signed statement is a head of %d turns (%s), and no signed deletion follows it", id, l.Turns, at(l)), false
	}
	if l.Kind == witness.KindDeletion {
		return find(VerifyResurrected, -1, int64(l.index), "session %s is stored, yet its last signed statement is its deletion (%s)", id, at(l)), false
	}
	// A turn moved to another index: its IRI, and the digest it carries,
	// name the index it was written at.
	for _, t := range turns {
		if t.named >= 0 && t.named != t.index {
			return find(VerifyReordered, t.index, -1, "turn %d of %s was written as turn %d (its IRI, and its digest, say so): its turns were moved", t.index, id, t.named), false
		}
	}
	if len(faults) > 0 {
		f := faults[0]
		if f.Index < 0 {
			return find(VerifyEdited, -1, -1, "session %s: %s", id, f.Want), false
		}
		return find(VerifyEdited, f.Index, -1, "turn %d of %s no longer gives its stored digest: edited after it was written (%d turns so)", f.Index, id, len(faults)), false
	}
	if s.matches(l.Statement) {
		return nil, true
	}
	for j := len(hs) - 2; j >= 0; j-- {
		if !s.matches(hs[j].Statement) {
			continue
		}
		rewound := false
		for _, h := range hs[j+1:] {
			rewound = rewound || h.Kind == witness.KindHead && h.Turns < hs[j].Turns
		}
		if rewound {
			return find(VerifyRollback, -1, int64(hs[j].index), "session %s holds the head it had at %d turns (%s), before a later rewind: restored to an older state; its last signed head has %d turns (%s)", id, s.own, at(hs[j]), l.Turns, at(l)), false
		}
		return find(VerifyTruncated, s.at+s.own, int64(l.index), "session %s holds %d turns, an older signed head (%s); its last signed head has %d (%s): turns %d to %d are gone", id, s.own, at(hs[j]), l.Turns, at(l), s.at+s.own, s.at+int(l.Turns)-1), false
	}
	if s.hasOwn && uint64(s.own) < l.Turns {
		return find(VerifyTruncated, s.at+s.own, int64(l.index), "session %s holds %d turns, a head the writer never signed; its last signed head has %d (%s): turns %d to %d are gone", id, s.own, l.Turns, at(l), s.at+s.own, s.at+int(l.Turns)-1), false
	}
	if s.hasOwn && uint64(s.own) > l.Turns && (l.Turns == 0 || int(l.Turns) <= len(turns) && turns[l.Turns-1].digest == l.Chain) {
		return find(VerifyAhead, s.at+int(l.Turns), int64(l.index), "session %s holds %d turns; the writer signed %d (%s), which they extend: turns %d to %d have no signature", id, s.own, l.Turns, at(l), s.at+int(l.Turns), s.at+s.own-1), false
	}
	// Re-chained: the edit is after the last turn whose digest (which
	// stands for the history up to it) the writer signed.
	signed := map[string]bool{}
	for _, h := range hs {
		signed[h.Chain] = h.Chain != ""
	}
	last := -1
	for k, t := range turns {
		if signed[t.digest] {
			last = k
		}
	}
	if last+1 < len(turns) {
		first := turns[last+1].index
		return find(VerifyRechained, first, int64(l.index), "session %s holds a head the writer never signed, with turns whose digests follow from their fields: edited at or after turn %d (the first own turn after the last one whose history the writer signed) and re-chained; its last signed head: %d turns (%s)", id, first, l.Turns, at(l)), false
	}
	return find(VerifyRechained, -1, int64(l.index), "session %s holds %d turns with head %s, which the writer never signed; its last signed head: %d turns, %s (%s)", id, s.own, s.head, l.Turns, l.Digest, at(l)), false
}

// mark writes the verified marks of heads (ontology.VerifiedGraph),
// replacing the sessions' earlier marks, in one update.
func (ds *Dataset) mark(ctx context.Context, heads []signedHead, cp log.Checkpoint) error {
	var d kg.Data
	g := kg.MustIRI(ontology.VerifiedGraph)
	rows := make([][]rdf.Term, len(heads))
	now := ds.clock().UTC()
	for i, h := range heads {
		s := kg.MustIRI(ontology.SessionIRI(h.Session))
		rows[i] = []rdf.Term{s}
		d.Add(g, s, kg.MustIRI(ontology.VerifiedTurns), kg.Int(int(h.Turns)))
		d.Add(g, s, kg.MustIRI(ontology.VerifiedHead), kg.String(h.Digest))
		if h.Chain != "" {
			d.Add(g, s, kg.MustIRI(ontology.VerifiedChain), kg.String(h.Chain))
		}
		d.Add(g, s, kg.MustIRI(ontology.VerifiedEntry), kg.String(cp.Origin+"/"+strconv.FormatUint(h.index, 10)))
		d.Add(g, s, kg.MustIRI(ontology.VerifiedAt), kg.DateTime(now))
	}
	u, err := kg.BindData(uVerifyMark, &d, kg.Params{"g": g}, map[string]kg.Table{"sessions": {Vars: []string{"s"}, Rows: rows}})
	if err != nil {
		return fmt.Errorf("verify-mark: %w", err)
	}
	return ds.c.Update(ctx, u, kg.Idempotent())
}
