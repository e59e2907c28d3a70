package session

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strconv"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
)

// The hash chain of turns. Every turn Persist writes carries
// trails:digest, a SHA-256 over the digest of the turn before it in the
// session's effective history (for a fork's first turn of its own, the
// parent's turn at ForkedAt-1, wherever in the parent's chain that turn
// is stored) and the turn's own fields. A digest thus stands for the whole
// history up to its turn: a new fork proves the prefix its author saw by
// naming one digest, an append's compare and swap checks the chain head,
// and Check names every turn whose stored fields no longer give its digest.
//
// The digest is "sha256:" and the lowercase hex of SHA-256 over, in order,
// each as the decimal length in bytes, ":" and the bytes: the tag
// "trails-turn/1", the previous digest ("" before the first turn), the
// index in decimal, the role, the content, the creation time as RFC 3339
// in UTC with as many fractional digits as it needs (Go's
// time.RFC3339Nano), and the branch label. Detach copies a turn with its
// digest, Rewind moves it untouched, so neither breaks the chain.
//
// A structured turn (Turn.Structured: parts, author, model, usage,
// metadata or a raw copy) is hashed with the tag "trails-turn/2" instead,
// and after the branch label its structured fields, each length-prefixed
// the same way, in this order: author, invocation id, model, finish
// reason; "1" and the five token counts in decimal (input, output,
// cached, reasoning, total) when it has usage, else ""; the number of
// metadata keys in decimal, then each key and its JSON bytes as given,
// keys sorted by their bytes; "1", the raw format and the raw bytes when
// it has a raw copy, else ""; the number of parts, then for each part in
// order its kind, text, call id, tool name, arguments, result, "1" or "0"
// for the error flag, MIME type, data bytes and data IRI (a field the
// part lacks as ""); then, only when the turn changes the state, the
// number of keys it changes and each key, sorted, with "1" and its JSON
// or "0" and "" for a removal; then, only when it has an event id
// (Structure.EventID), "event" and the id. A turn without structured
// fields keeps recipe 1, and a turn without changes or event id has the
// digest it had before they were hashed, so every stored digest holds.

// chainTag starts the input of every turn digest: the version of the
// recipe above.
const chainTag = "trails-turn/1"

// chainTagStructured starts the input of a structured turn's digest.
const chainTagStructured = "trails-turn/2"

// chainDigest returns the trails:digest of turn t when the turn before it
// in its effective history has digest prev ("" when t is the first).
func chainDigest(prev string, t Turn) string {
	h := sha256.New()
	structured := t.Structured()
	if structured {
		field(h, chainTagStructured)
	} else {
		field(h, chainTag)
	}
	field(h, prev)
	writeTurn(h, t) // index, role, content, created
	field(h, t.Branch)
	if structured {
		writeStructure(h, t)
	}
	return sum(h)
}

// TurnDigest returns the trails:digest of turn t (its Index, Role,
// Content, Created and Branch, and its structured fields when it has any:
// see the recipe above) when the turn before it in its effective
// history has digest prev ("" when t is the first): what Persist writes
// with t, and what an auditor recomputes to verify a chain outside Trails.
func TurnDigest(prev string, t Turn) string { return chainDigest(prev, t) }

// chainHead returns the digest of the last of turns, the chain going on
// from prev; prev itself when turns is empty.
func chainHead(prev string, turns []Turn) string {
	for _, t := range turns {
		prev = chainDigest(prev, t)
	}
	return prev
}

// chainDigests returns the digests of turns, the chain going on from prev.
func chainDigests(prev string, turns []Turn) []string {
	out := make([]string, len(turns))
	for i, t := range turns {
		prev = chainDigest(prev, t)
		out[i] = prev
	}
	return out
}

// chainAt returns the digest at index i of a history whose digests are
// chain: "" for i < 0 (nothing before the first turn).
func chainAt(chain []string, i int) string {
	if i < 0 {
		return ""
	}
	return chain[i]
}

// field writes s to h length-prefixed, as writeTurn does for each field.
func field(h io.Writer, s string) {
	var buf [24]byte
	b := strconv.AppendInt(buf[:0], int64(len(s)), 10)
	b = append(b, ':')
	h.Write(b)
	io.WriteString(h, s)
}

var qStoredDigests = query("stored-digests.rq")

// sameDigests checks that each of turns (as loaded, their ID their IRI)
// that has a stored trails:digest has the one chain gives it (chain[i] is
// the digest of turns[i]), in one query: a turn edited in the store after
// it was written is ErrCorrupt, naming it, so that no copy launders it. A
// turn without a digest (stored before the hash chain) passes.
func (st *Store) sameDigests(ctx context.Context, turns []Turn, chain []string) error {
	if len(turns) == 0 {
		return nil
	}
	rows := make([][]rdf.Term, len(turns))
	want := make(map[string]int, len(turns))
	for i, t := range turns {
		rows[i] = []rdf.Term{kg.MustIRI(t.ID)}
		want[t.ID] = i
	}
	q, err := kg.BindTables(qStoredDigests, nil, map[string]kg.Table{"turns": {Vars: []string{"t"}, Rows: rows}})
	if err != nil {
		return fmt.Errorf("stored-digests: %w", err)
	}
	res, err := st.c.Select(ctx, q)
	if err != nil {
		return err
	}
	for _, row := range res.Solutions {
		i, ok := want[row.String("t")]
		if ok && row.String("d") != chain[i] {
			return fmt.Errorf("%w: turn %d (%s) does not match its trails:digest: it was changed after it was written (see trails-admin check)", ErrCorrupt, turns[i].Index, turns[i].ID)
		}
	}
	return nil
}
