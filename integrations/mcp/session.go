package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// InfoJSON is a session's description as list_sessions and show_session
// give it: trails-admin sessions --json's fields. It is render.Info.
type InfoJSON = render.Info

// ListInput is the input of list_sessions.
type ListInput struct {
	Principal string   `json:"principal,omitempty" jsonschema:"only the sessions of this principal"`
	Roots     bool     `json:"roots,omitempty" jsonschema:"only root sessions, those with no parent"`
	Tags      []string `json:"tags,omitempty" jsonschema:"only the sessions that have every one of these tags"`
	Limit     int      `json:"limit,omitempty" jsonschema:"the most sessions to return, newest first (default 100, at most 1000)"`
}

// ListOutput is the result of list_sessions.
type ListOutput struct {
	Sessions []InfoJSON `json:"sessions" jsonschema:"the sessions, newest first"`
	Total    int        `json:"total" jsonschema:"how many sessions match, more than returned when limit cut the list"`
}

// Limits of list_sessions.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// ShowInput is the input of show_session.
type ShowInput struct {
	ID   string `json:"id" jsonschema:"the session's id"`
	Last int    `json:"last,omitempty" jsonschema:"only the last N turns of the history (N >= 1), read without the turns before them"`
}

// ShowOutput is the result of show_session: trails-admin show --json's
// fields.
type ShowOutput struct {
	Session InfoJSON                   `json:"session"`
	App     string                     `json:"app,omitempty"`
	Values  map[string]json.RawMessage `json:"values,omitempty" jsonschema:"the session's state as of its last turn"`
	Fork    *ForkRecordJSON            `json:"fork" jsonschema:"how PROV records the fork that made the session; null for a root"`
	Anchors []AnchorJSON               `json:"anchors"`
	Merges  []MergeJSON                `json:"merges" jsonschema:"the merge turns the session holds"`
	From    int                        `json:"from,omitempty" jsonschema:"with last: the index of the first turn given"`
	Turns   []TurnJSON                 `json:"turns"`
}

// ForkRecordJSON is how PROV records the fork that made a session
// (trails-admin show --json's fork). It is render.ForkRecord.
type ForkRecordJSON = render.ForkRecord

// AnchorJSON is a named position of a history. It is render.Anchor.
type AnchorJSON = render.Anchor

// MergeJSON is a merge turn: a fork's result merged into the session. It
// is render.Merge.
type MergeJSON = render.Merge

// ArtifactJSON is an artifact of a merged result: one of iri and text.
// It is render.Artifact.
type ArtifactJSON = render.Artifact

func (t *tools) addSessionTools(srv *sdk.Server) {
	addTool(srv, &sdk.Tool{Name: ToolListSessions, Annotations: readOnly,
		Description: "List stored sessions, newest first: id, principal, parent and fork point, branch, kind (main, branch, worker), own and total turns, creation time, tags."},
		t.list)
	addTool(srv, &sdk.Tool{Name: ToolShowSession, Annotations: readOnly,
		Description: "Show one session: its description, the PROV record of the fork that made it, anchors, merges, state values, and its effective history " +
			"(inherited turns included), each turn with its branch and, for an agent's structured turn, its parts (text, reasoning, tool calls and results, data), model and usage."},
		t.show)
}

func (t *tools) list(ctx context.Context, in ListInput) (ListOutput, string, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = defaultLimit
	case limit < 0 || limit > maxLimit:
		return ListOutput{}, "", fmt.Errorf("limit %d: want 1 to %d", in.Limit, maxLimit)
	}
	var opts []session.ListOption
	if in.Principal != "" {
		opts = append(opts, session.ByPrincipal(in.Principal))
	}
	if in.Roots {
		opts = append(opts, session.Roots())
	}
	for _, tag := range in.Tags {
		opts = append(opts, session.ByTag(tag))
	}
	infos, err := t.st.List(ctx, opts...)
	if err != nil {
		return ListOutput{}, "", err
	}
	out := ListOutput{Sessions: []InfoJSON{}, Total: len(infos)}
	infos = infos[:min(limit, len(infos))]
	for _, info := range infos {
		out.Sessions = append(out.Sessions, render.NewInfo(info))
	}
	var b strings.Builder
	form.Sessions(&b, infos)
	if len(out.Sessions) < out.Total {
		fmt.Fprintf(&b, "(%d of %d sessions: give a larger limit, or a principal or tags, for the others)\n", len(out.Sessions), out.Total)
	}
	if out.Total == 0 {
		b.Reset()
		b.WriteString("no sessions\n")
	}
	return out, b.String(), nil
}

func (t *tools) show(ctx context.Context, in ShowInput) (ShowOutput, string, error) {
	if in.Last < 0 {
		return ShowOutput{}, "", fmt.Errorf("last %d: want a whole number >= 1, or none for the whole history", in.Last)
	}
	info, err := t.st.Info(ctx, in.ID)
	if err != nil {
		return ShowOutput{}, "", err
	}
	var s *session.Session
	if in.Last > 0 {
		s, err = t.st.LoadTail(ctx, in.ID, session.Tail{Last: in.Last})
	} else {
		s, err = t.st.Load(ctx, in.ID)
	}
	if err != nil {
		return ShowOutput{}, "", err
	}
	rec, err := t.forkRecord(ctx, info.ID)
	if err != nil {
		return ShowOutput{}, "", err
	}
	merges, err := t.st.Merges(ctx, info.ID)
	if err != nil {
		return ShowOutput{}, "", err
	}
	out := ShowOutput{Session: render.NewInfo(info), App: s.App, Values: s.Values, Fork: rec, Anchors: render.NewAnchors(s.Anchors),
		Merges: render.NewMerges(merges), From: s.From, Turns: render.NewTurns(s.Turns)}
	var b strings.Builder
	form.Show(&b, render.Shown{Info: info, Session: s, Fork: rec, Merges: merges, Tail: s.From > 0})
	return out, b.String(), nil
}

// forkRecord returns what PROV records of the fork that made session id,
// nil for a root.
func (t *tools) forkRecord(ctx context.Context, id string) (*ForkRecordJSON, error) {
	rec, err := t.pr.ForkRecord(ctx, id)
	if errors.Is(err, prov.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return render.NewForkRecord(rec), nil
}
