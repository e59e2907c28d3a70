package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// A store's floor for a write is the raw INSERT DATA of the triples the
// Trails write on it inserted: no condition, no read, no wait. A lone
// append's floor is one INSERT DATA per append (the append scenario); the
// writers' floor is the appends of Trails' writers, W a request
// (writersFloor). Each store (Fuseki, Oxigraph) has its own, measured on
// it, so that Trails on each is judged against what that store takes.

// floorOf returns the raw INSERT DATA of what Trails' append update u
// inserts (ground), with the session ids that ids replaces replaced, and
// the number of its triples.
func floorOf(u string, ids *strings.Replacer) (string, int, error) {
	blocks, n, err := appendsOf(u, ids)
	if err != nil {
		return "", 0, err
	}
	return "INSERT DATA {\n" + strings.Join(blocks, "") + "}\n", n, nil
}

// appendsOf returns the ground triples (ground) of each write that the
// write request u of Trails carries (a SPARQL Update: members; or, on
// Fuseki with Trails' module, a conditional patch: patchGround), each as
// quad pattern text, with the session ids that ids replaces replaced, and
// the number of their triples.
func appendsOf(u string, ids *strings.Replacer) ([]string, int, error) {
	if strings.HasPrefix(u, patchMagic) {
		return patchGround(u, ids)
	}
	var blocks []string
	var triples int
	for _, m := range members(u) {
		g, n, err := ground("\n"+m, ids)
		if err != nil {
			return nil, 0, err
		}
		blocks, triples = append(blocks, g), triples+n
	}
	return blocks, triples, nil
}

// patchMagic begins the body of a conditional patch request (kg.Client's
// ConditionalBatch).
const patchMagic = "trails-conditional-patch/1\n"

// patchRecord is a record of a conditional patch body: an RDF Patch
// (with its ASK), or a SPARQL Update run as it is.
type patchRecord struct{ patch, update string }

// patchRecords returns the records of the conditional patch body u:
// after its first line, each record is a line "OFFSET ASKBYTES
// PATCHBYTES [BINDBYTES]" and then that many bytes of ASK, patch and
// bindings, or a line "OFFSET U UPDATEBYTES ACK" and the update's text.
func patchRecords(u string) ([]patchRecord, error) {
	var recs []patchRecord
	rest := strings.TrimPrefix(u, patchMagic)
	for rest != "" {
		head, body, ok := strings.Cut(rest, "\n")
		f := strings.Fields(head)
		if !ok || len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("conditional patch: record %d's line %q", len(recs), head)
		}
		if f[1] == "U" {
			n, err := strconv.Atoi(f[2])
			if err != nil || n > len(body) {
				return nil, fmt.Errorf("conditional patch: record %d's line %q", len(recs), head)
			}
			recs = append(recs, patchRecord{update: body[:n]})
			rest = body[n:]
			continue
		}
		var n [3]int
		for i := range f {
			v, err := strconv.Atoi(f[i])
			if err != nil {
				return nil, fmt.Errorf("conditional patch: record %d: %w", len(recs), err)
			}
			if i > 0 {
				n[i-1] = v
			}
		}
		if n[0]+n[1]+n[2] > len(body) {
			return nil, fmt.Errorf("conditional patch: record %d runs past the body", len(recs))
		}
		recs = append(recs, patchRecord{patch: body[n[0] : n[0]+n[1]]})
		rest = body[n[0]+n[1]+n[2]:]
	}
	return recs, nil
}

// patchGround returns, for each record of the conditional patch body u,
// the quads it adds, as quad pattern text, with the session ids that ids
// replaces replaced, and the number of them: of a patch its "A s p o g
// ." lines (the turn, the new count and digest, the batch's receipt), of
// an update record its templates' (ground).
func patchGround(u string, ids *strings.Replacer) ([]string, int, error) {
	recs, err := patchRecords(u)
	if err != nil {
		return nil, 0, err
	}
	blocks := make([]string, len(recs))
	var triples int
	for i, r := range recs {
		if r.update != "" {
			g, n, err := ground("\n"+r.update, ids)
			if err != nil {
				return nil, 0, fmt.Errorf("conditional patch: record %d: %w", i, err)
			}
			blocks[i], triples = g, triples+n
			continue
		}
		var d strings.Builder
		for line := range strings.Lines(r.patch) {
			q, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "A ")
			if !ok {
				continue
			}
			q = strings.TrimSuffix(q, " .")
			at := strings.LastIndex(q, " <") // the graph, an IRI, is the last term
			if at < 0 {
				return nil, 0, fmt.Errorf("conditional patch: record %d: a quad without a graph: %q", i, line)
			}
			d.WriteString("GRAPH " + q[at+1:] + " { " + q[:at] + " . }\n")
			triples++
		}
		blocks[i] = ids.Replace(d.String())
	}
	return blocks, triples, nil
}

// ground returns the ground triples of each operation's INSERT template
// in Trails' update u (the turn, its parts, usage and value changes, the
// new count and digest, the acknowledgement quad; and the shared values
// of its app: and user: keys, whose value the update copies from the
// stored change: here the JSON null, and the store's time they are
// applied at: here a fixed time), as quad patterns for INSERT DATA, with
// the session ids that ids replaces replaced (so that they go to session
// graphs of the floor's own), and the number of triples. The operations
// a batch adds after its members (receipts, gates) write their templates
// on one line, "INSERT { GRAPH", and are no template of an append's. A
// template with other variables makes an INSERT DATA that the store
// refuses, which the floor reports.
func ground(u string, ids *strings.Replacer) (string, int, error) {
	ops := strings.Split(u, "\nINSERT {\n")
	if len(ops) < 2 {
		return "", 0, errors.New("no INSERT template in the update")
	}
	var d strings.Builder
	for _, op := range ops[1:] {
		tmpl, _, ok := strings.Cut(op, "\nWHERE {")
		if !ok {
			return "", 0, errors.New("an INSERT template without WHERE")
		}
		tmpl = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(tmpl), "}")) // without the template's closing brace
		tmpl = strings.ReplaceAll(tmpl, " ?v .", ` "null"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON> .`)
		tmpl = strings.ReplaceAll(tmpl, " ?now ", ` "2026-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> `)
		d.WriteString(ids.Replace(tmpl))
		d.WriteString("\n")
	}
	s := d.String()
	return s, strings.Count(s, " .\n") + strings.Count(s, " ;\n") + strings.Count(s, " ,"), nil
}

// members returns the writes that update request u carries: one for a
// write sent alone, each member of a batch (group commit joins its
// members, after one PREFIX prologue, with "\n;\n"; the operations of one
// write are joined with " ;\n"). The prologue stays with the first.
func members(u string) []string {
	return strings.Split(u, "\n;\n")
}

// writersFloor is a store's floor for a writers scenario: the appends the
// Trails writers on it sent, their triples (ground) as raw INSERT DATA of
// PerRequest appends a request (group commit's best case: every request
// full), one request at a time, into that store.
type writersFloor struct {
	Appends    int           `json:"appends"`
	PerRequest int           `json:"appends_per_request"`
	Requests   int           `json:"requests"`
	Triples    float64       `json:"triples_per_append"`
	Bytes      float64       `json:"bytes_per_request"` // the INSERT DATA's length
	Wall       time.Duration `json:"wall_ns"`           // of all the requests, one after the other
	Latency    dist          `json:"request"`           // of each request
}

// Rate is the appends per second of wall time.
func (f writersFloor) Rate() float64 {
	if f.Wall <= 0 {
		return 0
	}
	return float64(f.Appends) / f.Wall.Seconds()
}

// CommitsPerAppend is the requests (each one commit) per append.
func (f writersFloor) CommitsPerAppend() float64 {
	if f.Appends <= 0 {
		return 0
	}
	return float64(f.Requests) / float64(f.Appends)
}

// writersFloor measures store on's floor for the appends of update
// requests ups, which writers on its Trails sessions of ids tids sent:
// each append's triples, its session id replaced by one of the floor's
// (a session of its own for each writer's), per appends a request.
func (b *bench) writersFloor(ctx context.Context, on *trailsOn, ups, tids []string, per int) (writersFloor, error) {
	f := writersFloor{PerRequest: per}
	var pairs []string
	for _, id := range tids {
		pairs = append(pairs, id, uuid.Must(uuid.NewV7()).String())
	}
	ids := strings.NewReplacer(pairs...)
	var blocks []string // an append's triples each
	var triples int
	for i, u := range ups {
		bs, n, err := appendsOf(u, ids)
		if err != nil {
			return f, fmt.Errorf("floor of write request %d: %w", i, err)
		}
		blocks, triples = append(blocks, bs...), triples+n
	}
	if len(blocks) == 0 {
		return f, errors.New("floor: the writers sent no append")
	}
	var reqs []string
	for i := 0; i < len(blocks); i += per {
		reqs = append(reqs, "INSERT DATA {\n"+strings.Join(blocks[i:min(i+per, len(blocks))], "")+"}\n")
	}
	var size int
	ds := make([]time.Duration, 0, len(reqs))
	start := time.Now()
	for i, u := range reqs {
		size += len(u)
		t0 := time.Now()
		err := on.c.Update(ctx, u)
		ds = append(ds, time.Since(t0))
		if err != nil {
			return f, fmt.Errorf("%s's floor request %d: %w", on.name, i, err)
		}
	}
	f.Wall = time.Since(start)
	f.Appends, f.Requests, f.Latency = len(blocks), len(reqs), distOf(ds)
	f.Triples, f.Bytes = float64(triples)/float64(len(blocks)), float64(size)/float64(len(reqs))
	return f, nil
}
