package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/appendhint"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The decided path (ApplierConfig.UpdatesOnly unset). A replica's
// applier is its dataset's only writer, so it need not have Fuseki
// evaluate each append's conditional update, with its ack and gate
// operations, record after record: for an append that carries a hint
// (appendhint), the condition is one ASK (appendhint.Ask: the WHERE clause of
// the record's own text, the session holding exactly the hint's count
// and head digest, the write's gate open) and its effect when it holds
// is data (appendhint.Patch: the count and digest removed, the turns added).
//
// Where the replica's Fuseki serves Trails' module, a run of hinted
// records goes to its conditional-patch endpoint in one request
// (applyConditional): in one write transaction, fenced by the dataset's
// offset of the log, it evaluates each record's ASK on the dataset as
// the records before it left it and applies its RDF Patch while the
// ASK holds, then moves the offset to the last applied. Without the
// module (or with ApplierConfig.NoPatch) the applier reads once for the
// run (readRun: each session's first append's condition, the session's
// count and digest, whether a turn lies past the first append's last
// stored one, each record's gate); an append that follows another of
// the same session in the run holds exactly when its hint continues the
// previous one's (its count, head digest and chain digest are those the
// previous one wrote; its rewinds and fork fields those of the first),
// since an append changes nothing else its condition reads; the appends
// that hold are applied as DELETE DATA and INSERT DATA in one request
// with the position guard. Either way a request sent again never
// applies twice, and another applier is fenced.
//
// The appends that hold are applied from the first up to the first that
// does not. That one, and every record without a hint, goes the update
// path, where Fuseki evaluates its text and refuses it as before: its
// refusal and marker are the same on every replica. An audit replica's
// dataset has one applier per replica group's log, each its own log's
// only writer of what an append's condition reads: a session's records
// are in one group's log at a time, and a move orders its records there
// (the copy waits for the seal, which ends the old log's records of the
// tree: waitAfter); the move's last record removes only the old group's
// mark (trails:group in the replica graph).

// hinted is a record of a run: its append's hint and its text; or, with
// g, a group commit's record (appendhint.Group), which only the
// conditional patch applies as data.
type hinted struct {
	h    appendhint.Hint
	text string
	g    *appendhint.Group
}

// hintedRun returns the records of recs, from the first, that carry an
// append's hint that reads, or, when the decided path sends conditional
// patches, a group hint that reads (none when the first does not).
func (a *Applier) hintedRun(recs []*kgo.Record) []hinted {
	var run []hinted
	for _, r := range recs {
		text := string(r.Value)
		if v := header(r, appendhint.GroupKey); v != "" && a.patches() {
			g, err := appendhint.DecodeGroup(v, text)
			if err != nil {
				a.logf("applier: record %d: %v (the update path applies it)", r.Offset, err)
				break
			}
			run = append(run, hinted{text: text, g: &g})
			continue
		}
		v := header(r, appendhint.Key)
		if v == "" {
			break
		}
		h, err := appendhint.Decode(v, text)
		if err != nil {
			a.logf("applier: record %d: %v (the update path applies it)", r.Offset, err)
			break
		}
		run = append(run, hinted{h: h, text: text})
	}
	return run
}

// appends returns the records of run up to its first group record: what
// the decided path by reading decides.
func appends(run []hinted) []hinted {
	for i, r := range run {
		if r.g != nil {
			return run[:i]
		}
	}
	return run
}

// groupRecord returns group record r as a conditional patch record at
// offset off: each plain append a conditional patch (appendhint.Ask,
// appendhint.Patch) writing its receipt as data, every other member its
// update with its ack. An error means an append's patch cannot be built.
func groupRecord(r hinted, off int64) (kg.Conditional, error) {
	g := r.g
	gated := &kg.Gated{Gate: kg.MustIRI(g.Gate)}
	if g.Receipt != "" {
		gated.Receipt = kg.MustIRI(g.Receipt)
	}
	for _, d := range g.Drop {
		gated.Drop = append(gated.Drop, kg.MustIRI(d))
	}
	c := kg.Conditional{Offset: off, Group: gated, Members: make([]kg.Conditional, len(g.Members))}
	for i, m := range g.Members {
		var ack rdf.IRI
		if m.Ack != "" {
			ack = kg.MustIRI(m.Ack)
		}
		if m.Append == nil {
			c.Members[i] = kg.Conditional{Update: g.Update(r.text, m), Ack: ack}
			continue
		}
		p, err := appendhint.Patch(r.text, *m.Append)
		if err != nil {
			return kg.Conditional{}, err
		}
		if g.Receipt != "" {
			p = append(p, "A "+termOf(gated.Receipt)+" "+termOf(kg.MustIRI(ontology.Applied))+" "+termOf(ack)+" "+termOf(gated.Receipt)+" .\n"...)
		}
		ask, params := appendhint.Ask(r.text, *m.Append)
		c.Members[i] = kg.Conditional{Ask: ask, Params: params, Patch: p}
	}
	return c, nil
}

// decide returns the records of run (a hintedRun of recs), from the
// first, whose condition holds on the dataset as it is (before recs), as
// one read tells: none when the first does not hold or the dataset could
// not be read (the update path decides then). It is the decided path
// where the dataset's Fuseki serves no conditional-patch endpoint.
func (a *Applier) decide(ctx context.Context, recs []*kgo.Record, run []hinted) []hinted {
	rd, err := a.readRun(ctx, run)
	if err != nil {
		a.logf("applier: read the conditions of records %d..%d: %v (the update path applies them)", recs[0].Offset, recs[len(run)-1].Offset, err)
		return nil
	}
	type session struct{ first, last appendhint.Hint }
	sessions := map[string]*session{}
	n := 0
	for i, r := range run {
		h := r.h
		if rd.gated[i] {
			break
		}
		if s, ok := sessions[h.Session]; ok {
			f, l := s.first, s.last
			if rd.past[h.Session] || h.Own != l.NewOwn || h.Head != l.NewHead || h.Prev != l.Last ||
				h.Gen != f.Gen || h.ForkOf != f.ForkOf || h.ForkAt != f.ForkAt {
				break
			}
			s.last = h
		} else {
			if !rd.holds[i] || !rd.exact[i] {
				break
			}
			sessions[h.Session] = &session{first: h, last: h}
		}
		n++
	}
	return run[:n]
}

// dataOps returns the operations that do what append r's update does
// when its condition holds (the decided path without conditional-patch).
func dataOps(r hinted) string {
	s := termOf(kg.MustIRI(r.h.Session))
	return "DELETE DATA { GRAPH " + s + " { " + s + " " + termOf(kg.MustIRI(ontology.OwnTurns)) + " " + termOf(kg.Int(r.h.Own)) + " . " +
		s + " " + termOf(kg.MustIRI(ontology.HeadDigest)) + " " + termOf(kg.String(r.h.Head)) + " . } } ;\n" +
		"INSERT DATA {\n" + appendhint.Span(r.text, r.h.Data) + "}"
}

// runRead is what the applier read of a run of appends, by the record's
// index in the run.
type runRead struct {
	holds map[int]bool    // the record's condition holds (read for a session's first record only)
	exact map[int]bool    // the session holds one count and one head digest, the record's own (first records only)
	past  map[string]bool // the session holds a turn past its first record's last stored one (sessions with more than one record)
	gated map[int]bool    // the record's gate is fenced, or its ack graph holds something
}

// readRun reads, in one query, what decide needs of run.
func (a *Applier) readRun(ctx context.Context, run []hinted) (runRead, error) {
	rd := runRead{holds: map[int]bool{}, exact: map[int]bool{}, past: map[string]bool{}, gated: map[int]bool{}}
	first := map[string]int{}
	count := map[string]int{}
	for i, r := range run {
		if _, ok := first[r.h.Session]; !ok {
			first[r.h.Session] = i
		}
		count[r.h.Session]++
	}
	own, head, index := termOf(kg.MustIRI(ontology.OwnTurns)), termOf(kg.MustIRI(ontology.HeadDigest)), termOf(kg.MustIRI(ontology.Index))
	fences, fencedAt := termOf(kg.MustIRI(ontology.FencesGraph)), termOf(kg.MustIRI(ontology.FencedAt))
	var b strings.Builder
	b.WriteString("PREFIX trails: <" + ontology.NS + ">\nSELECT ?zk ?zi ?zn ?zh WHERE {\n")
	branches := 0
	union := func(format string, args ...any) {
		if branches > 0 {
			b.WriteString("UNION\n")
		}
		branches++
		fmt.Fprintf(&b, format, args...)
	}
	for i, r := range run {
		s := termOf(kg.MustIRI(r.h.Session))
		if first[r.h.Session] == i {
			union("{ SELECT (\"c\" AS ?zk) (%d AS ?zi) WHERE {\n%s\n} LIMIT 1 }\n", i, appendhint.Span(r.text, r.h.Cond))
			union("{ SELECT (\"t\" AS ?zk) (%d AS ?zi) ?zn ?zh WHERE { GRAPH %s { %s %s ?zn ; %s ?zh } } LIMIT 2 }\n", i, s, s, own, head)
			if count[r.h.Session] > 1 {
				union("{ SELECT (\"p\" AS ?zk) (%d AS ?zi) WHERE { GRAPH %s { ?zt %s ?zx } FILTER(?zx > %d) } LIMIT 1 }\n", i, s, index, r.h.ForkAt+r.h.Own-1)
			}
		}
		ack := termOf(kg.MustIRI(r.h.Ack))
		union("{ SELECT (\"g\" AS ?zk) (%d AS ?zi) WHERE { { GRAPH %s { %s %s ?zf } } UNION { GRAPH %s { ?za ?zb ?zc } } } LIMIT 1 }\n", i, fences, ack, fencedAt, ack)
	}
	b.WriteString("}")
	res, err := a.cfg.Store.Select(ctx, b.String())
	if err != nil {
		return runRead{}, err
	}
	terms := map[int][][2]rdf.Term{}
	for _, row := range res.Solutions {
		i, err := row.Int("zi")
		if err != nil || i < 0 || i >= len(run) {
			return runRead{}, fmt.Errorf("a row of index %q", row.String("zi"))
		}
		switch row.String("zk") {
		case "c":
			rd.holds[i] = true
		case "t":
			terms[i] = append(terms[i], [2]rdf.Term{row["zn"], row["zh"]})
		case "p":
			rd.past[run[i].h.Session] = true
		case "g":
			rd.gated[i] = true
		}
	}
	for i, ts := range terms {
		h := run[i].h
		rd.exact[i] = len(ts) == 1 && sameLiteral(ts[0][0], strconv.Itoa(h.Own), xsdInteger) && sameLiteral(ts[0][1], h.Head, xsdString)
	}
	return rd, nil
}

const (
	xsdInteger = "http://www.w3.org/2001/XMLSchema#integer"
	xsdString  = "http://www.w3.org/2001/XMLSchema#string"
)

// sameLiteral reports whether t is the literal of lexical form lex and
// datatype dt (a simple literal for xsd:string).
func sameLiteral(t rdf.Term, lex, dt string) bool {
	l, ok := t.(rdf.Literal)
	if !ok || l.Lang() != "" || l.String() != lex {
		return false
	}
	d := l.DataType.String()
	return d == dt || dt == xsdString && d == ""
}

// errNoPatch says that the dataset's Fuseki serves no conditional-patch
// endpoint (Trails' module for Fuseki is not on its class path).
var errNoPatch = errors.New("cluster: the replica's Fuseki serves no conditional-patch endpoint")

// patches reports whether the decided path sends conditional patches.
func (a *Applier) patches() bool { return !a.cfg.NoPatch && a.patch.Load() }

// applyConditional applies, of run (the hinted records of recs, from the
// first), the records whose condition holds, from the first up to the
// first that does not, by the dataset's conditional-patch endpoint: each
// record's ASK (appendhint.Ask) and patch (appendhint.Patch), evaluated and applied in one
// transaction, the offset moved to the last applied. It returns how
// many it applied; errNoPatch when the endpoint is not there (patches
// off from now on); ctx's error; an error when another applier writes
// the dataset. A run the store refuses (it cannot read it) goes the
// update path whole.
func (a *Applier) applyConditional(ctx context.Context, recs []*kgo.Record, run []hinted) (n int, err error) {
	cs := make([]kg.Conditional, 0, len(run))
	before := map[string]appendhint.Hint{} // by session: its record before in the run
	for i, r := range run {
		if r.g != nil {
			c, err := groupRecord(r, recs[i].Offset)
			if err != nil {
				a.logf("applier: record %d: %v (the update path applies it)", recs[i].Offset, err)
				break
			}
			// A group's writes may change any session (a rewind, a
			// delete): no append after it continues one before.
			clear(before)
			cs = append(cs, c)
			continue
		}
		p, err := appendhint.Patch(r.text, r.h)
		if err != nil {
			a.logf("applier: record %d: %v (the update path applies it)", recs[i].Offset, err)
			break
		}
		var ask string
		var params kg.Params
		if l, ok := before[r.h.Session]; ok && appendhint.Continues(l, r.h) {
			ask, params = appendhint.ContinuesTemplate, appendhint.ContinuesParams(r.h)
		} else {
			ask, params = appendhint.Ask(r.text, r.h)
		}
		before[r.h.Session] = r.h
		cs = append(cs, kg.Conditional{Offset: recs[i].Offset, Ask: ask, Patch: p, Params: params})
	}
	if len(cs) == 0 {
		return 0, nil
	}
	prev, last := recs[0].Offset-1, recs[len(cs)-1].Offset
	start := a.tel.StartApply(ctx)
	defer func() { a.tel.ApplyDone(ctx, start, err) }()
	failed := 0 // answers of 500 in a row
	for attempt := 0; ; attempt++ {
		n, err := a.cfg.Store.ConditionalPatch(ctx, a.log, prev, cs)
		var ke *kg.Error
		if errors.As(err, &ke) && ke.Status == http.StatusNotFound {
			a.patch.Store(false)
			a.logf("applier: %s serves no conditional-patch endpoint (%v): appends go the decided path by reading", a.cfg.Store.Endpoint(), err)
			return 0, errNoPatch
		}
		if err == nil {
			a.countGroups(cs[:n])
			return a.appliedAsData(ctx, recs, n), nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		// Lost, or refused: the dataset's offset tells how many applied.
		stored, serr := a.stored(ctx)
		switch {
		case serr == nil && stored > prev && stored <= last:
			a.countGroups(cs[:stored-prev])
			return a.appliedAsData(ctx, recs, int(stored-prev)), nil
		case serr == nil && stored != prev:
			return 0, fmt.Errorf("applier: the dataset's offset is %d, want %d to %d: another applier writes this dataset", stored, prev, last)
		case serr == nil && refused(err, &failed):
			a.logf("applier: offsets %d..%d as a conditional patch: %v (the update path applies them)", prev+1, last, err)
			return len(cs), a.applyUpdates(ctx, recs[:len(cs)])
		}
		a.logf("applier: apply offsets %d..%d: %v (retrying)", prev+1, last, err)
		if err := proc.Sleep(ctx, backoff(attempt)); err != nil {
			return 0, err
		}
	}
}

// countGroups counts the group records of cs, records applied.
func (a *Applier) countGroups(cs []kg.Conditional) {
	for _, c := range cs {
		if c.Group != nil {
			a.groups.Add(1)
		}
	}
}

// appliedAsData notes that the first n of recs were applied as data,
// and returns n.
func (a *Applier) appliedAsData(ctx context.Context, recs []*kgo.Record, n int) int {
	if n > 0 {
		a.advance(recs[n-1].Offset)
		a.decided.Add(int64(n))
		a.tel.Decided(ctx, n)
		a.tel.Records(ctx, n, 0)
	}
	return n
}

// probePatch learns whether the dataset's Fuseki serves the
// conditional-patch endpoint, by no records at the dataset's offset
// stored, which changes nothing.
func (a *Applier) probePatch(ctx context.Context, stored int64) {
	if a.cfg.UpdatesOnly || a.cfg.NoPatch {
		return
	}
	_, err := a.cfg.Store.ConditionalPatch(ctx, a.log, stored, nil)
	var ke *kg.Error
	ok := err == nil || errors.As(err, &ke) && ke.Status == http.StatusConflict
	a.patch.Store(ok)
	if ok {
		a.logf("applier: appends go as conditional patches to %s/conditional-patch", a.cfg.Store.Endpoint())
	} else {
		a.logf("applier: no conditional-patch endpoint at %s (%v): appends go the decided path by reading", a.cfg.Store.Endpoint(), err)
	}
}
