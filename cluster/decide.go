package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/appendhint"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The decided path (ApplierConfig.UpdatesOnly unset). A replica's
// applier is its dataset's only writer, so it can decide the condition
// of an append by reading, instead of having Fuseki evaluate the
// append's conditional update, with its ack and gate operations, record
// after record. For a run of records that carry an append's hint
// (appendhint), it reads once: each session's first append's condition
// (the WHERE clause of the record's own text, evaluated by the store),
// the session's count and digest, whether a turn lies past the first
// append's last stored one, and whether each record's gate is fenced.
// An append that follows another of the same session in the run holds
// exactly when its hint continues the previous one's (its count, head
// digest and chain digest are those the previous one wrote; its
// rewinds and fork fields those of the first), since an append changes
// nothing else its condition reads. The run's appends whose condition
// holds, from the first up to the first that does not, are applied as
// data (DELETE DATA of the count and digest, INSERT DATA of the turns)
// in one request with the position guard, so that they keep every
// guarantee of the update path: a request sent again never applies
// twice, another applier is fenced. An append whose condition does not
// hold, and every record without a hint, goes the update path, where
// Fuseki evaluates its text and refuses it as before: its refusal and
// marker are the same on every replica. An audit replica's dataset has
// one applier per replica group's log, each its own log's only writer of
// what an append's condition reads: a session's records are in one
// group's log at a time, and a move orders its records there (the copy
// waits for the seal, which ends the old log's records of the tree:
// waitAfter); the move's last record removes only the old group's mark
// (trails:group in the replica graph).

// hinted is a record of a run: its append's hint and its text.
type hinted struct {
	h    appendhint.Hint
	text string
}

// decide returns the records of recs, from the first, that are appends
// whose condition holds on the dataset as it is (before recs); none when
// the first is not one (no hint, a hint that does not read, a condition
// that does not hold, or the dataset could not be read: the update path
// decides then).
func (a *Applier) decide(ctx context.Context, recs []*kgo.Record) []hinted {
	var run []hinted
	for _, r := range recs {
		v := header(r, appendhint.Key)
		if v == "" {
			break
		}
		text := string(r.Value)
		h, err := appendhint.Decode(v, text)
		if err != nil {
			a.logf("applier: record %d: %v (the update path applies it)", r.Offset, err)
			break
		}
		run = append(run, hinted{h, text})
	}
	if len(run) == 0 {
		return nil
	}
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
// when its condition holds (the decided path without fenced-patch).
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

// patchOf returns the RDF Patch of run, appends whose conditions hold,
// that also moves the dataset's offset of log from prev to last: what
// the position guard and dataOps do, as data. An error means that a
// hint's data is not the quad pattern text kg.Data writes.
func patchOf(log rdf.IRI, prev, last int64, run []hinted) ([]byte, error) {
	var b bytes.Buffer
	rg, l, off := termOf(kg.MustIRI(ontology.ReplicaGraph)), termOf(log), termOf(kg.MustIRI(ontology.AppliedOffset))
	if prev >= 0 {
		fmt.Fprintf(&b, "D %s %s %s %s .\n", l, off, termOf(kg.Int(int(prev))), rg)
	}
	fmt.Fprintf(&b, "A %s %s %s %s .\n", l, off, termOf(kg.Int(int(last))), rg)
	ownTurns, headDigest := termOf(kg.MustIRI(ontology.OwnTurns)), termOf(kg.MustIRI(ontology.HeadDigest))
	for _, r := range run {
		s := termOf(kg.MustIRI(r.h.Session))
		fmt.Fprintf(&b, "D %s %s %s %s .\nD %s %s %s %s .\n", s, ownTurns, termOf(kg.Int(r.h.Own)), s, s, headDigest, termOf(kg.String(r.h.Head)), s)
		g := ""
		for line := range strings.Lines(appendhint.Span(r.text, r.h.Data)) {
			line = strings.TrimSuffix(line, "\n")
			switch {
			case strings.HasPrefix(line, "GRAPH ") && strings.HasSuffix(line, " {") && g == "":
				g = strings.TrimSuffix(strings.TrimPrefix(line, "GRAPH "), " {")
			case line == "}" && g != "":
				g = ""
			case strings.HasSuffix(line, " .") && g != "":
				b.WriteString("A ")
				b.WriteString(strings.TrimSuffix(line, " ."))
				b.WriteByte(' ')
				b.WriteString(g)
				b.WriteString(" .\n")
			default:
				return nil, fmt.Errorf("append hint of %s: the data's line %q", r.h.Session, line)
			}
		}
		if g != "" {
			return nil, fmt.Errorf("append hint of %s: a graph block not closed", r.h.Session)
		}
	}
	return b.Bytes(), nil
}

// errNoPatch says that the dataset's Fuseki serves no fenced-patch
// endpoint (Trails' module for Fuseki is not on its class path).
var errNoPatch = errors.New("cluster: the replica's Fuseki serves no fenced-patch endpoint")

// patches reports whether the decided path sends RDF Patch.
func (a *Applier) patches() bool { return !a.cfg.NoPatch && a.patch.Load() }

// fencedPatch sends patch to the dataset's fenced-patch endpoint, to
// apply while the dataset's offset is prev. A server without the
// endpoint turns patches off: errNoPatch.
func (a *Applier) fencedPatch(ctx context.Context, prev int64, patch []byte) error {
	err := a.cfg.Store.FencedPatch(ctx, a.log, prev, patch)
	var ke *kg.Error
	if errors.As(err, &ke) && ke.Status == http.StatusNotFound {
		a.patch.Store(false)
		a.logf("applier: %s serves no fenced-patch endpoint (%v): appends applied as data go as SPARQL Update", a.cfg.Store.Endpoint(), err)
		return errNoPatch
	}
	return err
}

// probePatch learns whether the dataset's Fuseki serves the fenced-patch
// endpoint, by an empty patch at the dataset's offset stored, which
// changes nothing.
func (a *Applier) probePatch(ctx context.Context, stored int64) {
	if a.cfg.UpdatesOnly || a.cfg.NoPatch {
		return
	}
	err := a.cfg.Store.FencedPatch(ctx, a.log, stored, nil)
	var ke *kg.Error
	ok := err == nil || errors.As(err, &ke) && ke.Status == http.StatusConflict
	a.patch.Store(ok)
	if ok {
		a.logf("applier: appends applied as data go as RDF Patch to %s/fenced-patch", a.cfg.Store.Endpoint())
	} else {
		a.logf("applier: no fenced-patch endpoint at %s (%v): appends applied as data go as SPARQL Update", a.cfg.Store.Endpoint(), err)
	}
}
