package langchaingo_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/trails-kg/trails/integrations/langchaingo"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

func TestMain(m *testing.M) {
	// The Example reads its store from TRAILS_ENDPOINT and TRAILS_STORE, as a program would.
	ep, err := fusekitest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TRAILS_ENDPOINT", ep)
	os.Setenv("TRAILS_STORE", string(fusekitest.TestStore()))
	fusekitest.Main(m)
}

// newStore returns a Store over tb's own dataset of the test Fuseki, and
// its client.
func newStore(tb testing.TB) (*session.Store, *kg.Client) {
	tb.Helper()
	c := fusekitest.New(tb)
	return session.NewStore(c), c
}

// mustAdd adds msgs to h, failing tb on an error.
func mustAdd(tb testing.TB, h *langchaingo.History, msgs ...llms.ChatMessage) {
	tb.Helper()
	for i, m := range msgs {
		if err := h.AddMessage(context.Background(), m); err != nil {
			tb.Fatalf("add message %d (%T): %v", i, m, err)
		}
	}
}

// sameMessages fails tb unless the messages of h are want, read by h and
// by a new History over the same session (a reload from the store).
func sameMessages(tb testing.TB, st *session.Store, h *langchaingo.History, want []llms.ChatMessage) {
	tb.Helper()
	for _, r := range []*langchaingo.History{h, langchaingo.NewHistory(st, h.SessionID())} {
		got, err := r.Messages(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		if len(got) != len(want) {
			tb.Fatalf("got %d messages, want %d:\ngot  %#v\nwant %#v", len(got), len(want), got, want)
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				tb.Fatalf("message %d: got %#v, want %#v", i, got[i], want[i])
			}
		}
	}
}
