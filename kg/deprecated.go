package kg

import "context"

// Query runs a SELECT query and returns all its solutions. It is Select
// under its old name: the answer is now read as tab-separated results, not
// JSON, with the same terms.
//
// Deprecated: use Select, or Rows to read the rows as they arrive; kept
// until session and admin move over.
func (c *Client) Query(ctx context.Context, query string) (*Results, error) {
	return c.Select(ctx, query)
}

// SelectRows runs a SELECT query, calling start with the projected
// variables and then row with each solution. The whole answer is read
// inside the request's attempt: when it is cut off mid-way the request is
// repeated and start is called again, so start must drop what row
// gathered. An error from start or row stops the request and is returned
// as it is; otherwise it returns the same errors as Rows.
//
// Deprecated: use Rows; kept until session and admin move over.
func (c *Client) SelectRows(ctx context.Context, query string, start func(vars []string) error, row func(Solution) error) error {
	return c.each(ctx, query, start, row)
}
