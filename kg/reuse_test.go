package kg_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/trails-kg/trails/kg"
)

// closingServer answers the first request of each connection with an ASK
// result and keeps the connection open, as a server that allows keep-alive
// does; it reads the second request whole and then closes the connection
// without a word, as a server that timed out the idle connection at that
// very moment does. It returns the server's URL.
func closingServer(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if n > 0 {
						return // the second request on this connection: cut it
					}
					body := `{"head":{},"boolean":true}`
					io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\nContent-Length: "+
						strconv.Itoa(len(body))+"\r\n\r\n"+body)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/ds"
}

// TestReadOnClosedKeepAlive: a query sent on a kept-alive connection that
// the server closes before answering is sent again on a new connection,
// even by a client that makes one attempt per request (MaxAttempts 1): a
// query is safe to repeat, and a long one (sent as a POST body) is too.
// Before, the second long query failed with EOF.
func TestReadOnClosedKeepAlive(t *testing.T) {
	c, err := kg.New(kg.Config{Endpoint: closingServer(t), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ name, query string }{
		{"short query (GET)", "ASK {}"},
		{"long query (POST)", "ASK {} # " + strings.Repeat("x", 4000)},
	} {
		for i := range 3 {
			if _, err := c.Ask(ctx, tc.query); err != nil {
				t.Fatalf("%s, query %d: got %v, want true", tc.name, i+1, err)
			}
		}
	}
}
