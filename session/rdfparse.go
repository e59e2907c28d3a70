package session

// This file reads N-Quads and TriG for Import (knakk/rdf has no TriG
// decoder, and its N-Quads decoder is lenient where Import must be strict).

import (
	"bytes"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// quad is one statement parseRDF read; g is nil for the default graph.
type quad struct {
	s, p, o, g rdf.Term
	line       int
}

// parseRDF reads N-Quads (N-Triples being N-Quads without graph names) or,
// with trig, TriG from src, and hands each statement to emit, stopping at
// the first error. knakk/rdf has no TriG decoder, and its N-Quads decoder
// turns a bad escape into U+FFFD instead of failing, so Trails reads both
// itself.
//
// N-Quads are read strictly, one statement per line. TriG is read as TriG
// 1.1 without the syntax for anonymous blank nodes and collections ([ ] and
// ( ), refused since Trails writes no blank nodes); labelled blank nodes
// (_:x) are read as rdf.Blank for the caller to refuse. Escapes that do not
// denote a Unicode scalar value (surrogates) are errors.
func parseRDF(src []byte, trig bool, emit func(quad) error) error {
	return newRDFParser(trig, emit).parse(src)
}

// newRDFParser returns a parser for parse to use on one document or on
// many (lines of one N-Quads stream), keeping what it learnt.
func newRDFParser(trig bool, emit func(quad) error) *rdfParser {
	return &rdfParser{trig: trig, emit: emit, prefixes: make(map[string]string)}
}

// parse reads src as a document of its own.
func (p *rdfParser) parse(src []byte) error {
	p.src, p.pos, p.line = src, 0, 1
	if p.trig {
		return p.trigDoc()
	}
	return p.nquads()
}

type rdfParser struct {
	src      []byte
	pos      int
	line     int
	trig     bool
	prefixes map[string]string
	base     *url.URL
	emit     func(quad) error
	iris     map[string]rdf.IRI // absolute IRIs read, by their text
}

// syntaxError is input parseRDF cannot read.
type syntaxError struct {
	line int
	msg  string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func (p *rdfParser) errorf(format string, args ...any) error {
	return &syntaxError{line: p.line, msg: fmt.Sprintf(format, args...)}
}

func (p *rdfParser) eof() bool { return p.pos >= len(p.src) }

// peek returns the byte at the position, 0 at the end.
func (p *rdfParser) peek() byte { return p.peekAt(0) }

func (p *rdfParser) peekAt(i int) byte {
	if p.pos+i >= len(p.src) {
		return 0
	}
	return p.src[p.pos+i]
}

// near quotes the input at the position, for an error message.
func (p *rdfParser) near() string {
	end := min(p.pos+20, len(p.src))
	if i := bytes.IndexAny(p.src[p.pos:end], "\r\n"); i >= 0 {
		end = p.pos + i
	}
	if p.pos >= end {
		return "the end of the line"
	}
	return strconv.Quote(string(p.src[p.pos:end]))
}

// spaces skips spaces and tabs.
func (p *rdfParser) spaces() {
	for !p.eof() && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// comment skips to the end of the line.
func (p *rdfParser) comment() {
	for !p.eof() && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
		p.pos++
	}
}

// ws skips white space, line breaks and comments (TriG).
func (p *rdfParser) ws() {
	for !p.eof() {
		switch p.src[p.pos] {
		case ' ', '\t', '\r':
			p.pos++
		case '\n':
			p.pos++
			p.line++
		case '#':
			p.comment()
		default:
			return
		}
	}
}

func (p *rdfParser) nquads() error {
	for {
		p.spaces()
		if p.eof() {
			return nil
		}
		switch p.src[p.pos] {
		case '\n':
			p.pos++
			p.line++
		case '\r':
			p.pos++
		case '#':
			p.comment()
		default:
			if err := p.nquad(); err != nil {
				return err
			}
		}
	}
}

// nquad reads one N-Quads statement and the rest of its line.
func (p *rdfParser) nquad() error {
	q := quad{line: p.line}
	var err error
	if q.s, err = p.ntNode("subject"); err != nil {
		return err
	}
	p.spaces()
	if p.peek() != '<' {
		return p.errorf("predicate: want an IRI, got %s", p.near())
	}
	if q.p, err = p.iri(); err != nil {
		return err
	}
	p.spaces()
	if p.peek() == '"' {
		q.o, err = p.literal()
	} else {
		q.o, err = p.ntNode("object")
	}
	if err != nil {
		return err
	}
	p.spaces()
	if c := p.peek(); c == '<' || c == '_' {
		if q.g, err = p.ntNode("graph"); err != nil {
			return err
		}
		p.spaces()
	}
	if p.peek() != '.' {
		return p.errorf("want '.' at the end of the statement, got %s", p.near())
	}
	p.pos++
	p.spaces()
	if p.peek() == '#' {
		p.comment()
	}
	if c := p.peek(); !p.eof() && c != '\n' && c != '\r' {
		return p.errorf("want the end of the line after '.', got %s", p.near())
	}
	return p.emit(q)
}

// ntNode reads an IRI or a labelled blank node.
func (p *rdfParser) ntNode(what string) (rdf.Term, error) {
	switch p.peek() {
	case '<':
		return p.iri()
	case '_':
		return p.blank()
	}
	return nil, p.errorf("%s: want an IRI or a blank node, got %s", what, p.near())
}

// iri reads an IRI reference at '<'; in TriG a relative one is resolved
// against the base.
func (p *rdfParser) iri() (rdf.IRI, error) {
	p.pos++ // '<'
	start := p.pos
	if n := bytes.IndexByte(p.src[start:], '>'); n >= 0 {
		raw := p.src[start : start+n]
		if iri, ok := p.iris[string(raw)]; ok {
			p.pos += n + 1
			return iri, nil
		}
		if plainIRI(raw) {
			p.pos += n + 1
			iri, err := p.resolve(string(raw))
			if err == nil && hasScheme(iri.String()) && iri.String() == string(raw) {
				if p.iris == nil || len(p.iris) >= 4096 {
					p.iris = make(map[string]rdf.IRI)
				}
				p.iris[string(raw)] = iri
			}
			return iri, err
		}
	}
	var b []byte // the IRI, once an escape made it differ from the input
	for {
		if p.eof() {
			return rdf.IRI{}, p.errorf("IRI: no closing '>'")
		}
		c := p.src[p.pos]
		switch {
		case c == '>':
			s := string(p.src[start:p.pos])
			if b != nil {
				s = string(b)
			}
			p.pos++
			return p.resolve(s)
		case c == '\\':
			if b == nil {
				b = append([]byte(nil), p.src[start:p.pos]...)
			}
			r, err := p.uchar()
			if err != nil {
				return rdf.IRI{}, err
			}
			b = utf8.AppendRune(b, r)
			continue
		case badIRIByte[c]:
			return rdf.IRI{}, p.errorf("IRI: character %q is not allowed", c)
		}
		if b != nil {
			b = append(b, c)
		}
		p.pos++
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
func (p *rdfParser) uchar() (rune, error) {
	n := 0
	switch p.peekAt(1) {
	case 'u':
		n = 4
	case 'U':
		n = 8
	default:
		return 0, p.errorf("bad escape %s", p.near())
	}
	if p.pos+2+n > len(p.src) {
		return 0, p.errorf("bad escape %s", p.near())
	}
	v, err := strconv.ParseUint(string(p.src[p.pos+2:p.pos+2+n]), 16, 32)
	if err != nil || !utf8.ValidRune(rune(v)) {
		return 0, p.errorf("bad escape %s: not a Unicode scalar value", p.near())
	}
	p.pos += 2 + n
	return rune(v), nil
}

// resolve returns s as an IRI term; in TriG a relative IRI is resolved
// against the base.
func (p *rdfParser) resolve(s string) (rdf.IRI, error) {
	iri, err := kg.IRI(s)
	if err == nil {
		return iri, nil
	}
	if !p.trig || hasScheme(s) {
		return rdf.IRI{}, p.errorf("%v", err)
	}
	if p.base == nil {
		return rdf.IRI{}, p.errorf("relative IRI <%s> and no base", s)
	}
	ref, perr := url.Parse(s)
	if perr != nil {
		return rdf.IRI{}, p.errorf("IRI <%s>: %v", s, perr)
	}
	if iri, err = kg.IRI(p.base.ResolveReference(ref).String()); err != nil {
		return rdf.IRI{}, p.errorf("%v", err)
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
func (p *rdfParser) blank() (rdf.Term, error) {
	if p.peekAt(1) != ':' {
		return nil, p.errorf("want an IRI or a blank node, got %s", p.near())
	}
	p.pos += 2
	start := p.pos
	for !p.eof() {
		r, n := utf8.DecodeRune(p.src[p.pos:])
		if !isNameRune(r) && r != '.' {
			break
		}
		p.pos += n
	}
	for p.pos > start && p.src[p.pos-1] == '.' {
		p.pos--
	}
	if p.pos == start {
		return nil, p.errorf("blank node without a label")
	}
	return rdf.NewBlank(string(p.src[start:p.pos]))
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
func (p *rdfParser) literal() (rdf.Term, error) {
	q := p.src[p.pos]
	long := p.trig && p.peekAt(1) == q && p.peekAt(2) == q
	if long {
		p.pos += 3
	} else {
		p.pos++
	}
	var b []byte
	for {
		if p.eof() {
			return nil, p.errorf("string: no closing quote")
		}
		c := p.src[p.pos]
		if c == q && (!long || p.peekAt(1) == q && p.peekAt(2) == q) {
			if long {
				p.pos += 3
			} else {
				p.pos++
			}
			break
		}
		switch c {
		case '\\':
			var e byte
			switch p.peekAt(1) {
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
				e = p.peekAt(1)
			default:
				r, err := p.uchar()
				if err != nil {
					return nil, err
				}
				b = utf8.AppendRune(b, r)
				continue
			}
			b = append(b, e)
			p.pos += 2
			continue
		case '\n', '\r':
			if !long {
				return nil, p.errorf("string: a line break (write \\n)")
			}
			if c == '\n' {
				p.line++
			}
		}
		b = append(b, c)
		p.pos++
	}
	value := string(b)
	switch {
	case p.peek() == '@':
		p.pos++
		start := p.pos
		for !p.eof() {
			c := p.src[p.pos]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || p.pos > start && (c == '-' || c >= '0' && c <= '9')) {
				break
			}
			p.pos++
		}
		if p.pos == start {
			return nil, p.errorf("'@' without a language tag")
		}
		l, err := rdf.NewLangLiteral(value, string(p.src[start:p.pos]))
		if err != nil {
			return nil, p.errorf("language tag %q: %v", p.src[start:p.pos], err)
		}
		return l, nil
	case p.peek() == '^' && p.peekAt(1) == '^':
		p.pos += 2
		var dt rdf.IRI
		var err error
		switch {
		case p.peek() == '<':
			dt, err = p.iri()
		case p.trig:
			dt, err = p.pname()
		default:
			err = p.errorf("datatype: want an IRI, got %s", p.near())
		}
		if err != nil {
			return nil, err
		}
		return rdf.NewTypedLiteral(value, dt), nil
	}
	return kg.String(value), nil
}

// trigDoc reads a TriG document.
func (p *rdfParser) trigDoc() error {
	for {
		p.ws()
		if p.eof() {
			return nil
		}
		var err error
		switch c := p.peek(); {
		case p.word("@prefix", true):
			if err = p.prefixDecl(); err == nil {
				err = p.dot()
			}
		case p.word("@base", true):
			if err = p.baseDecl(); err == nil {
				err = p.dot()
			}
		case p.word("PREFIX", false):
			err = p.prefixDecl()
		case p.word("BASE", false):
			err = p.baseDecl()
		case p.word("GRAPH", false):
			p.ws()
			err = p.graph()
		case c == '{':
			return p.errorf("a block without a graph name holds triples of the default graph; Trails' data lives in named graphs")
		default:
			err = p.graph()
		}
		if err != nil {
			return err
		}
	}
}

// word consumes keyword kw (in any case unless exact) if it stands at the
// position as a whole word.
func (p *rdfParser) word(kw string, exact bool) bool {
	if p.pos+len(kw) > len(p.src) {
		return false
	}
	s := string(p.src[p.pos : p.pos+len(kw)])
	if s != kw && (exact || !strings.EqualFold(s, kw)) {
		return false
	}
	// A keyword ends where a name could not go on: "ab", "a:b" and "a.b:c"
	// are names, "a." is a keyword and the end of a statement.
	rest := p.src[p.pos+len(kw):]
	next, n := utf8.DecodeRune(rest)
	if isNameRune(next) || next == ':' {
		return false
	}
	if after, _ := utf8.DecodeRune(rest[n:]); next == '.' && (isNameRune(after) || after == ':') {
		return false
	}
	p.pos += len(kw)
	return true
}

// dot reads the '.' that ends a directive or statement.
func (p *rdfParser) dot() error {
	p.ws()
	if p.peek() != '.' {
		return p.errorf("want '.', got %s", p.near())
	}
	p.pos++
	return nil
}

// prefixDecl reads "name: <iri>" after @prefix or PREFIX.
func (p *rdfParser) prefixDecl() error {
	p.ws()
	start := p.pos
	for !p.eof() {
		r, n := utf8.DecodeRune(p.src[p.pos:])
		if !isNameRune(r) && r != '.' {
			break
		}
		p.pos += n
	}
	if p.peek() != ':' {
		return p.errorf("prefix: want a name and ':', got %s", p.near())
	}
	name := string(p.src[start:p.pos])
	p.pos++
	p.ws()
	if p.peek() != '<' {
		return p.errorf("prefix %s: want an IRI, got %s", name, p.near())
	}
	iri, err := p.iri()
	if err != nil {
		return err
	}
	p.prefixes[name] = iri.String()
	return nil
}

// baseDecl reads "<iri>" after @base or BASE.
func (p *rdfParser) baseDecl() error {
	p.ws()
	if p.peek() != '<' {
		return p.errorf("base: want an IRI, got %s", p.near())
	}
	iri, err := p.iri()
	if err != nil {
		return err
	}
	if p.base, err = url.Parse(iri.String()); err != nil {
		return p.errorf("base <%s>: %v", iri, err)
	}
	return nil
}

// graph reads "name { triples }"; triples outside a block are refused.
func (p *rdfParser) graph() error {
	g, err := p.node("graph name")
	if err != nil {
		return err
	}
	p.ws()
	if p.peek() != '{' {
		return p.errorf("triples outside a graph block are in the default graph; Trails' data lives in named graphs")
	}
	p.pos++
	for {
		p.ws()
		if p.eof() {
			return p.errorf("graph: no closing '}'")
		}
		if p.peek() == '}' {
			p.pos++
			return nil
		}
		s, err := p.node("subject")
		if err != nil {
			return err
		}
		if err := p.predicateObjects(g, s); err != nil {
			return err
		}
		p.ws()
		switch p.peek() {
		case '.':
			p.pos++
		case '}':
		default:
			return p.errorf("want '.' or '}', got %s", p.near())
		}
	}
}

// node reads an IRI, a prefixed name or a labelled blank node.
func (p *rdfParser) node(what string) (rdf.Term, error) {
	switch c := p.peek(); {
	case c == '<':
		return p.iri()
	case c == '_' && p.peekAt(1) == ':':
		return p.blank()
	case c == '[' || c == '(':
		return nil, p.errorf("%s: anonymous blank nodes and collections are not supported (Trails writes no blank nodes)", what)
	}
	return p.pname()
}

// predicateObjects reads "verb object, object ; verb object ..." about s
// in graph g.
func (p *rdfParser) predicateObjects(g, s rdf.Term) error {
	for {
		p.ws()
		var pred rdf.Term
		var err error
		if p.word("a", true) {
			pred = kg.MustIRI(ontology.RDFType)
		} else if pred, err = p.node("predicate"); err != nil {
			return err
		}
		for {
			p.ws()
			line := p.line
			o, err := p.object()
			if err != nil {
				return err
			}
			if err := p.emit(quad{s: s, p: pred, o: o, g: g, line: line}); err != nil {
				return err
			}
			p.ws()
			if p.peek() != ',' {
				break
			}
			p.pos++
		}
		if p.peek() != ';' {
			return nil
		}
		for p.peek() == ';' {
			p.pos++
			p.ws()
		}
		if c := p.peek(); c == '.' || c == '}' || p.eof() {
			return nil
		}
	}
}

// object reads an object: a node, a literal, a number or a boolean.
func (p *rdfParser) object() (rdf.Term, error) {
	switch c := p.peek(); {
	case c == '"' || c == '\'':
		return p.literal()
	case c == '+' || c == '-' || c == '.' || c >= '0' && c <= '9':
		return p.number()
	case p.word("true", true):
		return rdf.NewTypedLiteral("true", kg.MustIRI(xsdNS+"boolean")), nil
	case p.word("false", true):
		return rdf.NewTypedLiteral("false", kg.MustIRI(xsdNS+"boolean")), nil
	}
	return p.node("object")
}

// number reads an integer, decimal or double.
func (p *rdfParser) number() (rdf.Term, error) {
	start := p.pos
	if c := p.peek(); c == '+' || c == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for c := p.peek(); c >= '0' && c <= '9'; c = p.peek() {
			p.pos++
			n++
		}
		return n
	}
	n := digits()
	dt := "integer"
	if p.peek() == '.' && p.peekAt(1) >= '0' && p.peekAt(1) <= '9' {
		p.pos++
		digits()
		dt = "decimal"
	} else if n == 0 {
		return nil, p.errorf("want an object, got %s", p.near())
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("number: bad exponent")
		}
		dt = "double"
	}
	return rdf.NewTypedLiteral(string(p.src[start:p.pos]), kg.MustIRI(xsdNS+dt)), nil
}

// pname reads a prefixed name and returns its IRI.
func (p *rdfParser) pname() (rdf.IRI, error) {
	start := p.pos
	for !p.eof() {
		r, n := utf8.DecodeRune(p.src[p.pos:])
		if !isNameRune(r) && r != '.' {
			break
		}
		p.pos += n
	}
	if p.peek() != ':' {
		p.pos = start
		return rdf.IRI{}, p.errorf("want an IRI, got %s", p.near())
	}
	prefix := string(p.src[start:p.pos])
	ns, ok := p.prefixes[prefix]
	if !ok {
		p.pos = start
		return rdf.IRI{}, p.errorf("prefix %q is not declared", prefix)
	}
	p.pos++
	var local []byte
	dots := 0 // trailing unescaped dots: they end the statement
	for !p.eof() {
		c := p.src[p.pos]
		switch {
		case c == '%':
			if !isHex(p.peekAt(1)) || !isHex(p.peekAt(2)) {
				return rdf.IRI{}, p.errorf("bad %%-escape in a local name: %s", p.near())
			}
			local = append(local, p.src[p.pos:p.pos+3]...)
			p.pos += 3
			dots = 0
			continue
		case c == '\\':
			e := p.peekAt(1)
			if e == 0 || strings.IndexByte("_~.-!$&'()*+,;=/?#@%", e) < 0 {
				return rdf.IRI{}, p.errorf("bad escape in a local name: %s", p.near())
			}
			local = append(local, e)
			p.pos += 2
			dots = 0
			continue
		case c == '.':
			local = append(local, c)
			p.pos++
			dots++
			continue
		}
		r, n := utf8.DecodeRune(p.src[p.pos:])
		if !isNameRune(r) && r != ':' {
			break
		}
		local = append(local, p.src[p.pos:p.pos+n]...)
		p.pos += n
		dots = 0
	}
	p.pos -= dots
	return p.resolve(ns + string(local[:len(local)-dots]))
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
