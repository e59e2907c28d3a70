package kg

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
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

// Select runs a SELECT query like Query, but asks for SPARQL 1.1
// tab-separated results, which Fuseki writes several times faster than
// JSON when the results hold long literals (on this project's machine: 35 ms
// against 310 ms for 6 MB of turn content). Use it for large result sets;
// the terms are the same as Query's. It returns the same errors as Query.
func (c *Client) Select(ctx context.Context, query string) (*Results, error) {
	var res *Results
	req := c.queryRequest("select", query, func(resp *http.Response) error {
		if err := checkContentType(resp, mediaTSV); err != nil {
			return err
		}
		var err error
		res, err = parseTSV(resp)
		return err
	})
	req.accept = mediaTSV
	if err := c.do(ctx, req); err != nil {
		return nil, err
	}
	return res, nil
}

// parseTSV reads SPARQL 1.1 TSV results: a header of ?variables, then one
// line per solution of terms in Turtle syntax, an empty field for unbound.
func parseTSV(resp *http.Response) (*Results, error) {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<30)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: empty TSV results", ErrProtocol)
	}
	res := &Results{}
	for _, v := range strings.Split(sc.Text(), "\t") {
		if v != "" {
			res.Vars = append(res.Vars, strings.TrimPrefix(v, "?"))
		}
	}
	for line := 2; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != len(res.Vars) {
			return nil, fmt.Errorf("%w: TSV line %d has %d fields for %d variables", ErrProtocol, line, len(fields), len(res.Vars))
		}
		sol := make(Solution, len(fields))
		for i, f := range fields {
			if f == "" {
				continue
			}
			t, err := parseTerm(f)
			if err != nil {
				return nil, fmt.Errorf("%w: TSV line %d, ?%s: %v", ErrProtocol, line, res.Vars[i], err)
			}
			sol[res.Vars[i]] = t
		}
		res.Solutions = append(res.Solutions, sol)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// parseTerm reads one RDF term in the Turtle syntax of TSV results.
func parseTerm(f string) (rdf.Term, error) {
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
			return rdf.NewTypedLiteral(val, MustIRI(xsdString)), nil
		case rest[0] == '@':
			return rdf.NewLangLiteral(val, rest[1:])
		case strings.HasPrefix(rest, "^^<") && rest[len(rest)-1] == '>':
			dt, err := rdf.NewIRI(rest[3 : len(rest)-1])
			if err != nil {
				return nil, err
			}
			return rdf.NewTypedLiteral(val, dt), nil
		}
		return nil, fmt.Errorf("cannot read %q after a string", rest)
	case f == "true" || f == "false":
		return rdf.NewTypedLiteral(f, MustIRI(xsdBoolean)), nil
	}
	if _, err := strconv.ParseInt(f, 10, 64); err == nil {
		return rdf.NewTypedLiteral(f, MustIRI(xsdInteger)), nil
	}
	if strings.ContainsAny(f, "eE") {
		if _, err := strconv.ParseFloat(f, 64); err == nil {
			return rdf.NewTypedLiteral(f, MustIRI(xsdDouble)), nil
		}
	} else if _, err := strconv.ParseFloat(f, 64); err == nil {
		return rdf.NewTypedLiteral(f, MustIRI(xsdDecimal)), nil
	}
	if isBigInteger(f) {
		return rdf.NewTypedLiteral(f, MustIRI(xsdInteger)), nil
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
