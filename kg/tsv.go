package kg

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/knakk/rdf"
)

const mediaTSV = "text/tab-separated-values"

// XSD datatypes of the bare numbers and booleans TSV results may hold.
const (
	xsdInteger = "http://www.w3.org/2001/XMLSchema#integer"
	xsdDecimal = "http://www.w3.org/2001/XMLSchema#decimal"
	xsdDouble  = "http://www.w3.org/2001/XMLSchema#double"
	xsdBoolean = "http://www.w3.org/2001/XMLSchema#boolean"
)

// datatypes holds the datatype IRIs of the literals the stores send most
// (every turn's content, creation time, raw copy, JSON values), built once:
// parseTerm takes them from here instead of checking the same IRI again
// for every literal of a long answer.
var datatypes = func() map[string]rdf.IRI {
	m := map[string]rdf.IRI{}
	for _, dt := range []string{xsdString, xsdDateTime, xsdInteger, xsdDecimal, xsdDouble, xsdBoolean,
		"http://www.w3.org/2001/XMLSchema#base64Binary", "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON"} {
		m[dt] = MustIRI(dt)
	}
	return m
}()

// tsvReader reads SPARQL 1.1 tab-separated results: a header of
// ?variables, then one line per solution of terms in Turtle syntax, an
// empty field for unbound.
type tsvReader struct {
	sc     *bufio.Scanner
	vars   []string
	fields []string
	line   int
}

// newTSVReader reads the header of the results in r.
func newTSVReader(r io.Reader) (*tsvReader, error) {
	src := &failedReader{r: r}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<30)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, bytes.TrimSuffix(data[:i], []byte{'\r'}), nil
		}
		if atEOF && len(data) > 0 {
			if src.err != nil {
				return 0, nil, src.err // a line cut off: the answer failed, it is not malformed
			}
			return len(data), bytes.TrimSuffix(data, []byte{'\r'}), nil // a last line without its newline
		}
		return 0, nil, nil
	})
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: empty TSV results", ErrProtocol)
	}
	t := &tsvReader{sc: sc, line: 1}
	for _, v := range strings.Split(sc.Text(), "\t") {
		if v != "" {
			t.vars = append(t.vars, strings.TrimPrefix(v, "?"))
		}
	}
	t.fields = make([]string, 0, len(t.vars))
	return t, nil
}

// next reads the next solution into a new Solution. It returns io.EOF
// after the last, an ErrProtocol error for a line it cannot read, or the
// reader's error.
func (t *tsvReader) next() (Solution, error) {
	if !t.sc.Scan() {
		if err := t.sc.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	t.line++
	t.fields = t.fields[:0]
	if text := t.sc.Text(); text != "" || len(t.vars) > 0 {
		t.fields = splitTabs(t.fields, text) // an empty line is the empty solution of SELECT * {}
	}
	if len(t.fields) != len(t.vars) {
		return nil, fmt.Errorf("%w: TSV line %d has %d fields for %d variables", ErrProtocol, t.line, len(t.fields), len(t.vars))
	}
	sol := make(Solution, len(t.fields))
	for i, f := range t.fields {
		if f == "" {
			continue
		}
		term, err := parseTerm(f)
		if err != nil {
			return nil, fmt.Errorf("%w: TSV line %d, ?%s: %v", ErrProtocol, t.line, t.vars[i], err)
		}
		sol[t.vars[i]] = term
	}
	return sol, nil
}

// failedReader remembers the error, other than io.EOF, that its reader
// returned.
type failedReader struct {
	r   io.Reader
	err error
}

func (f *failedReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF {
		f.err = err
	}
	return n, err
}

// splitTabs appends the tab-separated fields of line to fields.
func splitTabs(fields []string, line string) []string {
	for {
		i := strings.IndexByte(line, '\t')
		if i < 0 {
			return append(fields, line)
		}
		fields = append(fields, line[:i])
		line = line[i+1:]
	}
}

// parseTerm reads one RDF term in the Turtle syntax of TSV results. The
// term holds no part of f (a line of the answer, which may be long).
func parseTerm(f string) (rdf.Term, error) {
	if f[0] != '"' {
		f = strings.Clone(f)
	}
	switch {
	case f[0] == '<' && f[len(f)-1] == '>':
		return rdf.NewIRI(f[1 : len(f)-1])
	case strings.HasPrefix(f, "_:"):
		return rdf.NewBlank(f[2:])
	case f[0] == '"':
		val, rest, err := unquote(f)
		if err != nil {
			return nil, err
		}
		switch {
		case rest == "":
			return rdf.NewTypedLiteral(val, datatypes[xsdString]), nil
		case rest[0] == '@':
			return rdf.NewLangLiteral(val, strings.Clone(rest[1:]))
		case strings.HasPrefix(rest, "^^<") && rest[len(rest)-1] == '>':
			if dt, ok := datatypes[rest[3:len(rest)-1]]; ok {
				return rdf.NewTypedLiteral(val, dt), nil
			}
			dt, err := rdf.NewIRI(strings.Clone(rest[3 : len(rest)-1]))
			if err != nil {
				return nil, err
			}
			return rdf.NewTypedLiteral(val, dt), nil
		}
		return nil, fmt.Errorf("cannot read %q after a string", rest)
	case f == "true" || f == "false":
		return rdf.NewTypedLiteral(f, datatypes[xsdBoolean]), nil
	}
	if _, err := strconv.ParseInt(f, 10, 64); err == nil {
		return rdf.NewTypedLiteral(f, datatypes[xsdInteger]), nil
	}
	if strings.ContainsAny(f, "eE") {
		if _, err := strconv.ParseFloat(f, 64); err == nil {
			return rdf.NewTypedLiteral(f, datatypes[xsdDouble]), nil
		}
	} else if _, err := strconv.ParseFloat(f, 64); err == nil {
		return rdf.NewTypedLiteral(f, datatypes[xsdDecimal]), nil
	}
	if isBigInteger(f) {
		return rdf.NewTypedLiteral(f, datatypes[xsdInteger]), nil
	}
	return nil, fmt.Errorf("cannot read term %q", f)
}

func isBigInteger(f string) bool {
	f = strings.TrimLeft(f, "+-")
	return f != "" && strings.Trim(f, "0123456789") == ""
}

// unquote reads the quoted string at the start of f and returns its value
// and what follows the closing quote.
func unquote(f string) (string, string, error) {
	var b strings.Builder
	b.Grow(len(f))
	for i := 1; i < len(f); {
		c := f[i]
		switch c {
		case '"':
			return b.String(), f[i+1:], nil
		case '\\':
			if i+1 >= len(f) {
				return "", "", fmt.Errorf("a string ends in a backslash")
			}
			switch e := f[i+1]; e {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '"', '\'', '\\':
				b.WriteByte(e)
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				if i+2+n > len(f) {
					return "", "", fmt.Errorf("a short \\%c escape", e)
				}
				r, err := strconv.ParseUint(f[i+2:i+2+n], 16, 32)
				if err != nil || !utf8.ValidRune(rune(r)) {
					return "", "", fmt.Errorf("a bad \\%c escape %q", e, f[i:i+2+n])
				}
				b.WriteRune(rune(r))
				i += n
			default:
				return "", "", fmt.Errorf("an unknown escape \\%c", e)
			}
			i += 2
		default:
			j := i + 1
			for j < len(f) && f[j] != '"' && f[j] != '\\' {
				j++
			}
			b.WriteString(f[i:j])
			i = j
		}
	}
	return "", "", fmt.Errorf("an unterminated string")
}
