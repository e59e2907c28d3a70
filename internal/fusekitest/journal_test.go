package fusekitest_test

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/internal/tdbjournal"
)

// TestRestartTornJournal: a Fuseki killed while it appended to its TDB2
// journal leaves a torn last entry, on which Jena's recovery stops, and
// Fuseki 5.6 does not start again ("Failed to read the journal entry data:
// wanted 16 bytes, got -1": TestHistoriesKill met it on 2026-11-29). A
// restart cuts the torn entry off (tdbjournal.Mend) and the server starts
// on the same data, with what was committed before the kill.
func TestRestartTornJournal(t *testing.T) {
	fusekitest.RequireFuseki(t, "a TDB2 journal")
	data := t.TempDir()
	s, err := fusekitest.StartServer(fusekitest.Options{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	send(t, s.Endpoint+"/update", "update", `INSERT DATA { GRAPH <urn:g> { <urn:a> <urn:b> "committed" } }`)
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	journals, err := tdbjournal.Find(data)
	if err != nil || len(journals) == 0 {
		t.Fatalf("journals under %s: %v, %v", data, journals, err)
	}
	// What a kill in the middle of a commit leaves: a whole REDO entry,
	// then the header of the next without its 16 bytes of data.
	redo := tdbjournal.Entry(1, []byte("sixteen bytes...."[:16]))
	for _, j := range journals {
		f, err := os.OpenFile(j, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(append(redo, redo[:16]...))
		f.Close()
		if r, err := tdbjournal.Check(j); err != nil || r.Torn != 16 {
			t.Fatalf("the torn journal: %+v, %v", r, err)
		}
	}
	if err := s.Start(); err != nil {
		t.Fatalf("restart on a torn journal: %v", err)
	}
	if got := send(t, s.Endpoint+"/query", "query", `ASK { GRAPH <urn:g> { <urn:a> <urn:b> "committed" } }`); !strings.Contains(got, "true") {
		t.Errorf("after the restart, the committed triple: %s", got)
	}
	if log := proc.Tail(s.Log, 200); !strings.Contains(log, "cut off") {
		t.Errorf("the server's log does not say the journal was mended:\n%s", log)
	}
}

// send posts form field name=text to u and returns the answer's body,
// failing the test unless it is a 2xx.
func send(t *testing.T, u, name, text string) string {
	t.Helper()
	resp, err := http.PostForm(u, url.Values{name: {text}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s\n%s", u, resp.Status, body)
	}
	return string(body)
}
