package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The rules Check applies. Their names are stable: trails-admin check
// prints them and scripts match on them. A finding's Resource is the
// offending session for every rule but shacl, whose Resource is the focus
// node of the validation result (a session, a turn, an agent, an activity).
const (
	// RuleCycle: a session is its own ancestor through trails:parentSession.
	// Its finding names the way out: Delete with Cascade (trails-admin
	// delete ID --cascade) removes the cycle and the forks below it.
	RuleCycle = "cycle"
	// RuleDepth: a session outside a cycle has more than MaxForkDepth
	// ancestors.
	RuleDepth = "depth"
	// RuleForkPoint: a fork's trails:forkedAtIndex lies beyond its
	// parent's effective history (the parent's fork point plus its own
	// turns).
	RuleForkPoint = "fork-point"
	// RuleOrphan: a fork's parent session is not stored.
	RuleOrphan = "orphan"
	// RuleDuplicateIndex: a session holds two turns at one index.
	RuleDuplicateIndex = "duplicate-index"
	// RuleIndexGap: a session's own turn indices are not exactly its fork
	// point (0 for a root) up to the fork point plus their number, minus
	// one.
	RuleIndexGap = "index-gap"
	// RuleTurnCount: a session's trails:ownTurns differs from the number of
	// turns stored for it.
	RuleTurnCount = "turn-count"
	// RuleMissingProv: a fork has no PROV record (no prov:wasGeneratedBy
	// to a trails:Fork activity).
	RuleMissingProv = "missing-prov"
	// RuleSHACL: the union of all graphs violates ontology.Shapes.
	RuleSHACL = "shacl"
	// RuleChain: a turn's trails:digest does not follow from its fields and
	// the digest of the turn before it (session.TurnDigest): it was changed after it
	// was written. The Resource is the turn's IRI.
	RuleChain = "chain"
	// RuleUnchained: a session holds turns without trails:digest, stored
	// before Trails kept the hash chain; Rechain (trails-admin rechain)
	// adds it.
	RuleUnchained = "unchained"
	// RuleTurnSize: a turn holds more content than MaxTurnBytes, a role
	// longer than Persist accepts, or content that is not UTF-8. The
	// Resource is the turn's IRI.
	RuleTurnSize = "turn-size"
	// RuleTime: a turn's trails:created is a date-time outside years 0000
	// to 9999 (kg.CheckTime), which Persist refuses since it is what an
	// earlier Trails acknowledged for a slip such as milliseconds taken
	// for seconds, or is not a date-time at all. The session still loads
	// (kg.ParseDateTime reads the years XSD 1.1 allows), but other
	// readers of the store (JSON encoders, SHACL engines) may not. The
	// Resource is the turn's IRI.
	RuleTime = "time"
	// RuleStaging: a staging graph older than StagingGrace: the long
	// contents of a write that stopped between sending them and its
	// update. The Resource is the graph's IRI; SweepStaging removes it.
	RuleStaging = "staging"
	// RuleToolResult: a tool result whose call is not in the effective
	// history before it: a tool result part with a call id that no earlier
	// tool call part of the history carries, or a turn prov:wasGeneratedBy
	// a trails:ToolCall outside the history (a call of a sibling fork, one
	// a rewind moved into its archive, one that does not exist, or, for a
	// fork detached before Detach relinked its results to the copies of
	// their calls, the former parent's call). A result without a call id
	// names no call and is not reported. The Resource is the turn's IRI.
	RuleToolResult = "tool-result-without-call"
	// RuleLink: a link from a session's graph, or from a PROV record, to
	// another session's resource that no writer of Trails writes: a
	// session or a turn prov:wasGeneratedBy an activity that did not
	// generate it (another session's trails:Fork, say), a
	// prov:wasDerivedFrom that is neither the session's parent, the parent
	// its trails:Fork record names, nor an archive a trails:Rewind
	// re-parented it to, a trails:rewoundFrom other than the session its
	// trails:Fork record names, a trails:copiedFrom that is not a turn at
	// the same index of a session the copy's session derives from (or
	// whose original differs from the copy), a trails:mergeOf naming a
	// session that was not forked from the merge turn's session, a
	// trails:mergedInto anywhere but on a trails:Merge activity, or one
	// naming another session than the one its child was forked from. Import
	// refuses each (an *ImportError of this rule). The Resource is the
	// turn's IRI for a link of a turn, the activity's for an activity's,
	// else the session's id.
	RuleLink = "link"
	// RuleDerived: a structured turn's resources hold triples other than
	// those Persist writes for the turn's fields (session.StructureTriples):
	// one differs, is missing or is extra. The digest (rule chain) covers
	// the fields; this rule covers what is derived from them and read by
	// PROV tools rather than by Load, such as a trails:ToolCall activity's
	// trails:toolName and trails:toolCallId, which repeat its part's, and
	// the types and positions of parts. A turn whose digest does not verify
	// is reported by rule chain alone. The Resource is the turn's IRI.
	RuleDerived = "derived"
)

// Finding is one integrity violation found by Check.
type Finding struct {
	Rule     string // one of the Rule constants
	Resource string // the offending resource: a session id (or IRI if not one of ours), or a turn IRI
	Message  string // one line an operator understands, naming what is wrong and the values
}

// The queries of Check: one per rule but shacl, and check-turns, which
// duplicate-index and index-gap share.
var (
	qCheckCycle          = query("check-cycle.rq")
	qCheckDepth          = query("check-depth.rq")
	qCheckForkPoint      = query("check-fork-point.rq")
	qCheckOrphan         = query("check-orphan.rq")
	qCheckDuplicateIndex = query("check-duplicate-index.rq")
	qCheckIndexGap       = query("check-index-gap.rq")
	qCheckTurns          = query("check-turns.rq")
	qCheckTurnCount      = query("check-turn-count.rq")
	qCheckMissingProv    = query("check-missing-prov.rq")
)

// ErrSHACLNotRun: Check ran every rule but shacl, because the store has no
// SHACL endpoint (kg.ErrUnsupported: Oxigraph, a generic SPARQL store).
// The findings returned with it are those of the other rules; the shapes
// can be run on an export instead (pySHACL, as CI does).
var ErrSHACLNotRun = errors.New("admin: shacl rule not run: the store has no SHACL endpoint")

// Check examines the whole dataset and returns every violation of the
// rules named by the Rule constants, each once, ordered by rule then
// resource (as strings; for one resource, in the order the rule found
// them); a sound store gives none. It only reads: one SPARQL query per rule
// (queries/check-*.rq), a SHACL validation of the union graph against
// ontology.Shapes, and, only when there is something to look at, a query
// counting the turns of parents stored without trails:ownTurns and one
// fetching the turns of sessions found with duplicate or missing indices;
// the chain, unchained, turn-size and derived rules share one pass over
// every turn, ordered by session and index, that recomputes the hash
// chains (checkChain), with one query per session holding structured
// turns for their structured fields and one for the triples derived from
// them. Every query is anchored at the forks or is one pass
// over the turns, so a check costs time linear in the size of the store
// (plus the store's sort of the turns), never its square; the SHACL
// validation and the chain pass cost the most.
//
// Check does not stop at corrupt data: that is what it reports. It returns
// the findings, or an error wrapping the kg error of a failed request
// (kg.ErrUnavailable, kg.ErrUnauthorized, kg.ErrBadRequest, kg.ErrNotFound
// when the dataset has no SHACL endpoint, kg.ErrProtocol) or a context
// error, with no findings. On a store whose profile has no SHACL endpoint
// it runs every other rule and returns their findings with an error
// matching ErrSHACLNotRun (and kg.ErrUnsupported).
func (ds *Dataset) Check(ctx context.Context) (_ []Finding, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Check", "")
	defer func() { call.End(err) }()
	var all []Finding
	var notRun error
	for _, r := range []struct {
		name string
		run  func(context.Context) ([]Finding, error)
	}{
		{RuleCycle, ds.checkCycle},
		{RuleDepth, ds.checkDepth},
		{RuleForkPoint, ds.checkForkPoint},
		{RuleOrphan, ds.checkOrphan},
		{RuleDuplicateIndex, ds.checkDuplicateIndex},
		{RuleIndexGap, ds.checkIndexGap},
		{RuleTurnCount, ds.checkTurnCount},
		{RuleMissingProv, ds.checkMissingProv},
		{RuleSHACL, ds.checkSHACL},
		{RuleChain, ds.checkChain}, // also unchained, turn-size and derived
		{RuleStaging, ds.checkStaging},
		{RuleToolResult, ds.checkToolResult},
		{RuleLink, ds.checkLink},
	} {
		fs, err := r.run(ctx)
		if r.name == RuleSHACL && errors.Is(err, kg.ErrUnsupported) {
			notRun = fmt.Errorf("check: %w (%w)", ErrSHACLNotRun, err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", r.name, err)
		}
		all = append(all, fs...)
	}
	seen := make(map[Finding]bool, len(all))
	out := all[:0]
	for _, f := range all {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Resource, b.Resource))
	})
	return out, notRun
}

// checkCycle reports every session that is its own ancestor, with the
// cycle it is on.
func (ds *Dataset) checkCycle(ctx context.Context) ([]Finding, error) {
	res, err := ds.c.Select(ctx, qCheckCycle)
	if err != nil {
		return nil, err
	}
	// next maps each session on a cycle to a parent on the same cycle.
	next := make(map[string]string)
	var order []string
	for _, row := range res.Solutions {
		s, p := row.String("s"), row.String("parent")
		if _, ok := next[s]; !ok {
			next[s] = p
			order = append(order, s)
		}
	}
	var out []Finding
	for _, s := range order {
		path := []string{resourceOf(s)}
		seen := map[string]bool{s: true}
		for cur := next[s]; cur != s && !seen[cur] && cur != ""; cur = next[cur] {
			seen[cur] = true
			path = append(path, resourceOf(cur))
		}
		n := len(path)
		if len(path) > 4 {
			path = append(path[:3:3], "…")
		}
		path = append(path, resourceOf(s))
		out = append(out, Finding{RuleCycle, resourceOf(s), fmt.Sprintf(
			"the session is its own ancestor through trails:parentSession: %s (a cycle of %d); "+
				"trails-admin delete %s --cascade deletes the cycle and the forks below it", strings.Join(path, " → "), n, resourceOf(s))})
	}
	return out, nil
}

// checkDepth reports every session outside a cycle with more than
// MaxForkDepth ancestors.
func (ds *Dataset) checkDepth(ctx context.Context) ([]Finding, error) {
	q, err := bind("check-depth", qCheckDepth, kg.Params{"max": kg.Int(session.MaxForkDepth)})
	if err != nil {
		return nil, err
	}
	res, err := ds.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, row := range res.Solutions {
		out = append(out, Finding{RuleDepth, resourceOf(row.String("s")), fmt.Sprintf(
			"%s ancestors, more than MaxForkDepth (%d): Load refuses it", row.String("n"), session.MaxForkDepth)})
	}
	return out, nil
}

// checkForkPoint reports every fork whose fork point lies beyond its
// parent's effective history.
func (ds *Dataset) checkForkPoint(ctx context.Context) ([]Finding, error) {
	res, err := ds.c.Select(ctx, qCheckForkPoint)
	if err != nil {
		return nil, err
	}
	type fork struct {
		s, parent    string
		at, pat, own int
		counted      bool // own is the number of turns stored, not trails:ownTurns
	}
	var forks []fork
	var legacy []string // parents stored without trails:ownTurns
	seen := make(map[string]bool)
	for _, row := range res.Solutions {
		f := fork{s: row.String("s"), parent: row.String("parent")}
		var err1, err2 error
		f.at, err1 = row.Int("at")
		f.pat, err2 = row.Int("pat")
		if err1 != nil || err2 != nil {
			continue // not integers: the shacl rule reports them
		}
		if _, ok := row["pown"]; ok {
			if f.own, err = row.Int("pown"); err != nil {
				continue
			}
		} else {
			if _, err := kg.IRI(f.parent); err != nil {
				continue // not an IRI, so not a session of ours: the shacl rule reports it
			}
			f.counted = true
			if !seen[f.parent] {
				seen[f.parent] = true
				legacy = append(legacy, f.parent)
			}
		}
		forks = append(forks, f)
	}
	if len(legacy) > 0 {
		counts, err := session.CountTurns(ctx, ds.c, legacy)
		if err != nil {
			return nil, err
		}
		for i := range forks {
			if forks[i].counted {
				forks[i].own = counts[forks[i].parent]
			}
		}
	}
	var out []Finding
	for _, f := range forks {
		if f.at <= f.pat+f.own {
			continue
		}
		what := "own turns"
		if f.counted {
			what = "turns stored, no trails:ownTurns"
		}
		out = append(out, Finding{RuleForkPoint, resourceOf(f.s), fmt.Sprintf(
			"forked at index %d, beyond the %d turns of parent %s's history (fork point %d + %d %s)",
			f.at, f.pat+f.own, resourceOf(f.parent), f.pat, f.own, what)})
	}
	return out, nil
}

// checkOrphan reports every fork whose parent is not stored.
func (ds *Dataset) checkOrphan(ctx context.Context) ([]Finding, error) {
	res, err := ds.c.Select(ctx, qCheckOrphan)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, row := range res.Solutions {
		out = append(out, Finding{RuleOrphan, resourceOf(row.String("s")), fmt.Sprintf(
			"parent session %s is missing (no trails:Session)", resourceOf(row.String("parent")))})
	}
	return out, nil
}

// checkDuplicateIndex reports every index at which a session holds more
// than one turn, naming the turns.
func (ds *Dataset) checkDuplicateIndex(ctx context.Context) ([]Finding, error) {
	res, err := ds.c.Select(ctx, qCheckDuplicateIndex)
	if err != nil {
		return nil, err
	}
	var sessions []string
	for _, row := range res.Solutions {
		sessions = append(sessions, row.String("s"))
	}
	turns, err := ds.turnsOf(ctx, sessions)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, s := range sessions {
		byIndex := turns[s]
		for _, i := range slices.Sorted(maps.Keys(byIndex)) {
			ts := byIndex[i]
			if len(ts) < 2 {
				continue
			}
			slices.Sort(ts)
			named := ts
			if len(named) > 3 {
				named = append(named[:3:3], "…")
			}
			out = append(out, Finding{RuleDuplicateIndex, resourceOf(s), fmt.Sprintf(
				"%d turns at index %d: %s", len(ts), i, strings.Join(named, ", "))})
		}
	}
	return out, nil
}

// checkIndexGap reports every session whose own turn indices are not
// exactly its fork point up to the fork point plus their number, minus one,
// naming the first index missing.
func (ds *Dataset) checkIndexGap(ctx context.Context) ([]Finding, error) {
	res, err := ds.c.Select(ctx, qCheckIndexGap)
	if err != nil {
		return nil, err
	}
	type gap struct {
		lo     int
		forked bool
	}
	gaps := make(map[string]gap, len(res.Solutions))
	var sessions []string
	for _, row := range res.Solutions {
		s := row.String("s")
		lo, err := row.Int("lo")
		if err != nil {
			continue // a fork point that is not an integer: the shacl rule reports it
		}
		if _, dup := gaps[s]; dup {
			continue // two fork points: the shacl rule reports it
		}
		_, forked := row["at"]
		gaps[s] = gap{lo, forked}
		sessions = append(sessions, s)
	}
	turns, err := ds.turnsOf(ctx, sessions)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, s := range sessions {
		byIndex, g := turns[s], gaps[s]
		n := len(byIndex)
		missing := -1
		for i := g.lo; i < g.lo+n; i++ {
			if _, ok := byIndex[i]; !ok {
				missing = i
				break
			}
		}
		if missing < 0 {
			continue // changed since the first query, or lexical variants of one index
		}
		indices := slices.Collect(maps.Keys(byIndex))
		from := "a root's turns start at 0"
		if g.forked {
			from = fmt.Sprintf("its fork point is %d", g.lo)
		}
		out = append(out, Finding{RuleIndexGap, resourceOf(s), fmt.Sprintf(
			"no turn at index %d: its turns hold %d indices between %d and %d, want %d..%d (%s)",
			missing, n, slices.Min(indices), slices.Max(indices), g.lo, g.lo+n-1, from)})
	}
	return out, nil
}

// turnsOf returns the IRIs of the turns of the given sessions (IRIs),
// by session and index. Sessions that are not IRIs are left out.
func (ds *Dataset) turnsOf(ctx context.Context, sessions []string) (map[string]map[int][]string, error) {
	rows := make([][]rdf.Term, 0, len(sessions))
	for _, s := range sessions {
		if t, err := kg.IRI(s); err == nil {
			rows = append(rows, []rdf.Term{t})
		}
	}
	out := make(map[string]map[int][]string, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	q, err := kg.BindTables(qCheckTurns, nil, map[string]kg.Table{"sessions": {Vars: []string{"s"}, Rows: rows}})
	if err != nil {
		return nil, err
	}
	res, err := ds.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, row := range res.Solutions {
		i, err := row.Int("i")
		if err != nil {
			continue // not an integer: the shacl rule reports it
		}
		s := row.String("s")
		if out[s] == nil {
			out[s] = make(map[int][]string)
		}
		out[s][i] = append(out[s][i], row.String("t"))
	}
	return out, nil
}

// checkTurnCount reports every session whose trails:ownTurns differs from
// the number of turns stored for it.
func (ds *Dataset) checkTurnCount(ctx context.Context) ([]Finding, error) {
	res, err := ds.c.Select(ctx, qCheckTurnCount)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, row := range res.Solutions {
		out = append(out, Finding{RuleTurnCount, resourceOf(row.String("s")), fmt.Sprintf(
			"trails:ownTurns is %s, but %s turns are stored for the session", row.String("own"), row.String("n"))})
	}
	return out, nil
}

// checkMissingProv reports every fork with no PROV record of its fork.
func (ds *Dataset) checkMissingProv(ctx context.Context) ([]Finding, error) {
	res, err := ds.c.Select(ctx, qCheckMissingProv)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, row := range res.Solutions {
		out = append(out, Finding{RuleMissingProv, resourceOf(row.String("s")),
			"the fork has no PROV record: no prov:wasGeneratedBy to a trails:Fork activity"})
	}
	return out, nil
}

// checkSHACL reports every violation of ontology.Shapes in the union of all
// graphs, one finding per validation result of severity sh:Violation.
func (ds *Dataset) checkSHACL(ctx context.Context) ([]Finding, error) {
	rep, err := ds.c.Validate(ctx, ontology.Shapes, kg.UnionGraph)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, r := range rep.Results {
		if r.Severity != ontology.SHNS+"Violation" {
			continue
		}
		msg := strings.Join(strings.Fields(r.Message), " ") // one line
		if r.Path != "" {
			msg = curie(r.Path) + ": " + msg
		}
		if r.Value != "" {
			msg += fmt.Sprintf(" (value %q)", r.Value)
		}
		out = append(out, Finding{RuleSHACL, resourceOf(r.Focus), msg})
	}
	return out, nil
}

// resourceOf names a resource in a finding: the id of a session IRI of
// ours, any other IRI (a turn's, say) as it is.
func resourceOf(iri string) string {
	if rest, ok := strings.CutPrefix(iri, ontology.SessionBase); ok && rest != "" && !strings.Contains(rest, "/") {
		if id, err := url.PathUnescape(rest); err == nil {
			return id
		}
	}
	return iri
}

// curie shortens an IRI of a vocabulary Trails uses to prefix:name.
func curie(iri string) string {
	for _, p := range []struct{ prefix, ns string }{
		{"trails:", ontology.NS},
		{"prov:", ontology.ProvNS},
		{"dcterms:", "http://purl.org/dc/terms/"},
		{"rdf:", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"},
	} {
		if rest, ok := strings.CutPrefix(iri, p.ns); ok && rest != "" {
			return p.prefix + rest
		}
	}
	return iri
}
