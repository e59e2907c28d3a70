package session_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// An agent talks, forks the conversation to try another answer, and loads
// the fork back: the fork stores only its own turn and shares the prefix.
func Example() {
	ctx := context.Background()
	c, err := kg.New(kg.Config{Endpoint: os.Getenv("TRAILS_ENDPOINT"), Store: kg.Store(os.Getenv("TRAILS_STORE"))}) // e.g. http://127.0.0.1:3030/trails
	if err != nil {
		log.Fatal(err)
	}
	st := session.NewStore(c)

	s := session.New("agent-7")
	s.Append("user", "Name a prime number.")
	s.Append("assistant", "7")
	if err := st.Persist(ctx, s); err != nil {
		log.Fatal(err)
	}

	f, err := s.Fork(1) // keep the question, try another answer
	if err != nil {
		log.Fatal(err)
	}
	f.Append("assistant", "13")
	if err := st.Persist(ctx, f); err != nil {
		log.Fatal(err)
	}

	loaded, err := st.Load(ctx, f.ID)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range loaded.Turns {
		branch := "main"
		if t.Branch != session.MainBranch {
			branch = "fork"
		}
		fmt.Printf("%d %-9s %-4s %s\n", t.Index, t.Role, branch, t.Content)
	}
	// Output:
	// 0 user      main Name a prime number.
	// 1 assistant fork 13
}
