package main

import (
	"context"
	"fmt"
	"io"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/prov"
	trails "github.com/trails-kg/trails/session"
)

// The app and user the example's sessions belong to, and its questions:
// the conversation asks about two cities; its fork, made before the second
// question, asks about a third instead.
const (
	appName      = "weather-app"
	userID       = "alice"
	question1    = "What's the weather in Lisbon?"
	question2    = "And in Porto?"
	forkQuestion = "What about Madrid instead?"
)

// toolCallsQuery is the audit query (prov/queries) whose rows the example
// prints for each branch; its one parameter, session, is a session id.
const toolCallsQuery = "tool-calls"

// toolCalls runs the audit query toolCallsQuery for a session.
func toolCalls(ctx context.Context, c *kg.Client, sessionID string) (*kg.Results, error) {
	return prov.NewReader(c).Run(ctx, toolCallsQuery, map[string]string{"session": sessionID})
}

// runExample runs the conversation, its fork and the reports on the
// dataset of c, writing to w.
func runExample(ctx context.Context, c *kg.Client, w io.Writer) error {
	st := trails.NewStore(c)
	svc := adk.NewSessionService(st)
	a, err := newAgent()
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{AppName: appName, Agent: a, SessionService: svc})
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	fmt.Fprintf(w, "ADK agent on Trails (%s)\n\n", c.Endpoint())

	created, err := svc.Create(ctx, &session.CreateRequest{AppName: appName, UserID: userID})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	root := created.Session
	fmt.Fprintf(w, "1. created the ADK session %s (app %s, user %s) and asked: %s\n", root.ID(), appName, userID, question1)
	if _, err := ask(ctx, w, r, root.ID(), question1); err != nil {
		return err
	}
	fmt.Fprintf(w, "2. asked: %s\n", question2)
	inv, err := ask(ctx, w, r, root.ID(), question2)
	if err != nil {
		return err
	}

	key := adk.Key{AppName: appName, UserID: userID, SessionID: root.ID()}
	fork, err := svc.Fork(ctx, key, adk.BeforeInvocation(inv), "ask about Madrid instead of Porto")
	if err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	forkedAt, err := forkPoint(ctx, svc, key, fork.ID())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "3. forked it before the second invocation (%s) as the ADK session %s: it shares the first %d events\n", inv, fork.ID(), forkedAt)
	fmt.Fprintf(w, "4. asked the fork: %s\n", forkQuestion)
	if _, err := ask(ctx, w, r, fork.ID(), forkQuestion); err != nil {
		return err
	}

	rootTrails, forkTrails := trailsID(root), fork.TrailsID()
	tree, err := st.Tree(ctx, rootTrails)
	if err != nil {
		return fmt.Errorf("tree: %w", err)
	}
	fmt.Fprintf(w, "\nThe fork tree (trails-admin tree %s):\n", rootTrails)
	renderTree(w, tree)

	got, err := svc.Get(ctx, &session.GetRequest{AppName: appName, UserID: userID, SessionID: fork.ID()})
	if err != nil {
		return fmt.Errorf("get fork: %w", err)
	}
	fmt.Fprintf(w, "\nThe fork as ADK's runner loads it (SessionService.Get), %d events:\n", got.Session.Events().Len())
	i := 0
	for ev := range got.Session.Events().All() {
		from := "own"
		if i < forkedAt {
			from = "parent"
		}
		printEvent(w, fmt.Sprintf("%3d  %-6s", i, from), ev)
		i++
	}

	for _, b := range []struct{ name, id string }{{"the conversation", rootTrails}, {"the fork", forkTrails}} {
		res, err := toolCalls(ctx, c, b.id)
		if err != nil {
			return fmt.Errorf("audit %s of %s: %w", toolCallsQuery, b.id, err)
		}
		fmt.Fprintf(w, "\nTool calls of %s (trails-admin audit %s --param session=%s):\n", b.name, toolCallsQuery, b.id)
		if err := printRows(w, res); err != nil {
			return err
		}
	}
	return nil
}

// newAgent returns the example's agent: an LLM agent with the scripted
// model and the weather tool.
func newAgent() (agent.Agent, error) {
	weather, err := newWeatherTool()
	if err != nil {
		return nil, fmt.Errorf("weather tool: %w", err)
	}
	a, err := llmagent.New(llmagent.Config{
		Name:        "weather_agent",
		Description: "Answers questions about the weather.",
		Model:       scriptedModel{},
		Instruction: "Answer questions about the weather with the get_weather tool.",
		Tools:       []tool.Tool{weather},
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return a, nil
}

// ask runs one invocation of the agent on session id with the user's
// question, printing its events, and returns the invocation's id.
func ask(ctx context.Context, w io.Writer, r *runner.Runner, id, question string) (string, error) {
	inv := ""
	msg := genai.NewContentFromText(question, genai.RoleUser)
	for ev, err := range r.Run(ctx, userID, id, msg, agent.RunConfig{}, runner.WithYieldUserMessage()) {
		if err != nil {
			return "", fmt.Errorf("run %s: %w", id, err)
		}
		if ev == nil || ev.Partial {
			continue
		}
		if inv == "" {
			inv = ev.InvocationID
		}
		printEvent(w, "  ", ev)
	}
	if inv == "" {
		return "", fmt.Errorf("run %s: the runner yielded no event", id)
	}
	return inv, nil
}

// forkPoint returns how many events of session k the fork id holds.
func forkPoint(ctx context.Context, svc *adk.SessionService, k adk.Key, id string) (int, error) {
	forks, err := svc.Forks(ctx, k)
	if err != nil {
		return 0, fmt.Errorf("forks of %s: %w", k.SessionID, err)
	}
	for _, f := range forks {
		if f.SessionID == id {
			return f.ForkedAt, nil
		}
	}
	return 0, fmt.Errorf("forks of %s: %s is not listed", k.SessionID, id)
}

// trailsID returns the id of the Trails session that stores s.
func trailsID(s session.Session) string {
	if t, ok := s.(interface{ TrailsID() string }); ok {
		return t.TrailsID()
	}
	return s.ID()
}
