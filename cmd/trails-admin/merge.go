package main

import (
	"context"
	"flag"
	"fmt"
	"slices"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

type mergeCmd struct {
	sign      signFlags // --sign-key, --witness
	status    string
	summary   string
	artifacts []session.Artifact
	json      bool
}

func (*mergeCmd) name() string { return "merge" }
func (*mergeCmd) usage() string {
	return "CHILD --status completed|failed --summary TEXT [--artifact IRI-or-TEXT …] [--json] [--sign-key FILE --witness URL]"
}
func (*mergeCmd) synopsis() string {
	return "append a fork's result to its parent as one turn (role merge); a fork is merged once"
}
func (*mergeCmd) example() string {
	return "trails-admin merge 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --status completed --summary 'Feature X is in.' --artifact https://example.org/pr/42"
}
func (c *mergeCmd) flags(fs *flag.FlagSet) {
	c.sign.register(fs)
	c.artifacts = nil
	fs.StringVar(&c.status, "status", "", "how the fork's work ended: completed or failed (required)")
	fs.StringVar(&c.summary, "summary", "", "the result in words, the content of the merge turn (required)")
	fs.Func("artifact", "an artifact of the result: an absolute `IRI`, or any other text (repeatable)", func(v string) error {
		if v == "" {
			return fmt.Errorf("want an IRI or some text")
		}
		if _, err := kg.IRI(v); err == nil {
			c.artifacts = append(c.artifacts, session.Artifact{IRI: v})
		} else {
			c.artifacts = append(c.artifacts, session.Artifact{Text: v})
		}
		return nil
	})
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// mergeJSON is the JSON form of a merge (stable names).
type mergeJSON struct {
	Child     string            `json:"child"`
	Parent    string            `json:"parent"`
	Status    string            `json:"status"`
	First     int               `json:"first"` // the range reference: the fork's turns first..last
	Last      int               `json:"last"`
	Artifacts []render.Artifact `json:"artifacts"`
	Turn      render.Turn       `json:"turn"`
}

func (c *mergeCmd) run(ctx context.Context, a *app, args []string) error {
	switch {
	case len(args) != 1:
		return usageErrorf("merge needs one session id, the fork to merge; try: trails-admin merge -h")
	case c.status == "" || c.summary == "":
		return usageErrorf("merge needs --status (completed or failed) and --summary; try: trails-admin merge -h")
	}
	if err := a.sign(ctx, c.name(), c.sign); err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	info, err := st.Info(ctx, args[0])
	if err != nil {
		return err
	}
	t, err := st.Merge(ctx, info.ID, session.MergeResult{
		Status: session.MergeStatus(c.status), Summary: c.summary, Artifacts: c.artifacts,
	})
	if err != nil {
		return err
	}
	recs, err := st.Merges(ctx, info.ParentID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(recs, func(r session.MergeRecord) bool { return r.TurnID == t.ID })
	if i < 0 {
		return fmt.Errorf("merge %s: turn %d of %s does not read back as a merge", info.ID, t.Index, info.ParentID)
	}
	rec := recs[i]
	if c.json {
		return a.json(mergeJSON{Child: rec.Child, Parent: info.ParentID, Status: string(rec.Status), First: rec.First, Last: rec.Last,
			Artifacts: render.NewArtifacts(rec.Artifacts), Turn: render.Turn{ID: t.ID, Index: t.Index, Role: t.Role, Content: t.Content, Branch: t.Branch, Created: t.Created}})
	}
	fmt.Fprintf(a.stdout, "merged %s into %s as turn %d: %s, the fork's turns %d-%d, %s\n",
		termsafe.String(rec.Child), termsafe.String(info.ParentID), t.Index, termsafe.String(string(rec.Status)), rec.First, rec.Last, render.Plural(len(rec.Artifacts), "artifact"))
	return nil
}
