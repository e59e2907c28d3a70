package admin_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

func toolCall(id string) session.Part {
	return session.Part{Kind: session.PartToolCall, CallID: id, ToolName: "search", Arguments: json.RawMessage(`{"q":"x"}`)}
}

func toolResult(id string) session.Part {
	return session.Part{Kind: session.PartToolResult, CallID: id, ToolName: "search", Result: json.RawMessage(`{"hits":[]}`)}
}

func partsTurn(role string, parts ...session.Part) session.Turn {
	return session.Turn{Role: role, Structure: &session.Structure{Parts: parts}}
}

// TestCheckToolResult: the tool-result-without-call rule finds nothing in
// what agents write as they should (a fork between a call and its result,
// such a fork detached, even once its parent is deleted, a rewind that
// archives a call and its result, a call and its result in one turn), and
// finds a result whose call id no
// earlier call of its history carries (which Persist writes as given: a
// result of a call never stored, one made in a fork before the call, one
// before its call in the same turn), and a turn linked to a call outside
// its history (written by hand: a sibling's call, a later call).
func TestCheckToolResult(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	c := clustertest.Empty(t)
	st := openStore(t, c)
	hostile := "call \"\"\" } ; DROP ALL ; # \x01 \u2028 é"

	root := session.New("agent")
	root.Append("user", "find x")
	root.AppendTurn(partsTurn("assistant", toolCall("c1"), toolCall(hostile))) // 1
	root.AppendTurn(partsTurn("tool", toolResult("c1"), toolResult(hostile)))  // 2
	root.AppendTurn(partsTurn("assistant", toolCall("c2")))                    // 3
	root.AppendTurn(partsTurn("tool", toolResult("c2")))                       // 4
	root.AppendTurn(partsTurn("assistant", toolCall("c3"), toolResult("c3")))  // 5: a call answered in its own turn
	storetest.MustPersist(t, st, root)
	between := storetest.MustFork(t, root, 2) // inherits the calls of turn 1, holds its own results
	between.AppendTurn(partsTurn("tool", toolResult("c1"), toolResult(hostile)))
	storetest.MustPersist(t, st, between)
	detached := storetest.MustFork(t, root, 4) // inherits c2, answers it itself, then is detached
	detached.AppendTurn(partsTurn("tool", toolResult("c2")))
	storetest.MustPersist(t, st, detached)
	if err := st.Detach(ctx, detached.ID, session.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := session.New("agent") // the parent of a detached fork, deleted: its own result links to a call gone
	gone.Append("user", "find y")
	gone.AppendTurn(partsTurn("assistant", toolCall("c1")))
	storetest.MustPersist(t, st, gone)
	orphanedLink := storetest.MustFork(t, gone, 2)
	orphanedLink.AppendTurn(partsTurn("tool", toolResult("c1")))
	storetest.MustPersist(t, st, orphanedLink)
	if err := st.Delete(ctx, gone.ID, session.DeleteOptions{DetachChildren: true}); err != nil {
		t.Fatal(err)
	}
	ofBetween := storetest.MustFork(t, between, 3)
	ofBetween.AppendTurn(partsTurn("assistant", toolCall("c1")))
	ofBetween.AppendTurn(partsTurn("tool", toolResult("c1")))
	storetest.MustPersist(t, st, ofBetween)
	storetest.MustRewind(t, st.Store, ofBetween.ID, 3) // the call and its result move into the archive
	if fs, err := st.Check(ctx); err != nil || len(fs) != 0 {
		t.Fatalf("sound: got %d findings (%v), want none:\n%s", len(fs), err, storetest.FindingsText(fs))
	}

	// What Persist writes as given.
	never := session.New("agent")
	never.AppendTurn(partsTurn("tool", toolResult("c-"+hostile))) // 0: no call anywhere
	storetest.MustPersist(t, st, never)
	before := storetest.MustFork(t, root, 1) // forked before the calls of turn 1
	before.AppendTurn(partsTurn("tool", toolResult("c1")))
	before.AppendTurn(partsTurn("assistant", toolResult("c9"), toolCall("c9"))) // the result before its call
	storetest.MustPersist(t, st, before)
	want := []wantFinding{
		{admin.RuleToolResult, storetest.TurnRef(never.ID, 0).String(), `tool result part 0 (call id "c-call \"\"\" } ; DROP ALL ; # \x01 \u2028 é", tool "search") answers no tool call`},
		{admin.RuleToolResult, storetest.TurnRef(before.ID, 1).String(), `tool result part 0 (call id "c1", tool "search") answers no tool call`},
		{admin.RuleToolResult, storetest.TurnRef(before.ID, 2).String(), `tool result part 0 (call id "c9", tool "search")`},
	}
	sameFindings(t, "written by Persist", st, want)

	// Links written by hand: the result of "before" linked to the call of
	// its sibling (not in its history: the one finding on that turn), a
	// result of the root to a later call of its own, another to a call
	// that does not exist.
	var d kg.Data
	sibling := kg.MustIRI(ontology.ToolCallIRI(storetest.TurnRef(root.ID, 1).String(), 0))
	later := kg.MustIRI(ontology.ToolCallIRI(storetest.TurnRef(root.ID, 3).String(), 0))
	missing := kg.MustIRI(ontology.ToolCallIRI(storetest.TurnRef(root.ID, 9).String(), 0)) // no such turn
	d.Add(storetest.SessionRef(before.ID), storetest.TurnRef(before.ID, 1), kg.MustIRI(ontology.ProvWasGeneratedBy), sibling)
	d.Add(storetest.SessionRef(root.ID), storetest.TurnRef(root.ID, 2), kg.MustIRI(ontology.ProvWasGeneratedBy), later)
	d.Add(storetest.SessionRef(root.ID), storetest.TurnRef(root.ID, 4), kg.MustIRI(ontology.ProvWasGeneratedBy), missing)
	storetest.RawChange(t, c, nil, &d)
	// The result linked to a call of its id is judged by its link alone.
	want = append(want[:1:1], want[2],
		wantFinding{admin.RuleToolResult, storetest.TurnRef(before.ID, 1).String(), "prov:wasGeneratedBy tool call <" + sibling.String() + ">, which is not in the turn's effective history"},
		wantFinding{admin.RuleToolResult, storetest.TurnRef(root.ID, 2).String(), "prov:wasGeneratedBy tool call <" + later.String() + ">"},
		wantFinding{admin.RuleToolResult, storetest.TurnRef(root.ID, 4).String(), "prov:wasGeneratedBy tool call <" + missing.String() + ">"},
	)
	sameFindings(t, "linked by hand", st, want)
}

// sameFindings fails t unless Check finds exactly want (rule, resource and
// a part of the message), in Check's order.
func sameFindings(t *testing.T, what string, st *store, want []wantFinding) {
	t.Helper()
	got, err := st.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want = slices.Clone(want)
	slices.SortStableFunc(want, func(a, b wantFinding) int {
		return strings.Compare(a.rule+"\x00"+a.resource, b.rule+"\x00"+b.resource)
	})
	if len(got) != len(want) {
		t.Fatalf("%s: got %d findings, want %d:\n%s", what, len(got), len(want), storetest.FindingsText(got))
	}
	for i, w := range want {
		if g := got[i]; g.Rule != w.rule || g.Resource != w.resource || !strings.Contains(g.Message, w.says) {
			t.Fatalf("%s: finding %d: got %s %s %q, want %s %s and a message with %q\nall:\n%s",
				what, i, g.Rule, g.Resource, g.Message, w.rule, w.resource, w.says, storetest.FindingsText(got))
		}
	}
	t.Logf("%s:\n%s", what, storetest.FindingsText(got))
}
