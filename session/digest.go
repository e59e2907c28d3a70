package session

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"hash"
	"io"
	"strconv"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// digests returns the trails:headDigest of turns[:n] and of all turns, in
// one pass: "sha256:" and the hex SHA-256 over each turn's index, role,
// content and creation time, every field length-prefixed so that no two
// histories share a digest by concatenation.
func digests(turns []Turn, n int) (atN, all string) {
	atN, all, _ = digestsState(turns, n)
	return atN, all
}

// hashState is a SHA-256 in the middle of a digest, saved
// (encoding.BinaryMarshaler), so that the digest of a longer history can go
// on from it without hashing the turns again.
type hashState []byte

// digestsState is digests, also returning the hash's state after all turns.
func digestsState(turns []Turn, n int) (atN, all string, st hashState) {
	h := sha256.New()
	atN = sum(h)
	for i, t := range turns {
		writeTurn(h, t)
		if i+1 == n {
			atN = sum(h)
		}
	}
	return atN, sum(h), save(h)
}

// digestOn goes on from state st (after some turns) with more turns, and
// returns the digest of the whole and the state after it.
func digestOn(st hashState, more []Turn) (all string, next hashState, err error) {
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st); err != nil {
		return "", nil, err
	}
	for _, t := range more {
		writeTurn(h, t)
	}
	return sum(h), save(h), nil
}

func save(h hash.Hash) hashState {
	b, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		panic(err) // crypto/sha256 always can
	}
	return b
}

// digest returns the trails:headDigest of turns.
func digest(turns []Turn) string {
	_, all := digests(turns, 0)
	return all
}

func sum(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

func writeTurn(h hash.Hash, t Turn) {
	var buf [24]byte
	field := func(s string) {
		b := strconv.AppendInt(buf[:0], int64(len(s)), 10)
		b = append(b, ':')
		h.Write(b)
		io.WriteString(h, s)
	}
	field(strconv.Itoa(t.Index))
	field(t.Role)
	field(t.Content)
	field(t.Created.UTC().Format(time.RFC3339Nano))
}

// addHead adds a session's turn count and head digest to its graph in d.
func addHead(d *kg.Data, g rdf.IRI, own int, head string) {
	d.Add(g, g, iri(ontology.OwnTurns), kg.Int(own))
	d.Add(g, g, iri(ontology.HeadDigest), kg.String(head))
}
