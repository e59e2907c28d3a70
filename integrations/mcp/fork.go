package mcp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// ForkInput is the input of fork_session: where to fork (exactly one of
// at, anchor and turn) and what PROV records of the fork.
type ForkInput struct {
	ID        string `json:"id" jsonschema:"the session to fork"`
	At        *int   `json:"at,omitempty" jsonschema:"fork at this index: the fork inherits turns 0 to at-1"`
	Anchor    string `json:"anchor,omitempty" jsonschema:"fork at this anchor of the session or of an ancestor inside its history"`
	Turn      string `json:"turn,omitempty" jsonschema:"fork before this turn, named by its IRI (a turn's id in show_session): the fork inherits the turns before it"`
	Type      string `json:"type,omitempty" jsonschema:"how the fork came about: explicit (default), auto-edit or auto-regenerate"`
	CreatedBy string `json:"created_by,omitempty" jsonschema:"on whose initiative: user (default) or system"`
	Reason    string `json:"reason,omitempty" jsonschema:"why the fork is made, recorded in PROV"`
	NextSteps string `json:"next_steps,omitempty" jsonschema:"the intention: what the fork is to do next, recorded in PROV"`
	Summary   string `json:"summary,omitempty" jsonschema:"the intention: a summary of the context the fork starts from, recorded in PROV"`
	Worker    bool   `json:"worker,omitempty" jsonschema:"make the fork a worker: a session for one task, which cannot itself be forked"`
}

// ForkOutput is the result of fork_session: the new fork (trails-admin
// fork --json's fields).
type ForkOutput struct {
	ID       string `json:"id"`
	Parent   string `json:"parent"`
	ForkedAt int    `json:"forked_at"`
	Branch   string `json:"branch"`
	Kind     string `json:"kind" jsonschema:"branch or worker"`
}

func (t *tools) addForkTool(srv *sdk.Server) {
	addTool(srv, &sdk.Tool{Name: ToolFork, Annotations: additive,
		Description: "Fork a stored session at an index, an anchor or before a turn: the new session shares the turns before that point " +
			"(they are not copied) and has none of its own yet; the fork and its intention are recorded in PROV. Needs write access to the store."},
		t.fork)
}

func (t *tools) fork(ctx context.Context, in ForkInput) (ForkOutput, string, error) {
	given := 0
	for _, set := range []bool{in.At != nil, in.Anchor != "", in.Turn != ""} {
		if set {
			given++
		}
	}
	if given != 1 {
		return ForkOutput{}, "", errors.New("give exactly one of at, anchor and turn: where the fork starts")
	}
	at := -1
	if in.At != nil {
		if at = *in.At; at < 0 {
			return ForkOutput{}, "", fmt.Errorf("at %d: want a whole number >= 0", at)
		}
	}
	typ, by := session.ForkExplicit, session.CreatedByUser
	if in.Type != "" {
		typ = session.ForkType(in.Type)
	}
	if in.CreatedBy != "" {
		by = session.Creator(in.CreatedBy)
	}
	opts := []session.ForkOption{session.WithForkType(typ), session.WithCreatedBy(by)}
	switch {
	case in.Anchor != "":
		opts = append(opts, session.ForkAtAnchor(in.Anchor))
	case in.Turn != "":
		opts = append(opts, session.ForkAtTurn(in.Turn))
	}
	if in.Reason != "" {
		opts = append(opts, session.WithReason(in.Reason))
	}
	if in.Worker {
		opts = append(opts, session.AsWorker())
	}
	if in.NextSteps != "" || in.Summary != "" {
		opts = append(opts, session.WithIntention(in.NextSteps, in.Summary))
	}
	f, err := t.st.Fork(ctx, in.ID, at, opts...)
	if err != nil {
		return ForkOutput{}, "", err
	}
	out := ForkOutput{ID: f.ID, Parent: f.ParentID, ForkedAt: f.ForkedAt, Branch: f.Branch, Kind: string(f.Kind)}
	label := termsafe.String(f.Branch)
	if f.Kind == session.KindWorker {
		label += ", a worker"
	}
	text := fmt.Sprintf("forked %s at %d as %s (%s): it inherits %s\n", termsafe.String(f.ParentID), f.ForkedAt, termsafe.String(f.ID), label, render.Plural(f.ForkedAt, "turn"))
	return out, text, nil
}
