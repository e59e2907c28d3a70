package main_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/session"
)

// scrape returns the lines of the Prometheus text served at url that
// start with prefix.
func scrape(tb testing.TB, url, prefix string) []string {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		tb.Errorf("scrape %s: content type %q, want the Prometheus text format", url, ct)
	}
	var out []string
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), prefix) {
			out = append(out, lines.Text())
		}
	}
	return out
}

// TestMetrics: trails-mcp logs with log/slog, serves /metrics beside /mcp
// with --http and on a listener of its own with --metrics ADDR, and a tool
// call moves the duration of the store calls it makes (session.List for
// list_sessions).
func TestMetrics(t *testing.T) {
	fusekitest.Parallel(t)
	c := fusekitest.Empty(t)
	storetest.Persisted(t, session.NewStore(c), "agent-7", 1)
	cmd := command(t, nil, "--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--endpoint", fusekitest.Endpoint(t))
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	var mcpURL, metricsURL string
	lines := bufio.NewScanner(pipe)
	for mcpURL == "" && lines.Scan() {
		line := lines.Text()
		if !strings.Contains(line, "level=INFO") {
			t.Errorf("log line %q: want slog's text format", line)
		}
		switch {
		case strings.Contains(line, "serving metrics"):
			metricsURL = logURL(line)
		case strings.Contains(line, "streamable HTTP"):
			mcpURL = logURL(line)
		}
	}
	if mcpURL == "" || metricsURL == "" {
		t.Fatalf("trails-mcp logged no MCP URL (%q) or metrics URL (%q): %v", mcpURL, metricsURL, lines.Err())
	}
	go func() { // keep reading, so that the process never blocks on stderr
		for lines.Scan() {
		}
	}()
	cs, err := newClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: mcpURL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", mcpURL, err)
	}
	defer cs.Close()
	const metric = "trails_call_duration_seconds_count{"
	for _, url := range []string{strings.TrimSuffix(mcpURL, "/mcp") + "/metrics", metricsURL} {
		if got := scrape(t, url, metric); len(got) != 0 {
			t.Errorf("%s before any call: got %q, want no call counted", url, got)
		}
	}
	object(t, cs, "list_sessions", map[string]any{})
	for _, url := range []string{strings.TrimSuffix(mcpURL, "/mcp") + "/metrics", metricsURL} {
		found := false
		for _, line := range scrape(t, url, metric) {
			if strings.Contains(line, `trails_call="session.List"`) && !strings.HasSuffix(line, " 0") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s after list_sessions: no %s with trails_call=\"session.List\" above 0", url, metric)
		}
		if got := scrape(t, url, "db_client_operation_duration_seconds_count{"); len(got) == 0 {
			t.Errorf("%s: no store request counted", url)
		}
	}
}
