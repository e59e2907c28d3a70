package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"slices"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// The examples below are the library guide's snippets (docs/library.md
// quotes them by name): each runs against the tests' Fuseki, whose
// dataset TestMain puts in TRAILS_ENDPOINT, as a program's would be.

// exampleStore returns a Store on the dataset TRAILS_ENDPOINT names.
func exampleStore() *session.Store {
	c, err := kg.New(kg.Config{Endpoint: os.Getenv("TRAILS_ENDPOINT"), Store: kg.Store(os.Getenv("TRAILS_STORE"))}) // e.g. http://127.0.0.1:3030/trails
	if err != nil {
		log.Fatal(err)
	}
	return session.NewStore(c)
}

// An agent stores its conversation, then goes on talking: the second
// Persist sends only the turn the store lacks.
func ExampleStore_Persist() {
	ctx := context.Background()
	st := exampleStore()

	s := session.New("agent-7") // a root, on branch "main"
	s.Append("user", "Name a prime number.")
	s.Append("assistant", "7")
	if err := st.Persist(ctx, s); err != nil { // one atomic SPARQL Update
		log.Fatal(err)
	}
	s.Append("user", "Another one?")
	if err := st.Persist(ctx, s); err != nil { // appends turn 2 alone
		log.Fatal(err)
	}

	info, err := st.Info(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Kind, info.Branch, info.Turns, "turns")
	// Output:
	// main main 3 turns
}

// A runtime delegates to a subagent: it forks the stored session at turn 1
// without reading its history, and the subagent's turns are stored in the
// fork alone, the prefix shared with the parent.
func ExampleStore_Fork() {
	ctx := context.Background()
	st := exampleStore()

	s := session.New("agent-7")
	s.Append("user", "Name a prime number.")
	s.Append("assistant", "7")
	if err := st.Persist(ctx, s); err != nil {
		log.Fatal(err)
	}

	f, err := st.Fork(ctx, s.ID, 1, session.WithReason("try a larger prime"))
	if err != nil {
		log.Fatal(err)
	}
	f.Append("assistant", "13") // a fork returned by Store.Fork is a tail: From is the fork point
	if err := st.Persist(ctx, f); err != nil {
		log.Fatal(err)
	}

	loaded, err := st.Load(ctx, f.ID) // turn 0 from the parent, turn 1 from the fork
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range loaded.Turns {
		fmt.Println(t.Index, t.Role, t.Content, t.Branch == session.MainBranch)
	}
	info, err := st.Info(ctx, f.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Kind, "forked at", info.ForkedAt, "owns", info.OwnTurns)
	// Output:
	// 0 user Name a prime number. true
	// 1 assistant 13 false
	// branch forked at 1 owns 1
}

// A session takes back its last answer: Rewind moves the turns after the
// index rewound to into an archive fork, so nothing is lost.
func ExampleStore_Rewind() {
	ctx := context.Background()
	st := exampleStore()

	s := session.New("agent-7")
	s.Append("user", "Book a table for two.")
	s.Append("assistant", "Booked at 19:00.")
	s.Append("user", "Make it 20:00.")
	if err := st.Persist(ctx, s); err != nil {
		log.Fatal(err)
	}

	s, res, err := st.Rewind(ctx, s.ID, 1, session.RewindOptions{Reason: "wrong booking"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("moved", res.Moved, "turns; the session has", len(s.Turns))
	s.Append("assistant", "Which time suits you?")
	if err := st.Persist(ctx, s); err != nil { // the session goes on from turn 1
		log.Fatal(err)
	}

	archive, err := st.Load(ctx, res.Archive) // the abandoned history, replayable
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("archive:", archive.Turns[1].Content, "/", archive.Turns[2].Content)
	recs, err := st.Rewinds(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("rewound to", recs[0].To, "because", recs[0].Reason)
	// Output:
	// moved 2 turns; the session has 1
	// archive: Booked at 19:00. / Make it 20:00.
	// rewound to 1 because wrong booking
}

// A worker forked from the parent hands its result back: Merge appends it
// to the parent as one merge turn, and Merges reads it back.
func ExampleStore_Merge() {
	ctx := context.Background()
	st := exampleStore()

	s := session.New("agent-7")
	s.Append("user", "Plan a weekend in Lisbon.")
	if err := st.Persist(ctx, s); err != nil {
		log.Fatal(err)
	}
	w, err := st.Fork(ctx, s.ID, 1, session.AsWorker())
	if err != nil {
		log.Fatal(err)
	}
	w.Append("assistant", "Trains to Sintra: every 20 minutes.")
	if err := st.Persist(ctx, w); err != nil {
		log.Fatal(err)
	}

	turn, err := st.Merge(ctx, w.ID, session.MergeResult{Status: session.MergeCompleted, Summary: "Sintra is 40 minutes away by train."})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(turn.Index, turn.Role, turn.Content)
	merges, err := st.Merges(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	m := merges[0]
	fmt.Println(m.Status, "child turns", m.First, "to", m.Last)
	// Output:
	// 1 merge Sintra is 40 minutes away by train.
	// completed child turns 1 to 1
}

// Tree returns the fork tree under a session, each node with its forks,
// oldest first.
func ExampleStore_Tree() {
	ctx := context.Background()
	st := exampleStore()

	s := session.New("agent-7")
	s.Append("user", "Name a prime number.")
	s.Append("assistant", "7")
	if err := st.Persist(ctx, s); err != nil {
		log.Fatal(err)
	}
	f, err := st.Fork(ctx, s.ID, 1)
	if err != nil {
		log.Fatal(err)
	}
	f.Append("assistant", "13")
	if err := st.Persist(ctx, f); err != nil {
		log.Fatal(err)
	}
	if _, err := st.Fork(ctx, f.ID, 2, session.AsWorker()); err != nil {
		log.Fatal(err)
	}

	root, err := st.Tree(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	var show func(n *session.Node, depth int)
	show = func(n *session.Node, depth int) {
		fmt.Printf("%*s%s @%d, %d turns\n", 2*depth, "", n.Kind, n.ForkedAt, n.Turns)
		for _, c := range n.Children {
			show(c, depth+1)
		}
	}
	show(root, 0)
	// Output:
	// main @0, 2 turns
	//   branch @1, 2 turns
	//     worker @2, 2 turns
}

// Compare lines up two branches from their common ancestor: the turns
// they share, then what each holds from the divergence on.
func ExampleStore_Compare() {
	ctx := context.Background()
	st := exampleStore()

	s := session.New("agent-7")
	s.Append("user", "Name a prime number.")
	s.Append("assistant", "7")
	if err := st.Persist(ctx, s); err != nil {
		log.Fatal(err)
	}
	f, err := s.Fork(1)
	if err != nil {
		log.Fatal(err)
	}
	f.Append("assistant", "13")
	if err := st.Persist(ctx, f); err != nil {
		log.Fatal(err)
	}

	cmp, err := st.Compare(ctx, s.ID, f.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("common ancestor is the parent:", cmp.Common == s.ID)
	fmt.Println("divergence at", cmp.Divergence, "after", cmp.Shared[0].Content)
	fmt.Println("a:", cmp.A[0].Content, "b:", cmp.B[0].Content)
	// Output:
	// common ancestor is the parent: true
	// divergence at 1 after Name a prime number.
	// a: 7 b: 13
}

// A parent that completes flags its active forks for cancellation, in the
// same update that records the change in PROV.
func ExampleStore_SetState() {
	ctx := context.Background()
	st := exampleStore()

	s := session.New("agent-7")
	s.Append("user", "Research three hotels.")
	if err := st.Persist(ctx, s); err != nil {
		log.Fatal(err)
	}
	w, err := st.Fork(ctx, s.ID, 1, session.AsWorker())
	if err != nil {
		log.Fatal(err)
	}

	tr, err := st.SetState(ctx, s.ID, session.StateCompleted, session.StateOptions{Reason: "user left"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tr.From, "->", tr.To, "flagged the worker:", slices.Equal(tr.Flagged, []string{w.ID}))
	info, err := st.Info(ctx, w.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("worker", info.State, "cancel requested:", info.CancelRequested)
	// Output:
	// active -> completed flagged the worker: true
	// worker active cancel requested: true
}

// A turn may carry what an agent framework's event holds besides its text:
// a tool call and its result are parts an auditor queries with SPARQL, and
// a state change is a delta that Load folds into Values.
func ExampleSession_AppendTurn() {
	ctx := context.Background()
	st := exampleStore()

	s := session.New("alice")
	s.Append("user", "Weather in Paris?")
	s.AppendTurn(session.Turn{Role: "assistant", Structure: &session.Structure{
		Author: "weather-agent", Model: "gemini-2.5-flash", FinishReason: "tool_calls",
		Usage: &session.Usage{Input: 812, Output: 19, Total: 831},
		Parts: []session.Part{{Kind: session.PartToolCall, CallID: "call_1",
			ToolName: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}},
	}})
	s.AppendTurn(session.Turn{Role: "tool", Content: "sunny", Structure: &session.Structure{
		Parts: []session.Part{{Kind: session.PartToolResult, CallID: "call_1",
			ToolName: "get_weather", Result: json.RawMessage(`{"sky":"sunny"}`)}},
		Delta: map[string]json.RawMessage{"city": json.RawMessage(`"Paris"`)},
	}})
	s.Append("assistant", "It is sunny in Paris.")
	if err := st.Persist(ctx, s); err != nil { // still one atomic update
		log.Fatal(err)
	}

	loaded, err := st.Load(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range loaded.Turns {
		if t.Structure == nil {
			continue
		}
		for _, p := range t.Structure.Parts {
			fmt.Println(t.Index, p.Kind, p.ToolName, p.CallID, string(p.Arguments)+string(p.Result))
		}
	}
	fmt.Println("city =", string(loaded.Values["city"]))
	// Output:
	// 1 tool_call get_weather call_1 {"city":"Paris"}
	// 2 tool_result get_weather call_1 {"sky":"sunny"}
	// city = "Paris"
}
