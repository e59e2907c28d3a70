package session

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"strconv"
	"time"
)

// digests returns the trails:headDigest of turns[:n] and of all turns, in
// one pass: "sha256:" and the hex SHA-256 over each turn's index, role,
// content and creation time, every field length-prefixed so that no two
// histories share a digest by concatenation.
func digests(turns []Turn, n int) (atN, all string) {
	h := sha256.New()
	atN = sum(h) // n == 0
	for i, t := range turns {
		writeTurn(h, t)
		if i+1 == n {
			atN = sum(h)
		}
	}
	return atN, sum(h)
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
