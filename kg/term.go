package kg

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/knakk/rdf"
)

// XSD datatype IRIs used by the literal constructors.
const (
	xsdString   = "http://www.w3.org/2001/XMLSchema#string"
	xsdDateTime = "http://www.w3.org/2001/XMLSchema#dateTime"
)

// IRI returns s as an IRI term. It fails with ErrInvalidTerm unless s is an
// absolute IRI of valid UTF-8 with none of the characters N-Triples forbids.
func IRI(s string) (rdf.IRI, error) {
	if !utf8.ValidString(s) {
		return rdf.IRI{}, fmt.Errorf("%w: IRI %q is not valid UTF-8", ErrInvalidTerm, s)
	}
	i := strings.IndexByte(s, ':')
	if i <= 0 || !isScheme(s[:i]) {
		return rdf.IRI{}, fmt.Errorf("%w: IRI %q is not absolute", ErrInvalidTerm, s)
	}
	iri, err := rdf.NewIRI(s)
	if err != nil {
		return rdf.IRI{}, fmt.Errorf("%w: IRI %q: %v", ErrInvalidTerm, s, err)
	}
	return iri, nil
}

// MustIRI is IRI for constants known to be valid; it panics otherwise.
func MustIRI(s string) rdf.IRI {
	iri, err := IRI(s)
	if err != nil {
		panic(err)
	}
	return iri
}

func isScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// String returns s as an xsd:string literal. Validity (UTF-8) is checked
// when the term is serialized.
func String(s string) rdf.Literal {
	return rdf.NewTypedLiteral(s, rdf.IRI(MustIRI(xsdString)))
}

// Bool returns b as an xsd:boolean literal.
func Bool(b bool) rdf.Literal {
	l, _ := rdf.NewLiteral(b) // cannot fail for a bool
	return l
}

// Int returns n as an xsd:integer literal.
func Int(n int) rdf.Literal {
	l, _ := rdf.NewLiteral(n) // cannot fail for an int
	return l
}

// DateTime returns t as an xsd:dateTime literal in UTC with all of its
// fractional seconds (knakk/rdf's own constructor drops them). A time
// outside years MinYear to MaxYear makes a literal that Term, Bind and
// Data refuse (ErrInvalidTerm): check such a time first with CheckTime.
func DateTime(t time.Time) rdf.Literal {
	return rdf.NewTypedLiteral(t.UTC().Format(time.RFC3339Nano), MustIRI(xsdDateTime))
}

// MinYear and MaxYear bound the years of the times Trails writes: the
// four-digit years of xsd:dateTime, which every SPARQL store, SHACL
// engine and Go's encoding/json reads. A literal with another year
// (XSD 1.1 allows "-0005-…" and "57868-…") is still read (ParseDateTime),
// never written.
const (
	MinYear = 0
	MaxYear = 9999
)

// CheckTime returns nil when t, in UTC, falls in years MinYear to
// MaxYear, and an error wrapping ErrInvalidTerm that names t otherwise
// (a time taken from milliseconds as if they were seconds lands in year
// 57868).
func CheckTime(t time.Time) error {
	if y := t.UTC().Year(); y < MinYear || y > MaxYear {
		return fmt.Errorf("%w: time %s is outside years %04d to %04d", ErrInvalidTerm, t.UTC().Format(time.RFC3339Nano), MinYear, MaxYear)
	}
	return nil
}

// ParseDateTime reads the lexical form of an xsd:dateTime as XSD 1.1
// defines it: a year of four or more digits, negative years ("-0005",
// year 0000 being 1 BCE as in Go), fractional seconds, and a time zone
// or none (then UTC). It reads every literal DateTime makes, and those
// other writers made with years beyond MaxYear, so that a session that
// holds one stays readable. It fails with ErrInvalidTerm otherwise.
func ParseDateTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	bad := fmt.Errorf("%w: %q is not an xsd:dateTime", ErrInvalidTerm, truncate(s))
	rest, neg := strings.CutPrefix(s, "-")
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	if digits < 4 || (digits > 4 && rest[0] == '0') || digits > 12 {
		return time.Time{}, bad
	}
	year, err := strconv.Atoi(rest[:digits])
	if err != nil {
		return time.Time{}, bad
	}
	if neg {
		year = -year
	}
	// The rest, under a leap year of four digits so that 02-29 parses;
	// time.Date below puts it in its own year, and a day that year lacks
	// moves (caught by comparing the day).
	tail := rest[digits:]
	if !strings.ContainsAny(tail[min(len(tail), 9):], "Z+-") {
		tail += "Z"
	}
	t, err := time.Parse(time.RFC3339Nano, "2000"+tail)
	if err != nil {
		return time.Time{}, bad
	}
	out := time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
	if out.Day() != t.Day() {
		return time.Time{}, fmt.Errorf("%w: %q: year %d has no %s %d", ErrInvalidTerm, truncate(s), year, t.Month(), t.Day())
	}
	return out, nil
}

// Term returns the SPARQL (and N-Triples) form of an IRI or literal. It
// fails with ErrInvalidTerm for a blank node, an invalid IRI, or a literal
// that is not valid UTF-8. Every control character in a literal is escaped,
// so the text is safe inside any SPARQL string context.
func Term(t rdf.Term) (string, error) {
	var b strings.Builder
	if err := writeTerm(&b, t); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeTerm(b *strings.Builder, t rdf.Term) error {
	switch t := t.(type) {
	case rdf.IRI:
		if _, err := IRI(t.String()); err != nil {
			return err
		}
		b.WriteString(t.Serialize(rdf.NTriples))
	case rdf.Literal:
		v := t.String()
		if !utf8.ValidString(v) {
			return fmt.Errorf("%w: literal %q is not valid UTF-8", ErrInvalidTerm, truncate(v))
		}
		b.WriteByte('"')
		escapeString(b, v)
		b.WriteByte('"')
		switch dt := t.DataType.String(); {
		case t.Lang() != "":
			if !validLang(t.Lang()) {
				return fmt.Errorf("%w: language tag %q", ErrInvalidTerm, t.Lang())
			}
			b.WriteByte('@')
			b.WriteString(t.Lang())
		case dt == "":
			return fmt.Errorf("%w: literal %q has no datatype (build literals with String, Int, DateTime or knakk/rdf's constructors)", ErrInvalidTerm, truncate(v))
		case dt == xsdString:
		case dt == xsdDateTime:
			t, err := ParseDateTime(v)
			if err != nil {
				return err
			}
			if err := CheckTime(t); err != nil {
				return err
			}
			b.WriteString("^^<" + xsdDateTime + ">")
		default:
			if _, err := IRI(dt); err != nil {
				return fmt.Errorf("datatype: %w", err)
			}
			b.WriteString("^^<")
			b.WriteString(dt)
			b.WriteByte('>')
		}
	case nil:
		return fmt.Errorf("%w: nil term", ErrInvalidTerm)
	default:
		return fmt.Errorf("%w: a %T cannot be written into a query (blank nodes are not supported)", ErrInvalidTerm, t)
	}
	return nil
}

// escapeString writes v with every character a SPARQL or N-Triples string
// may not hold raw escaped: quotes, backslash and all control characters.
func escapeString(b *strings.Builder, v string) {
	for _, r := range v {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				fmt.Fprintf(b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
}

func validLang(tag string) bool {
	if tag == "" || tag[0] == '-' || tag[len(tag)-1] == '-' {
		return false
	}
	for i, r := range tag {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '-'):
		default:
			return false
		}
	}
	return true
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Params maps parameter names (without the '$') to the terms Bind puts in
// their place.
type Params map[string]rdf.Term

// Bind returns query with every parameter $name replaced by the serialized
// term params[name]. The text stays valid SPARQL before binding ($name is a
// variable), so the same .rq file runs unbound in any SPARQL tool.
// Occurrences inside strings, IRIs and comments are left alone; ?name
// variables are never touched. To SPARQL, though, $name and ?name are one
// variable: a template that uses both spellings of a name for different
// things binds differently here and where a store binds the variable
// (SelectTemplate on Trails' module, a conditional patch's Params), so
// name a parameter apart from the template's other variables.
//
// It fails with ErrUnboundParam when a $name has no value or a value names
// no $name in the text, and with ErrInvalidTerm when a value cannot be
// serialized. Nothing is sent in either case.
func Bind(query string, params Params) (string, error) {
	return BindTables(query, params, nil)
}

// Table is inline data for a VALUES clause: one row of terms per solution,
// in the order of Vars (names without '?'); a nil term is UNDEF.
type Table struct {
	Vars []string
	Rows [][]rdf.Term
}

// BindTables is Bind with tables as well: each $name of tables is replaced
// by a whole clause "VALUES (?v1 ?v2) { (t1 t2) ... }" whose terms are
// serialized like Bind's. A query that uses a table is not valid SPARQL
// before binding. It fails like Bind, and with ErrInvalidTerm for a row of
// the wrong width.
func BindTables(query string, params Params, tables map[string]Table) (string, error) {
	var b strings.Builder
	b.Grow(len(query) + 64*len(params))
	used := make(map[string]bool, len(params))
	var unbound []string
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '#':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				j = len(query) - i
			}
			b.WriteString(query[i : i+j])
			i += j
		case c == '"' || c == '\'':
			j := stringEnd(query, i)
			b.WriteString(query[i:j])
			i = j
		case c == '<':
			j := iriEnd(query, i)
			b.WriteString(query[i:j])
			i = j
		case c == '$':
			j := i + 1
			for j < len(query) {
				r, n := utf8.DecodeRuneInString(query[j:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				j += n
			}
			name := query[i+1 : j]
			if name == "" {
				b.WriteByte(c)
				i++
				continue
			}
			if tb, ok := tables[name]; ok {
				used[name] = true
				if err := writeTable(&b, tb); err != nil {
					return "", fmt.Errorf("$%s: %w", name, err)
				}
				i = j
				continue
			}
			t, ok := params[name]
			if !ok {
				unbound = append(unbound, "$"+name)
				b.WriteString(query[i:j])
				i = j
				continue
			}
			used[name] = true
			if err := writeTerm(&b, t); err != nil {
				return "", fmt.Errorf("$%s: %w", name, err)
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	if len(unbound) > 0 {
		return "", fmt.Errorf("%w: no value for %s", ErrUnboundParam, strings.Join(unbound, ", "))
	}
	if len(used) != len(params)+len(tables) {
		var extra []string
		for k := range params {
			if !used[k] {
				extra = append(extra, "$"+k)
			}
		}
		for k := range tables {
			if !used[k] {
				extra = append(extra, "$"+k)
			}
		}
		sort.Strings(extra)
		return "", fmt.Errorf("%w: the query has no %s", ErrUnboundParam, strings.Join(extra, ", "))
	}
	return b.String(), nil
}

func writeTable(b *strings.Builder, t Table) error {
	b.WriteString("VALUES (")
	for i, v := range t.Vars {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('?')
		b.WriteString(v)
	}
	b.WriteString(") {")
	for n, row := range t.Rows {
		if len(row) != len(t.Vars) {
			return fmt.Errorf("%w: row %d has %d terms for %d variables", ErrInvalidTerm, n, len(row), len(t.Vars))
		}
		b.WriteString(" (")
		for i, term := range row {
			if i > 0 {
				b.WriteByte(' ')
			}
			if term == nil {
				b.WriteString("UNDEF")
			} else if err := writeTerm(b, term); err != nil {
				return fmt.Errorf("row %d: %w", n, err)
			}
		}
		b.WriteByte(')')
	}
	b.WriteString(" }")
	return nil
}

// stringEnd returns the index just past the SPARQL string literal that
// starts at q[i] (short or long form, either quote), or len(q).
func stringEnd(q string, i int) int {
	quote := q[i]
	long := strings.HasPrefix(q[i:], strings.Repeat(string(quote), 3))
	j := i + 1
	if long {
		j = i + 3
	}
	for j < len(q) {
		switch {
		case q[j] == '\\':
			j += 2
		case long && strings.HasPrefix(q[j:], strings.Repeat(string(quote), 3)):
			return j + 3
		case !long && q[j] == quote:
			return j + 1
		case !long && (q[j] == '\n' || q[j] == '\r'):
			return j // not a string after all; let the store say so
		default:
			j++
		}
	}
	return len(q)
}

// iriEnd returns the index just past the IRI reference that starts at
// q[i], or i+1 when the '<' is a less-than operator.
func iriEnd(q string, i int) int {
	for j := i + 1; j < len(q); j++ {
		switch c := q[j]; {
		case c == '>':
			return j + 1
		case c <= ' ' || strings.IndexByte("<\"{}|^`\\", c) >= 0:
			return i + 1
		}
	}
	return i + 1
}

// Data collects quads for an INSERT DATA or DELETE DATA request, grouped by
// graph in the order graphs were first used. The first invalid term is
// remembered and returned by Err and by every method that renders text. A
// Data is not safe for concurrent use.
type Data struct {
	order  []string
	blocks map[string]*strings.Builder
	n      int
	err    error
}

// Add appends the triple (s, p, o) to graph g.
func (d *Data) Add(g rdf.IRI, s rdf.IRI, p rdf.IRI, o rdf.Term) {
	if d.err != nil {
		return
	}
	gs, err := Term(g)
	if err != nil {
		d.err = fmt.Errorf("graph: %w", err)
		return
	}
	if d.blocks == nil {
		d.blocks = make(map[string]*strings.Builder)
	}
	b, ok := d.blocks[gs]
	if !ok {
		b = &strings.Builder{}
		d.blocks[gs] = b
		d.order = append(d.order, gs)
	}
	mark := b.Len()
	for i, t := range []rdf.Term{s, p, o} {
		if i > 0 {
			b.WriteByte(' ')
		}
		if err := writeTerm(b, t); err != nil {
			d.err = fmt.Errorf("triple %d (%s %s): %w", d.n+1, s.String(), p.String(), err)
			cut := b.String()[:mark]
			b.Reset()
			b.WriteString(cut)
			return
		}
	}
	b.WriteString(" .\n")
	d.n++
}

// Len returns the number of triples added.
func (d *Data) Len() int { return d.n }

// Err returns the first error met by Add, or nil.
func (d *Data) Err() error { return d.err }

// Quads returns the data as a quad pattern body, "GRAPH <g> { ... } ...",
// for use inside INSERT DATA { }, DELETE DATA { } or an INSERT template.
func (d *Data) Quads() (string, error) {
	if d.err != nil {
		return "", d.err
	}
	var b strings.Builder
	for _, g := range d.order {
		b.WriteString("GRAPH ")
		b.WriteString(g)
		b.WriteString(" {\n")
		b.WriteString(d.blocks[g].String())
		b.WriteString("}\n")
	}
	return b.String(), nil
}

// InsertData returns the data as one INSERT DATA operation.
func (d *Data) InsertData() (string, error) {
	q, err := d.Quads()
	if err != nil {
		return "", err
	}
	return "INSERT DATA {\n" + q + "}", nil
}
