package session

import (
	"context"
	"strconv"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// A batch's receipts: what each member writes when its condition held,
// the one query that asks every member's outcome after the request
// (checks), and the receipt graphs dropped by the next request.

// receiptOps returns the operations that end a batch member with ack
// graph ack: they write its receipt, {r} trails:applied {ack}, into
// receipt graph r if the ack graph holds its quad (the member's condition
// held), then drop the ack graph. No PREFIX (see share-value.ru).
func receiptOps(ack, r rdf.IRI) string {
	a, _ := kg.Term(ack)
	g, _ := kg.Term(r)
	p, _ := kg.Term(kg.MustIRI(ontology.Applied))
	return " ;\nINSERT { GRAPH " + g + " { " + g + " " + p + " " + a + " } } WHERE { GRAPH " + a + " { " + a + " " + a + " " + a + " } } ;\nDROP SILENT GRAPH " + a + "\n"
}

// receiptPattern is the group graph pattern that holds when the member
// with ack graph ack has its receipt in receipt graph r.
func receiptPattern(ack, r rdf.IRI) string {
	a, _ := kg.Term(ack)
	g, _ := kg.Term(r)
	p, _ := kg.Term(kg.MustIRI(ontology.Applied))
	return "{ GRAPH " + g + " { " + g + " " + p + " " + a + " } }"
}

// checks asks in one query whether group's writes applied, and returns
// which did: a write with an ack by its receipt in receipt graph r, one
// without by its check. A write with neither reads as not confirmed.
func (st *Store) checks(ctx context.Context, group []*pending, r rdf.IRI) ([]bool, error) {
	applied := make([]bool, len(group))
	pro := prologue{}
	var q strings.Builder
	for i, p := range group {
		var pattern string
		switch {
		case p.w.ack != (rdf.IRI{}):
			pattern = receiptPattern(p.w.ack, r)
		case p.w.check == "":
			continue
		}
		if pattern != "" {
			if q.Len() > 0 {
				q.WriteString("\nUNION\n")
			}
			q.WriteString("{ " + pattern + " BIND(" + strconv.Itoa(i) + " AS ?trailsMember) }")
			continue
		}
		body, _, ok := pro.join(p.w.check)
		pattern, found := askPattern(body)
		if !ok || !found { // not one of ours: asked alone
			var err error
			if applied[i], err = st.c.Ask(ctx, p.w.check); err != nil {
				return nil, err
			}
			continue
		}
		if q.Len() > 0 {
			q.WriteString("\nUNION\n")
		}
		q.WriteString("{ {\n" + pattern + "\n} BIND(" + strconv.Itoa(i) + " AS ?trailsMember) }")
	}
	if q.Len() == 0 {
		return applied, nil
	}
	res, err := st.c.Select(named(ctx, "checks"), pro.String()+"SELECT DISTINCT ?trailsMember WHERE {\n"+q.String()+"\n}")
	if err != nil {
		return nil, err
	}
	for _, row := range res.Solutions {
		if i, err := row.Int("trailsMember"); err == nil && i >= 0 && i < len(applied) {
			applied[i] = true
		}
	}
	return applied, nil
}

// takeReceipts takes the receipt graphs waiting to be dropped and
// returns the operations that drop them, for the request about to be
// sent to carry; the caller gives them back (keepReceipts) when that
// request did not succeed.
func (st *Store) takeReceipts() (ops string, gs []rdf.IRI) {
	b := st.batch
	if b == nil {
		return "", nil
	}
	b.mu.Lock()
	gs, b.receipts = b.receipts, nil
	b.mu.Unlock()
	var sb strings.Builder
	for _, g := range gs {
		t, _ := kg.Term(g)
		sb.WriteString(" ;\nDROP SILENT GRAPH " + t + "\n")
	}
	return sb.String(), gs
}

// keepReceipts gives receipt graphs gs to the next request to drop.
func (st *Store) keepReceipts(gs []rdf.IRI) {
	b := st.batch
	if b == nil || len(gs) == 0 {
		return
	}
	b.mu.Lock()
	b.receipts = append(b.receipts, gs...)
	b.mu.Unlock()
}
