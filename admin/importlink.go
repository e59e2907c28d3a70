package admin

// This file holds Import's link rule (RuleLink): the links of its input
// to other sessions' resources must be those the writers write, the same
// links that Check's link rule accepts (queries/check-link.rq says which).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// Links of an input that Import judges with the store (checkLinks).
type (
	// turnLinks are a turn's links to other resources, each with its
	// line: what generated it (but its model invocation), what it copies,
	// the child whose result it holds.
	turnLinks struct {
		generated []value
		copied    value
		mergeOf   value
	}
	// provLink is a PROV quad about a session or a turn:
	// prov:wasGeneratedBy or prov:wasDerivedFrom.
	provLink struct {
		subj resource
		iri  string
		p    string
		o    rdf.Term
		line int
	}
)

// linkPredicates are the links to another resource that Import judges.
var linkPredicates = map[string]bool{
	ontology.ProvWasGeneratedBy: true, ontology.ProvWasDerivedFrom: true, ontology.MergeOf: true,
	ontology.MergedInto: true, ontology.CopiedFrom: true, ontology.RewoundFrom: true,
}

// sessionLink takes a link quad about session s in its own graph, or
// returns the fault of one no writer writes there.
func (s *importSession) sessionLink(p string, o rdf.Term, line int) error {
	switch p {
	case ontology.ProvWasDerivedFrom:
		s.derived = append(s.derived, value{o, line})
		return nil
	case ontology.RewoundFrom:
		return nil // a session field (sfRewoundFrom)
	}
	return linkFault(line, "the graph of session %s says the session <%s> %s: no writer says that of a session in its graph (a fork's trails:Fork link is in the PROV graph)", s.id, p, o)
}

// turnLink takes a link quad about turn tn, or returns the fault of one no
// writer writes.
func (tn *importTurn) turnLink(p string, o rdf.Term, line int) error {
	switch p {
	case ontology.ProvWasGeneratedBy:
		tn.links.generated = append(tn.links.generated, value{o, line})
		return nil
	case ontology.CopiedFrom, ontology.MergeOf:
		v := &tn.links.copied
		if p == ontology.MergeOf {
			v = &tn.links.mergeOf
		}
		if v.o != nil {
			return fault(line, RuleTurn, "turn <%s> has two values of <%s> (line %d)", tn.iri, p, v.line)
		}
		*v = value{o, line}
		return nil
	}
	return linkFault(line, "turn <%s> <%s> %s: no writer says that of a turn", tn.iri, p, o)
}

// linkFault returns an ImportError of RuleLink at line wrapping ErrInvalid.
func linkFault(line int, format string, args ...any) error {
	return fault(line, RuleLink, format, args...)
}

// linkFacts is what the input and the store say of the sessions and
// activities the input's links name.
type linkFacts struct {
	forkParent map[string]string          // session id → the parent id its trails:Fork record used
	reparented map[string]map[string]bool // session id → archives a trails:Rewind re-parented it to
	acts       map[string]map[string][]string
	derived    map[string]map[string]bool // session id → the sessions it derives from, directly
}

func (lf *linkFacts) act(iri, p string, o string) {
	if lf.acts[iri] == nil {
		lf.acts[iri] = make(map[string][]string)
	}
	lf.acts[iri][p] = append(lf.acts[iri][p], o)
}

func (lf *linkFacts) derive(id, from string) {
	if lf.derived[id] == nil {
		lf.derived[id] = make(map[string]bool)
	}
	lf.derived[id][from] = true
}

// is reports whether activity iri has value o of predicate p.
func (lf *linkFacts) is(iri, p, o string) bool { return slices.Contains(lf.acts[iri][p], o) }

// ancestors returns the sessions id derives from, directly or not.
func (lf *linkFacts) ancestors(id string) map[string]bool {
	out := make(map[string]bool)
	todo := []string{id}
	for len(todo) > 0 {
		cur := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for a := range lf.derived[cur] {
			if !out[a] {
				out[a] = true
				todo = append(todo, a)
			}
		}
	}
	return out
}

// checkLinks applies the link rule: each link of the input to another
// resource must be one a writer writes (see check-link.rq), judged with
// what the input and the store say of the sessions and activities it
// names.
func (ds *Dataset) checkLinks(ctx context.Context, in *importInput, stored map[string]storedSession) error {
	f := &in.faults
	lf := &linkFacts{forkParent: map[string]string{}, reparented: map[string]map[string]bool{},
		acts: map[string]map[string][]string{}, derived: map[string]map[string]bool{}}

	// What the input says.
	for _, q := range in.prov.quads {
		s, p := q.t.s.String(), q.t.p.String()
		if classify(s).kind == activityRes {
			lf.act(s, p, q.t.o.String())
		}
	}
	for iri, ps := range lf.acts {
		if child, ok := strings.CutPrefix(iri, ontology.ActivityIRI("fork", "")); ok {
			if used := ps[ontology.ProvUsed]; len(used) == 1 {
				if id, err := sessionValue(kg.MustIRI(used[0])); err == nil {
					lf.forkParent[child] = id
				}
			}
		}
		if slices.Contains(ps[ontology.RDFType], ontology.Rewind) {
			for _, c := range ps[ontology.Reparented] {
				for _, a := range ps[ontology.ProvGenerated] {
					addSet(lf.reparented, ontology.SessionID(c), ontology.SessionID(a))
				}
			}
		}
	}
	for _, s := range in.order {
		for _, d := range s.derived {
			if id, err := sessionValue(d.o); err == nil {
				lf.derive(s.id, id)
			}
		}
		if s.hdr.ParentID != "" {
			lf.derive(s.id, s.hdr.ParentID)
		}
	}
	for _, l := range in.provLinks {
		if l.subj.kind == sessionRes && l.p == ontology.ProvWasDerivedFrom {
			if id, err := sessionValue(l.o); err == nil {
				lf.derive(l.subj.id, id)
			}
		}
	}

	// What the store says of the rest: the sessions and activities named.
	sessions, acts := map[string]bool{}, map[string]bool{}
	for _, s := range in.order {
		sessions[s.id] = true
		for _, t := range s.turns {
			sessions[t.res.id] = true
			if o := t.links.mergeOf.o; o != nil {
				if id, err := sessionValue(o); err == nil {
					sessions[id] = true
				}
			}
			for _, g := range t.links.generated {
				if classify(g.o.String()).kind == activityRes {
					acts[g.o.String()] = true
				}
			}
		}
	}
	for _, l := range in.provLinks {
		sessions[l.subj.id] = true
		if classify(l.o.String()).kind == activityRes {
			acts[l.o.String()] = true
		}
	}
	for _, a := range in.prov.activities {
		for _, c := range lf.acts[a.iri.String()][ontology.ProvUsed] {
			if id, err := sessionValue(kg.MustIRI(c)); err == nil {
				sessions[id] = true
			}
		}
	}
	table := kg.Table{Vars: []string{"x", "fa"}}
	for _, id := range slices.Sorted(maps.Keys(sessions)) {
		table.Rows = append(table.Rows, []rdf.Term{sessionIRI(id), kg.MustIRI(ontology.ActivityIRI("fork", id))})
	}
	for _, a := range slices.Sorted(maps.Keys(acts)) {
		table.Rows = append(table.Rows, []rdf.Term{kg.MustIRI(a), kg.MustIRI(a)})
	}
	prov := kg.Params{"prov": kg.MustIRI(ontology.ProvGraph)}
	err := ds.selectTable(ctx, "import-link-facts", qImportLinkFacts, "resources", table, prov, func(r kg.Solution) error {
		x, p, o := r.String("x"), r.String("p"), r.String("o")
		switch {
		case classify(x).kind == sessionRes && p == ontology.NS+"forkParent":
			id := ontology.SessionID(x)
			if _, ok := lf.forkParent[id]; !ok {
				lf.forkParent[id] = ontology.SessionID(o)
			}
		case classify(x).kind == sessionRes && p == ontology.ProvGenerated:
			addSet(lf.reparented, ontology.SessionID(x), ontology.SessionID(o))
		case classify(x).kind == activityRes && p != ontology.NS+"forkParent" && p != ontology.ProvGenerated:
			if !lf.is(x, p, o) {
				lf.act(x, p, o)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for id, p := range lf.forkParent {
		lf.derive(id, p)
	}
	starts := kg.Table{Vars: []string{"start"}}
	for _, id := range slices.Sorted(maps.Keys(sessions)) {
		if in.sessions[id] == nil && stored[id].exists {
			starts.Rows = append(starts.Rows, []rdf.Term{sessionIRI(id)})
		}
	}
	for _, s := range in.order {
		for d := range lf.ancestors(s.id) {
			if in.sessions[d] == nil && !sessions[d] {
				starts.Rows = append(starts.Rows, []rdf.Term{sessionIRI(d)})
			}
		}
	}
	err = ds.selectTable(ctx, "import-derived", qImportDerived, "starts", starts, nil, func(r kg.Solution) error {
		if id, err := sessionValue(r["a"]); err == nil {
			lf.derive(ontology.SessionID(r.String("start")), id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	originals, err := ds.importOriginals(ctx, in)
	if err != nil {
		return err
	}
	ends, err := ds.derivationEnds(ctx, in, lf, stored, sessions)
	if err != nil {
		return err
	}

	// The rules.
	for _, s := range in.order {
		for _, d := range s.derived {
			id, err := sessionValue(d.o)
			if err != nil || (id != s.hdr.ParentID && id != lf.forkParent[s.id] && !lf.reparented[s.id][id]) {
				f.add(d.line, RuleLink, linkErr("session %s is prov:wasDerivedFrom %s, which is neither its parent, the parent its trails:Fork record used, nor an archive a trails:Rewind re-parented it to", s.id, d.o))
			}
		}
		if v := s.fields[sfRewoundFrom]; v.o != nil {
			if id, _ := sessionValue(v.o); id != lf.forkParent[s.id] {
				f.add(v.line, RuleLink, linkErr("session %s is trails:rewoundFrom %s, and its trails:Fork record says it is no fork of that session", s.id, v.o))
			}
		}
		for _, t := range s.turns {
			in.turnLinks(s, t, lf, stored, originals, ends)
		}
	}
	for _, l := range in.provLinks {
		switch {
		case l.subj.kind == sessionRes && l.p == ontology.ProvWasGeneratedBy:
			if l.o.String() != ontology.ActivityIRI("fork", l.subj.id) {
				f.add(l.line, RuleLink, linkErr("the PROV graph says session %s prov:wasGeneratedBy %s: a session is generated by its own trails:Fork activity", l.subj.id, l.o))
			}
		case l.subj.kind == sessionRes:
			if id, err := sessionValue(l.o); err != nil || id != lf.forkParent[l.subj.id] {
				f.add(l.line, RuleLink, linkErr("the PROV graph says session %s prov:wasDerivedFrom %s, and its trails:Fork record used another session, or there is none", l.subj.id, l.o))
			}
		default: // a turn's prov:wasGeneratedBy
			a := l.o.String()
			if !lf.is(a, ontology.RDFType, ontology.Merge) || !lf.is(a, ontology.MergedInto, ontology.SessionIRI(l.subj.id)) {
				f.add(l.line, RuleLink, linkErr("the PROV graph says turn <%s> prov:wasGeneratedBy %s, which is no trails:Merge into its session %s", l.iri, l.o, l.subj.id))
			}
		}
	}
	for _, a := range in.prov.activities {
		ps := lf.acts[a.iri.String()]
		if a.stored || !slices.Contains(ps[ontology.RDFType], ontology.Merge) {
			continue
		}
		for _, n := range a.quads {
			q := in.prov.quads[n]
			if q.t.p.String() != ontology.MergedInto {
				continue
			}
			ok := false
			for _, c := range ps[ontology.ProvUsed] {
				if id, err := sessionValue(q.t.o); err == nil && lf.forkParent[ontology.SessionID(c)] == id {
					ok = true
				}
			}
			if !ok {
				f.add(q.line, RuleLink, linkErr("merge activity <%s> is trails:mergedInto %s, which is not the session its child was forked from", a.iri, q.t.o))
			}
		}
	}
	return f.err()
}

// turnLinks applies the link rule to the links of turn t in the graph of
// session s; ends are the ends of derivations that neither the input nor
// the store describes (derivationEnds).
func (in *importInput) turnLinks(s *importSession, t *importTurn, lf *linkFacts, stored map[string]storedSession, originals map[string]original, ends map[string]bool) {
	f := &in.faults
	own := t.res.id // the session whose IRI space the turn is in
	copied := t.links.copied.o != nil
	for _, g := range t.links.generated {
		o := g.o.String()
		r := classify(o)
		switch {
		case r.kind == turnSubRes && strings.HasSuffix(o, "/call"):
			continue // a tool call: check's tool-result-without-call rule judges it
		case r.kind == activityRes && copied && lf.is(o, ontology.RDFType, ontology.Detach) && lf.is(o, ontology.Detached, ontology.SessionIRI(own)):
			continue // the Detach that made the copy
		}
		f.add(g.line, RuleLink, linkErr("turn <%s> of session %s is prov:wasGeneratedBy %s, which is neither its model invocation, a tool call, nor the trails:Detach that copied it", t.iri, own, g.o))
	}
	ancestors := lf.ancestors(own)
	// Whether own's derivations lead past what the input and the store
	// know: then a copy's original, or a copied merge turn's child, may be
	// of a session they do not name.
	open := false
	for a := range ancestors {
		open = open || ends[a]
	}
	if v := t.links.copied; v.o != nil {
		r := classify(v.o.String())
		parent := stored[own].parent
		if o := in.sessions[own]; o != nil {
			parent = o.hdr.ParentID
		}
		why := ""
		switch {
		case r.kind != turnRes || r.id == own:
			why = "Detach copies a turn of another session"
		case r.index != t.index:
			why = "the copy's index is not its original's"
		case parent != "":
			why = "session " + own + " has a parent, and only a detached session holds copies"
		case !ancestors[r.id] && !open:
			why = "session " + own + " does not derive from the original's session " + r.id
		default:
			d, ok := originals[v.o.String()]
			if ok && d.index != t.index {
				why = "the copy's index is not its original's"
			} else if ok && d.digest != "" && t.digest != "" && d.digest != t.digest {
				why = "the original's digest differs from the copy's: they are not the same turn"
			}
		}
		if why != "" {
			f.add(v.line, RuleLink, linkErr("turn <%s> of session %s is trails:copiedFrom %s: %s", t.iri, own, v.o, why))
		}
	}
	if v := t.links.mergeOf; v.o != nil {
		id, err := sessionValue(v.o)
		fp, known := lf.forkParent[id]
		if err != nil || (!known && !(copied && open)) || (known && fp != own && !(copied && ancestors[fp])) {
			f.add(v.line, RuleLink, linkErr("merge turn <%s> is trails:mergeOf %s, which was not forked from session %s (its trails:Fork record says so, or there is none)", t.iri, v.o, own))
		}
	}
}

// derivationEnds returns the sessions that the derivations of the
// sessions named (the input's and those its links name) lead to and that
// neither the input nor the store describes: no session of the input, no
// graph, derivation or trails:Deletion record in the store. Such an end is
// where the history of a detached session exported without the sessions
// it derives from (an export takes a session and its forks) begins: past
// it the derivation cannot be followed (check-link.rq says the same).
func (ds *Dataset) derivationEnds(ctx context.Context, in *importInput, lf *linkFacts, stored map[string]storedSession, named map[string]bool) (map[string]bool, error) {
	deleted := make(map[string]bool)
	for _, d := range in.prov.deletions {
		deleted[d.id] = true
	}
	ends := make(map[string]bool)
	for id := range named {
		for a := range lf.ancestors(id) {
			if in.sessions[a] == nil && !stored[a].exists && len(lf.derived[a]) == 0 && !deleted[a] {
				ends[a] = true
			}
		}
	}
	if len(ends) == 0 {
		return ends, nil
	}
	err := ds.selectTable(ctx, "import-described", qImportDescribed, "sessions", sessionRows(ends),
		kg.Params{"prov": kg.MustIRI(ontology.ProvGraph)}, func(r kg.Solution) error {
			delete(ends, ontology.SessionID(r.String("s")))
			return nil
		})
	return ends, err
}

// original is what is known of the original of a copy: its index and its
// digest ("": none).
type original struct {
	index  int
	digest string
}

// importOriginals returns what the input and the store hold of the
// originals of the input's copies, by IRI.
func (ds *Dataset) importOriginals(ctx context.Context, in *importInput) (map[string]original, error) {
	out := make(map[string]original)
	byIRI := make(map[string]*importTurn)
	for _, s := range in.order {
		for iri, t := range s.turns {
			byIRI[iri] = t
		}
	}
	t := kg.Table{Vars: []string{"t"}}
	for _, s := range in.order {
		for _, tn := range s.turns {
			o := tn.links.copied.o
			if o == nil || classify(o.String()).kind != turnRes {
				continue
			}
			if it := byIRI[o.String()]; it != nil {
				out[o.String()] = original{it.index, it.digest}
				continue
			}
			t.Rows = append(t.Rows, []rdf.Term{o})
		}
	}
	err := ds.selectTable(ctx, "import-originals", qImportOriginals, "turns", t, nil, func(r kg.Solution) error {
		i, err := r.Int("i")
		if err != nil {
			return err
		}
		out[r.String("t")] = original{i, r.String("d")}
		return nil
	})
	return out, err
}

// linkErr is what is wrong with a link: ErrInvalid.
func linkErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{session.ErrInvalid}, args...)...)
}

func addSet(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = make(map[string]bool)
	}
	m[k][v] = true
}

// Queries of the link rule.
var (
	qImportLinkFacts = query("import-link-facts.rq")
	qImportDerived   = query("import-derived.rq")
	qImportOriginals = query("import-originals.rq")
	qImportDescribed = query("import-described.rq")
)
