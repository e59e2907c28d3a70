package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The applier's side of a tree's move between replica groups (MoveTree):
// the seals of its log, which make it refuse every later record naming a
// moved session, with a refusal that names the group the tree went to.

// movedStatus is the HTTP status of a record refused because a session
// it names moved to another group (421 Misdirected Request: the request
// went to a log that no longer holds the session). Fuseki never answers
// it, so a refusal with it is always a move's.
const movedStatus = http.StatusMisdirectedRequest

// movedRe reads the group a moved refusal names (movedMessage).
var movedRe = regexp.MustCompile(`moved to replica group (\d+)`)

// movedMessage is the refusal of a record naming session id, whose tree
// moved to group to.
func movedMessage(id string, to int) string {
	return fmt.Sprintf("cluster: session %s moved to replica group %d: its tree's writes go to that group's log", id, to)
}

// movedTo returns the group a write's error says its tree moved to (a
// record refused by an applier whose log sealed a session it names).
func movedTo(err error) (int, bool) {
	var ke *kg.Error
	if !errors.As(err, &ke) || ke.Status != movedStatus {
		return 0, false
	}
	m := movedRe.FindStringSubmatch(ke.Body)
	if m == nil {
		return 0, false
	}
	to, err := strconv.Atoi(m[1])
	return to, err == nil
}

// moved returns the refusal of record r when it names a session this
// log sealed, nil otherwise (and always for the move's own records). It
// reads the record only when the log has seals: nothing moved, nothing
// to pay.
func (a *Applier) moved(r *kgo.Record) *refusal {
	op := header(r, headerOp)
	a.mu.Lock()
	none := len(a.sealed) == 0
	a.mu.Unlock()
	if op == opSeal || op == opDropMoved || none {
		return nil
	}
	text := string(r.Value)
	if op == opPutGraph {
		text = "<" + header(r, headerGraph) + ">"
	}
	for _, id := range sessionIDs(text) {
		a.mu.Lock()
		to, ok := a.sealed[id]
		a.mu.Unlock()
		if ok {
			return newRefusal(movedStatus, movedMessage(id, to))
		}
	}
	return nil
}

// moves returns how many sessions moved out of this log's group: sealed,
// and the move's last record applied.
func (a *Applier) moves() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.movedOut
}

// refuseAlone moves the dataset's offset past record r with refusal rf
// (its marker), applying nothing of it.
func (a *Applier) refuseAlone(ctx context.Context, r *kgo.Record, rf *refusal) error {
	if done, err := a.follows(r.Offset-1, r.Offset); done || err != nil {
		return err
	}
	if err := a.send(ctx, r.Offset-1, r.Offset, nil, rf); err != nil {
		return fmt.Errorf("applier: record %d: %w", r.Offset, err)
	}
	a.advance(r.Offset)
	return nil
}

// applyMoveOp applies r, an update of a move (op opSeal or opDropMoved),
// alone, as a record the store refuses is: with its refusal marker. Then
// it reads the log's seals again before the offset is known to be past
// it, so that no record after a seal is applied unchecked, and a move's
// end counts in moves once its last record applied.
func (a *Applier) applyMoveOp(ctx context.Context, r *kgo.Record) error {
	if done, err := a.follows(r.Offset-1, r.Offset); done || err != nil {
		return err
	}
	if err := a.applyAlone(ctx, r, string(r.Value)); err != nil {
		return err
	}
	if err := a.reloadSeals(ctx); err != nil {
		return err
	}
	a.advance(r.Offset)
	return nil
}

// reloadSeals reads this log's seals from the dataset, retrying until it
// can or ctx ends.
func (a *Applier) reloadSeals(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		seals, err := readSeals(ctx, a.cfg.Store, a.log)
		if err == nil {
			sealed, out := map[string]int{}, 0
			for id, sl := range seals {
				sealed[id] = sl.to
				if !sl.held {
					out++
				}
			}
			a.mu.Lock()
			a.sealed, a.movedOut = sealed, out
			a.mu.Unlock()
			return nil
		}
		a.logf("applier: read the seals of %s: %v (retrying)", a.log, err)
		if err := proc.Sleep(ctx, min(backoff(attempt), time.Second)); err != nil {
			return err
		}
	}
}

// sealsQuery reads the seals of log $log: each sealed session, the
// group its tree moved to, and whether the dataset still holds its
// trails:group of another group (the old one: the move's last record,
// which removes it, has not applied).
const sealsQuery = `SELECT ?s ?to ?held WHERE { GRAPH $g { ?seal $in $log ; $session ?s ; $movedTo ?to }
  BIND(EXISTS { GRAPH $g { ?s $group ?n } FILTER(?n != ?to) } AS ?held) }`

// seal is what a log's seal says of a session: the group its tree moved
// to, and whether its move is still going on there (held: the dataset
// still holds its trails:group of the old group).
type seal struct {
	to   int
	held bool
}

// querier is what reads seals: a replica's kg.Client or a group's Client.
type querier interface {
	Select(context.Context, string) (*kg.Results, error)
}

// readSeals returns the seals of log in q's dataset, by session id.
func readSeals(ctx context.Context, q querier, log rdf.IRI) (map[string]seal, error) {
	u, err := kg.Bind(sealsQuery, kg.Params{
		"g": kg.MustIRI(ontology.ReplicaGraph), "in": kg.MustIRI(ontology.SealedIn), "log": log,
		"session": kg.MustIRI(ontology.SealedSession), "movedTo": kg.MustIRI(ontology.MovedTo), "group": kg.MustIRI(ontology.Group),
	})
	if err != nil {
		return nil, err
	}
	res, err := q.Select(ctx, u)
	if err != nil {
		return nil, err
	}
	out := map[string]seal{}
	for _, sol := range res.Solutions {
		iri, ok := sol["s"].(rdf.IRI)
		if !ok {
			return nil, fmt.Errorf("%w: a seal's session is not an IRI", kg.ErrProtocol)
		}
		to, err := sol.Int("to")
		if err != nil {
			return nil, fmt.Errorf("%w: a seal's group: %v", kg.ErrProtocol, err)
		}
		esc, ok := strings.CutPrefix(iri.String(), ontology.SessionBase)
		if !ok {
			continue
		}
		id, err := url.PathUnescape(esc)
		if err != nil {
			continue
		}
		out[id] = seal{to: to, held: sol.String("held") == "true"}
	}
	return out, nil
}

// waitAfter returns once the dataset holds no offset of the log that
// record r's headerAfter names, or an offset at least the one it names:
// at once for a record without it. It orders a move's records on an audit
// replica, whose dataset two logs' appliers write: the copy into the new
// group applies there only after the old group's seal, and the removal
// from the old group only after the copy, so that the audit replica holds
// the tree, once, throughout. A replica of one group holds no other log's
// offset and waits for nothing. It returns ctx's error, or an error for a
// header it cannot read.
func (a *Applier) waitAfter(ctx context.Context, r *kgo.Record) error {
	v := header(r, headerAfter)
	if v == "" {
		return nil
	}
	iri, offText, ok := strings.Cut(v, " ")
	off, err := strconv.ParseInt(offText, 10, 64)
	if !ok || err != nil {
		return fmt.Errorf("applier: record %d: %s %q: want a log IRI and an offset", r.Offset, headerAfter, v)
	}
	log, err := kg.IRI(iri)
	if err != nil {
		return fmt.Errorf("applier: record %d: %s: %w", r.Offset, headerAfter, err)
	}
	q, err := kg.Bind(`SELECT ?o WHERE { GRAPH $g { $log $off ?o } }`, kg.Params{
		"g": kg.MustIRI(ontology.ReplicaGraph), "log": log, "off": kg.MustIRI(ontology.AppliedOffset),
	})
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		res, err := a.cfg.Store.Select(ctx, q)
		if err == nil {
			at := int64(-1)
			if len(res.Solutions) > 0 {
				n, err := res.Solutions[0].Int("o")
				if err != nil {
					return fmt.Errorf("applier: record %d: %w", r.Offset, err)
				}
				at = int64(n)
			}
			if len(res.Solutions) == 0 || at >= off {
				return nil
			}
			err = fmt.Errorf("the dataset applied %s up to %d", log, at)
		}
		if attempt%20 == 0 {
			a.logf("applier: record %d waits until %s is applied up to %d: %v", r.Offset, log, off, err)
		}
		if err := proc.Sleep(ctx, min(backoff(attempt), 500*time.Millisecond)); err != nil {
			return err
		}
	}
}

// afterHeader is the header that makes a record wait, on a dataset that
// also applies topic's log, until that log is applied up to off.
func afterHeader(topic string, off int64) kgo.RecordHeader {
	return kgo.RecordHeader{Key: headerAfter, Value: []byte(ontology.LogIRI(topic, 0) + " " + strconv.FormatInt(off, 10))}
}
