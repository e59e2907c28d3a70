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
	"github.com/trails-kg/trails/internal/telemetry"
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
	// VerifyRewritten: an earlier signed head of a stored session no
	// longer holds: the store's history has no turn with the chain digest
	// it signed, and no signed rewind since accounts for it. The session
	// was edited and re-chained, or truncated, and then written on (the
	// latest head may be signed and stored: laundering by the next honest
	// write).
	VerifyRewritten = "rewritten"
	// VerifyEquivocated: two signed statements of a session replace the
	// same head differently (version 2 statements name the head they
	// replace): a holder of the writer key signed two histories.
	VerifyEquivocated = "equivocated"
	// VerifyRepointed: a session's stored fork link (parent and fork
	// point) is not the one its latest signed statement names: the fork
	// was re-pointed (a fork with no turns of its own has no chain digest
	// that would show it).
	VerifyRepointed = "repointed"
	// VerifyMergeEdited: a merge turn's result as stored (the merged
	// child, its status, range or artifacts: written beside the turn, not
	// in its chain digest) is not the one its writer signed in a statement
	// of kind merge (session.MergeDigest).
	VerifyMergeEdited = "merge-edited"
	// VerifyCheck: a finding of Check's rules (RuleCycle, RuleTurnCount,
	// RuleDerived, ...; all but RuleChain, which VerifyEdited reports) on
	// a session in scope: Verify runs them, so that an auditor needs one
	// command. Its message starts with the rule's name.
	VerifyCheck = "check"
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
	// Sessions limits the findings to these sessions and to the prefix
	// each inherits from its ancestors (their turns before its fork
	// point, and what concerns each ancestor as a whole); nil: every
	// session stored or witnessed. The store is read whole all the same.
	Sessions []string
	// Cosigners, above 0, is how many of the key list's cosigners
	// (witness.KeyList.Cosigners: independent witnesses that check each
	// checkpoint against those they cosigned before) must have cosigned
	// the checkpoint: a witness operator who shows two auditors two logs
	// then fails (witness.ErrCosignatures).
	Cosigners int
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
	parent string // its parent's id, "" for a root
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
// a checkpoint the witness key did not sign: witness.ErrUnknownKey),
// witness.ErrCosignatures when opts.Cosigners cosigners did not cosign
// it, the witness's and the store's errors, and session.ErrInvalid when
// opts.Keys names no witness key or opts.Witness is nil.
func (ds *Dataset) Verify(ctx context.Context, opts VerifyOptions) (_ *VerifyReport, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Verify", "")
	defer func() { call.End(err) }()
	if opts.Witness == nil || opts.Keys == nil || opts.Keys.Witness == nil {
		return nil, fmt.Errorf("verify: %w: a witness and a key list naming the witness key are needed", session.ErrInvalid)
	}
	signed, cp, err := witness.Audit(ctx, opts.Witness, opts.Keys.Witness, opts.Trusted)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	if opts.Cosigners > 0 {
		if err := witness.VerifyCosignatures(signed, opts.Keys.CosignerVerifiers(), opts.Cosigners); err != nil {
			return nil, fmt.Errorf("verify: the witness's checkpoint: %w", err)
		}
	}
	rep := &VerifyReport{Checkpoint: signed, Size: cp.Size}
	heads, entryFindings, err := readSigned(ctx, opts, cp)
	if err != nil {
		return nil, err
	}
	merges := map[string][]signedHead{} // statements of kind merge: no heads
	for id, hs := range heads {
		kept := hs[:0]
		for _, h := range hs {
			if h.Kind == witness.KindMerge {
				merges[id] = append(merges[id], h)
			} else {
				kept = append(kept, h)
			}
		}
		if heads[id] = kept; len(kept) == 0 {
			delete(heads, id)
		}
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
	// inherited[a] is the first index of ancestor a (of a session asked
	// for) that no session asked for inherits: findings of a's turns from
	// it on concern no history asked about.
	inherited := map[string]int{}
	if opts.Sessions != nil {
		for _, id := range opts.Sessions {
			if _, ok := stored[id]; !ok && len(heads[id]) == 0 {
				return nil, fmt.Errorf("verify: %w: session %s is neither stored nor named by a trusted statement of the witness", session.ErrNotFound, id)
			}
			scope[id] = true
		}
		for _, id := range opts.Sessions {
			// Up the parent chain (a visited set: a cycle is Check's to
			// report), each ancestor to the fork point its heir keeps.
			s, limit, visited := stored[id], stored[id].at, map[string]bool{id: true}
			for s.parent != "" && !visited[s.parent] {
				p := s.parent
				visited[p] = true
				if !opts.asked(p) {
					scope[p] = true
					inherited[p] = max(inherited[p], limit)
				}
				s = stored[p]
				limit = min(limit, s.at)
			}
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
		if len(edited[id]) > 0 || l.Kind != witness.KindHead || !s.matches(l.Statement) || len(hs) > 1 || len(merges[id]) > 0 {
			closer = append(closer, id) // every signed head is held against its turns
		}
	}
	digests, err := ds.turnDigests(ctx, closer)
	if err != nil {
		return nil, err
	}
	checked, err := ds.checkFindings(ctx)
	if err != nil {
		return nil, err
	}
	var marks []signedHead
	for _, id := range slices.Sorted(maps.Keys(scope)) {
		s, ok := stored[id]
		fs, verified := judge(id, s, ok, heads[id], edited[id], digests[id])
		if ok && len(fs) == 0 {
			fs = holds(id, s, heads[id], digests[id])
		}
		if ok && len(merges[id]) > 0 {
			mfs, err := ds.mergeResults(ctx, id, merges[id], digests[id])
			if err != nil {
				return nil, err
			}
			fs = append(fs, mfs...)
		}
		fs = append(equivocations(id, heads[id]), fs...)
		if ok {
			fs = append(fs, checked[id]...)
		}
		if limit, anc := inherited[id]; anc {
			// An ancestor of a session asked for: what concerns the
			// prefix it passes on.
			kept := fs[:0]
			for _, f := range fs {
				if f.Turn < limit {
					f.Message = "inherited prefix (turns before " + strconv.Itoa(limit) + "): " + f.Message
					kept = append(kept, f)
				}
			}
			fs = kept
		}
		verified = verified && len(fs) == 0
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

// asked reports whether session id is one o.Sessions names.
func (o VerifyOptions) asked(id string) bool { return slices.Contains(o.Sessions, id) }

// checkFindings runs Check and returns its findings by session, but those
// of RuleChain (VerifyEdited reports them), as VerifyCheck findings; a
// finding about no session (a SHACL result on an agent) is filed under
// "". A store without a SHACL endpoint runs the other rules.
func (ds *Dataset) checkFindings(ctx context.Context) (map[string][]VerifyFinding, error) {
	fs, err := ds.Check(ctx)
	if err != nil && !errors.Is(err, ErrSHACLNotRun) {
		return nil, fmt.Errorf("verify: check: %w", err)
	}
	out := map[string][]VerifyFinding{}
	for _, f := range fs {
		if f.Rule == RuleChain {
			continue
		}
		id := sessionOf(f.Resource)
		out[id] = append(out[id], VerifyFinding{Kind: VerifyCheck, Session: id, Turn: -1, Entry: -1,
			Message: fmt.Sprintf("%s: %s (%s)", f.Rule, f.Message, f.Resource)})
	}
	return out, nil
}

// sessionOf returns the id of the session a Check finding's resource
// names: a session id, or the session of a turn, anchor or other
// resource minted under its IRI; "" for another resource.
func sessionOf(r string) string {
	rest, ok := strings.CutPrefix(r, ontology.SessionBase)
	if !ok {
		if session.CheckID(r) == nil {
			return r
		}
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	return id
}

// mergeResults compares the merge results stored in session id with the
// statements of kind merge its writer signed (ms), turns being its stored
// own turns: a result whose turn is stored (by the chain digest the
// statement names) must give the signed digest. A merge turn no longer
// stored is the head findings' business.
func (ds *Dataset) mergeResults(ctx context.Context, id string, ms []signedHead, turns []storedTurn) ([]VerifyFinding, error) {
	recs, err := session.NewStore(ds.c).Merges(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	byIndex := map[int]session.MergeRecord{}
	for _, r := range recs {
		byIndex[r.Index] = r
	}
	var out []VerifyFinding
	for _, m := range ms {
		i := slices.IndexFunc(turns, func(t storedTurn) bool { return t.digest == m.Chain })
		if i < 0 {
			continue
		}
		idx := turns[i].index
		r, ok := byIndex[idx]
		switch {
		case !ok:
			out = append(out, VerifyFinding{Kind: VerifyMergeEdited, Session: id, Turn: idx, Entry: int64(m.index),
				Message: fmt.Sprintf("turn %d of %s is a merge turn its writer signed (%s), and the store holds no merge result for it: its trails:mergeOf or status was removed", idx, id, entryAt(m))})
		case session.MergeDigest(r) != m.Digest:
			out = append(out, VerifyFinding{Kind: VerifyMergeEdited, Session: id, Turn: idx, Entry: int64(m.index),
				Message: fmt.Sprintf("the merge result of turn %d of %s (child %s, %s, turns %d to %d, %d artifacts) is not the one its writer signed (%s): changed after it was written", idx, id, r.Child, r.Status, r.First, r.Last, len(r.Artifacts), entryAt(m))})
		}
	}
	return out, nil
}

// entryAt names a signed head's witness entry and time.
func entryAt(h signedHead) string {
	return fmt.Sprintf("entry %d, %s", h.index, h.Time.Format(time.RFC3339Nano))
}

// equivocations returns the finding, if any, of two signed statements of
// session id (hs, in order) that replace one head differently: version 2
// statements name the head they replace. A signed rewind (fewer turns than
// the head it replaces) or deletion (a session imported again after it)
// lets the history diverge from there again; a statement that replaces its
// own head (a write found stored) says nothing changed.
func equivocations(id string, hs []signedHead) []VerifyFinding {
	var out []VerifyFinding
	at := entryAt
	type from struct {
		replaces bool
		prev     witness.HeadRef
	}
	took := map[from]signedHead{}
	for _, h := range hs {
		if h.Kind == witness.KindDeletion {
			clear(took) // a session imported again after its signed deletion starts a new chain
			continue
		}
		if h.Version != 2 || h.Kind != witness.KindHead {
			continue
		}
		if h.Replaces && h.Turns < h.Prev.Turns {
			clear(took)
		}
		if h.Replaces && h.Prev == (witness.HeadRef{Turns: h.Turns, Chain: h.Chain}) {
			continue
		}
		k := from{h.Replaces, h.Prev}
		if o, ok := took[k]; ok && (o.Turns != h.Turns || o.Chain != h.Chain || o.Digest != h.Digest) {
			out = append(out, VerifyFinding{Kind: VerifyEquivocated, Session: id, Turn: -1, Entry: int64(h.index),
				Message: fmt.Sprintf("session %s: two signed statements replace the same head (%d turns) differently: %d turns %s (%s) and %d turns %s (%s): a holder of the writer key signed two histories, or a writer wrote on after the store's later turns were dropped",
					id, h.Prev.Turns, o.Turns, o.Chain, at(o), h.Turns, h.Chain, at(h))})
			break
		}
		took[k] = h
	}
	return out
}

// holds checks what judge does not, for a stored session whose latest
// signed head judge found stored: that every earlier signed head still
// holds (the chain digest it signed is the digest of one of the stored
// turns, whose digests chainScan recomputed, unless a signed rewind since
// accounts for it), and that the stored fork link is the one the latest
// statement of version 2 signed. turns are its stored own turns.
func holds(id string, s storedHeadOf, hs []signedHead, turns []storedTurn) []VerifyFinding {
	var out []VerifyFinding
	at := entryAt
	// Every signed head holds.
	have := map[string]bool{}
	for _, t := range turns {
		have[t.digest] = t.digest != ""
	}
	for j, h := range hs[:max(len(hs)-1, 0)] { // the latest, judge held against the store; turns were read for the rest
		if h.Kind != witness.KindHead || h.Chain == "" || have[h.Chain] {
			continue
		}
		excused := false
		for _, l := range hs[j+1:] {
			switch {
			case l.Version == 2 && l.Replaces:
				excused = excused || l.Turns < l.Prev.Turns && l.Turns < h.Turns // a signed rewind below it
			default:
				excused = excused || l.Kind == witness.KindHead && l.Turns < h.Turns // version 1 names no previous head
			}
		}
		if excused {
			continue
		}
		last := s.at + int(h.Turns) - 1
		if h.Parent != "" || h.Version == 2 {
			last = int(h.ForkedAt) + int(h.Turns) - 1
		}
		out = append(out, VerifyFinding{Kind: VerifyRewritten, Session: id, Turn: last, Entry: int64(h.index),
			Message: fmt.Sprintf("session %s no longer holds the history its writer signed at %d turns (%s): no stored turn has its chain digest %s, and no signed rewind accounts for it: turns up to %d were rewritten or dropped after that head was signed, and later heads signed over them",
				id, h.Turns, at(h), h.Chain, last)})
		break
	}
	// The fork link.
	for j := len(hs) - 1; j >= 0; j-- {
		h := hs[j]
		if h.Kind != witness.KindHead {
			continue
		}
		if h.Version == 2 && (h.Parent != s.parent || h.Parent != "" && int(h.ForkedAt) != s.at) {
			want := "no parent (a root)"
			if h.Parent != "" {
				want = fmt.Sprintf("parent %s at %d", h.Parent, h.ForkedAt)
			}
			got := "no parent"
			if s.parent != "" {
				got = fmt.Sprintf("parent %s at %d", s.parent, s.at)
			}
			out = append(out, VerifyFinding{Kind: VerifyRepointed, Session: id, Turn: -1, Entry: int64(h.index),
				Message: fmt.Sprintf("session %s is stored with %s; its latest signed statement (%s) names %s: the fork was re-pointed", id, got, at(h), want)})
		}
		break
	}
	return out
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
		if p := r.String("parent"); p != "" {
			s.parent = ontology.SessionID(p)
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
// replacing the sessions' earlier marks, in one update; on a store that
// routes requests by session tree (cluster.Sharded), in one update per
// session, each to its tree's log (one update for all was refused as
// spanning two replica groups).
func (ds *Dataset) mark(ctx context.Context, heads []signedHead, cp log.Checkpoint) error {
	if r, ok := ds.c.(treeRouted); ok && r.RoutesByTree() && len(heads) > 1 {
		for i := range heads {
			if err := ds.mark(ctx, heads[i:i+1], cp); err != nil {
				return err
			}
		}
		return nil
	}
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
