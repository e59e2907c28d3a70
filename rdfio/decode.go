package rdfio

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// Namespaces of the datatypes TriG's bare numbers and booleans stand for.
var xsdNS = strings.TrimSuffix(ontology.XSDString, "string")

// A Decoder reads quads from a stream of N-Quads or TriG.
//
// N-Quads are read strictly, one statement per line, a line at a time.
// TriG is read as TriG 1.1 without the syntax for anonymous blank nodes and
// collections ([ ] and ( ) are errors), and without the default graph
// (triples outside a named graph's block are errors); the whole input is
// read before the first quad is returned, since a statement may span
// lines. Labelled blank nodes (_:x) are read as rdf.Blank. Escapes that do
// not denote a Unicode scalar value (surrogates) are errors. Literals are
// read as they are written: an xsd:integer keeps its leading zeros.
//
// A Decoder is not safe for concurrent use.
type Decoder struct {
	r    *bufio.Reader
	trig bool
	err  error // the error Decode returns from now on

	src       []byte // the input in hand: a line of N-Quads, all of TriG
	pos       int
	line      int // the line at pos, from 1
	lineStart int // the position in src where that line starts
	read      bool

	prefixes map[string]string
	base     *url.URL
	iris     map[string]rdf.IRI // absolute IRIs read, by their text

	// TriG: where the decoder stands in a graph block.
	state   trigState
	g, s, p rdf.Term
}

// trigState is where a TriG decoder stands.
type trigState int

const (
	outside     trigState = iota // between directives and graph blocks
	inBlock                      // in a block, before a subject or '}'
	wantVerb                     // after a subject or ';'
	wantObject                   // after a verb or ','
	afterObject                  // after an object
)

// NewDecoder returns a Decoder that reads r as format f (NQuads or TriG).
func NewDecoder(r io.Reader, f Format) *Decoder {
	d := &Decoder{r: bufio.NewReaderSize(r, 64<<10), trig: f == TriG, line: 1, prefixes: make(map[string]string)}
	if f != NQuads && f != TriG {
		d.err = fmt.Errorf("rdfio: unknown format %v", f)
	}
	return d
}

// Decode returns the next quad of the input. At the end of the input it
// returns io.EOF; for input it cannot read, a *SyntaxError; and the error
// of the reader as it is. After an error, Decode returns the same error.
func (d *Decoder) Decode() (Quad, error) {
	if d.err != nil {
		return Quad{}, d.err
	}
	var q Quad
	var err error
	if d.trig {
		q, err = d.trigNext()
	} else {
		q, err = d.nquadNext()
	}
	if err != nil {
		d.err = err
	}
	return q, err
}

// errorf returns a *SyntaxError at the position.
func (d *Decoder) errorf(format string, args ...any) error {
	return &SyntaxError{Line: d.line, Col: d.pos - d.lineStart + 1, Msg: fmt.Sprintf(format, args...)}
}

func (d *Decoder) eof() bool { return d.pos >= len(d.src) }

// peek returns the byte at the position, 0 at the end.
func (d *Decoder) peek() byte { return d.peekAt(0) }

func (d *Decoder) peekAt(i int) byte {
	if d.pos+i >= len(d.src) {
		return 0
	}
	return d.src[d.pos+i]
}

// newline steps over the '\n' at the position.
func (d *Decoder) newline() {
	d.pos++
	d.line++
	d.lineStart = d.pos
}

// near quotes the input at the position, for an error message.
func (d *Decoder) near() string {
	end := min(d.pos+20, len(d.src))
	if i := bytes.IndexAny(d.src[d.pos:end], "\r\n"); i >= 0 {
		end = d.pos + i
	}
	if d.pos >= end {
		return "the end of the line"
	}
	return strconv.Quote(string(d.src[d.pos:end]))
}

// spaces skips spaces and tabs.
func (d *Decoder) spaces() {
	for !d.eof() && (d.src[d.pos] == ' ' || d.src[d.pos] == '\t') {
		d.pos++
	}
}

// comment skips to the end of the line.
func (d *Decoder) comment() {
	for !d.eof() && d.src[d.pos] != '\n' && d.src[d.pos] != '\r' {
		d.pos++
	}
}

// ws skips white space, line breaks and comments (TriG).
func (d *Decoder) ws() {
	for !d.eof() {
		switch d.src[d.pos] {
		case ' ', '\t', '\r':
			d.pos++
		case '\n':
			d.newline()
		case '#':
			d.comment()
		default:
			return
		}
	}
}

// nextLine makes the next line of the input, with its '\n', the input in
// hand. It returns io.EOF at the end.
func (d *Decoder) nextLine() error {
	if d.read {
		return io.EOF
	}
	d.src, d.pos, d.lineStart = d.src[:0], 0, 0
	for {
		chunk, err := d.r.ReadSlice('\n')
		d.src = append(d.src, chunk...)
		switch err {
		case nil:
			return nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			d.read = true
			if len(d.src) == 0 {
				return io.EOF
			}
			return nil
		default:
			return err
		}
	}
}

// nquadNext returns the next N-Quads statement.
func (d *Decoder) nquadNext() (Quad, error) {
	for {
		d.spaces()
		if d.eof() {
			if err := d.nextLine(); err != nil {
				return Quad{}, err
			}
			continue
		}
		switch d.src[d.pos] {
		case '\n':
			d.newline()
		case '\r':
			d.pos++
		case '#':
			d.comment()
		default:
			return d.nquad()
		}
	}
}

// nquad reads one N-Quads statement and the rest of its line.
func (d *Decoder) nquad() (Quad, error) {
	q := Quad{Line: d.line}
	var err error
	if q.S, err = d.ntNode("subject"); err != nil {
		return q, err
	}
	d.spaces()
	if d.peek() != '<' {
		return q, d.errorf("predicate: want an IRI, got %s", d.near())
	}
	if q.P, err = d.iri(); err != nil {
		return q, err
	}
	d.spaces()
	if d.peek() == '"' {
		q.O, err = d.literal()
	} else {
		q.O, err = d.ntNode("object")
	}
	if err != nil {
		return q, err
	}
	d.spaces()
	if c := d.peek(); c == '<' || c == '_' {
		if q.G, err = d.ntNode("graph"); err != nil {
			return q, err
		}
		d.spaces()
	}
	if d.peek() != '.' {
		return q, d.errorf("want '.' at the end of the statement, got %s", d.near())
	}
	d.pos++
	d.spaces()
	if d.peek() == '#' {
		d.comment()
	}
	if c := d.peek(); !d.eof() && c != '\n' && c != '\r' {
		return q, d.errorf("want the end of the line after '.', got %s", d.near())
	}
	return q, nil
}

// ntNode reads an IRI or a labelled blank node.
func (d *Decoder) ntNode(what string) (rdf.Term, error) {
	switch d.peek() {
	case '<':
		return d.iri()
	case '_':
		return d.blank()
	}
	return nil, d.errorf("%s: want an IRI or a blank node, got %s", what, d.near())
}

// iri reads an IRI reference at '<'; in TriG a relative one is resolved
// against the base.
func (d *Decoder) iri() (rdf.IRI, error) {
	d.pos++ // '<'
	start := d.pos
	if n := bytes.IndexByte(d.src[start:], '>'); n >= 0 {
		raw := d.src[start : start+n]
		if iri, ok := d.iris[string(raw)]; ok {
			d.pos += n + 1
			return iri, nil
		}
		if plainIRI(raw) {
			d.pos += n + 1
			iri, err := d.resolve(string(raw))
			if err == nil && hasScheme(iri.String()) && iri.String() == string(raw) {
				if d.iris == nil || len(d.iris) >= 4096 {
					d.iris = make(map[string]rdf.IRI)
				}
				d.iris[string(raw)] = iri
			}
			return iri, err
		}
	}
	var b []byte // the IRI, once an escape made it differ from the input
	for {
		if d.eof() {
			return rdf.IRI{}, d.errorf("IRI: no closing '>'")
		}
		c := d.src[d.pos]
		switch {
		case c == '>':
			s := string(d.src[start:d.pos])
			if b != nil {
				s = string(b)
			}
			d.pos++
			return d.resolve(s)
		case c == '\\':
			if b == nil {
				b = append([]byte(nil), d.src[start:d.pos]...)
			}
			r, err := d.uchar()
			if err != nil {
				return rdf.IRI{}, err
			}
			b = utf8.AppendRune(b, r)
			continue
		case badIRIByte[c]:
			return rdf.IRI{}, d.errorf("IRI: character %q is not allowed", c)
		}
		if b != nil {
			b = append(b, c)
		}
		d.pos++
	}
}

// badIRIByte holds the bytes an IRI reference may not hold raw.
var badIRIByte = func() (t [256]bool) {
	for c := 0; c <= ' '; c++ {
		t[c] = true
	}
	for _, c := range []byte("<\"{}|^`\\") {
		t[c] = true
	}
	return t
}()

// plainIRI reports whether raw holds no byte an IRI reference may not hold
// raw, and no escape.
func plainIRI(raw []byte) bool {
	for _, c := range raw {
		if badIRIByte[c] {
			return false
		}
	}
	return true
}

// uchar reads \uXXXX or \UXXXXXXXX at '\'.
func (d *Decoder) uchar() (rune, error) {
	n := 0
	switch d.peekAt(1) {
	case 'u':
		n = 4
	case 'U':
		n = 8
	default:
		return 0, d.errorf("bad escape %s", d.near())
	}
	if short := d.pos + 2 + n - len(d.src); short > 0 {
		// An escape cut short by the end of the input; one cut short by
		// the end of an N-Quads line, with more input after it, is not
		// hex digits.
		if _, err := d.r.Peek(short); d.read || err != nil {
			return 0, d.errorf("bad escape %s", d.near())
		}
		return 0, d.errorf("bad escape %s: not a Unicode scalar value", d.near())
	}
	v, err := strconv.ParseUint(string(d.src[d.pos+2:d.pos+2+n]), 16, 32)
	if err != nil || !utf8.ValidRune(rune(v)) {
		return 0, d.errorf("bad escape %s: not a Unicode scalar value", d.near())
	}
	d.pos += 2 + n
	return rune(v), nil
}

// resolve returns s as an IRI term; in TriG a relative IRI is resolved
// against the base.
func (d *Decoder) resolve(s string) (rdf.IRI, error) {
	iri, err := kg.IRI(s)
	if err == nil {
		return iri, nil
	}
	if !d.trig || hasScheme(s) {
		return rdf.IRI{}, d.errorf("%v", err)
	}
	if d.base == nil {
		return rdf.IRI{}, d.errorf("relative IRI <%s> and no base", s)
	}
	ref, perr := url.Parse(s)
	if perr != nil {
		return rdf.IRI{}, d.errorf("IRI <%s>: %v", s, perr)
	}
	if iri, err = kg.IRI(d.base.ResolveReference(ref).String()); err != nil {
		return rdf.IRI{}, d.errorf("%v", err)
	}
	return iri, nil
}

// hasScheme reports whether s starts with a URI scheme and ':'.
func hasScheme(s string) bool {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// blank reads a labelled blank node at '_'.
func (d *Decoder) blank() (rdf.Term, error) {
	if d.peekAt(1) != ':' {
		return nil, d.errorf("want an IRI or a blank node, got %s", d.near())
	}
	d.pos += 2
	start := d.pos
	d.name()
	for d.pos > start && d.src[d.pos-1] == '.' {
		d.pos--
	}
	if d.pos == start {
		return nil, d.errorf("blank node without a label")
	}
	return rdf.NewBlank(string(d.src[start:d.pos]))
}

// name skips the characters of a prefix or a blank node label (name
// characters and '.', the caller trimming trailing dots where they end
// the statement).
func (d *Decoder) name() {
	for !d.eof() {
		r, n := utf8.DecodeRune(d.src[d.pos:])
		if !isNameRune(r) && r != '.' {
			return
		}
		d.pos += n
	}
}

// isNameRune reports whether r may stand in a prefix, local name or blank
// node label (PN_CHARS of Turtle, '.' and ':' aside).
func isNameRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		return true
	case r < 0x80 || r == utf8.RuneError:
		return false
	case r == 0xB7, r >= 0xC0 && r <= 0x2FF && r != 0xD7 && r != 0xF7, r >= 0x300 && r <= 0x37D,
		r >= 0x37F && r <= 0x1FFF, r == 0x200C, r == 0x200D, r == 0x203F, r == 0x2040,
		r >= 0x2070 && r <= 0x218F, r >= 0x2C00 && r <= 0x2FEF, r >= 0x3001 && r <= 0xD7FF,
		r >= 0xF900 && r <= 0xFDCF, r >= 0xFDF0 && r <= 0xFFFD, r >= 0x10000 && r <= 0xEFFFF:
		return true
	}
	return false
}

// literal reads a string literal with its language tag or datatype.
// N-Quads allow "..." only; TriG also single quotes, and either quote
// tripled for a long string that may hold line breaks.
func (d *Decoder) literal() (rdf.Term, error) {
	q := d.src[d.pos]
	long := d.trig && d.peekAt(1) == q && d.peekAt(2) == q
	if long {
		d.pos += 3
	} else {
		d.pos++
	}
	var b []byte
	for {
		if d.eof() {
			return nil, d.errorf("string: no closing quote")
		}
		c := d.src[d.pos]
		if c == q && (!long || d.peekAt(1) == q && d.peekAt(2) == q) {
			if long {
				d.pos += 3
			} else {
				d.pos++
			}
			break
		}
		switch c {
		case '\\':
			var e byte
			switch d.peekAt(1) {
			case 't':
				e = '\t'
			case 'b':
				e = '\b'
			case 'n':
				e = '\n'
			case 'r':
				e = '\r'
			case 'f':
				e = '\f'
			case '"', '\'', '\\':
				e = d.peekAt(1)
			default:
				r, err := d.uchar()
				if err != nil {
					return nil, err
				}
				b = utf8.AppendRune(b, r)
				continue
			}
			b = append(b, e)
			d.pos += 2
			continue
		case '\n', '\r':
			if !long {
				return nil, d.errorf("string: no closing quote before the end of the line (a line break inside a string is written \\n)")
			}
			if c == '\n' {
				b = append(b, c)
				d.newline()
				continue
			}
		}
		b = append(b, c)
		d.pos++
	}
	value := string(b)
	switch {
	case d.peek() == '@':
		d.pos++
		start := d.pos
		for !d.eof() {
			c := d.src[d.pos]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || d.pos > start && (c == '-' || c >= '0' && c <= '9')) {
				break
			}
			d.pos++
		}
		if d.pos == start {
			return nil, d.errorf("'@' without a language tag")
		}
		l, err := rdf.NewLangLiteral(value, string(d.src[start:d.pos]))
		if err != nil {
			return nil, d.errorf("language tag %q: %v", d.src[start:d.pos], err)
		}
		return l, nil
	case d.peek() == '^' && d.peekAt(1) == '^':
		d.pos += 2
		var dt rdf.IRI
		var err error
		switch {
		case d.peek() == '<':
			dt, err = d.iri()
		case d.trig:
			dt, err = d.pname()
		default:
			err = d.errorf("datatype: want an IRI, got %s", d.near())
		}
		if err != nil {
			return nil, err
		}
		return rdf.NewTypedLiteral(value, dt), nil
	}
	return kg.String(value), nil
}

// trigNext returns the next statement of a TriG document.
func (d *Decoder) trigNext() (Quad, error) {
	if !d.read {
		src, err := io.ReadAll(d.r)
		if err != nil {
			return Quad{}, err
		}
		d.src, d.read = src, true
	}
	for {
		var err error
		switch d.state {
		case outside:
			d.ws()
			if d.eof() {
				return Quad{}, io.EOF
			}
			err = d.statement()
		case inBlock:
			d.ws()
			switch {
			case d.eof():
				return Quad{}, d.errorf("graph: no closing '}'")
			case d.peek() == '}':
				d.pos++
				d.state = outside
			default:
				if d.s, err = d.node("subject"); err == nil {
					d.state = wantVerb
				}
			}
		default:
			var o rdf.Term
			var line int
			if o, line, err = d.triplePart(); err == nil && o != nil {
				return Quad{S: d.s, P: d.p, O: o, G: d.g, Line: line}, nil
			}
		}
		if err != nil {
			return Quad{}, err
		}
	}
}

// triplePart reads the next part of a subject's triples, by the state: a
// verb, an object (which it returns with its line), or what follows an
// object.
func (d *Decoder) triplePart() (rdf.Term, int, error) {
	var err error
	switch d.state {
	case wantVerb:
		d.ws()
		if d.word("a", true) {
			d.p = kg.MustIRI(ontology.RDFType)
		} else {
			d.p, err = d.predicate()
		}
		d.state = wantObject
	case wantObject:
		d.ws()
		line := d.line
		var o rdf.Term
		if o, err = d.object(); err == nil {
			d.state = afterObject
			return o, line, nil
		}
	case afterObject:
		err = d.afterObject()
	}
	return nil, 0, err
}

// outsideBlock reads the triples of subject s, which stands outside any
// graph block (Turtle rather than TriG, or a graph block without its
// braces), up to the '.' that ends them, and returns the error of the
// first of them that does not parse, or if all parse the error that
// Trails' data lives in named graphs: a syntax error further on, such as
// an unterminated string, says more than that the file is Turtle.
func (d *Decoder) outsideBlock(s rdf.Term) error {
	outside := d.errorf("triples outside a graph block are in the default graph; Trails' data lives in named graphs")
	d.s, d.state = s, wantVerb
	for d.state != inBlock {
		if _, _, err := d.triplePart(); err != nil {
			return err
		}
	}
	return outside
}

// statement reads a directive, or a graph's name and the '{' of its block.
func (d *Decoder) statement() error {
	switch c := d.peek(); {
	case d.word("@prefix", true):
		if err := d.prefixDecl(); err != nil {
			return err
		}
		return d.dot()
	case d.word("@base", true):
		if err := d.baseDecl(); err != nil {
			return err
		}
		return d.dot()
	case d.word("PREFIX", false):
		return d.prefixDecl()
	case d.word("BASE", false):
		return d.baseDecl()
	case d.word("GRAPH", false):
		d.ws()
	case c == '{':
		return d.errorf("a block without a graph name holds triples of the default graph; Trails' data lives in named graphs")
	}
	g, err := d.node("graph name")
	if err != nil {
		return err
	}
	d.ws()
	if d.peek() != '{' {
		return d.outsideBlock(g)
	}
	d.pos++
	d.g, d.state = g, inBlock
	return nil
}

// afterObject reads what follows an object: ',' and another object, ';'
// and another verb, or the end of the subject's triples.
func (d *Decoder) afterObject() error {
	d.ws()
	switch d.peek() {
	case ',':
		d.pos++
		d.state = wantObject
		return nil
	case ';':
		for d.peek() == ';' {
			d.pos++
			d.ws()
		}
		if c := d.peek(); c != '.' && c != '}' && !d.eof() {
			d.state = wantVerb
			return nil
		}
		d.ws()
	}
	switch d.peek() {
	case '.':
		d.pos++
	case '}':
	default:
		return d.errorf("want '.' or '}', got %s", d.near())
	}
	d.state = inBlock
	return nil
}

// word consumes keyword kw (in any case unless exact) if it stands at the
// position as a whole word.
func (d *Decoder) word(kw string, exact bool) bool {
	if d.pos+len(kw) > len(d.src) {
		return false
	}
	s := string(d.src[d.pos : d.pos+len(kw)])
	if s != kw && (exact || !strings.EqualFold(s, kw)) {
		return false
	}
	// A keyword ends where a name could not go on: "ab", "a:b" and "a.b:c"
	// are names, "a." is a keyword and the end of a statement.
	rest := d.src[d.pos+len(kw):]
	next, n := utf8.DecodeRune(rest)
	if isNameRune(next) || next == ':' {
		return false
	}
	if after, _ := utf8.DecodeRune(rest[n:]); next == '.' && (isNameRune(after) || after == ':') {
		return false
	}
	d.pos += len(kw)
	return true
}

// dot reads the '.' that ends a directive or statement.
func (d *Decoder) dot() error {
	d.ws()
	if d.peek() != '.' {
		return d.errorf("want '.', got %s", d.near())
	}
	d.pos++
	return nil
}

// prefixDecl reads "name: <iri>" after @prefix or PREFIX.
func (d *Decoder) prefixDecl() error {
	d.ws()
	start := d.pos
	d.name()
	if d.peek() != ':' {
		return d.errorf("prefix: want a name and ':', got %s", d.near())
	}
	name := string(d.src[start:d.pos])
	d.pos++
	d.ws()
	if d.peek() != '<' {
		return d.errorf("prefix %s: want an IRI, got %s", name, d.near())
	}
	iri, err := d.iri()
	if err != nil {
		return err
	}
	d.prefixes[name] = iri.String()
	return nil
}

// baseDecl reads "<iri>" after @base or BASE.
func (d *Decoder) baseDecl() error {
	d.ws()
	if d.peek() != '<' {
		return d.errorf("base: want an IRI, got %s", d.near())
	}
	iri, err := d.iri()
	if err != nil {
		return err
	}
	if d.base, err = url.Parse(iri.String()); err != nil {
		return d.errorf("base <%s>: %v", iri, err)
	}
	return nil
}

// node reads an IRI, a prefixed name or a labelled blank node.
func (d *Decoder) node(what string) (rdf.Term, error) {
	switch c := d.peek(); {
	case c == '<':
		return d.iri()
	case c == '_' && d.peekAt(1) == ':':
		return d.blank()
	case c == '[' || c == '(':
		return nil, d.errorf("%s: anonymous blank nodes and collections are not supported (Trails writes no blank nodes)", what)
	}
	return d.pname()
}

// predicate reads an IRI or a prefixed name: a predicate is never a blank
// node.
func (d *Decoder) predicate() (rdf.Term, error) {
	if d.peek() == '_' && d.peekAt(1) == ':' {
		return nil, d.errorf("predicate: want an IRI, got %s", d.near())
	}
	return d.node("predicate")
}

// object reads an object: a node, a literal, a number or a boolean.
func (d *Decoder) object() (rdf.Term, error) {
	switch c := d.peek(); {
	case c == '"' || c == '\'':
		return d.literal()
	case c == '+' || c == '-' || c == '.' || c >= '0' && c <= '9':
		return d.number()
	case d.word("true", true):
		return rdf.NewTypedLiteral("true", kg.MustIRI(xsdNS+"boolean")), nil
	case d.word("false", true):
		return rdf.NewTypedLiteral("false", kg.MustIRI(xsdNS+"boolean")), nil
	}
	return d.node("object")
}

// number reads an integer, decimal or double.
func (d *Decoder) number() (rdf.Term, error) {
	start := d.pos
	if c := d.peek(); c == '+' || c == '-' {
		d.pos++
	}
	digits := func() int {
		n := 0
		for c := d.peek(); c >= '0' && c <= '9'; c = d.peek() {
			d.pos++
			n++
		}
		return n
	}
	n := digits()
	dt := "integer"
	if d.peek() == '.' && d.peekAt(1) >= '0' && d.peekAt(1) <= '9' {
		d.pos++
		digits()
		dt = "decimal"
	} else if n == 0 {
		return nil, d.errorf("want an object, got %s", d.near())
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.pos++
		if c := d.peek(); c == '+' || c == '-' {
			d.pos++
		}
		if digits() == 0 {
			return nil, d.errorf("number: bad exponent")
		}
		dt = "double"
	}
	return rdf.NewTypedLiteral(string(d.src[start:d.pos]), kg.MustIRI(xsdNS+dt)), nil
}

// pname reads a prefixed name and returns its IRI.
func (d *Decoder) pname() (rdf.IRI, error) {
	start := d.pos
	d.name()
	if d.peek() != ':' {
		d.pos = start
		return rdf.IRI{}, d.errorf("want an IRI, got %s", d.near())
	}
	prefix := string(d.src[start:d.pos])
	ns, ok := d.prefixes[prefix]
	if !ok {
		d.pos = start
		return rdf.IRI{}, d.errorf("prefix %q is not declared", prefix)
	}
	d.pos++
	var local []byte
	dots := 0 // trailing unescaped dots: they end the statement
	for !d.eof() {
		c := d.src[d.pos]
		switch {
		case c == '%':
			if !isHex(d.peekAt(1)) || !isHex(d.peekAt(2)) {
				return rdf.IRI{}, d.errorf("bad %%-escape in a local name: %s", d.near())
			}
			local = append(local, d.src[d.pos:d.pos+3]...)
			d.pos += 3
			dots = 0
			continue
		case c == '\\':
			e := d.peekAt(1)
			if e == 0 || strings.IndexByte("_~.-!$&'()*+,;=/?#@%", e) < 0 {
				return rdf.IRI{}, d.errorf("bad escape in a local name: %s", d.near())
			}
			local = append(local, e)
			d.pos += 2
			dots = 0
			continue
		case c == '.':
			local = append(local, c)
			d.pos++
			dots++
			continue
		}
		r, n := utf8.DecodeRune(d.src[d.pos:])
		if !isNameRune(r) && r != ':' {
			break
		}
		local = append(local, d.src[d.pos:d.pos+n]...)
		d.pos += n
		dots = 0
	}
	d.pos -= dots
	return d.resolve(ns + string(local[:len(local)-dots]))
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
