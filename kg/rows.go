package kg

import (
	"context"
	"io"
	"net/http"
)

// Rows is the answer to a SELECT query, read from the store as the caller
// asks for each row, in the shape of database/sql's Rows:
//
//	rows, err := c.Rows(ctx, q)
//	if err != nil {
//		return err
//	}
//	defer rows.Close()
//	for rows.Next() {
//		sol := rows.Solution()
//		...
//	}
//	return rows.Err()
//
// Only the row being read is held in memory. The request behind it stays
// open until Next has returned false or Close is called: a caller that
// stops early must call Close, or the connection stays taken until the
// attempt's Timeout (for good, with no Timeout). A Rows is not safe for
// concurrent use.
type Rows struct {
	ans   *answer
	vars  []string
	tsv   *tsvReader
	first Solution // read inside the attempt, not yet handed out
	sol   Solution
	err   error
	done  bool
}

// Rows runs a SELECT query and returns its solutions as they arrive. The
// query text must hold no value formatted by hand: build it with Bind.
//
// The request is retried (while the store is unavailable, as Config says)
// only until the header and first row of the answer are read, so no row
// the caller has seen is ever sent twice; a failure after that ends the
// rows with an error from Err. Config.Timeout bounds the whole answer,
// from the request to the last row or Close, so a caller that reads slowly
// from a large answer should give a negative Timeout and a deadline of its
// own. A cancelled context stops the reading at the next call to Next.
//
// Rows and Err return an *Error matching ErrBadRequest (the store refused
// the query), ErrUnauthorized, ErrNotFound, ErrUnavailable (also for an
// answer cut off mid-way) or ErrProtocol (an answer that is not
// tab-separated results, or a line that cannot be read), or a context
// error.
func (c *Client) Rows(ctx context.Context, query string) (*Rows, error) {
	r := &Rows{}
	req := c.selectRequest(query, func(t *tsvReader) error {
		first, err := t.next()
		if err != nil && err != io.EOF {
			return err
		}
		r.vars, r.tsv, r.first = t.vars, t, first
		return nil
	})
	req.keep = true
	a, err := c.send(ctx, req)
	if err != nil {
		return nil, err
	}
	r.ans = a
	if r.first == nil { // no rows: the answer has been read to its end
		r.end(nil, true)
	}
	return r, nil
}

// Next reads the next row, for Solution. It returns false after the last
// row, after an error (see Err), or once Close has been called; the
// request is then closed.
func (r *Rows) Next() bool {
	if r.done {
		return false
	}
	if r.ans.ended() {
		r.end(r.ans.fail(nil), false)
		return false
	}
	if r.first != nil {
		r.sol, r.first = r.first, nil
		return true
	}
	sol, err := r.tsv.next()
	switch {
	case err == io.EOF:
		r.end(nil, true)
		return false
	case err != nil:
		r.end(r.ans.fail(err), false)
		return false
	}
	r.sol = sol
	return true
}

// Solution returns the row Next has read: variable to term, unbound
// variables absent. Each row is a new Solution the caller may keep. It is
// nil before the first call to Next and after Next has returned false.
func (r *Rows) Solution() Solution { return r.sol }

// Vars returns the projected variables, in order, without '?'. They are
// known before the first row, even when there is none.
func (r *Rows) Vars() []string { return r.vars }

// Err returns the error that ended the rows early, nil when they ended
// because the answer was read to its end or Close was called. See Rows
// for the errors.
func (r *Rows) Err() error { return r.err }

// Close ends the reading and closes the request; what remains of the
// answer is not read. It may be called more than once, and after Next has
// returned false. It returns nil: the rows need no confirmation that the
// store saw the end.
func (r *Rows) Close() error {
	r.end(nil, false)
	return nil
}

// end stops the rows with err, if any, and releases the request; drain
// says the answer was read to its end, so the connection can be reused.
func (r *Rows) end(err error, drain bool) {
	if r.done {
		return
	}
	r.done, r.sol, r.first = true, nil, nil
	r.err = err
	r.ans.release(drain)
}

// Select runs a SELECT query and returns all its solutions, read as
// tab-separated results like Rows. It keeps the whole answer in memory:
// use Rows for an answer that may be large. Because no row is handed out
// before the last has arrived, an answer cut off mid-way is asked for
// again like any failed attempt. It returns the same errors as Rows.
func (c *Client) Select(ctx context.Context, query string) (*Results, error) {
	return c.results(ctx, func(read func(*tsvReader) error) request { return c.selectRequest(query, read) })
}

// results sends the request that mk builds around a reader of a whole
// SELECT answer (tab-separated) and returns the answer: Select's, and
// SelectTemplate's. An answer cut off mid-way is asked for again, the
// rows read before dropped.
func (c *Client) results(ctx context.Context, mk func(read func(*tsvReader) error) request) (*Results, error) {
	var res *Results
	err := c.do(ctx, mk(func(t *tsvReader) error {
		res = &Results{Vars: t.vars}
		for {
			sol, err := t.next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			res.Solutions = append(res.Solutions, sol)
		}
	}))
	if err != nil {
		return nil, err
	}
	return res, nil
}

// selectRequest builds the one request every SELECT sends: it asks for
// tab-separated results, which Fuseki writes several times faster than
// JSON when they hold long literals (on this project's machine: 35 ms
// against 310 ms for 6 MB of turn content), checks the answer's media
// type, reads its header and hands the reader to read.
func (c *Client) selectRequest(query string, read func(*tsvReader) error) request {
	req := c.queryRequest("select", query, func(resp *http.Response) error {
		if err := checkContentType(resp, mediaTSV); err != nil {
			return err
		}
		t, err := newTSVReader(resp.Body)
		if err != nil {
			return err
		}
		return read(t)
	})
	req.accept = mediaTSV
	return req
}
