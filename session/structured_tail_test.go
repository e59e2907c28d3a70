package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// TestStructuredTail: a tail of a fork holding structured turns, own and
// inherited, carries their structure, and only theirs.
func TestStructuredTail(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	root := session.New("agent")
	agentLoop(root)
	mustPersist(t, st, root)
	fork := mustFork(t, root, 3)
	fork.AppendTurn(session.Turn{Role: "assistant", Content: "rain", Structure: &session.Structure{Model: "m",
		Parts: []session.Part{{Kind: session.PartText, Text: "rain"}}}})
	mustPersist(t, st, fork)
	for _, last := range []int{1, 2, 3} {
		got, err := st.LoadTail(ctx, fork.ID, session.Tail{Last: last})
		if err != nil {
			t.Fatalf("last %d: %v", last, err)
		}
		if got.From != len(fork.Turns)-last {
			t.Fatalf("last %d: got From %d, want %d", last, got.From, len(fork.Turns)-last)
		}
		sameHistory(t, got.Turns, fork.Turns[len(fork.Turns)-last:])
	}
}

// TestStructuredTailAppend: tool results appended to a tail are linked to
// the calls they answer, whether the call is inside the tail (the append
// that goes on from what the tail's first Persist learned) or before it
// (the full path, which reads the history below the tail).
func TestStructuredTailAppend(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	ctx := context.Background()
	root := session.New("agent")
	agentLoop(root) // turn 1 calls "call_2" in its part 3
	root.AppendTurn(session.Turn{Role: "assistant", Structure: &session.Structure{Parts: []session.Part{
		{Kind: session.PartToolCall, CallID: "late", ToolName: "f", Arguments: json.RawMessage(`{}`)}}}})
	mustPersist(t, st, root)
	linked := func(t *testing.T, res session.Turn, call string) {
		t.Helper()
		q := "ASK { GRAPH ?g { <" + res.ID + "> <" + ontology.ProvWasGeneratedBy + "> <" + call + "> } }"
		if ok, err := c.Ask(ctx, q); err != nil || !ok {
			t.Fatalf("%s prov:wasGeneratedBy %s: got %v (%v), want true", res.ID, call, ok, err)
		}
	}
	result := func(id string) session.Turn {
		return session.Turn{Role: "tool", Content: "done", Structure: &session.Structure{Parts: []session.Part{
			{Kind: session.PartToolResult, CallID: id, Result: json.RawMessage(`true`)}}}}
	}
	tail, err := st.LoadTail(ctx, root.ID, session.Tail{Last: 1}) // the "late" call alone
	if err != nil {
		t.Fatal(err)
	}
	tail.Append("user", "go on")
	mustPersist(t, st, tail) // the full path, once
	inTail := tail.AppendTurn(result("late"))
	mustPersist(t, st, tail) // the append from what the first Persist learned
	linked(t, inTail, ontology.ToolCallIRI(root.Turns[4].ID, 0))
	before := tail.AppendTurn(result("call_2"))
	mustPersist(t, st, tail) // the call lies before the tail: the full path
	linked(t, before, ontology.ToolCallIRI(root.Turns[1].ID, 3))
	whole := mustLoad(t, st, root.ID)
	sameHistory(t, whole.Turns[whole.From+len(whole.Turns)-len(tail.Turns):], tail.Turns)
	fs, err := storetest.Check(ctx, admin.New(c))
	if err != nil || len(fs) != 0 {
		t.Fatalf("check: got %v (%v), want no findings", storetest.FindingsText(fs), err)
	}
}
