package session

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/witness"
)

// MergeRole is the role of the turn Merge appends to a parent: the turn
// that carries a child's result.
const MergeRole = "merge"

// MaxArtifacts is the largest number of artifacts one MergeResult may
// carry.
const MaxArtifacts = 1024

// MergeStatus is how a child session's work ended.
type MergeStatus string

// The statuses of a merged result.
const (
	MergeCompleted MergeStatus = "completed"
	MergeFailed    MergeStatus = "failed"
)

// MergeResult is what a child session hands back to its parent (the
// structured child result of design note 002): its status, a summary, which
// becomes the content of the merge turn, and its artifacts.
type MergeResult struct {
	Status    MergeStatus
	Summary   string
	Artifacts []Artifact
}

// Artifact is one artifact of a child's result: exactly one of IRI (an
// absolute IRI naming a file, a document, a memory) and Text (a path or a
// short note) is set.
type Artifact struct {
	IRI  string
	Text string
}

// MergeDigest returns the digest a signing Store signs of a merge turn's
// result (a witness statement of kind merge, see WithSigning): "sha256:"
// and the hex SHA-256 of the turn's ID, the child, the status, the range
// and the artifacts (IRIs first, then texts, each sorted, as Merges reads
// them), each field length-prefixed. The turn's summary, index and time
// are in its chain digest already; these fields, written beside the turn,
// are not.
func MergeDigest(r MergeRecord) string {
	h := sha256.New()
	field(h, "trails merge v1")
	field(h, r.TurnID)
	field(h, r.Child)
	field(h, string(r.Status))
	field(h, strconv.Itoa(r.First))
	field(h, strconv.Itoa(r.Last))
	arts := slices.Clone(r.Artifacts)
	slices.SortFunc(arts, func(a, b Artifact) int {
		rank := func(a Artifact) int { // IRIs first
			if a.IRI != "" {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.IRI, b.IRI), cmp.Compare(a.Text, b.Text))
	})
	for _, a := range arts {
		if a.IRI != "" {
			field(h, "iri "+a.IRI)
		} else {
			field(h, "text "+a.Text)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// MergeRecord is a merge turn as Merges reads it back: the result of child
// session Child merged into the session at turn Index.
type MergeRecord struct {
	Index   int    // the merge turn's index in the parent's history
	TurnID  string // the merge turn's ID (Turn.ID)
	Child   string // the merged child's id
	Status  MergeStatus
	Summary string // the merge turn's content
	// First and Last bound the range reference: the child's own turns,
	// indices First to Last inclusive, when it was merged.
	First, Last int
	// Artifacts are those of the result, IRIs first, then texts, each
	// sorted (the store keeps a set: no order, no duplicates).
	Artifacts []Artifact
	Created   time.Time // when it was merged, UTC, millisecond precision
}

// The queries of merges, read once.
var (
	uMerge       = query("merge.ru")
	qMergeState  = query("merge-state.rq")
	qVerifyMerge = query("verify-merge.rq")
	qMerges      = query("merges.rq")
	qMergeFacts  = query("merge-facts.rq")
)

// Merge merges the result r of fork childID back into its parent (design
// note 001's merge-back): it appends one turn at the end of the parent's stored
// history, with role MergeRole, the summary as content, the parent's branch,
// and the result in the parent's graph: the child (trails:mergeOf), the
// status, the range reference to the child's own turns (ForkedAt to its
// last index) and the artifacts. The parent's other turns are untouched.
// PROV records a trails:Merge activity that used the child, associated with
// the child's principal, and that generated the new turn. A child is
// merged once.
//
// The append is one SPARQL Update with the compare and swap of Persist on
// the parent's turn count and head digest; when another writer appended
// first, Merge reads the parent again and retries, so the merge turn
// always lands at the end. A caller holding the parent in memory is then
// behind the store: its next Persist of that value fails with ErrConflict,
// and it must Load the parent again. Load and Replay return the merge turn
// as an ordinary turn; Merges reads the results back.
//
// A Store scoped to a principal (ForPrincipal) merges only a child it
// sees, and into another principal's parent only when the child was forked
// with AcrossPrincipals.
//
// It returns the new turn. It returns ErrInvalid for a bad id, a status
// other than MergeCompleted and MergeFailed, a blank summary, an artifact
// with neither or both of IRI and Text, an IRI that is not absolute, text
// that is not UTF-8, a result larger than 1 MiB (a merge result goes into
// its SPARQL Update whole, unlike a turn Persist stages) or with more than
// MaxArtifacts artifacts, a root (it has no parent to merge into; also a
// child a Detach made a root while the merge ran, whatever became of its
// former parent) or a child with no turns of its own (nothing is
// written); ErrNotFound when the
// child is not stored or not visible to a scoped Store (also when a Delete
// with Cascade took the child with its parent while the merge ran); an
// *AncestorError (ErrParentMissing) when the parent is gone and the child
// is still stored; ErrMerged when the child was merged already (also to
// the loser of two concurrent merges); ErrState when the parent is
// completed, failed or expired (also, racing a Detach of the child, when
// the former parent ended after the Detach: the merge read the child's
// parent before the Detach and the parent's state after; nothing is
// written); ErrConflict when the
// parent kept changing under this writer, or when a Rewind of the parent
// below the child's fork point moved the child under its archive (before
// the merge or while it ran: the update checks that the child still hangs
// under the parent at its fork point), naming the archive, which takes no
// merge, or when the child itself was rewound or appended to while the
// merge ran (the update checks that the child still holds the own turns
// the merge turn names and was not rewound since they were read);
// ErrForbidden as said above; or a
// store error wrapping the kg error.
//
// With WithSigning it signs the parent's head, with the merge turn, then a
// statement of kind merge (witness.KindMerge) of the result written beside
// the turn (MergeDigest); when those do not reach the witness it returns
// the turn, stored, and an error matching ErrNotWitnessed.
func (st *Store) Merge(ctx context.Context, childID string, r MergeResult) (_ Turn, err error) {
	ctx, call := telemetry.Start(ctx, "session.Merge", childID)
	defer func() { call.End(err) }()
	t, h, err := st.merge(ctx, childID, r)
	var ae *AncestorError
	if (errors.As(err, &ae) || errors.Is(err, ErrState) || errors.Is(err, ErrConflict)) && checkID(childID) == nil {
		err = st.mergeRefusedAgain(ctx, childID, err)
	}
	if err != nil {
		return Turn{}, fmt.Errorf("merge %s: %w", shownID(childID), err)
	}
	if err := st.attest(ctx, witness.KindHead, h); err != nil {
		return t, fmt.Errorf("merge %s: %w", shownID(childID), err)
	}
	return t, nil
}

// mergeRefusedAgain reads the child of a refused Merge again and answers
// as a Merge after the calls that raced it: the parent it read may be gone
// or ended because a Delete with Cascade took the child with it
// (ErrNotFound, issue 22), or because a Detach made the child a root
// before the former parent went or ended (ErrInvalid, as for any root;
// TestHistories found ErrParentMissing and ErrState, anomaly A6). Any
// other refusal stands.
func (st *Store) mergeRefusedAgain(ctx context.Context, childID string, refused error) error {
	chain, err := st.chain(ctx, childID)
	switch {
	case errors.Is(err, ErrNotFound):
		return err
	case err == nil && chain[0].parent == "" && st.visible(chain[0].principal):
		return fmt.Errorf("%w: %s is a root: it has no parent to merge into (detached while the merge ran)", ErrInvalid, childID)
	}
	return refused
}

// mergeJob is one merge under way.
type mergeJob struct {
	child       string // id
	parent      string // id
	principal   string // the child's, who acts
	first, last int
	gen         int // the child's rewinds when it was read
	result      MergeResult
	artifacts   []Artifact // checked, without duplicates
	act         rdf.IRI    // the Merge activity this call mints
	// sent is the last merge update sent: the head it leaves once it
	// applied, whether its check saw that, or (a Delete or a Rewind took
	// the turn before the check) the next round finds j's own activity.
	sent *sentMerge
}

// sentMerge is what a merge update sent would leave: its turn, and the
// parent's own turn count, head digest and chain digest with it.
type sentMerge struct {
	turn        Turn
	own         int
	head, chain string
	prev        ackedHead // the parent's head before: what the merge replaces
	result      string    // MergeDigest of the result written beside the turn
}

// acked is the parent's head the merge left, parent being its id, with
// the digest of the merge result (signed in a statement of its own).
func (m *sentMerge) acked(parent string) ackedHead {
	h := ackedHead{id: parent, own: m.own, digest: m.head, chain: m.chain, parent: m.prev.parent, at: m.prev.at, merge: m.result}
	return h.replacing(m.prev)
}

// errMergedHere is mergeTarget's answer when the child was merged by j's
// own activity: an earlier round's update applied.
var errMergedHere = errors.New("merged by this call")

func (st *Store) merge(ctx context.Context, childID string, r MergeResult) (Turn, ackedHead, error) {
	if err := checkID(childID); err != nil {
		return Turn{}, ackedHead{}, err
	}
	arts, err := r.check()
	if err != nil {
		return Turn{}, ackedHead{}, err
	}
	chain, err := st.chain(ctx, childID)
	if err != nil {
		return Turn{}, ackedHead{}, err
	}
	self := chain[0]
	if !st.visible(self.principal) {
		return Turn{}, ackedHead{}, ErrNotFound
	}
	if self.parent == "" {
		return Turn{}, ackedHead{}, fmt.Errorf("%w: %s is a root: it has no parent to merge into", ErrInvalid, childID)
	}
	own := self.own
	if !self.hasOwn {
		counts, err := st.countTurns(ctx, []string{self.iri})
		if err != nil {
			return Turn{}, ackedHead{}, err
		}
		own = counts[self.iri]
	}
	if own == 0 {
		return Turn{}, ackedHead{}, fmt.Errorf("%w: %s has no turns of its own: there is no result to merge", ErrInvalid, childID)
	}
	j := &mergeJob{
		child: childID, parent: ontology.SessionID(self.parent), principal: self.principal,
		first: self.at, last: self.at + own - 1, gen: self.rewinds, result: r, artifacts: arts,
		act: kg.MustIRI(ontology.ActivityIRI("merge", uuid.Must(uuid.NewV7()).String())),
	}
	for round := 0; ; round++ {
		p, err := st.mergeTarget(ctx, j, round)
		if errors.Is(err, errMergedHere) && j.sent != nil {
			// An earlier round applied; its turn was deleted or moved by a
			// rewind before that round could see it (issue 22, seeds
			// 526148090851, 526148090881: it answered ErrMerged, "merged
			// by" its own activity).
			return j.sent.turn, j.sent.acked(j.parent), nil
		}
		if err != nil {
			return Turn{}, ackedHead{}, err
		}
		if round == maxPersistRounds {
			return Turn{}, ackedHead{}, fmt.Errorf("%w: parent %s kept changing under this writer", ErrConflict, j.parent)
		}
		t, ok, err := st.mergeOnce(ctx, j, p)
		if err != nil {
			return Turn{}, ackedHead{}, err
		}
		if ok {
			return t, j.sent.acked(j.parent), nil
		}
	}
}

// mergeTarget loads the parent of j and checks that the merge may go
// ahead: the child not merged yet, the parent not ended, and visible to st
// or forked across principals. A parent stored before Trails kept turn
// counts is given one first (the compare and swap needs it).
func (st *Store) mergeTarget(ctx context.Context, j *mergeJob, round int) (*Session, error) {
	q, err := bind("merge-state", qMergeState, kg.Params{
		"child": sessionIRI(j.child), "parent": sessionIRI(j.parent), "fork": prov.ForkActivity(j.child),
	})
	if err != nil {
		return nil, err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	var merged, state, from, archive string
	to := 0
	across, counted, changed := false, false, false
	for _, row := range res.Solutions {
		if _, ok := row["cown"]; ok {
			n, err := row.Int("cown")
			if err != nil {
				return nil, fmt.Errorf("%w: turn count of %s: %v", ErrCorrupt, j.child, err)
			}
			changed = changed || j.first+n-1 != j.last
		}
		if g, err := row.Int("cgen"); err == nil && g != j.gen {
			changed = true
		}
		merged = max(merged, row.String("merged"))
		if a := row.String("archive"); a != "" {
			if to, err = row.Int("rewoundTo"); err != nil {
				return nil, fmt.Errorf("%w: the rewind that moved %s: %v", ErrCorrupt, j.child, err)
			}
			from, archive = row.String("rewoundFrom"), a
		}
		if s := row.String("state"); State(s).Terminal() {
			state = s
		}
		across = across || row.String("across") == "true"
		_, ok := row["phead"]
		counted = counted || ok
	}
	switch {
	case merged != "" && merged == j.act.String():
		return nil, errMergedHere
	case merged != "":
		return nil, fmt.Errorf("%w: %s was merged by %s", ErrMerged, j.child, merged)
	case archive != "":
		// Before the parent's state: a child moved under the archive no
		// longer hangs under the parent read, whose end then says nothing
		// of this merge (TestMergeTornRewoundEnded).
		return nil, fmt.Errorf("%w: %s forked at %d; %s was rewound to %d since, and %s moved under the archive %s, which takes no merge", ErrConflict,
			j.child, j.first, ontology.SessionID(from), to, j.child, ontology.SessionID(archive))
	case state != "":
		return nil, fmt.Errorf("%w: parent %s is %s and takes no more turns", ErrState, j.parent, state)
	case changed:
		return nil, fmt.Errorf("%w: %s was rewound or appended to since its turns %d to %d were read; merge it again", ErrConflict, j.child, j.first, j.last)
	}
	up := st.unscoped()
	p, _, err := up.load(ctx, j.parent, -1)
	if errors.Is(err, ErrNotFound) {
		return nil, &AncestorError{Session: j.child, Missing: j.parent}
	}
	if err != nil {
		return nil, fmt.Errorf("parent %s: %w", j.parent, err)
	}
	if !st.visible(p.Principal) && !across {
		return nil, fmt.Errorf("%w: parent %s belongs to %s and %s was not forked with AcrossPrincipals", ErrForbidden, j.parent, termsafe.Quote(p.Principal), j.child)
	}
	if !counted && round == 0 {
		if err := up.persist(ctx, p); err != nil { // writes the count and digest only (unsigned: the merge turn's head follows)
			return nil, fmt.Errorf("parent %s: %w", j.parent, err)
		}
	}
	return p, nil
}

// mergeOnce appends the merge turn of j to parent p as loaded, and reports
// whether it applied; false with no error means another writer changed
// the parent first.
func (st *Store) mergeOnce(ctx context.Context, j *mergeJob, p *Session) (Turn, bool, error) {
	g, child := sessionIRI(j.parent), sessionIRI(j.child)
	n := len(p.Turns)
	t := Turn{Index: n, Role: MergeRole, Content: j.result.Summary, Branch: p.Branch, Created: st.now(), ID: p.turnID(n)} // of the parent's generation
	own := append(slices.Clip(p.Turns[p.ForkedAt:]), t)
	head, all := digests(own, len(own)-1)
	prev := chainHead("", p.Turns) // the chain head the merge turn follows
	tchain := chainDigest(prev, t)

	var d kg.Data
	ti := addTurn(&d, nil, g, t, tchain)
	d.Add(g, ti, iri(ontology.MergeOf), child)
	d.Add(g, ti, iri(ontology.MergeStatus), kg.String(string(j.result.Status)))
	d.Add(g, ti, iri(ontology.MergeFirst), kg.Int(j.first))
	d.Add(g, ti, iri(ontology.MergeLast), kg.Int(j.last))
	for _, a := range j.artifacts {
		if a.IRI != "" {
			d.Add(g, ti, iri(ontology.Artifact), kg.MustIRI(a.IRI)) // checked
		} else {
			d.Add(g, ti, iri(ontology.ArtifactText), kg.String(a.Text))
		}
	}
	addHead(&d, g, len(own), all)
	prov.AddMerge(&d, j.act, prov.Merge{
		Child: j.child, Parent: j.parent, Turn: t.ID, Status: string(j.result.Status),
		Principal: j.principal, Time: t.Created,
	})
	pg := kg.MustIRI(ontology.ProvGraph)
	params := appendParams(p, g, len(own)-1, head, prev)
	params["child"], params["prov"], params["first"] = child, pg, kg.Int(j.first)
	params["cown"], params["cgen"] = kg.Int(j.last-j.first+1), kg.Int(j.gen)
	u, err := withData("merge", uMerge, &d, params)
	if err != nil {
		return Turn{}, false, err
	}
	check := bindOrPanic("verify-merge", qVerifyMerge, kg.Params{"s": g, "t": ti, "child": child, "prov": pg, "act": j.act})
	before := ackedHead{own: len(own) - 1, parent: p.ParentID, at: p.ForkedAt}
	if before.own > 0 {
		before.chain = prev
	}
	result := MergeDigest(MergeRecord{TurnID: t.ID, Child: j.child, Status: j.result.Status, First: j.first, Last: j.last, Artifacts: j.artifacts})
	j.sent = &sentMerge{turn: t, own: len(own), head: all, chain: tchain, prev: before, result: result}
	ok, err := st.apply(ctx, u, check, g, nil)
	if !ok || err != nil {
		return Turn{}, false, err
	}
	return t, true, nil
}

// check validates r and returns its artifacts without duplicates.
func (r MergeResult) check() ([]Artifact, error) {
	if r.Status != MergeCompleted && r.Status != MergeFailed {
		return nil, fmt.Errorf("%w: status %s is neither %q nor %q", ErrInvalid, termsafe.Quote(string(r.Status)), MergeCompleted, MergeFailed)
	}
	if !utf8.ValidString(r.Summary) {
		return nil, fmt.Errorf("%w: the summary is not valid UTF-8", ErrInvalid)
	}
	if strings.TrimSpace(r.Summary) == "" {
		return nil, fmt.Errorf("%w: the summary is blank", ErrInvalid)
	}
	if len(r.Artifacts) > MaxArtifacts {
		return nil, fmt.Errorf("%w: %d artifacts, more than %d", ErrInvalid, len(r.Artifacts), MaxArtifacts)
	}
	size := len(r.Summary)
	var out []Artifact
	for i, a := range r.Artifacts {
		switch {
		case (a.IRI == "") == (a.Text == ""):
			return nil, fmt.Errorf("%w: artifact %d: set exactly one of IRI and Text", ErrInvalid, i)
		case a.IRI != "":
			if _, err := kg.IRI(a.IRI); err != nil {
				return nil, fmt.Errorf("%w: artifact %d: %v", ErrInvalid, i, err)
			}
		case !utf8.ValidString(a.Text):
			return nil, fmt.Errorf("%w: artifact %d: text is not valid UTF-8", ErrInvalid, i)
		}
		size += len(a.IRI) + len(a.Text)
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if size > maxInlineBytes {
		return nil, fmt.Errorf("%w: a result of %d bytes (summary and artifacts), more than the %d a merge result may hold", ErrInvalid, size, maxInlineBytes)
	}
	return out, nil
}

// Merges returns the results merged into session id (by Merge), ordered
// by the index of their merge turns: the merge turns of its own graph,
// not those of its ancestors. A session nothing was merged into has none.
//
// It returns ErrInvalid for a bad id, ErrNotFound when the session is not
// stored (or not visible to a Store scoped to a principal), ErrCorrupt for
// a merge turn Trails does not write, or a store error wrapping the kg
// error.
func (st *Store) Merges(ctx context.Context, id string) (_ []MergeRecord, err error) {
	ctx, call := telemetry.Start(ctx, "session.Merges", id)
	defer func() { call.End(err) }()
	recs, err := st.merges(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("merges into %s: %w", shownID(id), err)
	}
	return recs, nil
}

func (st *Store) merges(ctx context.Context, id string) ([]MergeRecord, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	q, err := bind("merges", qMerges, kg.Params{"s": sessionIRI(id)})
	if err != nil {
		return nil, err
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	exists := false
	byTurn := map[string]*MergeRecord{}
	iris, texts := map[string][]string{}, map[string][]string{}
	for _, row := range res.Solutions {
		if _, ok := row["exists"]; ok {
			exists = true
			if !st.visible(row.String("principal")) {
				return nil, ErrNotFound
			}
			continue
		}
		t := row.String("t")
		switch {
		case row.String("artifact") != "":
			iris[t] = append(iris[t], row.String("artifact"))
		case row.String("text") != "":
			texts[t] = append(texts[t], row.String("text"))
		default:
			if _, dup := byTurn[t]; dup {
				return nil, fmt.Errorf("%w: merge turn %s has several children, statuses or ranges", ErrCorrupt, t)
			}
			rec, err := readMerge(row)
			if err != nil {
				return nil, err
			}
			byTurn[t] = rec
		}
	}
	if !exists {
		return nil, ErrNotFound
	}
	recs := make([]MergeRecord, 0, len(byTurn))
	for t, rec := range byTurn {
		slices.Sort(iris[t])
		slices.Sort(texts[t])
		for _, v := range iris[t] {
			rec.Artifacts = append(rec.Artifacts, Artifact{IRI: v})
		}
		for _, v := range texts[t] {
			rec.Artifacts = append(rec.Artifacts, Artifact{Text: v})
		}
		recs = append(recs, *rec)
	}
	slices.SortFunc(recs, func(a, b MergeRecord) int { return a.Index - b.Index })
	return recs, nil
}

// readMerge reads the row of one merge turn.
func readMerge(row kg.Solution) (*MergeRecord, error) {
	t := row.String("t")
	rec := &MergeRecord{TurnID: t, Child: ontology.SessionID(row.String("child")), Status: MergeStatus(row.String("status")), Summary: row.String("content")}
	var err error
	for v, p := range map[string]*int{"i": &rec.Index, "first": &rec.First, "last": &rec.Last} {
		if *p, err = row.Int(v); err != nil {
			return nil, fmt.Errorf("%w: merge turn %s: %v", ErrCorrupt, t, err)
		}
	}
	if _, ok := row["created"]; ok {
		if rec.Created, err = row.Time("created"); err != nil {
			return nil, fmt.Errorf("%w: merge turn %s: %v", ErrCorrupt, t, err)
		}
	}
	return rec, nil
}
