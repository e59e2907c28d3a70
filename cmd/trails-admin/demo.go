package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

type demoCmd struct {
	sign      signFlags // --sign-key, --witness
	principal string
}

func (*demoCmd) name() string  { return "demo" }
func (*demoCmd) usage() string { return "[--principal P] [--sign-key FILE --witness URL]" }
func (*demoCmd) synopsis() string {
	return "write a small agent conversation, fork it at an anchor, merge a worker back, and show the tree, a replay, a diff and an audit query"
}
func (*demoCmd) example() string { return "trails-admin demo" }
func (c *demoCmd) flags(fs *flag.FlagSet) {
	c.sign.register(fs)
	fs.StringVar(&c.principal, "principal", "demo-agent", "principal of the demo sessions")
}

// The demo conversation: an agent planning a trip, then an alternative
// plan and a worker that estimates its budget.
var (
	demoTurns = [][2]string{
		{"system", "You are a travel agent. Keep answers short."},
		{"user", "Plan a weekend in Lisbon for two, mid-March."},
		{"assistant", "Day 1: Alfama and the castle, fado in the evening.\nDay 2: Belém, pastéis de nata, sunset at LX Factory."},
		{"user", "We'd rather avoid crowds."},
		{"assistant", "Then start early: the castle opens at 9:00 and Belém is quiet before 10:00."},
	}
	demoForkA = [][2]string{ // forked at the anchor, after the first plan: a different plan
		{"assistant", "Consider Sintra instead of Belém: \"Pena Palace\" at opening time, then Monserrate."},
		{"user", "Sintra it is. Trains?"},
		{"assistant", "Trains leave Rossio every 20 minutes; 40 minutes to Sintra."},
	}
	demoWorker = [][2]string{ // a worker forked from fork A: the budget
		{"user", "What would that cost on a budget?"},
		{"assistant", "About €60 each: train €5, palace €20, food €35."},
	}
)

// demoAnchor names the position after the first plan.
const demoAnchor = "plan_ready"

func (c *demoCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return usageErrorf("demo takes no arguments; try: trails-admin demo -h")
	}
	if err := a.sign(ctx, c.name(), c.sign); err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	ds, err := a.dataset(ctx)
	if err != nil {
		return err
	}
	if _, err := ds.Init(ctx); err != nil {
		return err
	}
	out := a.stdout
	fmt.Fprintf(out, "Trails demo on %s\n\n", a.client.Endpoint())

	root := session.New(c.principal)
	for _, t := range demoTurns[:3] {
		root.Append(t[0], t[1])
	}
	if err := st.Persist(ctx, root); err != nil {
		return err
	}
	if _, err := st.Anchor(ctx, root.ID, demoAnchor, map[string]string{"goal": "a weekend plan"}); err != nil {
		return err
	}
	for _, t := range demoTurns[3:] {
		root.Append(t[0], t[1])
	}
	if err := st.Persist(ctx, root); err != nil {
		return err
	}
	fmt.Fprintf(out, "1. stored session %s: 5 turns on branch %s, with the anchor %q after turn 2\n", root.ID, root.Branch, demoAnchor)

	if root, err = st.Load(ctx, root.ID); err != nil { // Load brings the anchors
		return err
	}
	forkA, err := root.Fork(-1, session.ForkAtAnchor(demoAnchor), session.WithReason("try a quieter day trip"))
	if err != nil {
		return err
	}
	for _, t := range demoForkA {
		forkA.Append(t[0], t[1])
	}
	if err := st.Persist(ctx, forkA); err != nil {
		return err
	}
	fmt.Fprintf(out, "2. forked it at the anchor %q as %s (%s): stored its %d own turns, shared the first %d\n",
		demoAnchor, forkA.ID, forkA.Branch, len(forkA.Turns)-forkA.ForkedAt, forkA.ForkedAt)

	worker, err := forkA.Fork(5, session.AsWorker(), session.WithCreatedBy(session.CreatedBySystem),
		session.WithIntention("estimate the budget", "a Sintra day trip by train"))
	if err != nil {
		return err
	}
	for _, t := range demoWorker {
		worker.Append(t[0], t[1])
	}
	if err := st.Persist(ctx, worker); err != nil {
		return err
	}
	fmt.Fprintf(out, "3. forked the fork at turn 5 as worker %s (%s): %d own turns\n",
		worker.ID, worker.Branch, len(worker.Turns)-worker.ForkedAt)

	merged, err := st.Merge(ctx, worker.ID, session.MergeResult{
		Status:    session.MergeCompleted,
		Summary:   "Budget: about €60 each for the Sintra day.",
		Artifacts: []session.Artifact{{Text: "train €5, palace €20, food €35"}},
	})
	if err != nil {
		return err
	}
	if _, err := st.SetState(ctx, worker.ID, session.StateCompleted, session.StateOptions{Reason: "merged"}); err != nil {
		return err
	}
	fmt.Fprintf(out, "4. merged the worker back: turn %d of %s holds its result (turns %d-%d of the worker), and marked the worker completed\n",
		merged.Index, forkA.ID, worker.ForkedAt, len(worker.Turns)-1)

	if forkA, err = st.Load(ctx, forkA.ID); err != nil { // the merge appended to it
		return err
	}
	root.Append("user", "Thanks, booking now.")
	forkA.Append("user", "Perfect, thanks!")
	for _, s := range []*session.Session{root, forkA} {
		if err := st.Persist(ctx, s); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "5. continued the main branch and the first fork by one turn each\n\n")

	tree, err := st.Tree(ctx, root.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "The fork tree (trails-admin tree %s):\n", root.ID)
	if err := treeText(out, []*session.Node{tree}); err != nil {
		return err
	}

	turns, err := st.Replay(ctx, forkA.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nReplay of the first fork, with the merged result (trails-admin replay %s):\n", forkA.ID)
	if err := render.Turns(a.stdout, turns); err != nil {
		return err
	}

	cmp, err := st.Compare(ctx, root.ID, forkA.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nThe main branch against the first fork (trails-admin diff %s %s):\n", root.ID, forkA.ID)
	writeDiff(out, root.ID, forkA.ID, cmp, false)

	q, _ := prov.Lookup("lineage")
	params := map[string]string{"session": worker.ID}
	text, err := q.Bind(params)
	if err != nil {
		return err
	}
	r, err := a.reader(ctx)
	if err != nil {
		return err
	}
	res, err := r.Run(ctx, q.Name, params)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nAudit query %q (trails-admin audit lineage --param session=%s).\n", q.Name, worker.ID)
	fmt.Fprintf(out, "The SPARQL it ran, to paste into any SPARQL tool against %s:\n\n", a.client.Endpoint())
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if !strings.HasPrefix(line, "#") {
			fmt.Fprintf(out, "    %s\n", line)
		}
	}
	fmt.Fprintln(out)
	tw := a.table()
	fmt.Fprintln(tw, "DEPTH\tSESSION\tFORKED AT")
	for _, s := range res.Solutions {
		at := s.String("forkedAtIndex")
		if at == "" {
			at = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.String("depth"), s.String("id"), at)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	self := selfCommand(os.Args[0], a.client.Endpoint())
	switch st := a.client.Store(); {
	case a.conn.Store == storeKafka:
		self = "TRAILS_STORE=" + storeKafka + " " + selfCommand(os.Args[0], defaultEndpoint) // the rest is in the environment
	case st != kg.Fuseki && a.conn.QueryURL == "" && a.conn.UpdateURL == "" && a.conn.GraphStoreURL == "":
		self = "TRAILS_STORE=" + string(st) + " " + self
	}
	self = termsafe.String(self)
	fmt.Fprintf(out, "\nNext: %[1]s sessions --principal %[2]s · %[1]s tree --format dot | dot -Tpng -o tree.png (Graphviz) · %[1]s check\n",
		self, termsafe.String(shellWord(c.principal)))
	return nil
}

// selfCommand is the command line that runs this program again against
// endpoint, as a user can paste it: the name it was run by (trails-admin
// when found on PATH, "go run ./cmd/trails-admin" when go run built it in a
// temporary directory, else its path), after TRAILS_ENDPOINT=URL when
// endpoint is not the default one.
func selfCommand(arg0, endpoint string) string {
	self := arg0
	switch {
	case !strings.ContainsRune(arg0, filepath.Separator):
		// found on PATH: type it the same way
	case strings.Contains(arg0, string(filepath.Separator)+"go-build") &&
		filepath.Base(filepath.Dir(arg0)) == "exe":
		self = "go run ./cmd/trails-admin" // gone when go run ends
	default:
		if abs, err := filepath.Abs(arg0); err == nil {
			self = abs
		}
		self = shellWord(self)
	}
	if endpoint != defaultEndpoint {
		self = "TRAILS_ENDPOINT=" + shellWord(endpoint) + " " + self
	}
	return self
}

// shellWord quotes s for a POSIX shell when it holds anything but letters,
// digits and / . _ - : @ = , +.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:@=,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
