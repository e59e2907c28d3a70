package main

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// textGen makes turn content that looks like an agent conversation: 200 to
// 2,000 characters of prose, quotes of both kinds, newlines and paragraphs,
// bits of code with backslashes and tabs, non-ASCII letters, symbols and
// emoji. Always valid UTF-8. Deterministic for a seed. Not safe for
// concurrent use.
type textGen struct {
	rng *rand.Rand
}

func newTextGen(seed uint64) *textGen {
	return &textGen{rng: rand.New(rand.NewPCG(seed, 0x7472616973))}
}

var (
	words = strings.Fields(`the agent fork session turn history graph prefix branch query store
		load persist parent chain index role content user assistant tool result plan step
		answer question because however which would could should then also only each every
		Lisbon Sintra train ticket budget price palace morning evening weekend hotel café
		naïve façade Zürich São Paulo Kraków Ærø déjà vu résumé coöperate jalapeño über
		timeout retry error value list map key file line code test build deploy version`)
	openers = []string{"Sure.", "Here is what I found:", "Let me check.", "Good question.",
		"I ran the tool:", "Summary:", "Note:", "To be precise,", "In short:"}
	quotes = []string{`"quoted"`, `"It's fine," she said.`, `'single quotes'`, `“curly quotes”`,
		`«guillemets»`, `the "best" option`, `a 'so-called' fix`, `""`, `"\"nested\""`}
	snippets = []string{
		"```go\nif err != nil {\n\treturn fmt.Errorf(\"load %s: %w\", id, err)\n}\n```",
		"`C:\\Users\\agent\\notes.txt`",
		"regex `^\\d{3}-\\d{4}$` matches \"555-1234\"",
		"{\"role\": \"tool\", \"content\": \"ok\\n\"}",
		"SELECT ?s WHERE { ?s a <https://w3id.org/trails/ns#Session> }",
		"path: /var/lib/trails/db\ttab\tseparated",
		"price: €60 → £51 ≈ $65",
		"🙂 👍 🚆 ☕",
		"日本語のテキスト、中文文本、한국어 텍스트",
		"Ελληνικά και Русский текст",
	}
)

// turn returns one turn's content of 200 to 2,000 characters (runes).
func (g *textGen) turn() string { return g.text(200 + g.rng.IntN(1801)) }

// text returns content of exactly n characters (runes).
func (g *textGen) text(n int) string {
	var b strings.Builder
	b.Grow(n * 2)
	b.WriteString(openers[g.rng.IntN(len(openers))])
	b.WriteByte(' ')
	runes := utf8.RuneCountInString(b.String())
	sentence := 0
	for runes < n {
		var piece string
		switch r := g.rng.IntN(100); {
		case r < 4:
			piece = "\n\n"
			sentence = 0
		case r < 7:
			piece = "\n- "
		case r < 11:
			piece = quotes[g.rng.IntN(len(quotes))] + " "
		case r < 13:
			piece = "\n" + snippets[g.rng.IntN(len(snippets))] + "\n"
		case r < 16:
			piece = strconv.Itoa(g.rng.IntN(10000)) + " "
		case r < 22:
			piece = ". "
			sentence = 0
		case r < 25:
			piece = ", "
		default:
			w := words[g.rng.IntN(len(words))]
			if sentence == 0 {
				r, size := utf8.DecodeRuneInString(w)
				w = string(unicode.ToUpper(r)) + w[size:]
			}
			sentence++
			piece = w + " "
		}
		b.WriteString(piece)
		runes += utf8.RuneCountInString(piece)
	}
	s := b.String()
	if !utf8.ValidString(s) {
		panic("trails-bench: generated invalid UTF-8")
	}
	// Cut at exactly n runes, never inside a character.
	i, k := 0, 0
	for k < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i]
}

// role returns the role of the i-th turn of a conversation.
func role(i int) string {
	switch {
	case i == 0:
		return "system"
	case i%2 == 1:
		return "user"
	case i%7 == 0:
		return "tool"
	default:
		return "assistant"
	}
}

// pool is a fixed set of turn bodies for bulk filler: each filler turn is
// a distinct string (a unique header of 4 to 10 characters before a body
// from the pool), so the store's node table holds every one, as it would
// real turns.
type pool struct {
	bodies []string
}

// newPool returns a pool of n bodies whose turns have lo to hi characters.
func newPool(g *textGen, n, lo, hi int) *pool {
	p := &pool{bodies: make([]string, n)}
	for i := range p.bodies {
		p.bodies[i] = g.text(lo + g.rng.IntN(hi-lo-10+1))
	}
	return p
}

// content returns the content of filler turn k: unique for each k.
func (p *pool) content(k int) string {
	return "[" + strconv.Itoa(k) + "] " + p.bodies[k%len(p.bodies)]
}
