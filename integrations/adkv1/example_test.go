package adkv1_test

import (
	"context"
	"log"

	"google.golang.org/adk/session"

	"github.com/trails-kg/trails/integrations/adkv1"
	"github.com/trails-kg/trails/kg"
	trails "github.com/trails-kg/trails/session"
)

// An ADK v1 runner takes the Trails service where it would take
// session.InMemoryService().
func ExampleNewSessionService() {
	ctx := context.Background()
	c, err := kg.New(kg.Config{Endpoint: "http://127.0.0.1:3030/trails"})
	if err != nil {
		log.Fatal(err)
	}
	svc := adkv1.NewSessionService(trails.NewStore(c))
	// runner.New(runner.Config{AppName: "travel", Agent: a, SessionService: svc}) ...
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "travel", UserID: "ana"})
	if err != nil {
		log.Fatal(err)
	}
	log.Println("session", created.Session.ID(), "stored as", created.Session.(*adkv1.Session).TrailsID())
}
