package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"

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
	Child     string         `json:"child"`
	Parent    string         `json:"parent"`
	Status    string         `json:"status"`
	First     int            `json:"first"` // the range reference: the fork's turns first..last
	Last      int            `json:"last"`
	Artifacts []artifactJSON `json:"artifacts"`
	Turn      turnJSON       `json:"turn"`
}

// artifactJSON is an artifact: one of iri and text is set.
type artifactJSON struct {
	IRI  string `json:"iri,omitempty"`
	Text string `json:"text,omitempty"`
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
		arts := make([]artifactJSON, len(rec.Artifacts))
		for i, x := range rec.Artifacts {
			arts[i] = artifactJSON{IRI: x.IRI, Text: x.Text}
		}
		return a.json(mergeJSON{Child: rec.Child, Parent: info.ParentID, Status: string(rec.Status), First: rec.First, Last: rec.Last,
			Artifacts: arts, Turn: turnJSON{ID: t.ID, Index: t.Index, Role: t.Role, Content: t.Content, Branch: t.Branch, Created: t.Created}})
	}
	fmt.Fprintf(a.stdout, "merged %s into %s as turn %d: %s, the fork's turns %d-%d, %s\n",
		termsafe.String(rec.Child), termsafe.String(info.ParentID), t.Index, termsafe.String(string(rec.Status)), rec.First, rec.Last, plural(len(rec.Artifacts), "artifact"))
	return nil
}

// mergeRecJSON is a merge turn of a session as show prints it (stable
// names).
type mergeRecJSON struct {
	Turn      int            `json:"turn"`
	Child     string         `json:"child"`
	Status    string         `json:"status"`
	First     int            `json:"first"`
	Last      int            `json:"last"`
	Artifacts []artifactJSON `json:"artifacts"`
}

func toMergesJSON(recs []session.MergeRecord) []mergeRecJSON {
	out := make([]mergeRecJSON, len(recs))
	for k, r := range recs {
		arts := make([]artifactJSON, len(r.Artifacts))
		for i, x := range r.Artifacts {
			arts[i] = artifactJSON{IRI: x.IRI, Text: x.Text}
		}
		out[k] = mergeRecJSON{Turn: r.Index, Child: r.Child, Status: string(r.Status), First: r.First, Last: r.Last, Artifacts: arts}
	}
	return out
}

// writeMerges prints the merge turns a session holds, one line each: the
// turn, the fork's result and its artifacts (a text one quoted, with Go's
// escapes).
func (a *app) writeMerges(recs []session.MergeRecord) {
	for _, r := range recs {
		fmt.Fprintf(a.stdout, "merge     turn %d: %s, fork %s turns %d-%d", r.Index, termsafe.String(string(r.Status)), termsafe.String(r.Child), r.First, r.Last)
		for _, x := range r.Artifacts {
			if x.IRI != "" {
				fmt.Fprintf(a.stdout, ", <%s>", termsafe.String(x.IRI))
			} else {
				fmt.Fprintf(a.stdout, ", %s", strconv.Quote(x.Text)) // escapes every control and bidi character
			}
		}
		fmt.Fprintln(a.stdout)
	}
}
