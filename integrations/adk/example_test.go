package adk_test

import (
	"context"
	"log"

	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/kg"
	trails "github.com/trails-kg/trails/session"
)

// An ADK runner takes the Trails service where it would take
// session.InMemoryService(); Fork goes where ADK has nothing.
func ExampleNewSessionService() {
	ctx := context.Background()
	c, err := kg.New(kg.Config{Endpoint: "http://127.0.0.1:3030/trails"})
	if err != nil {
		log.Fatal(err)
	}
	svc := adk.NewSessionService(trails.NewStore(c))
	// runner.New(runner.Config{AppName: "travel", Agent: a, SessionService: svc}) ...
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "travel", UserID: "ana"})
	if err != nil {
		log.Fatal(err)
	}
	// After a run: try invocation inv-2 again on a fork that shares the
	// events before it.
	k := adk.Key{AppName: "travel", UserID: "ana", SessionID: created.Session.ID()}
	fork, err := svc.Fork(ctx, k, adk.BeforeInvocation("inv-2"), "retry with another tool")
	if err != nil {
		log.Fatal(err)
	}
	log.Println("fork", fork.ID(), "of", fork.TrailsID())
}
