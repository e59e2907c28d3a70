package kg

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// SelectTemplate runs the SELECT query Bind(template, params) gives and
// returns its solutions as Select does. On Fuseki with Trails' module
// (fuseki/module: the servers scripts/fuseki starts load it when it
// builds), it sends the template and the values apart, to the dataset's
// template-query endpoint, which parses a template once per server
// thread and binds each request's values to it (Jena's substitution):
// a query of a few KB then skips its parse, about half a millisecond of
// the server's time. Elsewhere (another store; a Fuseki without the
// module, which answers 404 or 405 once, after which the client sends
// no more there) it sends the bound text to Select. The answer is the
// same either way: the endpoint reads as the dataset's query endpoint
// does, with its access control.
//
// The template's parameters must stand for single terms (Bind's, not
// BindTables' clauses). It fails as Bind does before sending anything,
// and otherwise as Select.
func (c *Client) SelectTemplate(ctx context.Context, template string, params Params) (*Results, error) {
	bound, err := Bind(template, params)
	if err != nil {
		return nil, err
	}
	if c.store != Fuseki || c.noTemplates.Load() {
		return c.Select(ctx, bound)
	}
	q := url.Values{}
	for name, t := range params {
		term, err := Term(t)
		if err != nil {
			return nil, err // not reached: Bind serialized it
		}
		q.Add("bind", name+"\t"+term)
	}
	res, err := c.results(ctx, func(read func(*tsvReader) error) request {
		req := c.selectRequest(template, read)
		req.op, req.method, req.url, req.contentType, req.body = "template query", http.MethodPost, c.endpoint+"/template-query?"+q.Encode(), mediaSPARQLQuery, []byte(template)
		return req
	})
	var e *Error
	if errors.As(err, &e) && (e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed) {
		c.noTemplates.Store(true)
		return c.Select(ctx, bound)
	}
	return res, err
}
