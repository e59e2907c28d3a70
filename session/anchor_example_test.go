package session_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// A parent agent names the point where a task starts, works on, then
// delegates the task to a subagent: a fork at the anchor, with the
// intention the subagent starts from recorded in PROV.
func ExampleStore_Anchor() {
	ctx := context.Background()
	c, err := kg.New(kg.Config{Endpoint: os.Getenv("TRAILS_ENDPOINT"), Store: kg.Store(os.Getenv("TRAILS_STORE"))})
	if err != nil {
		log.Fatal(err)
	}
	st := session.NewStore(c)

	s := session.New("agent-7")
	s.Append("user", "Add feature X to the parser.")
	if err := st.Persist(ctx, s); err != nil {
		log.Fatal(err)
	}
	if _, err := st.Anchor(ctx, s.ID, "task_start", map[string]string{"context": "Working on feature X"}); err != nil {
		log.Fatal(err)
	}
	s.Append("assistant", "Reading the grammar first.")
	if err := st.Persist(ctx, s); err != nil {
		log.Fatal(err)
	}

	child, err := st.Fork(ctx, s.ID, -1, session.ForkAtAnchor("task_start"),
		session.WithCreatedBy(session.CreatedBySystem),
		session.WithIntention("Implement feature X", "Parent needs feature X implemented"))
	if err != nil {
		log.Fatal(err)
	}
	rec, err := prov.NewReader(c).ForkRecord(ctx, child.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(child.ForkedAt, child.Anchors["task_start"].State["context"]) // it inherits 1 turn, which Load reads
	fmt.Println(rec.CreatedBy, rec.NextSteps)
	// Output:
	// 1 Working on feature X
	// system Implement feature X
}
