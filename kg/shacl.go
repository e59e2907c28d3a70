package kg

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"

	"github.com/knakk/rdf"
)

// SHACL vocabulary read from validation reports.
const (
	shNS         = "http://www.w3.org/ns/shacl#"
	rdfType      = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
	shReport     = shNS + "ValidationReport"
	shConforms   = shNS + "conforms"
	shResult     = shNS + "result"
	shFocus      = shNS + "focusNode"
	shPath       = shNS + "resultPath"
	shValue      = shNS + "value"
	shMessage    = shNS + "resultMessage"
	shSeverity   = shNS + "resultSeverity"
	shComponent  = shNS + "sourceConstraintComponent"
	shSourceShap = shNS + "sourceShape"
)

// Graphs a SHACL validation can target besides a named graph's IRI.
const (
	UnionGraph   = "union"   // the union of all named graphs
	DefaultGraph = "default" // the dataset's stored default graph
)

// Report is the outcome of a SHACL validation.
type Report struct {
	Conforms bool
	Results  []ValidationResult // ordered by focus node, path and message
}

// ValidationResult is one sh:ValidationResult of a report.
type ValidationResult struct {
	Focus     string // the focus node's IRI (or blank node label)
	Path      string // the result path, if any
	Value     string // the offending value, if any
	Message   string
	Severity  string // sh:Violation, sh:Warning or sh:Info, as an IRI
	Component string // the constraint component IRI, e.g. sh:MinCountConstraintComponent
	Shape     string // the source shape's IRI, or "" for a blank node shape
}

// Validate validates a graph of the dataset against SHACL shapes (Turtle)
// through Fuseki's SHACL endpoint (Endpoint+"/shacl"). graph is UnionGraph,
// DefaultGraph or a named graph's IRI. It is retried while the store is
// unavailable.
//
// On a store whose profile has no SHACL endpoint (Oxigraph, Generic) it
// sends nothing and returns an error matching ErrUnsupported. Otherwise it
// returns an *Error matching ErrBadRequest (the shapes do not parse),
// ErrNotFound (no SHACL endpoint), ErrUnauthorized, ErrUnavailable or
// ErrProtocol, or a context error.
func (c *Client) Validate(ctx context.Context, shapes []byte, graph string) (*Report, error) {
	if graph != UnionGraph && graph != DefaultGraph {
		if _, err := IRI(graph); err != nil {
			return nil, err
		}
	}
	if c.shaclURL == "" {
		return nil, fmt.Errorf("validate: %w: %s has no SHACL endpoint", ErrUnsupported, c.store)
	}
	var rep *Report
	err := c.do(ctx, request{
		op: "validate", method: http.MethodPost, url: withParam(c.shaclURL, "graph", graph),
		contentType: "text/turtle", accept: mediaNTriples, body: shapes, idempotent: true,
		handle: func(resp *http.Response) error {
			if err := checkContentType(resp, mediaNTriples); err != nil {
				return err
			}
			var buf bytes.Buffer
			if _, err := buf.ReadFrom(resp.Body); err != nil {
				return err
			}
			var err error
			rep, err = parseReport(buf.Bytes())
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// parseReport reads an sh:ValidationReport from N-Triples.
func parseReport(nt []byte) (*Report, error) {
	triples, err := rdf.NewTripleDecoder(bytes.NewReader(nt), rdf.NTriples).DecodeAll()
	if err != nil {
		return nil, fmt.Errorf("%w: validation report: %v", ErrProtocol, err)
	}
	props := make(map[string]map[string]string)
	var reportNode string
	var resultNodes []string
	for _, t := range triples {
		s, p, o := t.Subj.String(), t.Pred.String(), t.Obj.String()
		if props[s] == nil {
			props[s] = make(map[string]string)
		}
		props[s][p] = o
		switch {
		case p == rdfType && o == shReport:
			reportNode = s
		case p == shResult:
			resultNodes = append(resultNodes, o)
		}
	}
	if reportNode == "" {
		return nil, fmt.Errorf("%w: no sh:ValidationReport in the answer", ErrProtocol)
	}
	rep := &Report{Conforms: props[reportNode][shConforms] == "true"}
	for _, n := range resultNodes {
		r := props[n]
		shape := r[shSourceShap]
		if _, err := IRI(shape); err != nil {
			shape = ""
		}
		rep.Results = append(rep.Results, ValidationResult{
			Focus: r[shFocus], Path: r[shPath], Value: r[shValue], Message: r[shMessage],
			Severity: r[shSeverity], Component: r[shComponent], Shape: shape,
		})
	}
	sort.Slice(rep.Results, func(i, j int) bool {
		a, b := rep.Results[i], rep.Results[j]
		if a.Focus != b.Focus {
			return a.Focus < b.Focus
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Message < b.Message
	})
	return rep, nil
}
