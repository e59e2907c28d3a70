package kg_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
)

// rowsOf returns a function that reads a whole answer through Rows, for
// tests that check Rows gives what Select gives.
func rowsOf(c *kg.Client) func(context.Context, string) (*kg.Results, error) {
	return func(ctx context.Context, q string) (*kg.Results, error) {
		rows, err := c.Rows(ctx, q)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		res := &kg.Results{Vars: rows.Vars()}
		for rows.Next() {
			res.Solutions = append(res.Solutions, rows.Solution())
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return res, nil
	}
}

// bodies is a transport that tracks the answers it hands out: how many
// requests were sent, how many bodies are still open, how many bytes were
// read from them.
type bodies struct {
	next     http.RoundTripper
	requests atomic.Int64
	open     atomic.Int64
	read     atomic.Int64
}

func (b *bodies) RoundTrip(r *http.Request) (*http.Response, error) {
	b.requests.Add(1)
	resp, err := b.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	b.open.Add(1)
	resp.Body = &trackedBody{ReadCloser: resp.Body, b: b}
	return resp, nil
}

type trackedBody struct {
	io.ReadCloser
	b    *bodies
	once sync.Once
}

func (t *trackedBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.b.read.Add(int64(n))
	return n, err
}

func (t *trackedBody) Close() error {
	t.once.Do(func() { t.b.open.Add(-1) })
	return t.ReadCloser.Close()
}

// tracked returns a client of endpoint (the test dataset when empty) whose
// answers are tracked, and fails tb at cleanup if one was left open.
func tracked(tb testing.TB, endpoint string) (*kg.Client, *bodies) {
	tb.Helper()
	if endpoint == "" {
		endpoint = fusekitest.Endpoint(tb)
	}
	b := &bodies{next: &http.Transport{}}
	c := fusekitest.Client(tb, kg.Config{Endpoint: endpoint, HTTPClient: &http.Client{Transport: b},
		Backoff: time.Millisecond})
	tb.Cleanup(func() {
		if n := b.open.Load(); n != 0 {
			tb.Errorf("got %d answers left open, want 0", n)
		}
	})
	return c, b
}

// manyRows is a SELECT of n rows (n a power of ten, at most 10^6) that
// needs no data: ?i from 0 to n-1 and a 100-character ?pad, so that the
// answer is about 120 bytes a row.
func manyRows(n int) string {
	var values, sum []string
	for k, w := 0, 1; w < n; k, w = k+1, w*10 {
		values = append(values, fmt.Sprintf("VALUES ?d%d { 0 1 2 3 4 5 6 7 8 9 }", k))
		sum = append(sum, fmt.Sprintf("?d%d * %d", k, w))
	}
	return fmt.Sprintf(`SELECT ?i ?pad WHERE { %s BIND(%s AS ?i) BIND(CONCAT(STR(?i), ":%s") AS ?pad) }`,
		strings.Join(values, " "), strings.Join(sum, " + "), strings.Repeat("x", 100))
}

// TestRowsStreams reads 100,000 rows and checks that the first arrives
// when only the start of the answer has been read, and that every row
// comes once.
func TestRowsStreams(t *testing.T) {
	fusekitest.Parallel(t)
	const n = 100_000
	c, b := tracked(t, "")
	rows, err := c.Rows(context.Background(), manyRows(n))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if got := strings.Join(rows.Vars(), " "); got != "i pad" {
		t.Fatalf("got vars %q, want %q", got, "i pad")
	}
	seen := make([]bool, n)
	var atFirst int64
	count := 0
	for rows.Next() {
		if count == 0 {
			atFirst = b.read.Load()
		}
		count++
		i, err := rows.Solution().Int("i")
		if err != nil {
			t.Fatal(err)
		}
		if i < 0 || i >= n || seen[i] {
			t.Fatalf("row %d: got ?i = %d twice or out of range", count, i)
		}
		seen[i] = true
		if pad := rows.Solution().String("pad"); pad != fmt.Sprintf("%d:%s", i, strings.Repeat("x", 100)) {
			t.Fatalf("row %d: got ?pad %q", count, pad)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("got %d rows, want %d", count, n)
	}
	total := b.read.Load()
	t.Logf("first row after %d of %d bytes", atFirst, total)
	if total < 10<<20 {
		t.Fatalf("got an answer of %d bytes, want at least 10 MiB", total)
	}
	if atFirst > 1<<20 {
		t.Fatalf("got the first row after %d bytes of %d, want it within the first MiB: the answer was buffered", atFirst, total)
	}
	if n := b.open.Load(); n != 0 {
		t.Fatalf("got %d answers open after the last row, want 0", n)
	}
}

// TestRowsCloseEarly stops after ten rows of 100,000: Close releases the
// answer at once, Next and Err then report a clean end, and the client
// goes on working.
func TestRowsCloseEarly(t *testing.T) {
	fusekitest.Parallel(t)
	c, b := tracked(t, "")
	ctx := context.Background()
	rows, err := c.Rows(ctx, manyRows(100_000))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if !rows.Next() {
			t.Fatalf("got the end before 10 rows: %v", rows.Err())
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatalf("got %v, want nil", err)
	}
	if n := b.open.Load(); n != 0 {
		t.Fatalf("got %d answers open after Close, want 0", n)
	}
	if rows.Next() || rows.Solution() != nil || rows.Err() != nil {
		t.Fatalf("after Close: got a row or %v, want the end and nil", rows.Err())
	}
	if err := rows.Close(); err != nil {
		t.Fatalf("second Close: got %v, want nil", err)
	}
	res, err := c.Select(ctx, "SELECT (1 AS ?one) {}")
	if err != nil || len(res.Solutions) != 1 {
		t.Fatalf("after Close: got %v, %v; want one row", res, err)
	}
}

// TestRowsContextCancelled cancels the context mid-answer: Next stops at
// once, Err is the context's error and no store failure, and the answer is
// closed.
func TestRowsContextCancelled(t *testing.T) {
	fusekitest.Parallel(t)
	c, b := tracked(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rows, err := c.Rows(ctx, manyRows(100_000))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for range 10 {
		if !rows.Next() {
			t.Fatalf("got the end before 10 rows: %v", rows.Err())
		}
	}
	cancel()
	if rows.Next() {
		t.Fatal("got a row after the context was cancelled, want the end")
	}
	err = rows.Err()
	var ke *kg.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ke) || errors.Is(err, kg.ErrUnavailable) {
		t.Fatalf("got %v, want a *kg.Error matching context.Canceled only", err)
	}
	if n := b.open.Load(); n != 0 {
		t.Fatalf("got %d answers open after cancel, want 0", n)
	}
}

// TestRowsRefused checks that a query the store refuses, or a dataset it
// does not have, fails Rows itself with the status's error, one attempt,
// and no answer left open.
func TestRowsRefused(t *testing.T) {
	fusekitest.Parallel(t)
	ep := fusekitest.Endpoint(t)
	// A dataset the store does not have: another Fuseki dataset name; on
	// Oxigraph, whose endpoint is the server, a path below it.
	missing := ep[:strings.LastIndexByte(ep, '/')] + "/no-such-dataset"
	if fusekitest.TestStore() != kg.Fuseki {
		missing = ep + "/no-such-dataset"
	}
	for _, tc := range []struct {
		name, endpoint, query string
		want                  error
	}{
		{"syntax error", ep, "SELECT ?x WHERE { ?x ?y }", kg.ErrBadRequest},
		{"no dataset", missing, "SELECT * {}", kg.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, b := tracked(t, tc.endpoint)
			rows, err := c.Rows(context.Background(), tc.query)
			var ke *kg.Error
			if rows != nil || !errors.Is(err, tc.want) || !errors.As(err, &ke) || ke.Op != "select" {
				t.Fatalf("got %v, %v; want a select *kg.Error matching %v", rows, err, tc.want)
			}
			if got := b.requests.Load(); got != 1 {
				t.Fatalf("got %d requests, want 1", got)
			}
		})
	}
}

// script is a fake store that answers the n-th query with answers[n] (the
// last one again after the end): a status, and a body that, when cut is
// set, stops there with the connection closed mid-answer.
type scripted struct {
	status int
	ctype  string
	body   string
	cut    bool
}

func script(tb testing.TB, answers ...scripted) string {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[min(int(n.Add(1))-1, len(answers)-1)]
		if a.ctype == "" {
			a.ctype = "text/tab-separated-values; charset=utf-8"
		}
		w.Header().Set("Content-Type", a.ctype)
		if a.cut {
			w.Header().Set("Content-Length", fmt.Sprint(len(a.body)+1000)) // promise more than comes
		}
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
		if a.cut {
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/trails"
}

// TestRowsFailures checks the failures of a fake store: what Rows retries
// (everything before the first row), what it does not (a row already
// handed out), and the typed error each ends with.
func TestRowsFailures(t *testing.T) {
	const header = "?s\t?n\n"
	const row = "<urn:a>\t1\n"
	ok := scripted{status: 200, body: header + row + row}
	for _, tc := range []struct {
		name     string
		answers  []scripted
		rows     int   // rows read before the end
		rowsErr  error // the error of Rows itself
		err      error // the error of Err
		requests int64
	}{
		{"ok", []scripted{ok}, 2, nil, nil, 1},
		{"retried after 503", []scripted{{status: 503, body: "busy"}, ok}, 2, nil, nil, 2},
		{"retried when cut in the header", []scripted{{status: 200, body: "?s\t", cut: true}, ok}, 2, nil, nil, 2},
		{"retried when cut in the first row", []scripted{{status: 200, body: header + "<urn:", cut: true}, ok}, 2, nil, nil, 2},
		{"not retried when cut after a row", []scripted{{status: 200, body: header + row + "<urn:", cut: true}, ok}, 1, nil, kg.ErrUnavailable, 1},
		{"gives up", []scripted{{status: 503, body: "busy"}}, 0, kg.ErrUnavailable, nil, 4},
		{"wrong content type", []scripted{{status: 200, ctype: "text/html", body: "<html>login</html>"}}, 0, kg.ErrProtocol, nil, 1},
		{"empty body", []scripted{{status: 200, body: ""}}, 0, kg.ErrProtocol, nil, 1},
		{"no rows", []scripted{{status: 200, body: header}}, 0, nil, nil, 1},
		{"malformed first row", []scripted{{status: 200, body: header + "<urn:a>\t\"open\n"}}, 0, kg.ErrProtocol, nil, 1},
		{"malformed later row", []scripted{{status: 200, body: header + row + "<urn:a>\t\"open\n"}}, 1, nil, kg.ErrProtocol, 1},
		{"too many fields", []scripted{{status: 200, body: header + row + "<urn:a>\t1\t2\n"}}, 1, nil, kg.ErrProtocol, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, b := tracked(t, script(t, tc.answers...))
			rows, err := c.Rows(context.Background(), "SELECT * {}")
			var ke *kg.Error
			if tc.rowsErr != nil || err != nil {
				if !errors.Is(err, tc.rowsErr) || !errors.As(err, &ke) || (tc.rowsErr == nil) != (err == nil) {
					t.Fatalf("Rows: got %v, want %v", err, tc.rowsErr)
				}
			} else {
				n := 0
				for rows.Next() {
					n++
				}
				err := rows.Err()
				if n != tc.rows {
					t.Errorf("got %d rows, want %d", n, tc.rows)
				}
				if (tc.err == nil) != (err == nil) || !errors.Is(err, tc.err) || (err != nil && !errors.As(err, &ke)) {
					t.Fatalf("Err: got %v, want a *kg.Error matching %v", err, tc.err)
				}
				if err := rows.Close(); err != nil {
					t.Fatalf("Close: got %v, want nil", err)
				}
			}
			if got := b.requests.Load(); got != tc.requests {
				t.Fatalf("got %d requests, want %d", got, tc.requests)
			}
		})
	}
}

// TestSelectRetriesACutAnswer checks that Select, which hands out no row
// before the last, asks again for an answer cut off after some rows.
func TestSelectRetriesACutAnswer(t *testing.T) {
	const header = "?s\n"
	c, b := tracked(t, script(t,
		scripted{status: 200, body: header + "<urn:a>\n<urn:", cut: true},
		scripted{status: 200, body: header + "<urn:a>\n<urn:b>\n"}))
	res, err := c.Select(context.Background(), "SELECT * {}")
	if err != nil || len(res.Solutions) != 2 {
		t.Fatalf("got %v, %v; want 2 rows", res, err)
	}
	if got := b.requests.Load(); got != 2 {
		t.Fatalf("got %d requests, want 2", got)
	}
}

// BenchmarkRows reads 10,000 rows through Rows and through Select.
func BenchmarkRows(b *testing.B) {
	c := fusekitest.New(b)
	q := manyRows(10_000)
	ctx := context.Background()
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			if _, err := rowsOf(c)(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("select", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Select(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRowsAttemptTimeout checks that Config.Timeout bounds the whole
// answer: a store that stalls after the first row ends the rows with
// ErrUnavailable, and the answer is closed.
func TestRowsAttemptTimeout(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/tab-separated-values")
		io.WriteString(w, "?s\n<urn:a>\n<urn:b>\n")
		w.(http.Flusher).Flush()
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	b := &bodies{next: &http.Transport{}}
	c := fusekitest.Client(t, kg.Config{Endpoint: srv.URL + "/trails", HTTPClient: &http.Client{Transport: b},
		Timeout: 200 * time.Millisecond})
	rows, err := c.Rows(context.Background(), "SELECT * {}")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); n != 2 || !errors.Is(err, kg.ErrUnavailable) {
		t.Fatalf("got %d rows and %v, want 2 and ErrUnavailable", n, err)
	}
	if got := b.open.Load(); got != 0 {
		t.Fatalf("got %d answers open, want 0", got)
	}
}
