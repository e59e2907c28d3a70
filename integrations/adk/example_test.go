package adk_test

import (
	"context"
	"log"

	"google.golang.org/adk/v2/memory"
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

// A runner takes the Trails memory and artifact services beside the
// session service; all three share one dataset.
func ExampleNewMemoryService() {
	ctx := context.Background()
	c, err := kg.New(kg.Config{Endpoint: "http://127.0.0.1:3030/trails"})
	if err != nil {
		log.Fatal(err)
	}
	sessions := adk.NewSessionService(trails.NewStore(c))
	mem := adk.NewMemoryService(c)
	arts := adk.NewArtifactService(c)
	// runner.New(runner.Config{AppName: "travel", Agent: a, SessionService: sessions,
	//	MemoryService: mem, ArtifactService: arts}) ...
	_ = arts
	got, err := sessions.Get(ctx, &session.GetRequest{AppName: "travel", UserID: "ana", SessionID: "trip-1"})
	if err != nil {
		log.Fatal(err)
	}
	if err := mem.AddSessionToMemory(ctx, got.Session); err != nil { // marks it: no copy
		log.Fatal(err)
	}
	found, err := mem.SearchMemory(ctx, &memory.SearchRequest{AppName: "travel", UserID: "ana", Query: "hotel in Lisbon"})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range found.Memories {
		log.Println(e.Timestamp, e.Author, e.ID)
	}
}
